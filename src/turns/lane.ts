// A lane: at most `atOnce` tasks run at a time, the others wait their turn in arrival order, and
// past `maxWaiting` waiting a task is refused at once rather than queued for longer than anyone
// waits. For work that holds a thread of libuv's pool (password hashes: users/passwords.ts; big
// answers' compression: http/compression.ts), which the log's writes and the files' reads share.

export class Lane {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly atOnce: number,
    private readonly maxWaiting: number,
    private readonly refusal: () => Error,
  ) {}

  /** Runs `task` in its turn; rejects with the lane's refusal, without running it, when too many wait. */
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.atOnce) {
      if (this.waiting.length >= this.maxWaiting) throw this.refusal();
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await task();
    } finally {
      // The turn passes to the next waiting task, which counts as running from now on.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }

  /** Tasks running and waiting, for tests and metrics. */
  get load(): { readonly running: number; readonly waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }
}
