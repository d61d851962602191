// Statements that may read much of a table (a list or count whose filter is finished in JavaScript
// or no index answers, an aggregate's or distinct's walk, an export's transaction) share a lane of
// the pool's connections, so that reads by id and writes always find a free one, however many
// costly requests are in flight (docs/operating.md, "Cheap requests go first").
//
// A free connection is not enough: the database's CPU is shared too, and a few scans take all of
// it from the short statements beside them. So while cheap statements come (reads by id, writes:
// noteCheap), the lane narrows to one place, held at most CONTENDED_SHARE of the time: costly
// statements get about that much of one database core, and everything else the rest. When none
// has come for CHEAP_FLOWING_MS, the lane is as wide as `size` again, and costly work runs at full speed.

/** While cheap requests flow, the one place in the lane is held at most this part of the time. */
export const CONTENDED_SHARE = 0.25;
/** Cheap statements are still coming this long after the last one: long enough that a client slowed by scans still counts. */
const CHEAP_FLOWING_MS = 1000;
/** The longest pause after one statement: an export's place, held while its client reads, is no measure of the database's time. */
const MAX_PAUSE_MS = 1000;

export class ScanLane {
  private running = 0;
  private readonly waiting: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
  /** Once closed, what every statement waiting or coming is refused with. */
  private closedWith: Error | null = null;
  /** While contended, no statement starts before this. */
  private resumeAt = 0;
  private timer: NodeJS.Timeout | null = null;
  private lastCheapAt = -Infinity;

  constructor(
    private readonly size: number,
    /** Whether cheap statements are waiting; by default, whether one came in the last CHEAP_FLOWING_MS. */
    private readonly isContended: () => boolean = () => performance.now() - this.lastCheapAt < CHEAP_FLOWING_MS,
  ) {}

  /** A cheap statement (a read by id, a write) is about to run: costly ones give way for a while. */
  noteCheap(): void {
    this.lastCheapAt = performance.now();
  }

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
    if (this.closedWith) throw this.closedWith;
    await new Promise<void>((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.admit();
    });
    const enteredAt = performance.now();
    let isHeld = true;
    return () => {
      if (!isHeld) return;
      isHeld = false;
      this.running--;
      if (this.isContended()) {
        const now = performance.now();
        const pause = Math.min(MAX_PAUSE_MS, ((now - enteredAt) * (1 - CONTENDED_SHARE)) / CONTENDED_SHARE);
        this.resumeAt = Math.max(this.resumeAt, now + pause);
      }
      this.admit();
    };
  }

  /** Lets the first waiting in while the lane has room. */
  private admit(): void {
    while (this.waiting.length > 0) {
      const isContended = this.isContended();
      if (this.running >= (isContended ? 1 : this.size)) return; // a place given back admits again
      const wait = isContended ? this.resumeAt - performance.now() : 0;
      if (wait > 0) {
        this.timer ??= setTimeout(() => {
          this.timer = null;
          this.admit();
        }, Math.ceil(wait));
        return;
      }
      this.running++;
      this.waiting.shift()!.resolve();
    }
  }

  /** Refuses every statement waiting, and those to come, with `error` (the store is closing). */
  close(error: Error): void {
    this.closedWith = error;
    if (this.timer) clearTimeout(this.timer);
    for (const { reject } of this.waiting.splice(0)) reject(error);
  }
}
