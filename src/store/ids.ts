// Record ids (CONTRACT §4): 24 lowercase hex = 12 hex digits of milliseconds + a 12-digit counter.
// Ids only grow, even when the clock steps back or after a restart (seeded with the largest id
// stored), so "later records have larger ids" holds and id order is creation order.

const COUNTER_LIMIT = 2 ** 48;

export class IdGenerator {
  private lastMs = 0;
  private counter = 0;

  constructor(largestId?: string) {
    if (largestId && /^[0-9a-f]{24}$/.test(largestId)) {
      this.lastMs = parseInt(largestId.slice(0, 12), 16);
      this.counter = parseInt(largestId.slice(12), 16);
    }
  }

  next(now = Date.now()): string {
    if (now > this.lastMs) {
      this.lastMs = now;
      this.counter = 0;
    } else if (++this.counter >= COUNTER_LIMIT) {
      this.lastMs++;
      this.counter = 0;
    }
    return this.lastMs.toString(16).padStart(12, "0") + this.counter.toString(16).padStart(12, "0");
  }
}

/** The creation time an id carries. */
export function timeOfId(id: string): number {
  return parseInt(id.slice(0, 12), 16);
}
