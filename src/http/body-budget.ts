// Bodies of heavy writes admitted by bytes (docs/operating.md, "Memory"): a write costs several
// times its body while it is read, parsed, validated, serialized and logged, so the bodies being
// handled at once share one budget. A write that does not fit waits, its body unread, for the
// writes ahead of it to finish (TCP holds the rest of its body back meanwhile), in arrival order.

/**
 * The bytes of bodies handled at once: one bulk write of the default --max-body (10 MiB) and a few
 * smaller ones. A bulk write is work for the one thread whoever waits, so more at once only adds
 * memory (docs/benchmarks.md, "Memory of bulk writes").
 */
export const BODY_BUDGET_BYTES = 16 * 1024 * 1024;
/** A body smaller than this never waits nor counts: a write of a few records goes on whatever runs. */
export const HEAVY_BODY_BYTES = 64 * 1024;

/** Gives the bytes back, once. */
export type Release = () => void;

export class BodyBudget {
  private heldBytes = 0;
  private readonly waiting: Array<{ readonly bytes: number; readonly admit: () => void }> = [];

  constructor(readonly maxBytes: number = BODY_BUDGET_BYTES) {}

  /**
   * Holds `bytes` of the budget: at once when they fit and nobody waits, else once the writes ahead
   * are done. A body over the whole budget is admitted when nothing else is held, alone.
   */
  admit(bytes: number): Release | Promise<Release> {
    if (this.waiting.length === 0 && this.fits(bytes)) return this.hold(bytes);
    return new Promise((resolve) => this.waiting.push({ bytes, admit: () => resolve(this.hold(bytes)) }));
  }

  private fits(bytes: number): boolean {
    return this.heldBytes === 0 || this.heldBytes + bytes <= this.maxBytes;
  }

  private hold(bytes: number): Release {
    this.heldBytes += bytes;
    let isHeld = true;
    return () => {
      if (!isHeld) return;
      isHeld = false;
      this.heldBytes -= bytes;
      while (this.waiting.length > 0 && this.fits(this.waiting[0]!.bytes)) this.waiting.shift()!.admit();
    };
  }
}
