// Record ids (docs/api.md): 24 lowercase hex = 12 hex digits of milliseconds + a 12-digit counter.
// Ids only grow, even when the clock steps back or after a restart (seeded with the largest id
// stored, looked up when the first id is made: a start-up need not find it), so "later records have larger ids" holds and id order is creation order.
//
// Processes that share a store (PostgreSQL) each hold a node number (Store.idNode): their ids are
// the milliseconds, 4 hex digits of the node and an 8-digit counter, so two processes never make
// the same id, and ids from every process still sort by time (to the millisecond, as far as their
// clocks agree).

const NODE_DIGITS = 4;

export class IdGenerator {
  private lastMs = 0;
  /** The first 12 digits of every id made in lastMs (a batch's ids all share them). */
  private lastMsHex = hex12(0);
  private counter = 0;
  /** The digits between time and counter: the node's, or none. */
  private readonly nodeHex: string;
  private readonly counterDigits: number;
  private readonly counterLimit: number;

  /** `largestId` answers the largest id stored; it is asked once, before the first id is made. */
  constructor(
    private largestId: (() => string | undefined) | null = null,
    node: number | null = null,
  ) {
    this.nodeHex = node === null ? "" : (node % 16 ** NODE_DIGITS).toString(16).padStart(NODE_DIGITS, "0");
    this.counterDigits = 12 - this.nodeHex.length;
    this.counterLimit = 16 ** this.counterDigits;
  }

  private seed(largestId: string | undefined): void {
    if (largestId && /^[0-9a-f]{24}$/.test(largestId)) {
      this.setMs(parseInt(largestId.slice(0, 12), 16));
      // Another node's counter says nothing about ours; the time alone keeps ours growing.
      if (largestId.slice(12, 12 + this.nodeHex.length) === this.nodeHex) this.counter = parseInt(largestId.slice(12 + this.nodeHex.length), 16);
    }
  }

  next(now = Date.now()): string {
    if (this.largestId !== null) {
      this.seed(this.largestId());
      this.largestId = null;
    }
    if (now > this.lastMs) {
      this.setMs(now);
      this.counter = 0;
    } else if (++this.counter >= this.counterLimit) {
      this.setMs(this.lastMs + 1);
      this.counter = 0;
    }
    return this.lastMsHex + this.nodeHex + this.counter.toString(16).padStart(this.counterDigits, "0");
  }

  /** The time the last id made carries: its record's creation time. */
  get lastTime(): number {
    return this.lastMs;
  }

  private setMs(ms: number): void {
    this.lastMs = ms;
    this.lastMsHex = hex12(ms);
  }
}

function hex12(value: number): string {
  return value.toString(16).padStart(12, "0");
}
