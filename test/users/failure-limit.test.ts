// The failure limit (docs/users.md, "Limits"): so many failures per key in a sliding minute, in
// bounded memory. Time comes from an injected clock.

import { test } from "node:test";
import assert from "node:assert/strict";
import { FailureLimit } from "../../src/users/failure-limit.ts";

function clockAt(start: number): { now: () => number; advance: (ms: number) => void } {
  let time = start;
  return { now: () => time, advance: (ms) => (time += ms) };
}

test("ten failures in a minute make the key wait, at most a minute", () => {
  const clock = clockAt(1_000_000);
  const limit = new FailureLimit(10, clock.now);
  for (let i = 0; i < 9; i++) {
    limit.fail(["ada@example.com"]);
    clock.advance(1000);
  }
  assert.equal(limit.retryAfterMs(["ada@example.com"]), 0);
  limit.fail(["ada@example.com"]);
  const wait = limit.retryAfterMs(["ada@example.com"]);
  assert.ok(wait > 0 && wait <= 60_000, `waits ${wait} ms`);
  // The first failure was 9 s before the tenth: it leaves the window 51 s from now.
  assert.equal(wait, 51_000);
  assert.equal(limit.retryAfterMs(["bob@example.com"]), 0);
});

test("the window slides: each failure stops counting a minute after it", () => {
  const clock = clockAt(0);
  const limit = new FailureLimit(3, clock.now);
  const cases: [advanceMs: number, failsNow: boolean, expectedWait: number][] = [
    [0, true, 0], // failure at 0
    [10_000, true, 0], // at 10 s
    [10_000, true, 40_000], // at 20 s: three in the window, the one at 0 leaves at 60 s
    [39_999, false, 1],
    [1, false, 0], // 60 s: the failure at 0 has left
    [0, true, 10_000], // at 60 s: 10, 20, 60 → the one at 10 s leaves at 70 s
    [70_000, false, 0], // 130 s: all have left
  ];
  for (const [advanceMs, failsNow, expectedWait] of cases) {
    clock.advance(advanceMs);
    if (failsNow) limit.fail(["10.0.0.1"]);
    assert.equal(limit.retryAfterMs(["10.0.0.1"]), expectedWait, `at ${clock.now()} ms`);
  }
});

test("the worst of several keys decides the wait, and a failure counts for each key once", () => {
  const clock = clockAt(0);
  const limit = new FailureLimit(2, clock.now);
  limit.fail(["ada@example.com", "10.0.0.1", "10.0.0.1"]);
  assert.equal(limit.retryAfterMs(["10.0.0.1"]), 0);
  clock.advance(5000);
  limit.fail(["ada@example.com"]);
  clock.advance(5000);
  limit.fail(["10.0.0.1"]);
  assert.equal(limit.retryAfterMs(["ada@example.com"]), 50_000);
  assert.equal(limit.retryAfterMs(["10.0.0.1"]), 50_000);
  clock.advance(10_000);
  limit.fail(["10.0.0.1"]); // drops the failure at 0: 10 s and 20 s remain
  assert.equal(limit.retryAfterMs(["ada@example.com"]), 40_000); // 0 s and 5 s
  assert.equal(limit.retryAfterMs(["ada@example.com", "10.0.0.1"]), 50_000);
  assert.equal(limit.retryAfterMs([]), 0);
});

test("tries still running count as failures: a burst at once passes only as many as the minute allows", () => {
  const clock = clockAt(0);
  const limit = new FailureLimit(10, clock.now);
  let begun = 0;
  for (let i = 0; i < 60; i++) {
    if (limit.retryAfterMs(["ada@example.com", `10.0.0.${i}`]) > 0) continue;
    limit.begin(["ada@example.com", `10.0.0.${i}`]);
    begun++;
  }
  assert.equal(begun, 10);
  assert.equal(limit.retryAfterMs(["ada@example.com"]), 1000, "a running try ends soon: wait a second");
  // Nine fail and one succeeds: the one that succeeded frees its place; the nine count for the minute.
  for (let i = 0; i < 9; i++) limit.end(["ada@example.com", `10.0.0.${i}`], true);
  limit.end(["ada@example.com", "10.0.0.9"], false);
  assert.equal(limit.retryAfterMs(["ada@example.com"]), 0);
  limit.begin(["ada@example.com"]);
  assert.equal(limit.retryAfterMs(["ada@example.com"]), 1000);
  limit.end(["ada@example.com"], true);
  assert.equal(limit.retryAfterMs(["ada@example.com"]), 60_000);
  assert.equal(limit.retryAfterMs(["10.0.0.9"]), 0, "an address whose try succeeded owes nothing");
});

test("past maxKeys, the least recently failed key is forgotten", () => {
  const clock = clockAt(0);
  const limit = new FailureLimit(1, clock.now, 3);
  for (const name of ["a", "b", "c"]) limit.fail([name]);
  limit.fail(["a"]); // a is touched again, so b is now the oldest
  limit.fail(["d"]);
  assert.deepEqual(["a", "b", "c", "d"].map((name) => limit.retryAfterMs([name]) > 0), [true, false, true, true]);
  limit.fail(["e", "f"]);
  assert.deepEqual(["a", "c", "d", "e", "f"].map((name) => limit.retryAfterMs([name]) > 0), [false, false, true, true, true]);
});

test("a key keeps at most perMinute failures, however many there are", () => {
  const clock = clockAt(0);
  const limit = new FailureLimit(3, clock.now);
  for (let i = 0; i < 10_000; i++) limit.fail(["10.0.0.1"]);
  const kept = (limit as unknown as { failures: Map<string, number[]> }).failures.get("10.0.0.1");
  assert.equal(kept?.length, 3);
  clock.advance(60_000);
  assert.equal(limit.retryAfterMs(["10.0.0.1"]), 0);
});

test("a limit of less than one failure, or of no keys, is refused when made", () => {
  assert.throws(() => new FailureLimit(0), RangeError);
  assert.throws(() => new FailureLimit(1.5), RangeError);
  assert.throws(() => new FailureLimit(10, Date.now, 0), RangeError);
  assert.equal(new FailureLimit(10).retryAfterMs(["ada@example.com"]), 0);
});
