// Session tokens (docs/users.md, "Sessions"): HS256 JWTs that round-trip, and every other input
// answered with a problem, never thrown.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac, randomBytes } from "node:crypto";
import { newSigningSecret, secretBytes, signToken, verifyToken, type TokenClaims } from "../../src/users/tokens.ts";

const secret = secretBytes(newSigningSecret());
const NOW = 1_800_000_000;
const claims: TokenClaims = { sub: "u_1", email: "ada@example.com", role: "user", sid: "s_1", iat: NOW, exp: NOW + 3600 };

const encode = (value: unknown) => Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");

/** A token of any header and payload, signed with HS256 as signToken would. */
function handMade(header: unknown, payload: unknown, key = secret): string {
  const signed = `${encode(header)}.${encode(payload)}`;
  return `${signed}.${createHmac("sha256", key).update(signed).digest("base64url")}`;
}

test("a signed token verifies to its claims, with the fixed header", () => {
  const token = signToken(claims, secret);
  assert.equal(Buffer.from(token.split(".")[0]!, "base64url").toString(), '{"alg":"HS256","typ":"JWT"}');
  assert.deepEqual(verifyToken(token, secret, NOW), claims);
});

test("only the known claims are signed and answered", () => {
  const token = signToken({ ...claims, admin: true } as TokenClaims, secret);
  assert.deepEqual(verifyToken(token, secret, NOW), claims);
  assert.deepEqual(verifyToken(handMade({ alg: "HS256" }, { ...claims, admin: true }), secret, NOW), claims);
});

test("each altered or foreign token gets its problem", () => {
  const token = signToken(claims, secret);
  const [header, , signature] = token.split(".");
  const cases: [string, string, string][] = [
    ["a changed payload", `${header}.${encode({ ...claims, role: "admin" })}.${signature}`, "signature"],
    ["another secret", signToken(claims, randomBytes(32)), "signature"],
    ["a signature's last character changed", token.slice(0, -1) + (token.endsWith("A") ? "B" : "A"), "signature"],
    ["no signature", `${header}.${token.split(".")[1]}.`, "signature"],
    ["alg none, unsigned", `${encode({ alg: "none", typ: "JWT" })}.${encode(claims)}.`, "algorithm"],
    ["alg none, signed", handMade({ alg: "none" }, claims), "algorithm"],
    ["alg HS512", handMade({ alg: "HS512", typ: "JWT" }, claims), "algorithm"],
    ["alg hs256", handMade({ alg: "hs256" }, claims), "algorithm"],
    ["no alg", handMade({ typ: "JWT" }, claims), "algorithm"],
    ["a header that is an array", handMade(["HS256"], claims), "malformed"],
    ["a header that is not JSON", handMade("{alg:HS256}", claims), "malformed"],
    ["a payload that is not JSON", handMade({ alg: "HS256" }, "not json"), "malformed"],
    ["a payload that is null", handMade({ alg: "HS256" }, null), "malformed"],
    ["a payload that is an array", handMade({ alg: "HS256" }, [claims]), "malformed"],
    ["exp as a string", handMade({ alg: "HS256" }, { ...claims, exp: String(NOW + 60) }), "malformed"],
    ["no sid", handMade({ alg: "HS256" }, { ...claims, sid: undefined }), "malformed"],
    ["sub a number", handMade({ alg: "HS256" }, { ...claims, sub: 1 }), "malformed"],
    ["padding", `${token}=`, "malformed"],
    ["four parts", `${token}.x`, "malformed"],
    ["two parts", token.split(".").slice(0, 2).join("."), "malformed"],
    ["empty", "", "malformed"],
  ];
  for (const [what, input, expected] of cases) assert.equal(verifyToken(input, secret, NOW), expected, what);
});

test("a token is expired from its exp second on", () => {
  const token = signToken(claims, secret);
  assert.deepEqual(verifyToken(token, secret, claims.exp - 1), claims);
  assert.equal(verifyToken(token, secret, claims.exp), "expired");
  assert.equal(verifyToken(token, secret, claims.exp + 86_400), "expired");
});

test("garbage, truncated and huge tokens answer malformed or signature, and never throw", () => {
  const token = signToken(claims, secret);
  const inputs: unknown[] = [
    ...Array.from({ length: token.length }, (_, i) => token.slice(0, i)),
    ...Array.from({ length: 300 }, () => randomBytes(1 + Math.floor(Math.random() * 200)).toString("latin1")),
    ...Array.from({ length: 300 }, () => [0, 1, 2].map(() => randomBytes(Math.floor(Math.random() * 60)).toString("base64url")).join(".")),
    "a".repeat(10_000_000),
    `${token.split(".")[0]}.${"A".repeat(1_000_000)}.x`,
    ".".repeat(100_000),
    "\u0000.\u0000.\u0000",
    null,
    undefined,
    42,
    {},
  ];
  for (const input of inputs) {
    const answer = verifyToken(input as string, secret, NOW);
    assert.ok(answer === "malformed" || answer === "signature" || answer === "algorithm", `${String(input).slice(0, 40)} gave ${String(answer)}`);
  }
  // Without a valid header, or with too many characters, nothing is checked further.
  assert.equal(verifyToken("a".repeat(10_000_000), secret, NOW), "malformed");
  assert.equal(verifyToken(token.slice(0, token.indexOf(".")), secret, NOW), "malformed");
  assert.equal(verifyToken(`${token}${"A".repeat(10_000)}`, secret, NOW), "malformed");
});

test("a kept secret is 32 random bytes of base64url, and a short or garbled one is refused", () => {
  const kept = newSigningSecret();
  assert.match(kept, /^[A-Za-z0-9_-]{43}$/);
  assert.notEqual(kept, newSigningSecret());
  assert.equal(secretBytes(kept).length, 32);
  assert.equal(secretBytes(kept).toString("base64url"), kept);
  assert.throws(() => secretBytes("short"), /at least 32 bytes/);
  assert.throws(() => secretBytes(`${kept}!`), /base64url/);
});
