// Session tokens (docs/users.md, "Sessions"): HS256 JSON Web Tokens, signed and checked here by
// hand. Which session a token names, and whether it was revoked, is for the caller to look up.

import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

export interface TokenClaims {
  readonly sub: string;
  readonly email: string;
  readonly role: string;
  readonly sid: string;
  /** Seconds since the epoch, as JWT has it. */
  readonly iat: number;
  readonly exp: number;
}

export type TokenProblem = "malformed" | "algorithm" | "signature" | "expired";

/** Far above any token signToken makes; past it, nothing is decoded or hashed. */
export const MAX_TOKEN_CHARS = 8192;
/** HS256 wants a secret at least as long as its hash (RFC 7518, section 3.2). */
export const MIN_SECRET_BYTES = 32;

const HEADER = Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT" })).toString("base64url");
const BASE64URL = /^[A-Za-z0-9_-]*$/;
const STRING_CLAIMS = ["sub", "email", "role", "sid"] as const;
const NUMBER_CLAIMS = ["iat", "exp"] as const;

export function signToken(claims: TokenClaims, secret: Buffer): string {
  // Only the known claims, in one order: what is signed is what verifyToken answers.
  const { sub, email, role, sid, iat, exp } = claims;
  const payload = Buffer.from(JSON.stringify({ sub, email, role, sid, iat, exp })).toString("base64url");
  return `${HEADER}.${payload}.${signature(`${HEADER}.${payload}`, secret)}`;
}

/** The claims of a token this server signed and that has not expired, or what is wrong with it. Never throws. */
export function verifyToken(token: string, secret: Buffer, nowSeconds: number): TokenClaims | TokenProblem {
  if (typeof token !== "string" || token.length > MAX_TOKEN_CHARS) return "malformed";
  const parts = token.split(".");
  if (parts.length !== 3 || !parts.every((part) => BASE64URL.test(part))) return "malformed";
  const [header, payload, offered] = parts as [string, string, string];
  const headerValue = parseJsonPart(header);
  if (!isPlainObject(headerValue)) return "malformed";
  // The server says which algorithm it accepts; the token does not get to choose ("none" included).
  if (headerValue.alg !== "HS256") return "algorithm";
  const expected = Buffer.from(signature(`${header}.${payload}`, secret));
  const given = Buffer.from(offered);
  // Compared as text, not decoded bytes: base64url's last character has spare bits, so decoding
  // would let several spellings of one signature pass.
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return "signature";
  const claims = parseJsonPart(payload);
  if (!isClaims(claims)) return "malformed";
  if (claims.exp <= nowSeconds) return "expired";
  const { sub, email, role, sid, iat, exp } = claims;
  return { sub, email, role, sid, iat, exp };
}

/** A new secret as it is kept (base64url text); secretBytes turns it back into the key. */
export function newSigningSecret(): string {
  return randomBytes(MIN_SECRET_BYTES).toString("base64url");
}

export function secretBytes(kept: string): Buffer {
  const bytes = Buffer.from(kept, "base64url");
  if (!BASE64URL.test(kept) || bytes.length < MIN_SECRET_BYTES) {
    throw new Error(`A token signing secret must be base64url text of at least ${MIN_SECRET_BYTES} bytes; this one has ${bytes.length}. Make one with newSigningSecret().`);
  }
  return bytes;
}

function signature(signed: string, secret: Buffer): string {
  return createHmac("sha256", secret).update(signed).digest("base64url");
}

/** undefined for a part that is not base64url JSON: a bad token is an answer here, not an error. */
function parseJsonPart(part: string): unknown {
  try {
    return JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
  } catch {
    return undefined; // not JSON: the callers answer "malformed"
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isClaims(value: unknown): value is TokenClaims {
  return (
    isPlainObject(value) &&
    STRING_CLAIMS.every((name) => typeof value[name] === "string") &&
    NUMBER_CLAIMS.every((name) => Number.isFinite(value[name]))
  );
}
