// The idempotent answers the memory and file stores keep (docs/api.md, "Idempotency keys"), by
// scope, within a budget of bytes (--idempotency-memory): past it the oldest answers go first, and
// their keys are new keys again. The file store's log and snapshots carry what is kept here.

import type { IdempotentAnswer } from "../store.ts";

/**
 * The default budget. An answer holds the whole reply, so without one a 15-byte PUT to a 9 MB
 * record would keep 9 MB for a day; a create's answer of 1 kB fits 60,000 times over.
 */
export const DEFAULT_IDEMPOTENCY_MEMORY_BYTES = 64 * 1024 * 1024;
/** What an answer costs beside its text: the object, its headers object, the Map's entry. */
const ANSWER_OVERHEAD_BYTES = 256;

export class IdempotentAnswers {
  /** Insertion order is expiry order (the TTL is fixed), and the order answers are dropped in. */
  private readonly byScope = new Map<string, IdempotentAnswer>();
  private heldBytes = 0;

  constructor(readonly maxBytes: number) {}

  /** The bytes the kept answers count for (answerBytes), at most maxBytes. */
  get bytes(): number {
    return this.heldBytes;
  }

  get size(): number {
    return this.byScope.size;
  }

  get(scope: string): IdempotentAnswer | undefined {
    return this.byScope.get(scope);
  }

  /**
   * Keeps `answer` as the newest, then drops the oldest answers while the kept ones pass the
   * budget. An answer bigger than the whole budget is not kept, and drops nothing.
   */
  keep(answer: IdempotentAnswer): void {
    this.delete(answer.scope);
    const bytes = answerBytes(answer);
    if (bytes > this.maxBytes) return;
    this.byScope.set(answer.scope, answer);
    this.heldBytes += bytes;
    for (const [scope] of this.byScope) {
      if (this.heldBytes <= this.maxBytes) break;
      this.delete(scope);
    }
  }

  delete(scope: string): void {
    const answer = this.byScope.get(scope);
    if (answer === undefined) return;
    this.byScope.delete(scope);
    this.heldBytes -= answerBytes(answer);
  }

  clear(): void {
    this.byScope.clear();
    this.heldBytes = 0;
  }

  /** Oldest first. */
  values(): IterableIterator<IdempotentAnswer> {
    return this.byScope.values();
  }

  /** Drops the answers expired at `now`: they sit at the front. */
  dropExpired(now: number): void {
    for (const [scope, answer] of this.byScope) {
      if (answer.expiresAt > now) break;
      this.delete(scope);
    }
  }
}

/**
 * What an answer counts for: its text in characters (a byte each in V8 for Latin-1 text, two
 * otherwise), and a fixed overhead. O(1): the body is not read.
 */
export function answerBytes(answer: IdempotentAnswer): number {
  let bytes = ANSWER_OVERHEAD_BYTES + answer.scope.length + answer.fingerprint.length + answer.body.length;
  for (const name in answer.headers) bytes += name.length + answer.headers[name]!.length;
  return bytes;
}
