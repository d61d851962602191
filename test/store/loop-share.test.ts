// The loop's share between cheap requests and costly work (src/turns/loop-share.ts,
// docs/operating.md "Cheap requests go first"): costly work has the whole loop when nothing else
// wants it, and short slices while cheap requests come.

import { test } from "node:test";
import assert from "node:assert/strict";
import { enqueue, FLOWING_SLICE_MS, MAX_SLICE_MS, settle } from "../../src/turns/loop-share.ts";

/** Runs `turns` queued turns of a task that works `workMs` each; answers the slice each was given. */
function runTurns(turns: number, workMs: number, beforeEach: () => void = () => {}): Promise<number[]> {
  const slices: number[] = [];
  return new Promise((resolve) => {
    const task = (sliceMs: number) => {
      slices.push(sliceMs);
      const until = performance.now() + workMs;
      while (performance.now() < until);
      if (slices.length === turns) return resolve(slices);
      beforeEach();
      enqueue(task);
    };
    beforeEach();
    enqueue(task);
  });
}

test("with no cheap request coming, costly work gets the longest slice turn after turn, never waiting to earn it", async () => {
  // Each turn works 3 ms: had the queue to earn its time from the loop's idle time, as it must
  // while cheap requests come, it would get less than the longest slice from the second turn on.
  const slices = await runTurns(10, 3);
  assert.deepEqual(slices, Array(10).fill(MAX_SLICE_MS));
});

test("while cheap requests come, costly work gets short slices", async () => {
  // A cheap stretch (a read by id) settled before each turn.
  const slices = await runTurns(10, 0.05, () => void settle(performance.now()));
  assert.ok(slices.every((ms) => ms <= FLOWING_SLICE_MS), `slices ${slices.join(", ")}`);
});
