// The Store interface: what the records layer asks of any store (memory today, file-backed with a
// log, SQL later). It holds rows and answers typed filter trees; it knows no HTTP and no API keys.

import type { FilterNode, SortPosition, SortSpec } from "../query/filter-tree.ts";

/** One stored version of a record. Rows are immutable: every write makes a new Row. */
export interface Row {
  readonly id: string;
  /** The store-wide write counter at this version; the ETag is derived from it. */
  readonly rev: number;
  readonly deleted: boolean;
  /** Declared field values as stored, plus id, created_date, updated_date, created_by_id. */
  readonly data: Readonly<Record<string, unknown>>;
  /**
   * Strings derived from this version (its JSON, its search text), computed by the layers above.
   * A cache: an entry set back to undefined is simply computed again.
   */
  memo?: Record<string, string | undefined>;
}

/** A stored answer to a write that carried an Idempotency-Key (CONTRACT §6). */
export interface IdempotentAnswer {
  /** API key id + "\n" + the Idempotency-Key header. */
  readonly scope: string;
  /** Method, path and a hash of the body of the first request. */
  readonly fingerprint: string;
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly expiresAt: number;
}

export type DeletedFilter = "exclude" | "only" | "include";

export interface ListQuery {
  readonly filter: FilterNode | null;
  readonly sort: SortSpec;
  /** Resume strictly after this position of the sort (a cursor). */
  readonly after: SortPosition | null;
  readonly skip: number;
  readonly limit: number;
  readonly deleted: DeletedFilter;
}

export interface ListResult {
  readonly rows: Row[];
  readonly hasMore: boolean;
}

/** The rows and answers one request writes, applied together or not at all. */
export interface WriteBatch {
  readonly puts: ReadonlyArray<{ readonly entity: string; readonly row: Row }>;
  readonly answer?: IdempotentAnswer;
}

export interface Store {
  get(entity: string, id: string): Row | undefined;
  list(entity: string, query: ListQuery): ListResult;
  count(entity: string, filter: FilterNode | null, deleted: DeletedFilter): number;
  /**
   * Live records per stored value of `field` (under undefined: those lacking it), when the store
   * can tell without reading rows (the memory store can for enum and boolean fields, from their
   * value index); null when it cannot. Aggregates and distinct ask it before walking rows.
   */
  valueCounts(entity: string, field: string): ReadonlyMap<unknown, number> | null;
  /** Calls `visit` with every live record matching `filter` (null: every live record), in no particular order. */
  forEachLive(entity: string, filter: FilterNode | null, visit: (row: Row) => void): void;
  /** The sort position of a row, for building cursors. */
  positionOf(entity: string, row: Row, sort: SortSpec): SortPosition;

  /** Every stored field name of every entity that holds rows (for reporting fields no longer declared). */
  storedFieldNames(): Map<string, Set<string>>;

  /** The next revision number; every row version takes one. */
  nextRev(): number;
  /** The largest id stored in any entity, so that new ids stay time-ordered after a restart. */
  maxId(): string | undefined;

  /**
   * Applies the batch to memory at once (readers see it on their next call) and resolves when it
   * is durable. Callers must not await between reading the state a batch was built from and
   * calling write(): the store relies on that to keep batches consistent. Rejects with
   * StorageFullError when the disk had no room: the batch (and every batch applied after it) is
   * then taken back out of memory before the rejection, and later writes may succeed again.
   * Any other rejection is fatal: the store can make nothing durable any more.
   */
  write(batch: WriteBatch): Promise<void>;
  /** Resolves once every write applied so far is durable; null when it already is. */
  whenDurable(): Promise<void> | null;

  findAnswer(scope: string, now: number): IdempotentAnswer | undefined;

  /** Empties every entity and forgets every stored answer. */
  reset(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The disk is full (ENOSPC) or the quota spent (EDQUOT): the write was not stored and memory is as
 * it was before it. Unlike other I/O errors this is not fatal; writes work again once there is room.
 */
export class StorageFullError extends Error {
  override name = "StorageFullError";
}

/** Whether `error` is a StorageFullError or the system's ENOSPC or EDQUOT. */
export function isOutOfSpace(error: unknown): boolean {
  if (error instanceof StorageFullError) return true;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === "ENOSPC" || code === "EDQUOT";
}
