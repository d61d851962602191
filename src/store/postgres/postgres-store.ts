// The PostgreSQL store (docs/postgresql.md): every entity a table of its own in one schema, rows as
// jsonb, filters and sorts translated to SQL (sql-query.ts), and every commit one transaction that
// checks what its batch expects, so that several tabula processes can share the database. Nothing
// is kept in this process but a block of revisions: reads ask the database every time.

import { compileFilter } from "../../query/predicate.ts";
import type { FilterNode, SortPosition, SortSpec } from "../../query/filter-tree.ts";
import type { Schema } from "../../schema/load.ts";
import { toSortKey } from "../../schema/fields.ts";
import type { ValueIndexedFields } from "../memory/memory-store.ts";
import { ConflictError, StoreUnreachableError, uniqueClashInBatch, WriteFailedError, UniqueViolation, type UniqueFields, type Commit, type DeletedFilter, type DistinctPageRequest, type GroupTotals, type GroupTotalsRequest, type FeedPosition, type FeedRead, type FeedState, type IdempotentAnswer, type ListQuery, type ListResult, type Row, type RowPages, type Store, type StoreMetrics, type UniqueClashReport, type WriteBatch } from "../store.ts";
import type { KeyVault } from "../../keys/key-vault.ts";
import { postgresKeyVault } from "./key-vault.ts";
import { settingName } from "../../option-names.ts";
import { beginSafely, connectionProblem, hostOf, loadDriver, poolOpener, probeDatabase, type Sql, type TransactionSql } from "./connection.ts";
import { DatabaseHealth, type Call } from "./health.ts";
import { createTables, uniqueIndexOf, type Names, type UniqueIndex } from "./tables.ts";
import { isCondition, whereClause, whereOf } from "./sql-filter.ts";
import { openSnapshotPages, type ReadPage } from "./snapshot-pages.ts";
import { ScanLane } from "./scan-lane.ts";
import { Turns } from "../../turns/loop-share.ts";
import { afterOf, orderByOf } from "./sql-sort.ts";
import { distinctStatement, groupTotalsStatement, type Statement } from "./sql-aggregate.ts";
import { arrayLiteral, NUMERIC_LAST, SORT_PREFIX_CHARS, SqlParams, TEXT_LAST, TEXT_PRESENT_PREFIX } from "./sql-values.ts";
import { NO_COLUMNS, typedColumnsOf, type TypedColumn, type TypedColumns } from "./typed-columns.ts";
import { toRow, type DbRow } from "./db-row.ts";
import { decodeText, encodeText } from "./stored-text.ts";
import { encodeOlderText } from "./text-upgrade.ts";
import { PostgresFeed } from "./postgres-feed.ts";
import { insertAnswer, PostgresAnswers } from "./postgres-answers.ts";
import { checkMatches, dropRows, insertAtOnce, isCreateOnly, ROW_PAGE_ROWS, uniqueViolationOf, writeMeta, writePuts } from "./postgres-writes.ts";

/** Revisions come from the database in blocks of this many, so that nextRev() needs no round trip. */
const REV_BLOCK = 1 << 20;
/** Rows read per query when a filter is finished in JavaScript (see whereOf's `exact`). */
const RESIDUAL_CHUNK = 1000;
/** Connections in the pool; exports may hold half of them, so that writes always find one. */
const POOL_SIZE = 10;
/** Connections that statements which may read much of a table (and exports) may hold at once (scan-lane.ts). */
const SCAN_CONNECTIONS = POOL_SIZE - 3;
const ID_ORDER: SortSpec = { field: "id", kind: "string", descending: false };

export interface PostgresStoreOptions {
  readonly url: string;
  readonly schema: Schema;
  /** The PostgreSQL schema of tabula's tables. */
  readonly pgSchema: string;
  readonly valueIndexed: ValueIndexedFields;
  /** Events the change feed keeps (--changes-keep). */
  readonly changesKeep: number;
  /** Lines for whoever watches the start-up (a table rewritten to add typed columns). */
  readonly progress?: (line: string) => void;
}

export class PostgresStore implements Store {
  readonly idNode: number;
  private readonly unique: UniqueFields;
  /** Each unique index by its name, which a unique violation gives. */
  private readonly uniqueIndexes: ReadonlyMap<string, UniqueIndex>;
  private readonly uniqueIndexNames: ReadonlySet<string>;
  private readonly feed: PostgresFeed;
  private readonly answers: PostgresAnswers;
  /** The revisions this process may hand out: [next, end), then the spare block. */
  private nextRevision: number;
  private revisionEnd: number;
  private spareBlock: Promise<number> | number | null = null;
  private readonly health: DatabaseHealth;
  private readonly scans = new ScanLane(SCAN_CONNECTIONS);
  /** Each entity's typed columns (typed-columns.ts), which start-up made its table hold. */
  private readonly columns: ReadonlyMap<string, TypedColumns>;
  /** Unique sets whose index could not be made over stored duplicates, as found at start-up. */
  private clashes: readonly UniqueClashReport[] = [];

  private constructor(
    /** The pool; replaced by a new one when the database comes back after an outage (replacePool). */
    private sql: Sql,
    private readonly openPool: () => Sql,
    probe: () => Promise<void>,
    private readonly names: Names,
    private readonly options: PostgresStoreOptions,
    node: number,
    revBlock: number,
    private readonly largestId: string | undefined,
  ) {
    this.idNode = node;
    this.health = new DatabaseHealth(
      probe,
      (call) => new StoreUnreachableError(`PostgreSQL at ${hostOf(options.url)} did not answer.`, call.isCommitting),
      () => this.replacePool(),
    );
    this.unique = new Map([...options.schema.entities.values()].filter((entity) => entity.unique.length > 0).map((entity) => [entity.name, entity.unique]));
    const uniqueIndexes = [...this.unique].flatMap(([entity, sets]) => sets.map((fields) => uniqueIndexOf(entity, fields)));
    this.uniqueIndexes = new Map(uniqueIndexes.map((index) => [index.name, index]));
    this.uniqueIndexNames = new Set(this.uniqueIndexes.keys());
    this.columns = new Map([...options.schema.entities].map(([name, entity]) => [name, typedColumnsOf(entity)]));
    this.nextRevision = revBlock * REV_BLOCK + 1;
    this.revisionEnd = (revBlock + 1) * REV_BLOCK;
    this.fetchSpareBlock();
    this.answers = new PostgresAnswers(() => this.sql, (work) => this.guard(work), names);
    this.feed = new PostgresFeed(() => this.sql, (work) => this.guard(work), names, options);
  }

  /**
   * Connects, creates what is missing (schema, tables, indexes, sequences) and checks what exists.
   * Rejects with a message naming what to fix: the driver missing, the database unreachable, wrong
   * credentials, tables of another shape.
   */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const postgres = await loadDriver();
    const openPool = poolOpener(postgres, options.url, POOL_SIZE);
    const sql = openPool();
    try {
      const { names, clashes } = await createTables(sql, options.schema, options.pgSchema, options.progress);
      await encodeOlderText(sql, names, options.pgSchema);
      const [{ node, block }] = await sql.unsafe(`SELECT nextval('${names.nodes}')::int AS node, nextval('${names.revs}') AS block`);
      const largestId = await largestIdOf(sql, names, [...options.schema.entities.keys()]);
      const store = new PostgresStore(sql, openPool, () => probeDatabase(postgres, options.url), names, options, node, block, largestId);
      store.clashes = clashes;
      await store.feed.listen();
      await store.feed.trimChanges();
      return store;
    } catch (error) {
      await sql.end({ timeout: 1 }).catch(() => {});
      throw connectionProblem(error, options.url) ?? error;
    }
  }

  /** The database, as host:port/name, never with the URL's password. */
  describe(): string {
    try {
      const { hostname, port, pathname } = new URL(this.options.url);
      return `${hostname || "localhost"}:${port || "5432"}${pathname}`;
    } catch {
      return `(the URL of ${settingName("store")})`;
    }
  }

  /** API keys in the schema's $keys table, shared by every process on the database. */
  keyVault(): KeyVault {
    return postgresKeyVault(this.sql, this.names.keys, this.options.pgSchema);
  }

  get(entity: string, id: string): Promise<Row | undefined> {
    this.scans.noteCheap();
    return this.guard(async () => {
      const rows = await this.sql.unsafe<DbRow[]>(`SELECT id, rev, deleted, data FROM ${this.names.table(entity)} WHERE id = $1`, [id], { prepare: true });
      return rows.length === 0 ? undefined : toRow(rows[0]!);
    });
  }

  /** Other processes write the same tables unseen: every read asks the database. */
  readCache(): null {
    return null;
  }

  async list(entity: string, query: ListQuery): Promise<ListResult> {
    const rows = await this.select(entity, query.filter, query.deleted, query.sort, query.after, query.skip, query.limit);
    const hasMore = rows.length > query.limit;
    return { rows: hasMore ? rows.slice(0, query.limit) : rows, hasMore };
  }

  async count(entity: string, filter: FilterNode | null, deleted: DeletedFilter): Promise<number> {
    const params = new SqlParams();
    const where = whereOf(filter, params, this.columnsOf(entity));
    const conditions = [deletedCondition(deleted), where.sql].filter(isCondition);
    if (where.exact) {
      const text = `SELECT count(*)::int AS count FROM ${this.names.table(entity)}${whereClause(conditions)}`;
      // A count on typed columns is an index-only scan whatever its values: planned once per connection
      // (prepared), it costs the database the scan alone, as the SQL of docs/benchmarks.md's floor does.
      const run = () => this.sql.unsafe(text, params.values, { prepare: where.isPreparable });
      const [{ count }] = filter === null ? await this.guard(run) : await this.scan(run);
      return count as number;
    }
    let count = 0;
    await this.walk(entity, filter, deleted, () => count++);
    return count;
  }

  valueCounts(entity: string, field: string): Promise<ReadonlyMap<unknown, number> | null> | null {
    if (!(this.options.valueIndexed.get(entity) ?? []).includes(field)) return null;
    const column = this.columnsOf(entity).get(field);
    if (column && column.kind !== "date") return this.scan(() => this.sql.unsafe(valueCountsText(this.names.table(entity), column), [field])).then(valueCountsOf(column));
    return this.scan(() => this.sql.unsafe(`SELECT data -> $1::text AS value, count(*)::int AS count FROM ${this.names.table(entity)} WHERE NOT deleted GROUP BY 1`, [field])).then((rows) => {
      const counts = new Map<unknown, number>();
      // A missing member reads as SQL NULL: under undefined, as the memory store counts rows lacking the field.
      for (const { value, count } of rows) counts.set(value ?? undefined, count as number);
      return counts;
    });
  }

  /** In SQL over the typed columns where they give the walk's answer exactly (sql-aggregate.ts). */
  groupTotals(entity: string, request: GroupTotalsRequest): Promise<GroupTotals[] | "too many" | null> | null {
    const statement = groupTotalsStatement(this.names.table(entity), this.columnsOf(entity), request);
    return statement && this.runStatement(statement);
  }

  distinctPage(entity: string, request: DistinctPageRequest): Promise<unknown[] | null> | null {
    const statement = distinctStatement(this.names.table(entity), this.columnsOf(entity), request);
    return statement && this.runStatement(statement);
  }

  forEachLive(entity: string, filter: FilterNode | null, visit: (row: Row) => void): Promise<void> {
    return this.walk(entity, filter, "exclude", visit);
  }

  readonly maxOpenExports = POOL_SIZE / 2;

  async openExport(entity: string, filter: FilterNode | null): Promise<RowPages> {
    // Each page asks for one row fewer than it wants: select answers up to limit + 1.
    // The export's transaction holds a connection of the lane while the client reads, and takes a
    // turn at the database for each page (scan-lane.ts).
    const place = await this.scans.hold();
    try {
      const readPage: ReadPage = (tx, after, max) => place.run(() => this.select(entity, filter, "exclude", ID_ORDER, after, 0, max - 1, tx));
      const pages = await this.guard(() => openSnapshotPages(this.sql, readPage));
      return { next: () => pages.next(), close: () => pages.close().finally(place.release) };
    } catch (error) {
      place.release();
      throw error;
    }
  }

  positionOf(_entity: string, row: Row, sort: SortSpec): SortPosition {
    return { key: sort.field === "id" ? row.id : toSortKey(sort.kind, row.data[sort.field]), id: row.id };
  }

  storedFieldNames(known?: ReadonlyMap<string, readonly string[]>): Promise<Map<string, Set<string>>> {
    return this.guard(async () => {
      const names = new Map<string, Set<string>>();
      for (const entity of this.options.schema.entities.keys()) {
        // The known names taken out of each row first, so that only the rare others are listed and
        // hashed: at 1,000,000 records 1.2 s, where listing every row's names took 2.7 s. OFFSET 0
        // keeps each row's rest computed once.
        const skip = arrayLiteral((known?.get(entity) ?? []).map(encodeText));
        const rows = await this.sql.unsafe(
          `SELECT DISTINCT k AS name FROM (SELECT data - $1::text[] AS rest FROM ${this.names.table(entity)} OFFSET 0) AS r, jsonb_object_keys(r.rest) AS k`,
          [skip],
        );
        // Names as stored (stored-text.ts); jsonb values are decoded as read, text is not.
        if (rows.length > 0) names.set(entity, new Set(rows.map((row) => decodeText(row.name as string))));
      }
      return names;
    });
  }

  forEachRow(entity: string, visit: (row: Row) => void): Promise<void> {
    return this.guard(async () => {
      // The entity may no longer be declared, and then may have no table at all.
      const table = this.names.table(entity);
      const [{ exists }] = await this.sql.unsafe(`SELECT to_regclass($1) IS NOT NULL AS exists`, [table]);
      if (!exists) return;
      // Page by page in id order, each page visited before the next is read: never every row at once.
      for (let after = ""; ; ) {
        const rows = await this.sql.unsafe<DbRow[]>(`SELECT id, rev, deleted, data, seq, idx FROM ${table} WHERE id > $1 ORDER BY id LIMIT $2`, [after, ROW_PAGE_ROWS]);
        for (const row of rows) visit(toRow(row));
        if (rows.length < ROW_PAGE_ROWS) return;
        after = rows.at(-1)!.id;
      }
    });
  }

  uniqueClashes(): UniqueClashReport[] {
    return this.clashes.map((clash) => ({ ...clash, ids: [...clash.ids] }));
  }

  meta(key: string): Promise<unknown> {
    return this.guard(async () => {
      const rows = await this.sql.unsafe(`SELECT value FROM ${this.names.meta} WHERE key = $1`, [key]);
      return rows.length === 0 ? undefined : (rows[0]!.value as unknown);
    });
  }

  /**
   * An advisory lock taken in a transaction opened for the task, which holds a connection of the
   * pool until the task ends: other processes sharing the schema wait in pg_advisory_xact_lock until
   * it commits, after the task, or until its connection goes (this process died). A transaction, not
   * a session lock on sql.reserve(): postgres 3.4 never hands over a reserved connection it had to
   * open (with fetch_types off) until another one frees up. The transaction writes nothing, so it
   * takes no xid and holds back neither the change feed (XMIN) nor, in read committed, vacuum.
   */
  exclusively<T>(name: string, task: () => Promise<T>): Promise<T> {
    return beginSafely(this.sql, "", async (tx) => {
      await tx.unsafe(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`tabula ${this.options.pgSchema} ${name}`]);
      return task();
    });
  }

  nextRev(): number {
    if (this.nextRevision > this.revisionEnd) this.takeSpareBlock();
    return this.nextRevision++;
  }

  maxId(): string | undefined {
    return this.largestId;
  }

  commit(batch: WriteBatch): Promise<Commit> {
    this.scans.noteCheap();
    return this.guard(async (call) => {
      const inBatch = uniqueClashInBatch(batch, this.unique);
      if (inBatch) throw inBatch;
      // A create commits in one round trip; any other batch in a transaction of several statements.
      const isAtOnce = isCreateOnly(batch);
      if (isAtOnce) commitUnlessAbandoned(call, 0);
      const committed = isAtOnce ? insertAtOnce(this.sql, this.names, batch, this.uniqueIndexNames) : beginSafely(this.sql, "", async (tx) => {
        throwIfAbandoned(call);
        // The answer first: a second request with the same key waits here until the first commits.
        if (batch.answer) await insertAnswer(tx, this.names, batch.answer);
        if (batch.matches?.length) await checkMatches(tx, this.names, batch.matches, (entity) => this.columnsOf(entity));
        // Drops before puts: a renamed entity's rows are put under the new name by the same batch.
        for (const entity of new Set(batch.drops)) await dropRows(tx, this.names, entity);
        if (batch.meta?.length) await writeMeta(tx, this.names, batch.meta);
        if (batch.puts.length === 0) return commitUnlessAbandoned(call, 0);
        const [{ seq }] = await tx.unsafe(`SELECT pg_current_xact_id()::text::bigint AS seq`);
        batch.puts.forEach(({ row }, index) => {
          row.seq = seq as number;
          row.index = index;
        });
        const types = await writePuts(tx, this.names, batch.puts);
        await this.feed.insertEvents(tx, batch.puts, types, seq as number);
        return commitUnlessAbandoned(call, seq as number);
      });
      const seq = await committed
        .then((seq) => {
          this.feed.committed(seq, batch.puts.length);
          return seq;
        })
        .catch(async (error: { code?: string; constraint_name?: string }) => {
          // A unique index refused a row: find which record holds its values, now that the batch is rolled back.
          const index = error.code === "23505" ? this.uniqueIndexes.get(error.constraint_name ?? "") : undefined;
          if (index) throw await uniqueViolationOf(this.sql, this.names, batch, index);
          throw error;
        });
      return { seq };
    }).catch((error: unknown) => {
      if (error instanceof ConflictError || error instanceof UniqueViolation || error instanceof StoreUnreachableError) throw error;
      // Anything else failed this batch alone (it was rolled back): the server answers 500 and goes on.
      throw new WriteFailedError(`The database refused a write: ${(error as Error).message}`, { cause: error });
    });
  }

  whenDurable(): null {
    // A commit resolves once PostgreSQL has committed it; there is never anything to wait for.
    return null;
  }

  feedState(): Promise<FeedState> {
    return this.feed.feedState();
  }

  readChanges(after: FeedPosition, entities: ReadonlySet<string> | null, limit: number): Promise<FeedRead> {
    return this.feed.readChanges(after, entities, limit);
  }

  readLatest(after: FeedPosition, upTo: FeedPosition, entities: ReadonlySet<string> | null, limit: number): Promise<FeedRead> {
    return this.feed.readLatest(after, upTo, entities, limit);
  }

  onFeed(listener: () => void): void {
    this.feed.onFeed(listener);
  }

  /**
   * The database is back after an outage: a new pool, and the old one ended. The driver's
   * connections that failed during the outage can hold a statement until their connect timeout
   * once it is back (seen after a restart); new ones connect at once. No call is on the old pool:
   * the health watch gave up every one when the database went, and let none start since.
   */
  private replacePool(): void {
    const old = this.sql;
    this.sql = this.openPool();
    old.end({ timeout: 0 }).catch(() => {});
    // Notifications missed meanwhile: tellFeedListeners runs once listening (and every FEED_POLL_MS).
    this.feed.listen().catch(() => {});
  }

  /** Exact counts, in one statement for every entity: a scan of each table (GET /metrics; see docs/postgresql.md). */
  metrics(): Promise<StoreMetrics> {
    return this.guard(async () => {
      const entities = [...this.options.schema.entities.keys()];
      const counts = entities.map(
        (entity, i) => `SELECT ${i} AS i, count(*) FILTER (WHERE NOT deleted)::bigint AS live, count(*) FILTER (WHERE deleted)::bigint AS deleted FROM ${this.names.table(entity)}`,
      );
      const rows = await this.sql.unsafe(counts.join(" UNION ALL "));
      return { records: rows.map((row) => ({ entity: entities[row.i as number]!, live: row.live as number, deleted: row.deleted as number })) };
    });
  }

  findAnswer(scope: string, now: number): Promise<IdempotentAnswer | undefined> {
    return this.answers.findAnswer(scope, now);
  }

  async reset(): Promise<void> {
    const tables = [...this.options.schema.entities.keys()].map((entity) => this.names.table(entity));
    await this.guard(() =>
      beginSafely(this.sql, "", async (tx) => {
        // The feed forgets every event: a resume from before the reset catches up from what is stored.
        await tx.unsafe(
          `UPDATE ${this.names.feed} AS f SET horizon_seq = c.seq, horizon_idx = c.idx
           FROM (SELECT seq, idx FROM ${this.names.changes} ORDER BY seq DESC, idx DESC LIMIT 1) AS c WHERE (c.seq, c.idx) > (f.horizon_seq, f.horizon_idx)`,
        );
        await tx.unsafe(`TRUNCATE ${[...tables, this.names.answers, this.names.changes].join(", ")}`);
      }),
    );
  }

  async close(): Promise<void> {
    this.scans.close(new StoreUnreachableError("The server is stopping.", false));
    this.health.close();
    this.answers.close();
    await this.feed.close();
    // Statements still running were not answered by now (server.ts gave them a second): nothing answered is lost.
    await this.sql.end({ timeout: 0.5 });
  }

  /** Rows of a list: SQL alone when the filter translates exactly, else SQL's superset finished here. */
  private async select(
    entity: string,
    filter: FilterNode | null,
    deleted: DeletedFilter,
    sort: SortSpec,
    after: SortPosition | null,
    skip: number,
    limit: number,
    /** Where to run the statements: the pool, or a transaction (an export's). */
    db: TransactionSql = this.sql,
    /** A page of a walk through every row: costly as a whole, however cheap each page. */
    isWalk = false,
  ): Promise<Row[]> {
    const params = new SqlParams();
    const columns = this.columnsOf(entity);
    const where = whereOf(filter, params, columns);
    const base = [deletedCondition(deleted), where.sql];
    const table = this.names.table(entity);
    if (where.exact) {
      const conditions = [...base, after ? afterOf(sort, after, params, columns) : null].filter(isCondition);
      const paging = `${skip > 0 ? ` OFFSET ${params.add(skip)}` : ""}${limit === Infinity ? "" : ` LIMIT ${params.add(limit + 1)}`}`;
      // Without a filter every parameter is a value (a cursor's position, the paging): prepared, the
      // statement is planned once per connection, and planning a sort's long key expression against
      // the table's indexes costs more than running it. A filter names fields by parameter, which
      // only a plan made for its values matches to an index (sql-sort.ts, indexesOf).
      const text = `SELECT id, rev, deleted, data FROM ${table}${whereClause(conditions)} ORDER BY ${orderByOf(sort, columns)}${paging}`;
      const run = () => db.unsafe<DbRow[]>(text, params.values, { prepare: filter === null });
      // A page with no filter walks an index, unless a walk reads them all; inside an export's
      // transaction the lane is held already.
      const rows = (filter !== null || isWalk) && db === this.sql ? await this.scan(run) : await this.guard(run);
      return rows.map(toRow);
    }
    const accept = compileFilter(filter!);
    const found: Row[] = [];
    let toSkip = skip;
    let position = after;
    // Each chunk is tested at once, then the next waits for a turn with the event loop's other costly work.
    const turns = new Turns();
    try {
      for (;;) {
        const chunkParams = new SqlParams(params.values);
        const conditions = [...base, position ? afterOf(sort, position, chunkParams, columns) : null].filter(isCondition);
        const text = `SELECT id, rev, deleted, data FROM ${table}${whereClause(conditions)} ORDER BY ${orderByOf(sort, columns)} LIMIT ${chunkParams.add(RESIDUAL_CHUNK)}`;
        const run = () => db.unsafe<DbRow[]>(text, chunkParams.values);
        const rows = (await turns.idle(db !== this.sql ? this.guard(run) : this.scan(run))).map(toRow);
        let isFull = false;
        for (const row of rows) {
          if (!accept(row)) continue;
          if (toSkip > 0) toSkip--;
          else if (found.push(row) > limit) {
            isFull = true;
            break;
          }
        }
        if (isFull || rows.length < RESIDUAL_CHUNK) return found;
        position = this.positionOf(entity, rows[rows.length - 1]!, sort);
        await turns.next();
      }
    } finally {
      turns.end();
    }
  }

  /** A statement that may read much of a table (scan-lane.ts), and its rows read. */
  private async runStatement<T>(statement: Statement<T>): Promise<T | null> {
    const rows = await this.scan(() => this.sql.unsafe(statement.text, statement.values));
    return statement.read(rows);
  }

  /** An entity's typed columns; none for one no longer declared (its table may lack them). */
  private columnsOf(entity: string): TypedColumns {
    return this.columns.get(entity) ?? NO_COLUMNS;
  }

  /** Every row matching `filter`, in id order, a chunk at a time. */
  private async walk(entity: string, filter: FilterNode | null, deleted: DeletedFilter, visit: (row: Row) => void): Promise<void> {
    for (let after: SortPosition | null = null; ; ) {
      const rows = await this.select(entity, filter, deleted, ID_ORDER, after, 0, RESIDUAL_CHUNK - 1, this.sql, true);
      for (const row of rows) visit(row);
      if (rows.length < RESIDUAL_CHUNK) return;
      after = { key: rows[rows.length - 1]!.id, id: rows[rows.length - 1]!.id };
    }
  }

  /**
   * Runs a database call under the health watch (health.ts: 503 at once while the database is
   * away, within 2 s once it goes); a lost connection becomes StoreUnreachableError (503, and the
   * health probe decides whether the next call may try again).
   */
  /**
   * A statement that may read much of a table: run under the health watch once it has a place in
   * the lane (scan-lane.ts), so that waiting for one is not mistaken for a database that does not answer.
   */
  private scan<T>(statement: () => Promise<T>): Promise<T> {
    return this.scans.run(() => this.guard(statement));
  }

  private guard<T>(work: (call: Call) => Promise<T>): Promise<T> {
    return this.health.run(async (call) => {
      try {
        return await work(call);
      } catch (error) {
        if (error instanceof ConflictError || error instanceof UniqueViolation || error instanceof StoreUnreachableError) throw error;
        const code = (error as { code?: string }).code;
        // Two transactions waited on each other, or a serialization failure: build the batch again.
        if (code === "40001" || code === "40P01") throw new ConflictError("rev", "The database refused the batch for a concurrent one; build it again.");
        const problem = connectionProblem(error, this.options.url);
        if (!problem) throw error;
        void this.health.check();
        throw new StoreUnreachableError(problem.message, call.isCommitting);
      }
    });
  }

  private fetchSpareBlock(): void {
    const pending = this.sql.unsafe(`SELECT nextval('${this.names.revs}') AS block`).then(([row]) => (this.spareBlock = row!.block as number));
    this.spareBlock = pending;
    // A failure is met again when the block is needed (takeSpareBlock): no unhandled rejection here.
    pending.catch(() => {
      if (this.spareBlock === pending) this.spareBlock = null;
    });
  }

  private takeSpareBlock(): void {
    const block = this.spareBlock;
    if (typeof block !== "number") {
      // A million revisions handed out before one round trip came back: not seen, but never reuse one.
      if (block === null) this.fetchSpareBlock();
      throw new StoreUnreachableError("The database has not yet answered for a new block of revisions; retry.");
    }
    this.nextRevision = block * REV_BLOCK + 1;
    this.revisionEnd = (block + 1) * REV_BLOCK;
    this.fetchSpareBlock();
  }
}

/**
 * A commit's transaction ends here: rolled back when its request was answered 503 meanwhile (so
 * that "nothing was stored" stays true), else committed, from when its outcome is unknown should
 * the connection be lost. Synchronous with the health watch's giving up: one or the other is first.
 */
function commitUnlessAbandoned<T>(call: Call, value: T): T {
  throwIfAbandoned(call);
  call.isCommitting = true;
  return value;
}

function throwIfAbandoned(call: Call): void {
  if (call.isAbandoned) throw new StoreUnreachableError("The request was answered 503 meanwhile: the transaction is rolled back.");
}

/**
 * valueCounts over a typed column: the rows whose column holds their value (a boolean as 0 or 1, a
 * number, a text shorter than the column's prefix) counted from the column, which its index
 * holds; the others (missing, null, of another type, a long text) by their value in `data`. One
 * statement, so one snapshot.
 */
function valueCountsText(table: string, column: TypedColumn): string {
  const isOther = column.kind === "string" ? `(${column.sql} = ${TEXT_LAST} OR length(${column.sql}) >= ${SORT_PREFIX_CHARS})` : `${column.sql} = ${NUMERIC_LAST}`;
  return (
    `SELECT ${column.sql}::text AS key, NULL::jsonb AS value, count(*)::int AS count FROM ${table} WHERE NOT deleted AND NOT ${isOther} GROUP BY 1 ` +
    `UNION ALL SELECT NULL, data -> $1::text, count(*)::int FROM ${table} WHERE NOT deleted AND ${isOther} GROUP BY 2`
  );
}

function valueCountsOf(column: TypedColumn): (rows: readonly Record<string, unknown>[]) => Map<unknown, number> {
  const valueOf = (key: string): unknown => (column.kind === "boolean" ? key === "1" : column.kind === "number" ? Number(key) : decodeText(key.slice(TEXT_PRESENT_PREFIX.length)));
  return (rows) => {
    const counts = new Map<unknown, number>();
    for (const { key, value, count } of rows) {
      // A missing member reads as SQL NULL: under undefined, as the memory store counts rows lacking the field.
      const found = key === null ? (value ?? undefined) : valueOf(key as string);
      counts.set(found, (counts.get(found) ?? 0) + (count as number));
    }
    return counts;
  };
}

function deletedCondition(deleted: DeletedFilter): string | null {
  return deleted === "exclude" ? "NOT deleted" : deleted === "only" ? "deleted" : null;
}

async function largestIdOf(sql: Sql, names: Names, entities: readonly string[]): Promise<string | undefined> {
  if (entities.length === 0) return undefined;
  const text = entities.map((entity) => `SELECT max(id) AS id FROM ${names.table(entity)}`).join(" UNION ALL ");
  const rows = await sql.unsafe(`SELECT max(id) AS id FROM (${text}) AS ids`);
  return (rows[0]?.id as string | null) ?? undefined;
}
