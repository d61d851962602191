// Whether the database answers, as a probe on a connection of its own finds out, and what that
// means for the calls of the PostgreSQL store: while it does not answer, a call waits for one probe
// (at most PROBE_TIMEOUT_MS) and fails unless that finds it back (503, see docs/postgresql.md), and a
// probe runs every PROBE_EVERY_MS besides. The store decides what a call is and how a failed one
// reads; this file only keeps time.

/** A call this old asks whether the database still answers: the driver may hold it while it reconnects. */
const SUSPECT_AFTER_MS = 500;
/** A probe unanswered this long is a database away. SUSPECT_AFTER_MS + PROBE_TIMEOUT_MS stays under 2 s. */
export const PROBE_TIMEOUT_MS = 1000;
/** While the database is away, how often to look for it even when no request does. */
const PROBE_EVERY_MS = 200;

/** One call of the store; once abandoned it was answered 503, and must not commit afterwards. */
export interface Call {
  isAbandoned: boolean;
  /** Set by a commit once its COMMIT may be on the way: from then on its outcome is unknown if the database goes. */
  isCommitting: boolean;
}

/**
 * Runs a database call under the store's health watch (PostgresStore.guard): the parts of the store
 * in files of their own (postgres-feed.ts, postgres-answers.ts) run their calls through it.
 */
export type Guard = <T>(work: (call: Call) => Promise<T>) => Promise<T>;

export class DatabaseHealth {
  private isDown = false;
  private probing: Promise<void> | null = null;
  private retry: NodeJS.Timeout | null = null;
  private isClosed = false;
  /** How to give up each call in flight. */
  private readonly calls = new Set<() => void>();

  constructor(
    /** Resolves when the database answers a statement on a new connection. */
    private readonly probe: () => Promise<void>,
    /** The error a call given up rejects with. */
    private readonly unreachable: (call: Call) => Error,
    /** Called when a probe finds the database back, before any call may start again. */
    private readonly onBack: () => void,
  ) {}

  /**
   * Runs `work`; while the database is known to be away, only once a probe finds it back (else
   * rejects). A call still running SUSPECT_AFTER_MS later asks for a probe, and again each time
   * one finds the database answering (a slow statement goes on); once one does not, it and every
   * other call in flight are given up: their requests are answered, whatever the driver does with
   * their statements.
   */
  run<T>(work: (call: Call) => Promise<T>): Promise<T> {
    const call: Call = { isAbandoned: false, isCommitting: false };
    if (!this.isDown) return this.runWatched(work, call);
    return this.check().then(() => (this.isDown ? Promise.reject(this.unreachable(call)) : this.runWatched(work, call)));
  }

  private runWatched<T>(work: (call: Call) => Promise<T>, call: Call): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let timer: NodeJS.Timeout;
      const settle = () => {
        clearTimeout(timer);
        this.calls.delete(giveUp);
      };
      const giveUp = () => {
        settle();
        call.isAbandoned = true;
        reject(this.unreachable(call));
      };
      const watch = () => {
        timer = setTimeout(() => void this.check().then(() => this.calls.has(giveUp) && watch()), SUSPECT_AFTER_MS).unref();
      };
      this.calls.add(giveUp);
      watch();
      work(call).then(
        (value) => {
          settle();
          resolve(value);
        },
        (error: unknown) => {
          settle();
          reject(error);
        },
      );
    });
  }

  /** Probes, unless a probe is under way; when the database does not answer, it is away until one finds it. */
  check(): Promise<void> {
    this.probing ??= this.probeInTime().then((isUp) => {
      this.probing = null;
      if (isUp && this.isDown && !this.isClosed) this.onBack();
      this.isDown = !isUp;
      if (isUp || this.isClosed) return;
      for (const giveUp of [...this.calls]) giveUp();
      this.retry ??= setTimeout(() => {
        this.retry = null;
        void this.check();
      }, PROBE_EVERY_MS).unref();
    });
    return this.probing;
  }

  close(): void {
    this.isClosed = true;
    if (this.retry) clearTimeout(this.retry);
  }

  private async probeInTime(): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), PROBE_TIMEOUT_MS).unref()));
    try {
      return await Promise.race([this.probe().then(() => true, () => false), late]);
    } finally {
      clearTimeout(timer);
    }
  }
}
