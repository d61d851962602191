// Counts failed sign-ins and wrong codes per email or client address over a sliding minute
// (docs/users.md, "Limits"), and says how long to wait. Answering 429 is the caller's.

const WINDOW_MS = 60_000;
/** The wait named while tries still running, not failures, fill a key's minute. */
const RUNNING_WAIT_MS = 1000;

export class FailureLimit {
  /** Times of the failures in the window, oldest first; the Map's order is least recently failed first. */
  private readonly failures = new Map<string, number[]>();
  /**
   * Tries begun and not yet ended, per key: each counts as a failure until it ends. Without them a
   * burst of tries at once (a password hash takes tens of milliseconds each) all passed the check
   * before the first had failed: sixty sign-ins at once were sixty guesses, not ten.
   */
  private readonly running = new Map<string, number>();

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
      // Tries still running fill the rest: the first to end, within a second or so, decides.
      else if (times.length + (this.running.get(key) ?? 0) >= this.perMinute) wait = Math.max(wait, RUNNING_WAIT_MS);
    }
    return wait;
  }

  /** A try of `keys` begins (retryAfterMs said 0): it counts as a failure until end(). */
  begin(keys: readonly string[]): void {
    for (const key of new Set(keys)) this.running.set(key, (this.running.get(key) ?? 0) + 1);
  }

  /** A try begun with begin() ends; a failed one counts for the minute. */
  end(keys: readonly string[], isFailed: boolean): void {
    for (const key of new Set(keys)) {
      const count = (this.running.get(key) ?? 1) - 1;
      if (count > 0) this.running.set(key, count);
      else this.running.delete(key);
    }
    if (isFailed) this.fail(keys);
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

  /** The key's failures still in the window, dropping the older ones (and the key, when none is left). */
  private recent(key: string, now: number): number[] {
    const times = this.failures.get(key);
    if (times === undefined) return [];
    while (times.length > 0 && times[0]! <= now - WINDOW_MS) times.shift();
    if (times.length === 0) this.failures.delete(key);
    return times;
  }
}
