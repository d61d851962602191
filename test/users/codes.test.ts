// One-time codes (docs/users.md, "Codes"): six digits, used once, five tries, ten minutes.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { checkCode, CODE_TRIES, CODE_TTL_MS, newCode, sha256Hex, type PendingCode } from "../../src/users/codes.ts";

const NOW = 1_800_000_000_000;

/** A pending code whose code is known, for offers that need to be wrong on purpose. */
function pendingFor(code: string, triesLeft = CODE_TRIES): PendingCode {
  return { sha256: sha256Hex(code), expiresAt: NOW + CODE_TTL_MS, triesLeft };
}

test("a new code is six digits, kept only as its SHA-256, for ten minutes and five tries", () => {
  for (let i = 0; i < 200; i++) {
    const { code, pending } = newCode(NOW);
    assert.match(code, /^[0-9]{6}$/);
    assert.deepEqual(pending, { sha256: createHash("sha256").update(code).digest("hex"), expiresAt: NOW + CODE_TTL_MS, triesLeft: 5 });
    assert.ok(!JSON.stringify(pending).includes(code));
  }
});

test("the right code is accepted once: nothing is left to accept again", () => {
  const { code, pending } = newCode(NOW);
  const first = checkCode(pending, code, NOW + 1000);
  assert.deepEqual(first, { outcome: "accepted", next: null });
  assert.deepEqual(checkCode(first.next, code, NOW + 2000), { outcome: "none", next: null });
});

test("offers are read as a trimmed string of six digits, and never as a JSON number", () => {
  const pending = pendingFor("012345");
  const cases: [unknown, string][] = [
    ["012345", "accepted"],
    [" 012345\n", "accepted"],
    ["12345", "wrong"],
    [12345, "wrong"],
    [12_345.0, "wrong"],
    ["0123456", "wrong"],
    ["01234a", "wrong"],
    ["０１２３４５", "wrong"],
    ["012 345", "wrong"],
    [null, "wrong"],
    [undefined, "wrong"],
    [["012345"], "wrong"],
    [{ code: "012345" }, "wrong"],
    ["", "wrong"],
  ];
  for (const [offered, outcome] of cases) assert.equal(checkCode(pending, offered, NOW).outcome, outcome, JSON.stringify(offered));
});

test("each wrong offer takes one try; after five, nothing is left, and a used-up code refuses even the right one", () => {
  const code = "424242";
  let pending: PendingCode | null = pendingFor(code);
  for (let tried = 1; tried <= CODE_TRIES; tried++) {
    const check = checkCode(pending, "000000", NOW);
    assert.equal(check.outcome, "wrong");
    assert.deepEqual(check.next, tried < CODE_TRIES ? { ...pendingFor(code), triesLeft: CODE_TRIES - tried } : null);
    pending = check.next;
  }
  assert.deepEqual(checkCode(pending, code, NOW), { outcome: "none", next: null });
  assert.deepEqual(checkCode(pendingFor(code, 0), code, NOW), { outcome: "used-up", next: null });
  assert.equal(checkCode(pendingFor(code, 1), code, NOW).outcome, "accepted");
});

test("a code expires at its expiresAt, even when offered right", () => {
  const { code, pending } = newCode(NOW);
  assert.equal(checkCode(pending, code, NOW + CODE_TTL_MS - 1).outcome, "accepted");
  assert.deepEqual(checkCode(pending, code, NOW + CODE_TTL_MS), { outcome: "expired", next: null });
  assert.deepEqual(checkCode(pending, "000000", NOW + CODE_TTL_MS + 1), { outcome: "expired", next: null });
});

test("nothing pending answers none", () => {
  assert.deepEqual(checkCode(undefined, "123456", NOW), { outcome: "none", next: null });
  assert.deepEqual(checkCode(null, "123456", NOW), { outcome: "none", next: null });
});

test("a pending code survives a round trip through JSON", () => {
  const { code, pending } = newCode(NOW);
  assert.equal(checkCode(JSON.parse(JSON.stringify(pending)), code, NOW).outcome, "accepted");
});

test("sha256Hex is the hex SHA-256 of the text", () => {
  assert.equal(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
});
