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
//
// An export holds its connection for as long as its client reads (hold), but takes the database's
// time only for each page it reads: a client that stops reading keeps a connection, never the turn.

/** While cheap requests flow, the one place in the lane is held at most this part of the time. */
export const CONTENDED_SHARE = 0.25;
/** Cheap statements are still coming this long after the last one: long enough that a client slowed by scans still counts. */
const CHEAP_FLOWING_MS = 1000;
/** The longest pause after one statement: one long scan does not keep the others back for long after it. */
const MAX_PAUSE_MS = 1000;

/** A statement or a holder waiting: what it needs before it may go. */
interface Waiter {
  /** A connection of the lane's `size`, held until given back. */
  needsConnection: boolean;
  /** A turn at the database's time, for one statement. */
  needsTurn: boolean;
  resolve(): void;
  reject(error: Error): void;
}

/**
 * A connection of the lane held across many statements (an export's transaction, open while its
 * client reads): it counts against the lane's connections for as long as it is held, and against
 * the database's time only while one of its statements runs.
 */
export interface HeldPlace {
  /** Runs one statement once it has its turn, as any costly statement waits for one. */
  run<T>(statement: () => Promise<T>): Promise<T>;
  /** Gives the connection back (once). */
  release(): void;
}

export class ScanLane {
  /** Connections in use: statements running and places held. */
  private connections = 0;
  /** Statements running. */
  private running = 0;
  private readonly waiting: Waiter[] = [];
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

  /** Waits for a place in the lane (a connection and a turn); answers how to give it back (once). */
  async enter(): Promise<() => void> {
    await this.wait(true, true);
    const endTurn = this.turnFrom(performance.now());
    let isHeld = true;
    return () => {
      if (!isHeld) return;
      isHeld = false;
      this.connections--;
      endTurn();
    };
  }

  /** Waits for a connection of the lane to hold across statements, each of which waits for its turn. */
  async hold(): Promise<HeldPlace> {
    await this.wait(true, false);
    let isHeld = true;
    return {
      run: async (statement) => {
        await this.wait(false, true);
        const endTurn = this.turnFrom(performance.now());
        try {
          return await statement();
        } finally {
          endTurn();
        }
      },
      release: () => {
        if (!isHeld) return;
        isHeld = false;
        this.connections--;
        this.admit();
      },
    };
  }

  private wait(needsConnection: boolean, needsTurn: boolean): Promise<void> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ needsConnection, needsTurn, resolve, reject });
      this.admit();
    });
  }

  /** How to end a turn begun at `enteredAt`: while contended, the lane rests in proportion to it. */
  private turnFrom(enteredAt: number): () => void {
    return () => {
      this.running--;
      if (this.isContended()) {
        const now = performance.now();
        const pause = Math.min(MAX_PAUSE_MS, ((now - enteredAt) * (1 - CONTENDED_SHARE)) / CONTENDED_SHARE);
        this.resumeAt = Math.max(this.resumeAt, now + pause);
      }
      this.admit();
    };
  }

  /**
   * Lets in, first come first, every waiter that has what it needs. Turns are the same for all, so
   * those waiting for one go in order; a holder's turn does not wait behind a statement that waits
   * for a connection the holders have.
   */
  private admit(): void {
    for (let i = 0; i < this.waiting.length; ) {
      const waiter = this.waiting[i]!;
      if ((waiter.needsConnection && this.connections >= this.size) || (waiter.needsTurn && !this.isTurnFree())) {
        i++;
        continue;
      }
      this.waiting.splice(i, 1);
      if (waiter.needsConnection) this.connections++;
      if (waiter.needsTurn) this.running++;
      waiter.resolve();
    }
  }

  /** Whether a statement may start now; when only the lane's rest stands in the way, comes back when it ends. */
  private isTurnFree(): boolean {
    if (!this.isContended()) return true; // `size` connections bound the statements running
    if (this.running >= 1) return false; // a turn given back admits again
    const wait = this.resumeAt - performance.now();
    if (wait <= 0) return true;
    this.timer ??= setTimeout(() => {
      this.timer = null;
      this.admit();
    }, Math.ceil(wait));
    return false;
  }

  /** Refuses every statement waiting, and those to come, with `error` (the store is closing). */
  close(error: Error): void {
    this.closedWith = error;
    if (this.timer) clearTimeout(this.timer);
    for (const { reject } of this.waiting.splice(0)) reject(error);
  }
}
