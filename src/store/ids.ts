// Record ids (CONTRACT §4): 24 lowercase hex = 12 hex digits of milliseconds + a 12-digit counter.
// Ids only grow, even when the clock steps back or after a restart (seeded with the largest id
// stored), so "later records have larger ids" holds and id order is creation order.

const COUNTER_LIMIT = 2 ** 48;

export class IdGenerator {
  private lastMs = 0;
  /** The first 12 digits of every id made in lastMs (a batch's ids all share them). */
  private lastMsHex = hex12(0);
  private counter = 0;

  constructor(largestId?: string) {
    if (largestId && /^[0-9a-f]{24}$/.test(largestId)) {
      this.setMs(parseInt(largestId.slice(0, 12), 16));
      this.counter = parseInt(largestId.slice(12), 16);
    }
  }

  next(now = Date.now()): string {
    if (now > this.lastMs) {
      this.setMs(now);
      this.counter = 0;
    } else if (++this.counter >= COUNTER_LIMIT) {
      this.setMs(this.lastMs + 1);
      this.counter = 0;
    }
    return this.lastMsHex + hex12(this.counter);
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
