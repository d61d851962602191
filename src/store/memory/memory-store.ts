// The memory store: every entity's rows in a Table, answered through plan.ts. It is also
// the in-memory half of the file store, which adds the log by overriding persist() and friends.

import { MemberNames } from "../member-names.ts";
import { isUnparsed, unparsedDataJson } from "../../rows/stored-row.ts";
import type { FilterNode, SortPosition, SortSpec } from "../../query/filter-tree.ts";
import type { Maybe } from "../../maybe.ts";
import { runInSlices, runToEnd } from "../../turns/time-slices.ts";
import { planCount, planEach, planList } from "./plan.ts";
import { compileFilter } from "../../query/predicate.ts";
import { changeTypeOf, compareFeedPositions, ConflictError, positionOf, uniqueClashInBatch, uniqueKeyOf, UniqueViolation, type Commit, type DeletedFilter, type FeedEvent, type FeedPosition, type FeedRead, type FeedState, type IdempotentAnswer, type ListQuery, type ListResult, type MetaWrite, type Put, type ReadCache, type Row, type RowPages, type Store, EXPORT_PAGE_ROWS, type StoreMetrics, type UniqueClashReport, type UniqueFields, type WriteBatch } from "../store.ts";
import { ChangeWindow } from "./change-window.ts";
import { DEFAULT_IDEMPOTENCY_MEMORY_BYTES, IdempotentAnswers } from "./idempotent-answers.ts";
import { Table } from "./table.ts";

/** Events the change feed keeps by default (--changes-keep). */
export const DEFAULT_CHANGES_KEEP = 100_000;

const ID_ORDER = { field: "id", kind: "string", descending: false } as const;

/** Entity name → the fields that get a value index (enum and boolean fields). */
export type ValueIndexedFields = ReadonlyMap<string, readonly string[]>;

export class MemoryStore implements Store {
  protected readonly tables = new Map<string, Table>();
  /** Idempotent answers by scope, oldest first, within their budget of bytes (--idempotency-memory). */
  protected readonly answers: IdempotentAnswers;
  /** Store.meta(): values kept about the store itself, written with batches; a reset keeps them. */
  protected readonly metaValues = new Map<string, unknown>();
  /** Live records sharing unique values, as settleUniqueIndexes found them (the file store, after loading). */
  private clashes: UniqueClashReport[] = [];
  /** The largest revision handed out; protected so the file store can carry it across restarts and resets. */
  protected rev = 0;
  private largestId: string | undefined;
  /** Batches committed since the store opened: the memory store's seq. */
  private commits = 0;
  private readonly feedListeners: Array<() => void> = [];
  /** The change feed's recent events; the file store keeps them across restarts. */
  protected readonly window: ChangeWindow;
  readonly idNode = null;
  readonly maxOpenExports = null;

  constructor(
    private readonly valueIndexed: ValueIndexedFields,
    private readonly unique: UniqueFields = new Map(),
    changesKeep = DEFAULT_CHANGES_KEEP,
    idempotencyMemoryBytes = DEFAULT_IDEMPOTENCY_MEMORY_BYTES,
  ) {
    this.window = new ChangeWindow(changesKeep);
    this.answers = new IdempotentAnswers(idempotencyMemoryBytes);
  }

  get(entity: string, id: string): Row | undefined {
    return this.tables.get(entity)?.rows.get(id);
  }

  readCache<C extends ReadCache>(entity: string, create: () => C): C | null {
    // An entity that holds no rows has nothing to read, and gets no table for being asked.
    const table = this.tables.get(entity);
    if (table === undefined) return null;
    // Every caller passes the same kind of cache (records/read-cache.ts), so the one kept is a C.
    return (table.readCache ??= create()) as C;
  }

  // Lists, counts and visits run in slices (time-slices.ts): a long one answers later, as of its start.
  list(entity: string, query: ListQuery): Maybe<ListResult> {
    return runInSlices((slice) => planList(this.table(entity), query, slice));
  }

  count(entity: string, filter: FilterNode | null, deleted: DeletedFilter): Maybe<number> {
    return runInSlices((slice) => planCount(this.table(entity), filter, deleted, slice));
  }

  valueCounts(entity: string, field: string): ReadonlyMap<unknown, number> | null {
    return this.table(entity).liveCountsOf(field) ?? null;
  }

  forEachLive(entity: string, filter: FilterNode | null, visit: (row: Row) => void): Maybe<void> {
    return runInSlices((slice) => planEach(this.table(entity), filter, visit, slice));
  }

  openExport(entity: string, filter: FilterNode | null): RowPages {
    // Rows are immutable: the versions in the id index now are the export's snapshot, whatever is
    // written while it is read. Only the references are copied here (8 bytes a record, a few ms
    // for a million); reading a row costs a cache miss, so which ones are live and match is asked
    // a page at a time, of these same versions.
    const chunks = this.table(entity).sortIndex(ID_ORDER).chunkRows();
    let versions: Row[] = [];
    // concat copies natively; in groups, as a call takes only so many arguments.
    for (let i = 0; i < chunks.length; i += 8192) versions = versions.concat(...chunks.slice(i, i + 8192));
    const count = versions.length;
    const accept = filter ? compileFilter(filter) : null;
    let at = 0;
    return {
      // A page is filled in slices: a filter that few rows pass may read many for one page.
      next: () =>
        runInSlices(function* (slice) {
          const page: Row[] = [];
          while (at < count && page.length < EXPORT_PAGE_ROWS) {
            const row = versions[at++]!;
            if (!row.deleted && (accept === null || accept(row))) page.push(row);
            if (slice.isOver()) yield;
          }
          return page;
        }),
      close: async () => {
        at = count;
      },
    };
  }

  positionOf(entity: string, row: Row, sort: SortSpec): SortPosition {
    return { key: this.table(entity).sortIndex(sort).keyOf(row), id: row.id };
  }

  storedFieldNames(): Map<string, Set<string>> {
    const names = new Map<string, Set<string>>();
    for (const [entity, table] of this.tables) {
      if (table.rows.size === 0) continue;
      const fields = new Set<string>();
      const texts = new MemberNames();
      const { textFieldNames } = table;
      // Rows still held as loaded bytes are all rows loaded as text: the snapshot listed their names.
      for (const row of textFieldNames !== null ? table.rows.heldValues() : table.rows.values()) {
        // A row still held as text gives its names without being parsed (stored-row.ts): those the
        // snapshot listed, or read from its text.
        if (isUnparsed(row) && (textFieldNames !== null || texts.add(unparsedDataJson(row)!))) continue;
        for (const name in row.data) fields.add(name);
      }
      for (const name of texts.names) fields.add(name);
      for (const name of textFieldNames ?? []) fields.add(name);
      names.set(entity, fields);
    }
    return names;
  }

  forEachRow(entity: string, visit: (row: Row) => void): void {
    const table = this.tables.get(entity);
    if (table) for (const row of table.rows.values()) visit(row);
  }

  meta(key: string): unknown {
    const value = this.metaValues.get(key);
    // A copy: the caller may change what it is given, never what is stored.
    return value === undefined ? undefined : structuredClone(value);
  }

  /** One process holds the store (the file store's folder lock): nobody else can run the task. */
  exclusively<T>(_name: string, task: () => Promise<T>): Promise<T> {
    return task();
  }

  nextRev(): number {
    return ++this.rev;
  }

  maxId(): string | undefined {
    let largest = this.largestId;
    // Rows loaded as bytes were not compared as they came: their greatest id is found when asked.
    for (const table of this.tables.values()) {
      const id = table.rows.greatestLoadedId();
      if (id !== undefined && (largest === undefined || id > largest)) largest = id;
    }
    return largest;
  }

  commit(batch: WriteBatch): Promise<Commit> {
    const conflict = this.conflictOf(batch);
    if (conflict) return Promise.reject(conflict);
    const commit = { seq: this.nextSeq() };
    this.apply(batch, commit.seq);
    this.commits = commit.seq;
    const durable = this.persist(batch);
    // The answer and the log line (framed by persist) are built: a new version's data JSON has
    // served both, and rows must not keep it (reads cache theirs, bounded; see serialize.ts).
    for (const { row } of batch.puts) if (row.memo?.dataJson !== undefined) row.memo.dataJson = undefined;
    if (!durable) {
      this.feedDurable(commit.seq);
      return Promise.resolve(commit);
    }
    return durable.then(() => {
      this.feedDurable(commit.seq);
      return commit;
    });
  }

  feedState(): FeedState {
    const { head, horizon, oldest, newest } = this.window;
    return { head, horizon, oldest, issued: compareFeedPositions(newest, horizon) > 0 ? newest : horizon };
  }

  readChanges(after: FeedPosition, entities: ReadonlySet<string> | null, limit: number): FeedRead {
    return this.window.read(after, entities, limit);
  }

  readLatest(after: FeedPosition, upTo: FeedPosition, entities: ReadonlySet<string> | null, limit: number): FeedRead {
    const rows: Array<{ entity: string; row: Row }> = [];
    for (const [entity, table] of this.tables) {
      if (entities !== null && !entities.has(entity)) continue;
      for (const row of table.writtenBetween(after, upTo, limit)) rows.push({ entity, row });
    }
    rows.sort((a, b) => compareFeedPositions(positionOf(a.row), positionOf(b.row)));
    const events: FeedEvent[] = rows.slice(0, limit).map(({ entity, row }) => ({ entity, type: "sync", row }));
    return { events, through: events.length === limit ? positionOf(events.at(-1)!.row) : upTo };
  }

  onFeed(listener: () => void): void {
    this.feedListeners.push(listener);
  }

  whenDurable(): Promise<void> | null {
    return null;
  }

  metrics(): StoreMetrics {
    const records = [...this.tables].map(([entity, table]) => ({ entity, live: table.liveCount, deleted: table.rows.size - table.liveCount }));
    return { records };
  }

  findAnswer(scope: string, now: number): IdempotentAnswer | undefined {
    const answer = this.answers.get(scope);
    return answer && answer.expiresAt > now ? answer : undefined;
  }

  async reset(): Promise<void> {
    this.clear();
  }

  async close(): Promise<void> {}

  /**
   * What in `batch` no longer holds, checked before anything is applied. Batches are built and
   * committed in one tick here, so this finds nothing unless a caller awaited in between.
   */
  protected conflictOf(batch: WriteBatch): ConflictError | UniqueViolation | null {
    // A dropped entity is empty by the time the batch's puts are applied (WriteBatch.drops).
    const dropped = new Set(batch.drops);
    for (const { entity, row, replaces } of batch.puts) {
      if (replaces === undefined) continue;
      const stored = dropped.has(entity) ? 0 : (this.tables.get(entity)?.rows.get(row.id)?.rev ?? 0);
      if (stored !== replaces) return new ConflictError("rev", `${entity} ${row.id} is at revision ${stored}, not ${replaces}.`);
    }
    for (const { entity, filter, ids } of batch.matches ?? []) {
      // At once: the check and the commit see the same moment.
      const { rows } = runToEnd(planList(this.table(entity), { filter, sort: ID_ORDER, after: null, skip: 0, limit: Infinity, deleted: "exclude" }, null));
      const expected = new Set(ids);
      if (rows.length !== expected.size || !rows.every((row) => expected.has(row.id))) {
        return new ConflictError("match", `The ${entity} records matching an upsert's values changed.`);
      }
    }
    if (batch.answer && this.findAnswer(batch.answer.scope, Date.now())) {
      return new ConflictError("answer", "This Idempotency-Key was answered meanwhile.");
    }
    return this.uniqueViolationOf(batch);
  }

  /**
   * Whether the batch would leave two live records with the same unique values: each put's key
   * against its index, with the keys that the batch's own rows give up released first.
   */
  private uniqueViolationOf(batch: WriteBatch): UniqueViolation | null {
    const dropped = new Set(batch.drops);
    // Built when first needed: a migration's batch may hold a million puts.
    let byRecord: Map<string, Put> | null = null;
    for (const { entity, row } of batch.puts) {
      if (!this.unique.has(entity) || dropped.has(entity)) continue;
      const table = this.table(entity);
      for (const index of table.uniqueIndexes) {
        const key = uniqueKeyOf(row, index.fields);
        if (key === null) continue;
        const owner = index.owners.get(key);
        if (owner === undefined || owner === row.id) continue;
        // The owner may give the key up in this very batch (changed or deleted): the batch decides.
        byRecord ??= new Map(batch.puts.map((put) => [`${put.entity}\n${put.row.id}`, put]));
        const change = byRecord.get(`${entity}\n${owner}`);
        if (change && uniqueKeyOf(change.row, index.fields) !== key) continue;
        return new UniqueViolation(entity, index.fields, index.fields.map((field) => row.data[field]), owner);
      }
    }
    return uniqueClashInBatch(batch, this.unique);
  }

  uniqueClashes(): UniqueClashReport[] {
    return this.clashes.map((clash) => ({ ...clash, ids: [...clash.ids] }));
  }

  /**
   * Called once loading is done: builds the unique indexes again and keeps the live records that
   * share unique values (a constraint declared over duplicates) for uniqueClashes(). Deleted
   * records hold no values, whatever they held while the log was replayed.
   */
  protected settleUniqueIndexes(): void {
    this.clashes = [...this.tables.values()].flatMap((table) => table.settleUniqueIndexes().map((clash) => ({ entity: table.entity, ...clash })));
  }

  /** The seq the next commit gets; the file store numbers them by its log instead. */
  protected nextSeq(): number {
    return this.commits + 1;
  }

  /** The batches up to `seq` are durable: their events may leave. */
  protected feedDurable(seq: number): void {
    this.window.markDurable(seq);
    for (const listener of this.feedListeners) listener();
  }

  /**
   * Makes the batch visible to every later read, each row an event of the feed at (seq, its
   * index). Revisions keep growing so old ETags never match again.
   */
  protected apply(batch: WriteBatch, seq: number): void {
    // Drops first: a renamed entity's rows are put under the new name by the same batch.
    for (const entity of batch.drops ?? []) this.dropEntity(entity);
    const { puts } = batch;
    for (let index = 0; index < puts.length; index++) {
      const { entity, row, sync } = puts[index]!;
      row.seq = seq;
      row.index = index;
      const previous = this.applyRow(entity, row);
      this.window.add({ entity, type: sync ? "sync" : changeTypeOf(previous, row), row });
    }
    for (const write of batch.meta ?? []) this.applyMeta(write);
    // The same budget at start-up as here: a snapshot and a replayed log keep the answers this kept.
    if (batch.answer) this.answers.keep(batch.answer);
    this.answers.dropExpired(Date.now());
  }

  /**
   * Every row of `entity` goes, with its indexes and read cache: the table is dropped whole (the
   * file store's undo puts it back if the log cannot take the batch), and made anew on next use.
   */
  protected dropEntity(entity: string): void {
    const table = this.tables.get(entity);
    if (!table) return;
    this.tables.delete(entity);
    table.readCache?.clear();
  }

  /** Values are kept as JSON reads them back, so that a value reads the same before and after a restart. */
  protected applyMeta({ key, value }: MetaWrite): void {
    if (value === null || value === undefined) this.metaValues.delete(key);
    else this.metaValues.set(key, JSON.parse(JSON.stringify(value)));
  }

  /**
   * One row of a batch; alone, for rows loaded from a snapshot, which come without a batch.
   * Answers the version it replaced.
   */
  protected applyRow(entity: string, row: Row): Row | undefined {
    const replaced = this.table(entity).apply(row);
    if (row.rev > this.rev) this.rev = row.rev;
    if (this.largestId === undefined || row.id > this.largestId) this.largestId = row.id;
    return replaced;
  }

  /**
   * A row of a snapshot being loaded: the first of its record, into a table with no index built
   * yet (Table.load). What applyRow does, less the look-ups a start-up need not make.
   */
  protected loadRow(entity: string, row: Row): void {
    this.table(entity).load(row);
    if (row.rev > this.rev) this.rev = row.rev;
    if (this.largestId === undefined || row.id > this.largestId) this.largestId = row.id;
  }

  /** A snapshot's row kept as the bytes of its data's JSON (Table.loadBytes), on loadRow's terms. */
  protected loadRowBytes(entity: string, bytes: Buffer, idTo: number, from: number, to: number, rev: number, deleted: boolean, seq: number, index: number): void {
    this.table(entity).loadBytes(bytes, idTo, from, to, rev, deleted, seq, index);
    if (rev > this.rev) this.rev = rev;
  }

  /** Starts making the batch durable; null when there is nothing to wait for. */
  protected persist(_batch: WriteBatch): Promise<void> | null {
    return null;
  }

  /** Records, answers and events; never metadata, which describes the store rather than its records. */
  protected clear(): void {
    for (const table of this.tables.values()) table.clear();
    this.answers.clear();
    this.window.clear();
  }

  protected table(entity: string): Table {
    let table = this.tables.get(entity);
    if (!table) {
      table = new Table(entity, this.valueIndexed.get(entity) ?? [], this.unique.get(entity) ?? []);
      this.tables.set(entity, table);
    }
    return table;
  }
}
