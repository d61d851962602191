// The change feed's window in memory (docs/change-feed.md): the last `keep` events, in commit order, each
// holding the version it wrote. The memory and file stores add an event for every row they apply;
// an event may be read once its batch is durable (markDurable), and only then can it leave the
// window, so a batch taken back out for lack of space (rollBack) was never seen by anyone.

import { compareFeedPositions, FEED_START, isAfter, positionOf, type FeedEvent, type FeedPosition, type FeedRead } from "../store.ts";

/** Events dropped from the front are spliced out in one go once this many have gathered. */
const SPLICE_AT = 4096;

export class ChangeWindow {
  private events: FeedEvent[] = [];
  /** events[start] is the oldest kept; those before it are dropped and wait for one splice. */
  private start = 0;
  /** Events of batches up to this seq are durable and may be read. */
  private durableSeq = 0;
  private lastDurable: FeedPosition = FEED_START;
  /** The newest event no longer kept (or FEED_START): every event after it is here. */
  private dropped: FeedPosition = FEED_START;
  private trimScheduled = false;

  constructor(readonly keep: number) {}

  get horizon(): FeedPosition {
    return this.dropped;
  }

  /** The newest readable event. */
  get head(): FeedPosition {
    return this.lastDurable;
  }

  get oldest(): FeedPosition | null {
    const first = this.events[this.start];
    return first && first.row.seq! <= this.durableSeq ? positionOf(first.row) : null;
  }

  /** The newest event added, durable or not: positions past it were never issued. */
  get newest(): FeedPosition {
    const last = this.events.at(-1);
    return last ? positionOf(last.row) : this.lastDurable;
  }

  /** Events come in commit order: each after every event added before it. */
  add(event: FeedEvent): void {
    this.events.push(event);
  }

  /** Events loaded from a snapshot, with the horizon it recorded. */
  restore(events: readonly FeedEvent[], horizon: FeedPosition): void {
    this.events = [...events];
    this.start = 0;
    this.dropped = horizon;
  }

  /**
   * The batches up to `seq` are durable: their events may be read, and the oldest may leave, in a
   * later turn of the event loop: the listeners told of the commit read the new events first (the
   * change feed's hub reads them in the promise jobs that follow), however many a batch wrote.
   */
  markDurable(seq: number): void {
    if (seq <= this.durableSeq) return;
    this.durableSeq = seq;
    for (let i = this.events.length - 1; i >= this.start; i--) {
      const row = this.events[i]!.row;
      if (row.seq! <= seq) {
        if (compareFeedPositions(positionOf(row), this.lastDurable) > 0) this.lastDurable = positionOf(row);
        break;
      }
    }
    if (!this.trimScheduled) {
      this.trimScheduled = true;
      setImmediate(() => {
        this.trimScheduled = false;
        this.trim();
      });
    }
  }

  /** Drops what is over `keep` now (loading: nobody reads yet). */
  trimNow(): void {
    this.trim();
  }

  /** Takes back the events of batches from `seq` on (never durable, never read). */
  rollBack(seq: number): void {
    while (this.events.length > this.start && this.events.at(-1)!.row.seq! >= seq) this.events.pop();
  }

  /** Forgets every event (a reset): a resume from before it catches up from what is stored. */
  clear(): void {
    this.dropped = this.newest;
    this.events = [];
    this.start = 0;
  }

  /** Kept events before `seq`, oldest first (what a snapshot covering them keeps). */
  eventsBefore(seq: number): FeedEvent[] {
    const out: FeedEvent[] = [];
    for (let i = this.start; i < this.events.length && this.events[i]!.row.seq! < seq; i++) out.push(this.events[i]!);
    return out;
  }

  read(after: FeedPosition, entities: ReadonlySet<string> | null, limit: number): FeedRead {
    const out: FeedEvent[] = [];
    let through = after;
    for (let i = this.firstAfter(after); i < this.events.length && out.length < limit; i++) {
      const event = this.events[i]!;
      if (event.row.seq! > this.durableSeq) break;
      through = positionOf(event.row);
      if (entities === null || entities.has(event.entity)) out.push(event);
    }
    return { events: out, through };
  }

  /** The index of the first kept event after `after` (binary search: positions only grow). */
  private firstAfter(after: FeedPosition): number {
    let low = this.start;
    let high = this.events.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (isAfter(this.events[middle]!.row, after)) high = middle;
      else low = middle + 1;
    }
    return low;
  }

  private trim(): void {
    while (this.events.length - this.start > this.keep && this.events[this.start]!.row.seq! <= this.durableSeq) {
      this.dropped = positionOf(this.events[this.start]!.row);
      this.events[this.start++] = undefined as unknown as FeedEvent;
    }
    if (this.start >= SPLICE_AT && this.start * 2 >= this.events.length) {
      this.events = this.events.slice(this.start);
      this.start = 0;
    }
  }
}
