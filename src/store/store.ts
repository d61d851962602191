// The Store interface: what the records layer asks of any store (memory, file-backed with a log,
// PostgreSQL). It holds rows and answers typed filter trees; it knows no HTTP and no API keys.
// It is made of roles (RecordStore, BatchWriter, FeedSource, AnswerStore, MetadataStore,
// StoreAdmin): each store implements them all, and each consumer takes the ones it uses.
//
// A store may answer at once (the memory and file stores do, so that a read costs no promise) or
// later (a database): every method that reads may return a Promise, and callers accept both. A
// write is a batch that says what it expects to find (the revision each row replaces, upsert
// matches, a new idempotency key); the store checks that and applies the batch atomically, or
// refuses it with a ConflictError, so several processes can share one store.

import type { ChangeType } from "../views.ts";
import type { Row } from "../rows/row.ts";
// The row a store keeps is declared below the stores (rows/), where the filter evaluator takes it too.
export type { Row, RowMemo } from "../rows/row.ts";
import type { Histogram } from "../metrics/histogram.ts";
import type { Maybe } from "../maybe.ts";
import type { FilterNode, SortPosition, SortSpec } from "../query/filter-tree.ts";
import type { SortKey, ValueKind } from "../schema/fields.ts";

/** Store.readCache(): entries by record id, opaque to the store, which only deletes them. */
export interface ReadCache {
  delete(id: string): void;
  clear(): void;
}

/** The type of the change from `previous` (undefined: no such record yet) to `row`. */
export function changeTypeOf(previous: Row | undefined, row: Row): ChangeType {
  if (!previous) return "create";
  if (row.deleted !== previous.deleted) return row.deleted ? "delete" : "restore";
  return "update";
}

/** A place in the change feed: after the event at `index` of batch `seq`. An event id is "seq.index". */
export interface FeedPosition {
  readonly seq: number;
  readonly index: number;
}

/** Before every event and every stored version. */
export const FEED_START: FeedPosition = { seq: 0, index: 0 };

export function compareFeedPositions(a: FeedPosition, b: FeedPosition): number {
  return a.seq - b.seq || a.index - b.index;
}

/** The position of a stored version (which the store has committed, so it has one). */
export function positionOf(row: Row): FeedPosition {
  return { seq: row.seq ?? 0, index: row.index ?? 0 };
}

/** Whether `row` was written after `position`. */
export function isAfter(row: Row, position: FeedPosition): boolean {
  const seq = row.seq ?? 0;
  return seq > position.seq || (seq === position.seq && (row.index ?? 0) > position.index);
}

/**
 * One record written (type create...restore, in the window of recent events), or the latest
 * version of a record written since a resume point older than the window (type sync).
 */
export interface FeedEvent {
  readonly entity: string;
  readonly type: ChangeType | "sync";
  /** The version written; its seq and index are the event's id. */
  readonly row: Row;
}

export interface FeedState {
  /** The newest event that may be read (its write is durable); FEED_START when there is none. */
  readonly head: FeedPosition;
  /** Every event after this one is kept: a resume point before it needs a sync. */
  readonly horizon: FeedPosition;
  /** The first event kept, or null when none is. */
  readonly oldest: FeedPosition | null;
  /** Positions after this one were never issued: resuming from one is refused. */
  readonly issued: FeedPosition;
}

export interface FeedRead {
  readonly events: FeedEvent[];
  /** Read through here (events of other entities included): where the next read starts. */
  readonly through: FeedPosition;
}

/** A stored answer to a write that carried an Idempotency-Key (docs/api.md). */
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

/** A new version of a record. */
export interface Put {
  readonly entity: string;
  readonly row: Row;
  /**
   * The revision of the stored version this one replaces, 0 when the record must not exist yet:
   * the batch is refused if the store holds something else. Omitted only where nothing else can
   * write (loading and unit tests): the row is then stored whatever is there.
   */
  readonly replaces?: number;
  /**
   * A migration rewrote the record (docs/schema-changes.md): the change feed names this version's
   * event "sync", not "update", so that caches take it as the record's latest version.
   */
  readonly sync?: true;
}

/**
 * A value tabula keeps about the store itself, beside its records: the declarations it last served,
 * the migrations it ran (docs/schema-changes.md). Kept as durably as records and, on a shared store,
 * shared by every process. Values are JSON; null removes the key.
 */
export interface MetaWrite {
  readonly key: string;
  readonly value: unknown;
}

/**
 * Upsert's precondition: the live records of `entity` that `filter` matches are exactly `ids`
 * (in any order), as when the batch was built from them. `locks` name the matched values, so that
 * a store shared by processes can serialize the upserts of one value (two upserts of one new key
 * must not both create it).
 */
export interface MatchCheck {
  readonly entity: string;
  /** null: every live record (a seed expects an empty entity). */
  readonly filter: FilterNode | null;
  readonly ids: readonly string[];
  readonly locks: readonly string[];
}

/**
 * The rows and answer one request writes, applied together or not at all, if what they expect
 * still holds. The answer's scope must be new (or its answer expired).
 */
export interface WriteBatch {
  readonly puts: readonly Put[];
  readonly matches?: readonly MatchCheck[];
  readonly answer?: IdempotentAnswer;
  /** Metadata written with the rows, in the same all-or-nothing commit. */
  readonly meta?: readonly MetaWrite[];
  /**
   * Entities whose every row (deleted ones included) is removed before the puts are applied: a
   * migration's renameEntity moves the rows to the new name and drops the old one. Their earlier
   * events stay in the change feed's window.
   */
  readonly drops?: readonly string[];
}

/** Live records sharing the values of a declared unique set, found when the store opened. */
export interface UniqueClashReport {
  readonly entity: string;
  readonly fields: readonly string[];
  /** The ids of the records that share one set of values, the first holder first. */
  readonly ids: readonly string[];
}

/** A batch the store has applied: `seq` numbers commits in the order they were made. */
export interface Commit {
  readonly seq: number;
}

/**
 * RecordStore.groupTotals(): an aggregate's groups (docs/aggregates.md) that the store computes
 * itself. Every group column is a scalar field's value (no date bucket, no array), every measure
 * a sum, average, minimum or maximum of a number field.
 */
export interface GroupTotalsRequest {
  readonly filter: FilterNode | null;
  readonly groups: ReadonlyArray<{ readonly field: string; readonly kind: ValueKind }>;
  /** The number fields measured, each once; `isSummed` when a sum or average of it is asked for. */
  readonly measured: ReadonlyArray<{ readonly field: string; readonly isSummed: boolean }>;
  /** The groups an answer may hold; more refuse the aggregate (the caller says how). */
  readonly maxGroups: number;
}

/** One group's totals; a value of another type than its field's (or none) is null, as when walking rows. */
export interface GroupTotals {
  readonly values: Array<string | number | boolean | null>;
  readonly count: number;
  /** Per measured field, in the request's order: what its numbers add up to, exactly rounded once. */
  readonly numbers: ReadonlyArray<{ readonly n: number; readonly sum: number; readonly min: number | null; readonly max: number | null }>;
}

/** RecordStore.distinctPage(): a scalar field's distinct values among the live records matching `filter`. */
export interface DistinctPageRequest {
  readonly field: string;
  readonly kind: ValueKind;
  readonly filter: FilterNode | null;
  /** Only values whose sort key (toSortKey) follows this one; undefined from the first. */
  readonly after: SortKey | undefined;
  /** The values wanted at most, ascending by sort key. */
  readonly limit: number;
}

/**
 * The records as they stand, for reading: one by id, a page of a list, counts, every live match,
 * an export. The records layer (records/) reads through it, and so do aggregates and distinct.
 */
export interface RecordStore {
  get(entity: string, id: string): Maybe<Row | undefined>;
  /**
   * What reads by id derive from each record of `entity` as it stands (records/read-cache.ts),
   * by id: made by `create` when first asked for, the same cache each time after. The store
   * deletes a record's entry whenever that record changes (a write, a write taken back, a reset),
   * so that an entry found describes the current version. null when the store cannot see every
   * change (PostgreSQL, which other processes write too), or when the entity holds no rows.
   */
  readCache<C extends ReadCache>(entity: string, create: () => C): C | null;
  list(entity: string, query: ListQuery): Maybe<ListResult>;
  count(entity: string, filter: FilterNode | null, deleted: DeletedFilter): Maybe<number>;
  /**
   * Live records per stored value of `field` (under undefined: those lacking it), when the store
   * can tell without reading rows (the memory store can for enum and boolean fields, from their
   * value index); null when it cannot. Aggregates and distinct ask it before walking rows.
   */
  valueCounts(entity: string, field: string): Maybe<ReadonlyMap<unknown, number> | null>;
  /**
   * An aggregate's groups computed by the store without handing rows over (PostgreSQL, over its
   * typed columns), when it can give exactly what walking the rows gives; null when it cannot, or
   * "too many" when there are more groups than the request allows. Absent: the caller walks.
   */
  groupTotals?(entity: string, request: GroupTotalsRequest): Maybe<GroupTotals[] | "too many" | null>;
  /** One page of distinct values found by the store itself, as groupTotals is; null when it cannot. */
  distinctPage?(entity: string, request: DistinctPageRequest): Maybe<unknown[] | null>;
  /** Calls `visit` with every live record matching `filter` (null: every live record), in no particular order. */
  forEachLive(entity: string, filter: FilterNode | null, visit: (row: Row) => void): Maybe<void>;
  /** The sort position of a row, for building cursors: computed from the row alone. */
  positionOf(entity: string, row: Row, sort: SortSpec): SortPosition;

  /**
   * The live records of `entity` matching `filter`, as they stand now, read page by page however
   * long the reader takes, while writes go on (an export, docs/operating.md). Oldest id first.
   */
  openExport(entity: string, filter: FilterNode | null): Maybe<RowPages>;
  /** Exports that may be open at once (PostgreSQL: each holds a connection of the pool); null: any number. */
  readonly maxOpenExports: number | null;
}

/**
 * Writing: the revisions and ids that new versions take, and the all-or-nothing commit of a batch
 * (rows, metadata, an idempotent answer). Records writes records through it; migrations, webhooks
 * and the seed commit their batches through it too.
 */
export interface BatchWriter {
  /** A revision number no other row version has or will have, in this process or any other sharing the store. */
  nextRev(): number;
  /** The largest id stored when the store opened, so that new ids stay time-ordered after a restart. */
  maxId(): string | undefined;
  /**
   * A number that this process alone among those sharing the store holds, which its new ids
   * carry so that processes never make the same id; null when the store has one process.
   */
  readonly idNode: number | null;

  /**
   * Checks what the batch expects and applies it, all or nothing; resolves once it is durable.
   * Rejects with ConflictError when an expectation failed (nothing was applied: read again and
   * rebuild the batch), with StorageFullError when the disk had no room (the batch, and every one
   * applied after it, was taken back out; later writes may succeed again), with WriteFailedError
   * when the database refused this batch alone (PostgreSQL: nothing was applied, the store goes
   * on). Any other rejection means the store can make nothing durable any more (the file store),
   * or could not reach its database (StoreUnreachableError: later writes may succeed).
   */
  commit(batch: WriteBatch): Promise<Commit>;
  /** Resolves once every write applied so far is durable; null when it already is. */
  whenDurable(): Promise<void> | null;
}

/**
 * The change feed's source (docs/change-feed.md): where the feed stands, the events of the kept
 * window, the catch-up of an older resume point, and word of new events. The change feed
 * (feed/change-feed.ts) and webhooks read it.
 */
export interface FeedSource {
  /** Where the change feed stands: its head, its kept window, what was issued. */
  feedState(): Maybe<FeedState>;
  /**
   * Up to `limit` events after `after` (not before the horizon) up to the head, of `entities`
   * (null: all), in commit order.
   */
  readChanges(after: FeedPosition, entities: ReadonlySet<string> | null, limit: number): Maybe<FeedRead>;
  /**
   * The latest version of each record of `entities` (null: all; deleted records included) written
   * after `after` and up to `upTo`, up to `limit` of them, in the order they were written, as
   * sync events: the catch-up of a resume point older than the window.
   */
  readLatest(after: FeedPosition, upTo: FeedPosition, entities: ReadonlySet<string> | null, limit: number): Maybe<FeedRead>;
  /**
   * Adds a listener called when new events may be readable: after each durable commit of this
   * process, and after those of other processes sharing the store.
   */
  onFeed(listener: () => void): void;
}

/**
 * The stored answers to writes that carried an Idempotency-Key (docs/api.md), read back to replay
 * one. An answer is stored by the commit of its write (WriteBatch.answer).
 */
export interface AnswerStore {
  findAnswer(scope: string, now: number): Maybe<IdempotentAnswer | undefined>;
}

/**
 * What tabula keeps about the store itself and how a schema change is settled against it
 * (docs/schema-changes.md): metadata values (written by a commit, WriteBatch.meta), a lock that one
 * process of those sharing the store holds at a time, the stored field names, every stored row
 * whether declared or not, and the unique clashes found at opening. Start-up, migrations and
 * webhooks (which keep their endpoints and progress as metadata) use it.
 */
export interface MetadataStore {
  /**
   * The stored field names of every entity that holds rows (for reporting fields no longer
   * declared): all of them, or only those outside `known`'s names for the entity, where leaving the
   * known ones out costs less (PostgreSQL: no name of theirs per row to hash).
   */
  storedFieldNames(known?: ReadonlyMap<string, readonly string[]>): Maybe<Map<string, Set<string>>>;
  /**
   * Calls `visit` with every stored row of `entity`, deleted ones included, declared or not (an
   * entity no longer declared keeps its rows), in no particular order; nothing when it holds none.
   * Migrations and the start-up check of a changed schema read rows through it.
   */
  forEachRow(entity: string, visit: (row: Row) => void): Maybe<void>;

  /**
   * Groups of live records that share the values of a declared unique set, as found when the store
   * opened (a unique set declared over duplicates). The start-up refuses to serve while there are
   * any (docs/schema-changes.md); a store must open, not fail, so that this can be reported.
   */
  uniqueClashes(): Maybe<UniqueClashReport[]>;

  /** A metadata value (see MetaWrite); undefined when none is stored. Read from the store each call. */
  meta(key: string): Maybe<unknown>;
  /**
   * Runs `task` while no other process sharing the store runs a task of the same `name` (PostgreSQL:
   * an advisory lock held on a connection of its own; other stores have one process, and just
   * run it). Start-up runs migrations and the schema check under it, so each runs once.
   */
  exclusively<T>(name: string, task: () => Promise<T>): Promise<T>;
}

/** The store as the server runs it (server.ts): its metrics, emptying it (tests), closing it. */
export interface StoreAdmin {
  /** What GET /metrics reports of the store (docs/operating.md): records per entity, and its files'. */
  metrics(): Maybe<StoreMetrics>;

  /** Empties every entity and forgets every stored answer. */
  reset(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A whole store, every role in one object: what each store implements and open-store.ts opens.
 * Everyone else takes the roles it uses.
 */
export interface Store extends RecordStore, BatchWriter, FeedSource, AnswerStore, MetadataStore, StoreAdmin {}

/** Rows an export reads at a time: about 300 KB of JSON, one write to the socket. */
export const EXPORT_PAGE_ROWS = 1000;

/** Store.openExport(): a consistent read of many rows, taken a page at a time. */
export interface RowPages {
  /** The next EXPORT_PAGE_ROWS rows, or fewer at the end; none when every row has been read. */
  next(): Maybe<Row[]>;
  /** Lets go of what the read holds (a database transaction); safe to call more than once. */
  close(): Promise<void>;
}

/** Store.metrics(). */
export interface StoreMetrics {
  /** Entities holding rows (others hold none). */
  readonly records: ReadonlyArray<{ readonly entity: string; readonly live: number; readonly deleted: number }>;
  /** The file store's: its log and snapshot, durable writes and compactions. */
  readonly files?: {
    readonly logBytes: number;
    readonly snapshotBytes: number;
    /** Each durable log write (write + fdatasync), in seconds. */
    readonly fsyncSeconds: Histogram;
    readonly compactions: number;
    readonly failedCompactions: number;
  };
}

/** Why a batch was refused: what it expected no longer holds. */
export type ConflictReason = "rev" | "match" | "answer";

/**
 * A batch's expectation failed (see WriteBatch): another write came first. Nothing was applied.
 * "rev" and "match": build the batch again from what is stored now; "answer": the idempotency
 * key was answered meanwhile, so replay that answer.
 */
export class ConflictError extends Error {
  override name = "ConflictError";
  constructor(
    readonly reason: ConflictReason,
    message: string,
  ) {
    super(message);
  }
}

/** Entity name → its sets of fields that no two live records may share values in ("unique"). */
export type UniqueFields = ReadonlyMap<string, ReadonlyArray<readonly string[]>>;

/**
 * A batch would give two live records the same values in a unique set of fields (docs/entities.md):
 * nothing was applied. Not a conflict to retry: the write is refused (409 unique_violation).
 */
export class UniqueViolation extends Error {
  override name = "UniqueViolation";
  constructor(
    readonly entity: string,
    readonly fields: readonly string[],
    readonly values: readonly unknown[],
    /** The live record that holds the values already (or another record of the same batch). */
    readonly existingId: string,
  ) {
    super(`${entity} ${existingId} already holds ${fields.join(", ")} = ${JSON.stringify(values)}.`);
  }
}

/**
 * The key of a row's values in a unique set of fields (JSON of the values, which validation has
 * normalized), or null when the row is deleted or lacks one of them: such rows never clash.
 */
export function uniqueKeyOf(row: Row, fields: readonly string[]): string | null {
  if (row.deleted) return null;
  const values: unknown[] = [];
  for (const field of fields) {
    const value = row.data[field];
    if (value === undefined || value === null) return null;
    values.push(value);
  }
  return JSON.stringify(values);
}

/** Two rows of one batch with the same unique values: the first row's id, as the holder. */
export function uniqueClashInBatch(batch: WriteBatch, unique: UniqueFields): UniqueViolation | null {
  for (const [entity, constraints] of unique) {
    for (const fields of constraints) {
      const claimed = new Map<string, string>();
      for (const { entity: putEntity, row } of batch.puts) {
        if (putEntity !== entity) continue;
        const key = uniqueKeyOf(row, fields);
        if (key === null) continue;
        const other = claimed.get(key);
        if (other !== undefined && other !== row.id) return new UniqueViolation(entity, fields, fields.map((field) => row.data[field]), other);
        claimed.set(key, row.id);
      }
    }
  }
  return null;
}

/** Why a start-up stops when a "unique" declaration meets stored duplicates, and how to find them all. */
export function duplicatesMessage(entity: string, fields: readonly string[], ids: readonly string[]): string {
  const shown = [...new Set(ids)].slice(0, 10);
  const groupBy = JSON.stringify(fields.length === 1 ? fields[0] : fields);
  return (
    `${entity} declares "unique": ${JSON.stringify(fields)}, but live records already share such values: ${shown.join(", ")}. ` +
    `Start without that declaration and find every group with POST /api/entities/${entity}/aggregate {"groupBy": ${groupBy}, "having": {"count": {"$gt": 1}}}; ` +
    `change or delete the duplicates, then declare it again.`
  );
}

/**
 * The store's database cannot be reached (PostgreSQL): the request is answered 503 and the store
 * goes on, unlike a failed fsync. Nothing the failed call wrote was committed, unless
 * `isOutcomeUnknown`: the connection went while a commit was on its way, which may have happened.
 */
export class StoreUnreachableError extends Error {
  override name = "StoreUnreachableError";

  constructor(
    message: string,
    readonly isOutcomeUnknown = false,
  ) {
    super(message);
  }
}

/**
 * The database refused one batch for a reason no retry mends (PostgreSQL: a statement failed):
 * nothing of it was applied, the request is answered 500 with the cause logged, and the store goes
 * on. Unlike a failed fsync it says nothing about later writes.
 */
export class WriteFailedError extends Error {
  override name = "WriteFailedError";
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
