// Statements that may read much of a table (a list or count whose filter is finished in JavaScript
// or no index answers, an aggregate's or distinct's walk, an export's transaction) share a lane of
// SCAN_CONNECTIONS of the pool's connections, so that reads by id and writes always find a free
// one, however many costly requests are in flight (docs/operating.md, "Cheap requests go first").

export class ScanLane {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly size: number) {}

  /** Runs `statement` once a place in the lane is free. */
  async run<T>(statement: () => Promise<T>): Promise<T> {
    const release = await this.enter();
    try {
      return await statement();
    } finally {
      release();
    }
  }

  /** Waits for a place in the lane; answers how to give it back (once). */
  async enter(): Promise<() => void> {
    if (this.running < this.size) this.running++;
    // A place given back is handed to the first waiting: running stays the same.
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    let isHeld = true;
    return () => {
      if (!isHeld) return;
      isHeld = false;
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    };
  }
}
