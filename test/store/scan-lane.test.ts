import { test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { CONTENDED_SHARE, ScanLane } from "../../src/store/postgres/scan-lane.ts";

/** Runs `count` statements of `ms` each through the lane at once; answers how many ran together at most, and the time all took. */
async function runMany(lane: ScanLane, count: number, ms: number): Promise<{ mostAtOnce: number; tookMs: number }> {
  let running = 0;
  let mostAtOnce = 0;
  const startedAt = performance.now();
  await Promise.all(
    Array.from({ length: count }, () =>
      lane.run(async () => {
        mostAtOnce = Math.max(mostAtOnce, ++running);
        await sleep(ms);
        running--;
      }),
    ),
  );
  return { mostAtOnce, tookMs: performance.now() - startedAt };
}

test("with no cheap work waiting, the lane runs as many statements at once as it is wide", async () => {
  const { mostAtOnce } = await runMany(new ScanLane(3, () => false), 9, 20);
  assert.equal(mostAtOnce, 3);
});

test("while cheap work flows, one statement at a time, and the lane rests between them", async () => {
  const { mostAtOnce, tookMs } = await runMany(new ScanLane(7, () => true), 4, 30);
  assert.equal(mostAtOnce, 1);
  // Four statements of 30 ms, each but the last followed by a pause of (1 - share) / share of it.
  const floor = 4 * 30 + (3 * 30 * (1 - CONTENDED_SHARE)) / CONTENDED_SHARE;
  assert.ok(tookMs >= floor * 0.9, `took ${tookMs} ms, expected at least ${floor}`);
});

test("the lane widens again once cheap work stops", async () => {
  let isContended = true;
  const lane = new ScanLane(4, () => isContended);
  const first = runMany(lane, 8, 20);
  await sleep(30);
  isContended = false;
  const { mostAtOnce } = await first;
  assert.equal(mostAtOnce, 4);
});

test("by default the lane narrows for a while after a cheap statement", async () => {
  const lane = new ScanLane(4);
  assert.equal((await runMany(lane, 8, 10)).mostAtOnce, 4);
  lane.noteCheap();
  const release = await lane.enter();
  let isSecondIn = false;
  const second = lane.enter().then((r) => {
    isSecondIn = true;
    return r;
  });
  await sleep(5);
  assert.equal(isSecondIn, false, "a second statement ran beside the first while cheap ones came");
  release();
  (await second)();
});

test("a place given back twice is given back once", async () => {
  const lane = new ScanLane(1, () => false);
  const release = await lane.enter();
  release();
  release();
  const second = await lane.enter();
  let isThirdIn = false;
  const third = lane.enter().then((r) => {
    isThirdIn = true;
    return r;
  });
  await sleep(10);
  assert.equal(isThirdIn, false, "the lane of one let a second statement in");
  second();
  (await third)();
});

test("a held place (an export whose client has stopped reading) keeps its connection, not the turn", async () => {
  const lane = new ScanLane(2, () => true);
  const held = await lane.hold();
  assert.equal(await held.run(async () => "first page"), "first page");
  // While cheap work flows the lane is one statement wide, and the holder is not running one.
  const started = performance.now();
  const { mostAtOnce } = await runMany(lane, 2, 5);
  assert.equal(mostAtOnce, 1);
  assert.ok(performance.now() - started < 1000, "statements waited for the holder's client");
  // The holder's next page waits for its turn like any statement, and gets it.
  assert.equal(await held.run(async () => "second page"), "second page");
  held.release();
});

test("held places count against the lane's connections: past them a statement waits until one is given back", async () => {
  const lane = new ScanLane(2, () => false);
  const first = await lane.hold();
  const second = await lane.hold();
  let isStatementIn = false;
  const statement = lane.run(async () => (isStatementIn = true));
  await sleep(10);
  assert.equal(isStatementIn, false, "a third connection was used beside two held");
  // A holder's own statements still run: it has its connection.
  assert.equal(await first.run(async () => 1), 1);
  second.release();
  second.release();
  await statement;
  assert.equal(isStatementIn, true);
  first.release();
  // Given back once each: two places again, not three.
  const [a, b] = [await lane.hold(), await lane.hold()];
  let isThirdIn = false;
  const third = lane.hold().then((place) => ((isThirdIn = true), place));
  await sleep(10);
  assert.equal(isThirdIn, false);
  a.release();
  (await third).release();
  b.release();
});
