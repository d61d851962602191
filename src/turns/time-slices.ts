// Runs the memory store's long walks (a scan no index answers, an aggregate's visit of every match,
// an export's page) in slices of a few milliseconds, so that no request holds the one event loop
// for long, whatever its filter costs. A walk is a generator that yields when its slice is used
// up; it first runs at once, in the request's own turn, and a walk that needs more is queued with
// the loop's other costly work (loop-share.ts), one slice a turn (docs/query-language.md, "Limits").

import { invalidFilter } from "../errors.ts";
import type { Maybe } from "../maybe.ts";
import { enqueue } from "./loop-share.ts";

/** The first slice, run in the request's own turn: most walks end within it. */
export const FIRST_SLICE_MS = 0.5;
/** The work one walk may take in all, its slices added up, before it is refused. */
export const MAX_WALK_MS = 10_000;
/** Rows handled between two looks at the clock: a look costs about as much as testing a row. */
const ROWS_PER_LOOK = 16;

/** A walk's clock: tells the walk when to yield. */
export class Slice {
  private deadline = 0;
  private rows = 0;
  /** What earlier slices of this walk took, for MAX_WALK_MS. */
  spentMs = 0;
  private startedAt = 0;

  start(lengthMs: number): void {
    this.startedAt = performance.now();
    this.deadline = this.startedAt + lengthMs;
    this.rows = 0;
  }

  /** Called once per row: true when the walk must yield now. */
  isOver(): boolean {
    if (++this.rows < ROWS_PER_LOOK) return false;
    this.rows = 0;
    return performance.now() >= this.deadline;
  }

  /** How long the current slice has run. */
  elapsed(): number {
    return performance.now() - this.startedAt;
  }

  end(): void {
    this.spentMs += this.elapsed();
  }
}

/** A walk: yields (nothing) when its slice is over, returns its answer. */
export type Walk<T> = Generator<void, T, void>;

/**
 * The walk's answer: at once when it ends within its first slice (no promise, as the memory store
 * answers), else a promise settled once its slices, queued with the loop's other costly work
 * (loop-share.ts), have run it to the end.
 */
export function runInSlices<T>(makeWalk: (slice: Slice) => Walk<T>): Maybe<T> {
  const slice = new Slice();
  const walk = makeWalk(slice);
  slice.start(FIRST_SLICE_MS);
  let step: IteratorResult<void, T>;
  try {
    step = walk.next();
  } finally {
    slice.end();
  }
  if (step.done) return step.value;
  return new Promise<T>((resolve, reject) => {
    const runSlice = (sliceMs: number): void => {
      slice.start(sliceMs);
      try {
        const step = walk.next();
        if (step.done) resolve(step.value);
        else if (slice.spentMs + slice.elapsed() > MAX_WALK_MS) {
          walk.return(undefined as never);
          reject(tooLong());
        } else enqueue(runSlice);
      } catch (error) {
        reject(error);
      } finally {
        slice.end();
      }
    };
    enqueue(runSlice);
  });
}

/** Runs a walk to its end at once: for the checks a commit makes, which must see one moment. */
export function runToEnd<T>(walk: Walk<T>): T {
  for (;;) {
    const step = walk.next();
    if (step.done) return step.value;
  }
}

function tooLong() {
  return invalidFilter(
    `The request took more than ${MAX_WALK_MS / 1000} s of work over the records it had to read, so it was stopped. Narrow the filter with indexed fields or a more specific pattern (an anchored ^... $regex), or page through the records.`,
    { timeLimitMs: MAX_WALK_MS },
  );
}

/**
 * Rows from a live source (a Map's or Set's values, an index walk) until the walk first yields;
 * then the rest of them as they were at that moment, copied, so that a walk answers as of its
 * start whatever is written while it waits: rows are immutable versions, so the references are
 * the snapshot.
 */
export class PausableRows<R> {
  private rest: R[] | null = null;
  private at = 0;

  /** `live` may copy its own rest faster than one row at a time (an index walk: IndexWalk.rest). */
  constructor(private readonly live: Iterator<R> & { rest?(): R[] }) {}

  next(): R | undefined {
    if (this.rest !== null) return this.at < this.rest.length ? this.rest[this.at++] : undefined;
    const step = this.live.next();
    return step.done ? undefined : step.value;
  }

  /** The walk stops, at its end or early: the rows copied are let go. */
  stop(): void {
    this.rest = [];
    this.at = 0;
  }

  /** Call before yielding: the rest is read now, before any write can change the source. */
  freeze(): void {
    if (this.rest !== null) return;
    if (this.live.rest !== undefined) {
      this.rest = this.live.rest();
      return;
    }
    const rest: R[] = [];
    for (let step = this.live.next(); !step.done; step = this.live.next()) rest.push(step.value);
    this.rest = rest;
  }
}
