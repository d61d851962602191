// Counts failed sign-ins and wrong codes per email or client address over a sliding minute
// (docs/users.md, "Limits"), and says how long to wait. Answering 429 is the caller's.

const WINDOW_MS = 60_000;

export class FailureLimit {
  /** Times of the failures in the window, oldest first; the Map's order is least recently failed first. */
  private readonly failures = new Map<string, number[]>();

  constructor(
    private readonly perMinute: number,
    private readonly now: () => number = Date.now,
    private readonly maxKeys = 100_000,
  ) {
    if (!Number.isInteger(perMinute) || perMinute < 1) throw new RangeError(`FailureLimit: perMinute must be a whole number of at least 1, not ${perMinute}.`);
    if (!Number.isInteger(maxKeys) || maxKeys < 1) throw new RangeError(`FailureLimit: maxKeys must be a whole number of at least 1, not ${maxKeys}.`);
  }

  /** 0 when every key may try again now; else the milliseconds the most limited one must wait. */
  retryAfterMs(keys: readonly string[]): number {
    const now = this.now();
    let wait = 0;
    for (const key of keys) {
      const times = this.recent(key, now);
      // At most perMinute times are kept, so the oldest leaving the window frees one try.
      if (times.length >= this.perMinute) wait = Math.max(wait, Math.min(times[0]! + WINDOW_MS - now, WINDOW_MS));
    }
    return wait;
  }

  fail(keys: readonly string[]): void {
    const now = this.now();
    for (const key of new Set(keys)) {
      const times = this.recent(key, now);
      times.push(now);
      if (times.length > this.perMinute) times.shift();
      // Set again at the end, so that the first entry is always the least recently failed.
      this.failures.delete(key);
      this.failures.set(key, times);
    }
    for (const oldest of this.failures.keys()) {
      if (this.failures.size <= this.maxKeys) break;
      this.failures.delete(oldest);
    }
  }

  /** After a success: the failures before it no longer count. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** The key's failures still in the window, dropping the older ones (and the key, when none is left). */
  private recent(key: string, now: number): number[] {
    const times = this.failures.get(key);
    if (times === undefined) return [];
    while (times.length > 0 && times[0]! <= now - WINDOW_MS) times.shift();
    if (times.length === 0) this.failures.delete(key);
    return times;
  }
}
