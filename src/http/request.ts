// Reading a request: its headers (and the API key it presents), and its body: capped at --max-body
// without buffering more than the cap (a declared Content-Length over it is refused before
// reading), JSON only, UTF-8 only, nested at most MAX_JSON_DEPTH deep, parsed once.

import { isUtf8 } from "node:buffer";
import type { IncomingMessage } from "node:http";
import { ApiError, invalidJson, invalidRequest } from "../errors.ts";
import { findOverreach, MAX_JSON_DEPTH, UNPARSED_FACTOR, type SizeLimits } from "../json-depth.ts";
import { MAX_BATCH_RECORDS } from "../records/batch.ts";

/** What a body is held to when its route names no limits. */
const NO_SIZE_LIMITS: SizeLimits = { maxArrayItems: Infinity, maxObjectKeys: Infinity };

export const DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024;

/**
 * A one-record write (a create, an update) whose body is over twice --max-record-size: the record
 * would be refused anyway, so its body is refused before it is read or parsed.
 */
export function recordBodyTooLarge(maxBytes: number): ApiError {
  return new ApiError(
    413,
    "payload_too_large",
    `The body of a one-record write is larger than ${maxBytes} bytes, twice the largest record this server stores (--max-record-size). Keep large content elsewhere and store a reference to it.`,
    { maxBytes },
    { Connection: "close" },
  );
}

export function payloadTooLarge(maxBytes: number): ApiError {
  return new ApiError(
    413,
    "payload_too_large",
    `The body is larger than ${maxBytes} bytes, the most this server accepts (--max-body). Send a batch as several requests of fewer records; keep one record's large content elsewhere and store a reference to it.`,
    { maxBytes },
    { Connection: "close" },
  );
}

/**
 * A request header by its lower-case name, read from rawHeaders: `req.headers` builds an object of
 * every header on first use, which a read by id would pay for one or two lookups. Repeated headers
 * are joined with ", " as node:http joins them.
 */
export function headerOf(req: IncomingMessage, name: string): string | undefined {
  const raw = req.rawHeaders;
  let value: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    if (!isHeaderName(raw[i]!, name)) continue;
    value = value === undefined ? raw[i + 1]! : `${value}, ${raw[i + 1]!}`;
  }
  return value;
}

/**
 * Whether a received header name is `lowerName` in any case, without building a lower-cased copy
 * (a read asks for five headers, each compared with every header sent). Setting bit 0x20 lowers an
 * ASCII letter; for the other characters of a lower-case name (digits, "-") it could only confuse
 * control characters, which node's parser never lets into a header name.
 */
function isHeaderName(received: string, lowerName: string): boolean {
  if (received.length !== lowerName.length) return false;
  for (let i = 0; i < received.length; i++) {
    if ((received.charCodeAt(i) | 0x20) !== lowerName.charCodeAt(i)) return false;
  }
  return true;
}

/** Whether a request says a body follows its head: a Content-Length over 0, or Transfer-Encoding. */
export function hasBody(req: IncomingMessage): boolean {
  const length = headerOf(req, "content-length");
  return length === undefined ? headerOf(req, "transfer-encoding") !== undefined : Number(length) > 0;
}

/** The body, at most `maxBytes`; over it, `tooLarge` (the --max-body refusal unless a route has its own). */
export function readBody(req: IncomingMessage, maxBytes: number, tooLarge: (maxBytes: number) => ApiError = payloadTooLarge): Promise<Buffer> {
  const declared = Number(headerOf(req, "content-length"));
  if (declared > maxBytes) return Promise.reject(tooLarge(maxBytes));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        req.off("data", onData);
        req.pause(); // stop buffering; the reply closes the connection
        reject(tooLarge(maxBytes));
        return;
      }
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.on("end", () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    // The client hung up before its body ended (node:http's "aborted"): a client's doing, never
    // logged as a server error, and answered to nobody.
    req.on("error", () => reject(invalidRequest("The connection closed before the body ended; send the whole body.")));
  });
}

/** The JSON value of a body; undefined when the body is empty. `orElse` names what else the route takes. */
export function parseJsonBody(req: IncomingMessage, bytes: Buffer, orElse?: string, limits: SizeLimits = NO_SIZE_LIMITS): unknown {
  if (bytes.length === 0) return undefined;
  const type = (headerOf(req, "content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json" && !/^application\/[a-z0-9.+-]+\+json$/.test(type)) {
    throw new ApiError(
      415,
      "unsupported_media_type",
      `The body is sent as ${type || "an unstated type"}; send JSON with the header Content-Type: application/json${orElse ? `, or ${orElse}` : ""}.`,
      { contentType: type || null },
    );
  }
  // toString would turn bytes that are not UTF-8 into U+FFFD, and the record would store them so.
  if (!isUtf8(bytes)) {
    const offset = invalidUtf8Offset(bytes);
    throw invalidJson(`The body is not UTF-8: byte ${offset} begins no valid character. Send JSON encoded as UTF-8.`, { offset });
  }
  const text = bytes.toString("utf8");
  const overreach = findOverreach(text, UNPARSED_FACTOR * limits.maxObjectKeys, UNPARSED_FACTOR * Math.max(limits.maxArrayItems, MAX_BATCH_RECORDS));
  if (overreach?.kind === "depth") {
    throw invalidJson(
      `The body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels (at position ${overreach.at}), the most this server accepts; flatten it.`,
      { maxDepth: MAX_JSON_DEPTH, position: overreach.at },
    );
  }
  if (overreach?.kind === "keys") {
    throw invalidJson(
      `The body holds an object of more than ${UNPARSED_FACTOR * limits.maxObjectKeys} keys (the one opening at position ${overreach.at}); a record's objects hold at most ${limits.maxObjectKeys} keys (--max-object-keys), so it is refused unread. Keep a long list in records of its own.`,
      { maxObjectKeys: limits.maxObjectKeys, position: overreach.at },
    );
  }
  if (overreach?.kind === "items") {
    throw invalidJson(
      `The body holds an array of more than ${UNPARSED_FACTOR * Math.max(limits.maxArrayItems, MAX_BATCH_RECORDS)} items (the one opening at position ${overreach.at}); a record's arrays hold at most ${limits.maxArrayItems} items (--max-array-items), so it is refused unread. Keep a long list in records of its own.`,
      { maxArrayItems: limits.maxArrayItems, position: overreach.at },
    );
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw invalidJson(`The body is not valid JSON (${(error as Error).message}).`);
  }
}

/**
 * Where the first ill-formed UTF-8 sequence starts (Unicode Table 3-7: no overlong forms, no
 * surrogates, nothing over U+10FFFF). Run only on a body isUtf8 has refused.
 */
function invalidUtf8Offset(bytes: Uint8Array): number {
  let at = 0;
  while (at < bytes.length) {
    const lead = bytes[at]!;
    if (lead < 0x80) {
      at++;
      continue;
    }
    const length = lead >= 0xc2 && lead <= 0xdf ? 2 : lead >= 0xe0 && lead <= 0xef ? 3 : lead >= 0xf0 && lead <= 0xf4 ? 4 : 0;
    if (length === 0) return at;
    // The second byte's range narrows after E0, ED, F0 and F4; the others are 80..BF.
    const low = lead === 0xe0 ? 0xa0 : lead === 0xf0 ? 0x90 : 0x80;
    const high = lead === 0xed ? 0x9f : lead === 0xf4 ? 0x8f : 0xbf;
    for (let next = 1; next < length; next++) {
      const byte = bytes[at + next];
      if (byte === undefined || byte < (next === 1 ? low : 0x80) || byte > (next === 1 ? high : 0xbf)) return at;
    }
    at += length;
  }
  return bytes.length;
}

/** The body of a write that needs one. */
export function requireBody(body: unknown, example: string): unknown {
  if (body === undefined) throw invalidJson(`This request needs a JSON body, such as ${example}.`);
  return body;
}

const BEARER_RE = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/** What a request presents: an API key, and a signed-in user's token (docs/users.md). */
export interface Credentials {
  readonly key: string | undefined;
  readonly token: string | undefined;
}

/**
 * The API key a request presents: `X-Api-Key`, or `Authorization: Bearer <key>` as the Base44 SDK
 * and most HTTP clients send it (docs/api.md); and a user's token, which comes as `Authorization:
 * Bearer <access_token>` (a JWT: three base64url parts) beside a publishable key or alone. Both
 * headers naming different keys is refused rather than one picked. Another Authorization scheme
 * (Basic, added by a proxy) is left alone.
 */
export function presentedCredentials(req: IncomingMessage): Credentials {
  const header = headerOf(req, "x-api-key")?.trim();
  const authorization = headerOf(req, "authorization");
  const bearer = authorization === undefined ? undefined : BEARER_RE.exec(authorization)?.[1];
  if (bearer === undefined) return { key: header, token: undefined };
  if (isUserToken(bearer)) return { key: header, token: bearer };
  if (header !== undefined && header !== bearer) {
    throw new ApiError(401, "unauthorized", "X-Api-Key and Authorization: Bearer name different keys; send one key, in either header.");
  }
  return { key: bearer, token: undefined };
}

/** The API key a request presents, where no user's token is taken (a user's token is no key). */
export function presentedApiKey(req: IncomingMessage): string | undefined {
  return presentedCredentials(req).key;
}

/** A user's token (a JWT, as auth/login answers it) rather than an API key: "eyJ…" and three parts. */
export function isUserToken(value: string): boolean {
  return value.startsWith("eyJ") && value.split(".").length === 3;
}
