// How the one event loop is shared between cheap requests and costly work (docs/operating.md,
// "A public server's budget"). Every stretch of a request's work that runs at once (its turn when it
// arrives, its answer once a promise settles) is measured: one under CHEAP_MS is cheap work, one
// longer is costly work and is charged. Costly work that goes on past that (a long walk's slices,
// an export's pages, a change feed's catch-up) waits in one queue and runs a task per turn of the
// event loop. While no cheap request comes it runs at full speed; while they come it runs on
// credit: the loop's idle time is costly work's, and of its busy time cheap work earns costly work
// COSTLY_SHARE, what costly work took at once counted against it. A connection
// whose last request took GATE_MS or more at once has its next request wait for a turn too
// (server.ts), so that a client sending only costly requests gets no more than its share either.
// So a client reading records by id keeps most of the loop however many costly requests are in
// flight, and costly work has all of it when no one else wants it.

/** A stretch of work shorter than this is cheap: a read by id, a small write, an indexed page. */
export const CHEAP_MS = 0.25;
/** While cheap requests keep the loop busy, costly work gets this much of the time they take: about an eighth of it. */
export const COSTLY_SHARE = 0.15;
/** The shortest and longest slice a queued task is given in one turn of the event loop. */
export const MIN_SLICE_MS = 0.1;
export const MAX_SLICE_MS = 10;
/** The longest slice while cheap requests flow: each of them waits for at most about this long. */
export const FLOWING_SLICE_MS = 0.25;
/** A request that took this long at once makes the next one on its connection wait for a turn. */
export const GATE_MS = 2;
/** Cheap requests are still flowing this long after the last one. */
const FLOWING_MS = 20;
/** However much cheap work flows, the queue gets a slice at least this often. */
const STARVED_MS = 50;

/** A queued task: runs for about `sliceMs` (or just resumes a promise) within one turn. */
export type Task = (sliceMs: number) => void;

const queue: Task[] = [];
const firsts: Task[] = [];
let isTurnScheduled = false;
/** What queued tasks may still spend, in ms; below zero once costly work ran ahead of its share. */
let credit = 0;
/** Costly work done at once, and cheap stretches handled, since the last turn. */
let chargedMs = 0;
let cheapStretches = 0;
let lastTurnEndedAt = 0;
let lastTaskRanAt = 0;
let isInTurn = false;
let lastCheapAt = -Infinity;
let lastIdle = 0;
let fallback: NodeJS.Timeout | null = null;
/** Requests that have come since the start (requestsCome). */
let requests = 0;

/**
 * A stretch of a request's work that began at `startedAt` has ended: counted as cheap work, or
 * charged as costly (within a queued task, the turn is measured whole). Answers whether it took
 * GATE_MS or more: the next request on its connection is to wait for a turn (enqueueFirst).
 */
export function settle(startedAt: number): boolean {
  const ms = performance.now() - startedAt;
  if (!isInTurn) {
    if (ms < CHEAP_MS) cheapStretches++;
    else chargedMs += ms;
    if (!isTurnScheduled && (queue.length > 0 || firsts.length > 0)) scheduleTurn();
  }
  return ms >= GATE_MS;
}

/** A cheap stretch too short to be worth timing (a read by id answered from its cached view). */
export function countCheap(): void {
  cheapStretches++;
}

/** A request has come (server.ts counts each as it dispatches it). */
export function countRequest(): void {
  requests++;
}

/**
 * How many requests have come: what blocking the loop for a moment would cost others is told by
 * how many came since the last such moment (store/file/wal.ts).
 */
export function requestsCome(): number {
  return requests;
}

/** Charges costly work done outside the queue's turns. */
export function charge(ms: number): void {
  chargedMs += ms;
}

/** Queues a task for a turn of its own, after the cheap work waiting. */
export function enqueue(task: Task): void {
  queue.push(task);
  scheduleTurn();
}

/**
 * Queues a request's dispatch for the next turn with credit, ahead of the queued slices: a request
 * whose connection's last one was costly waits until costly work is back within its share.
 */
export function enqueueFirst(task: Task): void {
  firsts.push(task);
  scheduleTurn();
}

function scheduleTurn(): void {
  if (isTurnScheduled) return;
  isTurnScheduled = true;
  // setImmediate runs after the loop's I/O: the requests read meanwhile go first.
  setImmediate(runTurn);
}

function runTurn(): void {
  isTurnScheduled = false;
  if (queue.length === 0 && firsts.length === 0) return;
  const now = performance.now();
  // The loop's idle time (waiting for I/O) is costly work's; of the busy time, cheap work earns it
  // its share, and a stretch in which no cheap request came was theirs alone.
  const { idle } = performance.eventLoopUtilization();
  const idleMs = Math.min(idle - lastIdle, now - lastTurnEndedAt);
  lastIdle = idle;
  const busyMs = Math.max(0, now - lastTurnEndedAt - idleMs - chargedMs);
  credit += idleMs + (cheapStretches > 0 ? COSTLY_SHARE * busyMs : busyMs) - chargedMs;
  // Debt is bounded too: one long stretch (a big body parsed) must not stall the queue for long.
  credit = Math.min(Math.max(credit, -MAX_SLICE_MS), MAX_SLICE_MS);
  const isFlowing = cheapStretches > 0 || now - lastCheapAt < FLOWING_MS;
  if (cheapStretches > 0) lastCheapAt = now;
  chargedMs = 0;
  cheapStretches = 0;
  // With no cheap request flowing, nobody else wants the loop: costly work runs without waiting to
  // earn it (waiting would leave the loop idle half the time, and the work twice as slow).
  if (isFlowing && credit < MIN_SLICE_MS && now - lastTaskRanAt < STARVED_MS) {
    lastTurnEndedAt = now;
    // Not by setImmediate, which would spin the loop instead of letting it wait for I/O: the next
    // cheap stretch asks for a turn (settle), and when none comes the loop was idle, which the
    // next turn counts.
    isTurnScheduled = false;
    fallback ??= setTimeout(() => {
      fallback = null;
      scheduleTurn();
    }, 1);
    return;
  }
  const task = firsts.shift() ?? queue.shift()!;
  isInTurn = true;
  try {
    task(isFlowing ? Math.max(MIN_SLICE_MS, Math.min(credit, FLOWING_SLICE_MS)) : MAX_SLICE_MS);
  } finally {
    isInTurn = false;
    const endedAt = performance.now();
    credit = Math.max(credit, 0) - (endedAt - now);
    lastTaskRanAt = lastTurnEndedAt = endedAt;
    if (queue.length > 0 || firsts.length > 0) scheduleTurn();
  }
}

/**
 * The turns of one long piece of costly work that is not a walk (an export's pages, a feed's
 * catch-up): `next()` charges the work done since its last turn and waits for a new one, `idle()`
 * waits for something else uncharged, and `end()` charges the last stretch.
 */
export class Turns {
  private resumedAt = performance.now();

  async next(): Promise<void> {
    charge(performance.now() - this.resumedAt);
    await new Promise<void>((resolve) => enqueue(() => resolve()));
    this.resumedAt = performance.now();
  }

  /** Waits for something else (a socket to drain, a database): the wait is not charged. */
  async idle<T>(waited: Promise<T> | T): Promise<T> {
    charge(performance.now() - this.resumedAt);
    try {
      return await waited;
    } finally {
      this.resumedAt = performance.now();
    }
  }

  end(): void {
    charge(performance.now() - this.resumedAt);
  }
}
