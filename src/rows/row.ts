// One stored version of a record, as every store keeps it and every layer above reads it: declared
// on the ground floor, so that the filter evaluator (query/predicate.ts) and the stores share it.

/** One stored version of a record. Rows are immutable: every write makes a new Row. */
export interface Row {
  readonly id: string;
  /** Unique to this version among all of the store's (Store.nextRev); the ETag is derived from it. */
  readonly rev: number;
  readonly deleted: boolean;
  /** Declared field values as stored, plus id, created_date, updated_date, created_by_id. */
  readonly data: Readonly<Record<string, unknown>>;
  /**
   * What the layers above derive from this version (its JSON, its search text), kept with it. A
   * cache: an entry set back to undefined is simply computed again.
   */
  memo?: RowMemo;
  /**
   * Where this version's write stands in the change feed (docs/change-feed.md): its batch's seq and its
   * place in the batch, set by the store as it commits the row. Versions stored before the feed
   * existed have seq 0 and an index of their own.
   */
  seq?: number;
  index?: number;
  /**
   * Built for one read and dropped after it (the PostgreSQL store's rows: every read asks the
   * database). Its JSON is not cached: no later read sees this object, and the cache would only
   * keep it alive, for the garbage collector to move and sweep.
   */
  readonly isTransient?: true;
}

/** Row.memo. */
export interface RowMemo {
  /** A version this server built carries its data's JSON, which is the secret-key record. */
  dataJson?: string | undefined;
  /** The record's JSON as each kind of key sees it. */
  secretJson?: string | undefined;
  publicJson?: string | undefined;
  /** Its string fields case-folded, for search (query/predicate.ts). */
  search?: string | undefined;
}
