// The PostgreSQL store (docs/postgresql.md): every entity a table of its own in one schema, rows as
// jsonb, filters and sorts translated to SQL (sql-query.ts), and every commit one transaction that
// checks what its batch expects, so that several tabula processes can share the database. Nothing
// is kept in this process but a block of revisions: reads ask the database every time.

import { performance } from "node:perf_hooks";
import { compileFilter } from "../../query/predicate.ts";
import type { FilterNode, SortPosition, SortSpec } from "../../query/filter-tree.ts";
import type { Schema } from "../../schema/load.ts";
import { toSortKey } from "../../schema/fields.ts";
import type { ValueIndexedFields } from "../memory/memory-store.ts";
import {
  changeTypeOf,
  ConflictError,
  StoreUnreachableError,
  uniqueClashInBatch,
  WriteFailedError,
  uniqueKeyOf,
  UniqueViolation,
  type UniqueFields,
  type ChangeType,
  type Commit,
  type DeletedFilter,
  type FeedEvent,
  type FeedPosition,
  type FeedRead,
  type FeedState,
  type IdempotentAnswer,
  type ListQuery,
  type ListResult,
  type MatchCheck,
  type MetaWrite,
  type Put,
  type Row,
  type RowPages,
  type Store,
  type StoreMetrics,
  type UniqueClashReport,
  type WriteBatch,
} from "../store.ts";
import type { KeyVault } from "../../keys/key-vault.ts";
import { postgresKeyVault } from "./key-vault.ts";
import { settingName } from "../../option-names.ts";
import { beginSafely, connectionProblem, hostOf, loadDriver, type Sql, type TransactionSql } from "./connection.ts";
import { DatabaseHealth, PROBE_TIMEOUT_MS, type Call } from "./health.ts";
import { createTables, LEGACY_HORIZON_INDEX, uniqueIndexOf, type Names, type UniqueIndex } from "./tables.ts";
import { whereOf } from "./sql-filter.ts";
import { openSnapshotPages } from "./snapshot-pages.ts";
import { afterOf, orderByOf } from "./sql-sort.ts";
import { arrayLiteral, SqlParams } from "./sql-values.ts";

/** Revisions come from the database in blocks of this many, so that nextRev() needs no round trip. */
const REV_BLOCK = 1 << 20;
/** How often expired idempotent answers are deleted (they are never found once expired). */
const ANSWER_SWEEP_MS = 10 * 60 * 1000;
/** Rows read per query when a filter is finished in JavaScript (see whereOf's `exact`). */
const RESIDUAL_CHUNK = 1000;
/**
 * Puts written per statement, and rows read per page by forEachRow: a migration's batch of
 * 100,000 records or more is sent as many statements of one transaction, each parameter a few MB
 * of JSON, never one text near V8's limit on a string's length.
 */
const WRITE_CHUNK_ROWS = 5000;
const ROW_PAGE_ROWS = 5000;
/** Connections in the pool; exports may hold half of them, so that writes always find one. */
const POOL_SIZE = 10;
/**
 * A connection not made within this is given up (the driver's default is 30 s). Requests do not
 * wait for it: DatabaseHealth answers them 503 within 2 s of a database going away.
 */
const CONNECT_TIMEOUT_S = 2;
/**
 * How long a connection that failed waits before it tries again. The driver's default grows with
 * each failure up to 20 s, which held the first requests after the database came back that long.
 */
const RECONNECT_BACKOFF_S = 0.05;
/**
 * No look-up of array types on each new connection: the store reads no SQL array (json_agg
 * instead), and postgres 3.4 leaves that look-up's failure unhandled when the database goes
 * between the connection's start and the look-up, which would end the process.
 */
const FETCH_TYPES = false;
const ID_ORDER: SortSpec = { field: "id", kind: "string", descending: false };
/** How often the change feed's kept events are cut back to --changes-keep (any process may). */
const FEED_TRIM_MS = 10_000;
/** After a trim at a commit, another this much later (see commit). */
const FEED_TRIM_AGAIN_MS = 250;
/** Readers are told to look for events this often even without a notification (one lost with a connection). */
const FEED_POLL_MS = 1000;
/** While a notified commit is not yet readable (an older transaction still runs), look again after this long, doubling. */
const FEED_VISIBLE_RETRY_MS = 2;
const FEED_VISIBLE_RETRY_MAX_MS = 100;
/** How long a read of the feed waits for this process's own newest write to become readable. */
const FEED_OWN_WRITE_WAIT_MS = 1000;
/**
 * The seq of a commit is its transaction id (xid8), and an event may be read once every
 * transaction before it has ended: once its seq is below the snapshot's xmin. Then no event can
 * ever appear before one already read, though transactions commit in another order than their
 * ids; two that write one record commit in id order (the second read what the first wrote).
 */
const XMIN = "pg_snapshot_xmin(pg_current_snapshot())::text::bigint";
const XMAX = "pg_snapshot_xmax(pg_current_snapshot())::text::bigint";

export interface PostgresStoreOptions {
  readonly url: string;
  readonly schema: Schema;
  /** The PostgreSQL schema of tabula's tables. */
  readonly pgSchema: string;
  readonly valueIndexed: ValueIndexedFields;
  /** Events the change feed keeps (--changes-keep). */
  readonly changesKeep: number;
}

/** What a put did to its record, as its event names it: a migration's rewrite is a sync (Put.sync). */
type EventType = ChangeType | "sync";

interface DbEvent extends DbRow {
  seq: number;
  idx: number;
  entity: string;
  type: string;
}

interface DbRow {
  id: string;
  rev: string | number;
  deleted: boolean;
  data: Record<string, unknown>;
}

export class PostgresStore implements Store {
  readonly idNode: number;
  private readonly unique: UniqueFields;
  /** Each unique index by its name, which a unique violation gives. */
  private readonly uniqueIndexes: ReadonlyMap<string, UniqueIndex>;
  private readonly feedListeners: Array<() => void> = [];
  /** The newest seq announced by a commit's notification, not yet readable; 0 when none waits. */
  private awaitedSeq = 0;
  private watchingVisibility = false;
  private readonly feedTimers: NodeJS.Timeout[] = [];
  private unlisten: (() => Promise<void>) | null = null;
  /** Events this process wrote since it last cut the kept events back. */
  private eventsSinceTrim = 0;
  private trimAgain: NodeJS.Timeout | null = null;
  /** The seq of this process's newest commit: reads of the feed wait until it is readable. */
  private lastCommittedSeq = 0;
  /** The revisions this process may hand out: [next, end), then the spare block. */
  private nextRevision: number;
  private revisionEnd: number;
  private spareBlock: Promise<number> | number | null = null;
  private readonly answerSweep: NodeJS.Timeout;
  private readonly health: DatabaseHealth;
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
    this.nextRevision = revBlock * REV_BLOCK + 1;
    this.revisionEnd = (revBlock + 1) * REV_BLOCK;
    this.fetchSpareBlock();
    // Any process may sweep: the statement is the same whoever runs it, and a lost one is harmless.
    this.answerSweep = setInterval(() => {
      this.sql.unsafe(`DELETE FROM ${this.names.answers} WHERE expires_at <= $1`, [Date.now()]).catch(() => {});
    }, ANSWER_SWEEP_MS).unref();
    this.feedTimers.push(
      setInterval(() => void this.trimChanges().catch(() => {}), FEED_TRIM_MS).unref(),
      setInterval(() => this.tellFeedListeners(), FEED_POLL_MS).unref(),
    );
  }

  /**
   * Connects, creates what is missing (schema, tables, indexes, sequences) and checks what exists.
   * Rejects with a message naming what to fix: the driver missing, the database unreachable, wrong
   * credentials, tables of another shape.
   */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const postgres = await loadDriver();
    const openPool = () =>
      postgres(options.url, {
        max: POOL_SIZE,
        onnotice: () => {},
        connect_timeout: CONNECT_TIMEOUT_S,
        backoff: RECONNECT_BACKOFF_S,
        fetch_types: FETCH_TYPES,
        // Revisions and seqs are bigint, read as numbers: they stay far below 2^53.
        types: { bigint: { to: 20, from: [20], serialize: (value: number) => String(value), parse: (value: string) => Number(value) } },
      }) as Sql;
    const sql = openPool();
    try {
      const { names, clashes } = await createTables(sql, options.schema, options.pgSchema);
      const [{ node, block }] = await sql.unsafe(`SELECT nextval('${names.nodes}')::int AS node, nextval('${names.revs}') AS block`);
      const largestId = await largestIdOf(sql, names, [...options.schema.entities.keys()]);
      const store = new PostgresStore(sql, openPool, () => probeDatabase(postgres, options.url), names, options, node, block, largestId);
      store.clashes = clashes;
      await store.listen();
      await store.trimChanges();
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
    return this.guard(async () => {
      const rows = await this.sql.unsafe<DbRow[]>(`SELECT id, rev, deleted, data FROM ${this.names.table(entity)} WHERE id = $1`, [id], { prepare: true });
      return rows.length === 0 ? undefined : toRow(rows[0]!);
    });
  }

  /** Other processes write the same tables unseen: every read asks the database. */
  readCache(): null {
    return null;
  }

  list(entity: string, query: ListQuery): Promise<ListResult> {
    return this.guard(async () => {
      const rows = await this.select(entity, query.filter, query.deleted, query.sort, query.after, query.skip, query.limit);
      const hasMore = rows.length > query.limit;
      return { rows: hasMore ? rows.slice(0, query.limit) : rows, hasMore };
    });
  }

  count(entity: string, filter: FilterNode | null, deleted: DeletedFilter): Promise<number> {
    return this.guard(async () => {
      const params = new SqlParams();
      const where = whereOf(filter, params);
      const conditions = [deletedCondition(deleted), where.sql].filter(isCondition);
      if (where.exact) {
        const [{ count }] = await this.sql.unsafe(`SELECT count(*)::int AS count FROM ${this.names.table(entity)}${whereClause(conditions)}`, params.values);
        return count as number;
      }
      let count = 0;
      await this.walk(entity, filter, deleted, () => count++);
      return count;
    });
  }

  valueCounts(entity: string, field: string): Promise<ReadonlyMap<unknown, number> | null> | null {
    if (!(this.options.valueIndexed.get(entity) ?? []).includes(field)) return null;
    return this.guard(async () => {
      const rows = await this.sql.unsafe(`SELECT data -> $1::text AS value, count(*)::int AS count FROM ${this.names.table(entity)} WHERE NOT deleted GROUP BY 1`, [field]);
      const counts = new Map<unknown, number>();
      // A missing member reads as SQL NULL: under undefined, as the memory store counts rows lacking the field.
      for (const { value, count } of rows) counts.set(value ?? undefined, count as number);
      return counts;
    });
  }

  forEachLive(entity: string, filter: FilterNode | null, visit: (row: Row) => void): Promise<void> {
    return this.guard(() => this.walk(entity, filter, "exclude", visit));
  }

  readonly maxOpenExports = POOL_SIZE / 2;

  openExport(entity: string, filter: FilterNode | null): Promise<RowPages> {
    // Each page asks for one row fewer than it wants: select answers up to limit + 1.
    return this.guard(() => openSnapshotPages(this.sql, (tx, after, max) => this.guard(() => this.select(entity, filter, "exclude", ID_ORDER, after, 0, max - 1, tx))));
  }

  positionOf(_entity: string, row: Row, sort: SortSpec): SortPosition {
    return { key: sort.field === "id" ? row.id : toSortKey(sort.kind, row.data[sort.field]), id: row.id };
  }

  storedFieldNames(): Promise<Map<string, Set<string>>> {
    return this.guard(async () => {
      const names = new Map<string, Set<string>>();
      for (const entity of this.options.schema.entities.keys()) {
        const rows = await this.sql.unsafe(`SELECT DISTINCT jsonb_object_keys(data) AS name FROM ${this.names.table(entity)}`);
        if (rows.length > 0) names.set(entity, new Set(rows.map((row) => row.name as string)));
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
    return this.guard(async (call) => {
      const inBatch = uniqueClashInBatch(batch, this.unique);
      if (inBatch) throw inBatch;
      const seq = await beginSafely(this.sql, "", async (tx) => {
        throwIfAbandoned(call);
        // The answer first: a second request with the same key waits here until the first commits.
        if (batch.answer) await insertAnswer(tx, this.names, batch.answer);
        if (batch.matches?.length) await this.checkMatches(tx, batch.matches);
        // Drops before puts: a renamed entity's rows are put under the new name by the same batch.
        for (const entity of new Set(batch.drops)) await this.dropRows(tx, entity);
        if (batch.meta?.length) await writeMeta(tx, this.names, batch.meta);
        if (batch.puts.length === 0) return commitUnlessAbandoned(call, 0);
        const [{ seq }] = await tx.unsafe(`SELECT pg_current_xact_id()::text::bigint AS seq`);
        batch.puts.forEach(({ row }, index) => {
          row.seq = seq as number;
          row.index = index;
        });
        const types = await this.writePuts(tx, batch.puts);
        await this.insertEvents(tx, batch.puts, types, seq as number);
        return commitUnlessAbandoned(call, seq as number);
      })
        .then((seq) => {
          if (seq > this.lastCommittedSeq) this.lastCommittedSeq = seq;
          // Cut back every tenth of the window written, besides the timer: the window stays near its size.
          this.eventsSinceTrim += batch.puts.length;
          if (this.eventsSinceTrim >= Math.max(1, this.options.changesKeep / 10)) {
            this.eventsSinceTrim = 0;
            this.trimChanges().catch(() => {});
            // A transaction of another process still running keeps its successors' events from
            // being cut (XMIN): try once more when it has likely ended, not only on the next timer.
            this.trimAgain ??= setTimeout(() => {
              this.trimAgain = null;
              this.trimChanges().catch(() => {});
            }, FEED_TRIM_AGAIN_MS).unref();
          }
          return seq;
        })
        .catch(async (error: { code?: string; constraint_name?: string }) => {
          // A unique index refused a row: find which record holds its values, now that the batch is rolled back.
          const index = error.code === "23505" ? this.uniqueIndexes.get(error.constraint_name ?? "") : undefined;
          if (index) throw await this.uniqueViolationOf(batch, index);
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
    return this.guard(async () => {
      // A write this process has answered is readable once the transactions older than it end
      // (milliseconds): wait for that, so that a client reads its own writes in the feed.
      for (const giveUpAt = Date.now() + FEED_OWN_WRITE_WAIT_MS; ; ) {
        const [{ xmin }] = await this.sql.unsafe(`SELECT ${XMIN} AS xmin`, [], { prepare: true });
        if (Number(xmin) > this.lastCommittedSeq || Date.now() >= giveUpAt) break;
        await new Promise((resolve) => setTimeout(resolve, FEED_VISIBLE_RETRY_MS));
      }
      const [state] = await this.sql.unsafe(
        `SELECT ${XMIN} AS xmin, ${XMAX} AS xmax, f.horizon_seq, f.horizon_idx, h.seq AS head_seq, h.idx AS head_idx, o.seq AS oldest_seq, o.idx AS oldest_idx
         FROM ${this.names.feed} AS f
         LEFT JOIN LATERAL (SELECT seq, idx FROM ${this.names.changes} WHERE seq < ${XMIN} ORDER BY seq DESC, idx DESC LIMIT 1) AS h ON true
         LEFT JOIN LATERAL (SELECT seq, idx FROM ${this.names.changes} WHERE seq < ${XMIN} ORDER BY seq, idx LIMIT 1) AS o ON true`,
        [],
        { prepare: true },
      );
      const horizon = { seq: Number(state!.horizon_seq), index: Number(state!.horizon_idx) };
      const head = state!.head_seq === null ? horizon : { seq: Number(state!.head_seq), index: Number(state!.head_idx) };
      const oldest = state!.oldest_seq === null ? null : { seq: Number(state!.oldest_seq), index: Number(state!.oldest_idx) };
      return { head, horizon, oldest, issued: { seq: Number(state!.xmax) - 1, index: Number.MAX_SAFE_INTEGER } };
    });
  }

  readChanges(after: FeedPosition, entities: ReadonlySet<string> | null, limit: number): Promise<FeedRead> {
    return this.guard(async () => {
      const params = [after.seq, Math.min(after.index, LEGACY_HORIZON_INDEX), limit, ...(entities ? [arrayLiteral([...entities])] : [])];
      const rows = await this.sql.unsafe<DbEvent[]>(
        `SELECT seq, idx, entity, id, type, rev, deleted, data FROM ${this.names.changes}
         WHERE (seq, idx) > ($1, $2) AND seq < ${XMIN}${entities ? " AND entity = ANY($4::text[])" : ""} ORDER BY seq, idx LIMIT $3`,
        params,
        { prepare: true },
      );
      const events = rows.map((row): FeedEvent => ({ entity: row.entity, type: row.type as EventType, row: toRow(row) }));
      const last = rows.at(-1);
      return { events, through: last ? { seq: Number(last.seq), index: last.idx } : after };
    });
  }

  readLatest(after: FeedPosition, upTo: FeedPosition, entities: ReadonlySet<string> | null, limit: number): Promise<FeedRead> {
    return this.guard(async () => {
      const names = [...this.options.schema.entities.keys()].filter((entity) => entities === null || entities.has(entity));
      if (names.length === 0) return { events: [], through: upTo };
      const params = new SqlParams();
      const [afterSeq, afterIdx, upToSeq, upToIdx, count] = [after.seq, Math.min(after.index, LEGACY_HORIZON_INDEX), upTo.seq, Math.min(upTo.index, LEGACY_HORIZON_INDEX), limit].map((value) => params.add(value));
      const parts = names.map(
        (entity) =>
          `(SELECT ${params.add(entity)}::text AS entity, id, rev, deleted, data, seq, idx FROM ${this.names.table(entity)}
            WHERE (seq, idx) > (${afterSeq}::bigint, ${afterIdx}::int) AND (seq, idx) <= (${upToSeq}::bigint, ${upToIdx}::int) ORDER BY seq, idx LIMIT ${count}::int)`,
      );
      const rows = await this.sql.unsafe<DbEvent[]>(`SELECT * FROM (${parts.join(" UNION ALL ")}) AS latest ORDER BY seq, idx LIMIT ${count}::int`, params.values);
      const events = rows.map((row): FeedEvent => ({ entity: row.entity, type: "sync", row: toRow(row) }));
      return { events, through: events.length === limit ? { seq: Number(rows.at(-1)!.seq), index: rows.at(-1)!.idx } : upTo };
    });
  }

  onFeed(listener: () => void): void {
    this.feedListeners.push(listener);
  }

  /** Cuts the kept events back to the newest --changes-keep, among those every reader could see. */
  async trimChanges(): Promise<void> {
    await this.sql.unsafe(
      `WITH cut AS (
         SELECT seq, idx FROM ${this.names.changes} WHERE seq < ${XMIN} ORDER BY seq DESC, idx DESC OFFSET $1 LIMIT 1
       ), dropped AS (
         DELETE FROM ${this.names.changes} AS c USING cut WHERE (c.seq, c.idx) <= (cut.seq, cut.idx)
       )
       UPDATE ${this.names.feed} AS f SET horizon_seq = cut.seq, horizon_idx = cut.idx FROM cut WHERE (cut.seq, cut.idx) > (f.horizon_seq, f.horizon_idx)`,
      [this.options.changesKeep],
    );
  }

  /** Every process hears every commit's notification, its own included, on a connection of its own. */
  private async listen(): Promise<void> {
    const request = (this.sql as unknown as { listen(channel: string, onNotify: (value: string) => void, onListen: () => void): Promise<{ unlisten(): Promise<void> }> }).listen(
      this.names.channel,
      (value) => this.heard(Number(value)),
      // Also after a reconnection: notifications may have been missed meanwhile.
      () => this.tellFeedListeners(),
    );
    const { unlisten } = await request;
    this.unlisten = unlisten;
  }

  /** A commit of seq was notified: tell the readers once every transaction before it has ended. */
  private heard(seq: number): void {
    if (!(seq > this.awaitedSeq)) return;
    this.awaitedSeq = seq;
    if (this.watchingVisibility) return;
    this.watchingVisibility = true;
    let delay = FEED_VISIBLE_RETRY_MS;
    const check = (): void => {
      this.sql.unsafe(`SELECT ${XMIN} AS xmin`).then(
        ([row]) => {
          if (Number(row!.xmin) > this.awaitedSeq) {
            this.watchingVisibility = false;
            this.awaitedSeq = 0;
            this.tellFeedListeners();
            return;
          }
          setTimeout(check, delay).unref();
          delay = Math.min(2 * delay, FEED_VISIBLE_RETRY_MAX_MS);
        },
        () => {
          // The database is away: the poll tells the readers once it is back.
          this.watchingVisibility = false;
          this.awaitedSeq = 0;
        },
      );
    };
    check();
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
    this.listen().catch(() => {});
  }

  private tellFeedListeners(): void {
    for (const listener of this.feedListeners) listener();
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
    return this.guard(async () => {
      const rows = await this.sql.unsafe(
        `SELECT scope, fingerprint, status, headers, body, expires_at FROM ${this.names.answers} WHERE scope = $1 AND expires_at > $2`,
        [scope, now],
        { prepare: true },
      );
      if (rows.length === 0) return undefined;
      const { fingerprint, status, headers, body, expires_at } = rows[0]!;
      return { scope, fingerprint, status, headers, body, expiresAt: Number(expires_at) };
    });
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
    this.health.close();
    clearInterval(this.answerSweep);
    for (const timer of this.feedTimers) clearInterval(timer);
    if (this.trimAgain) clearTimeout(this.trimAgain);
    await this.unlisten?.().catch(() => {});
    await this.sql.end({ timeout: 5 });
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
  ): Promise<Row[]> {
    const params = new SqlParams();
    const where = whereOf(filter, params);
    const base = [deletedCondition(deleted), where.sql];
    const table = this.names.table(entity);
    if (where.exact) {
      const conditions = [...base, after ? afterOf(sort, after, params) : null].filter(isCondition);
      const paging = `${skip > 0 ? ` OFFSET ${params.add(skip)}` : ""}${limit === Infinity ? "" : ` LIMIT ${params.add(limit + 1)}`}`;
      // Without a filter every parameter is a value (a cursor's position, the paging): prepared, the
      // statement is planned once per connection, and planning a sort's long key expression against
      // the table's indexes costs more than running it. A filter names fields by parameter, which
      // only a plan made for its values matches to an index (sql-sort.ts, indexesOf).
      const text = `SELECT id, rev, deleted, data FROM ${table}${whereClause(conditions)} ORDER BY ${orderByOf(sort)}${paging}`;
      const rows = await db.unsafe<DbRow[]>(text, params.values, { prepare: filter === null });
      return rows.map(toRow);
    }
    const accept = compileFilter(filter!);
    const found: Row[] = [];
    let toSkip = skip;
    let position = after;
    for (;;) {
      const chunkParams = new SqlParams(params.values);
      const conditions = [...base, position ? afterOf(sort, position, chunkParams) : null].filter(isCondition);
      const text = `SELECT id, rev, deleted, data FROM ${table}${whereClause(conditions)} ORDER BY ${orderByOf(sort)} LIMIT ${chunkParams.add(RESIDUAL_CHUNK)}`;
      const rows = (await db.unsafe<DbRow[]>(text, chunkParams.values)).map(toRow);
      // The rows are tested here, a chunk per statement: the event loop is held for one chunk at most.
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
    }
  }

  /** Every row matching `filter`, in id order, a chunk at a time. */
  private async walk(entity: string, filter: FilterNode | null, deleted: DeletedFilter, visit: (row: Row) => void): Promise<void> {
    for (let after: SortPosition | null = null; ; ) {
      const rows = await this.select(entity, filter, deleted, ID_ORDER, after, 0, RESIDUAL_CHUNK - 1);
      for (const row of rows) visit(row);
      if (rows.length < RESIDUAL_CHUNK) return;
      after = { key: rows[rows.length - 1]!.id, id: rows[rows.length - 1]!.id };
    }
  }

  /**
   * The live record that holds values a row of `batch` would take in `index`, the batch's own rows
   * left out (their stored values are theirs to give up); a ConflictError when none does any more
   * (it changed since the batch failed), so that the write is built again. The look-up goes through
   * the index by its key, then compares the values themselves: a holder whose long values only share
   * their digest (tables.ts) is no clash, and the row cannot be stored (a 500, never a 409).
   */
  private async uniqueViolationOf(batch: WriteBatch, index: UniqueIndex): Promise<UniqueViolation | ConflictError> {
    const { entity, fields } = index;
    const puts = batch.puts.filter((put) => put.entity === entity);
    const own = arrayLiteral(puts.map((put) => put.row.id));
    let digestHolder: string | null = null;
    for (const { row } of puts) {
      if (uniqueKeyOf(row, fields) === null) continue;
      const params = new SqlParams();
      const given = fields.map((field) => `${params.add(JSON.stringify(row.data[field]))}::text::jsonb`);
      const isSame = index.values.map((value, i) => `${value} = ${given[i]}`).join(" AND ");
      const text =
        `SELECT id, ${isSame} AS is_same FROM ${this.names.table(entity)} ` +
        `WHERE ${index.where} AND ${index.keyOf(index.values)} = ${index.keyOf(given)} AND NOT (id = ANY(${params.add(own)}::text[])) ` +
        `ORDER BY is_same DESC LIMIT 1`;
      const [holder] = await this.sql.unsafe(text, params.values);
      if (holder?.is_same) return new UniqueViolation(entity, fields, fields.map((field) => row.data[field]), holder.id as string);
      if (holder) digestHolder = holder.id as string;
    }
    if (digestHolder !== null) {
      throw new Error(`${entity} ${digestHolder} holds other values of ${fields.join(", ")} with the same SHA-256 as a row of this write, whose index cannot hold both.`);
    }
    return new ConflictError("rev", "A unique value was taken and given up again meanwhile; build the batch again.");
  }

  private async checkMatches(tx: TransactionSql, matches: readonly MatchCheck[]): Promise<void> {
    // Locks in one order in every process, so that two upserts cannot wait for each other.
    const locks = [...new Set(matches.flatMap((match) => match.locks))].sort();
    await tx.unsafe(`SELECT pg_advisory_xact_lock(hashtextextended(lock, 0)) FROM unnest($1::text[]) WITH ORDINALITY AS l(lock, n) ORDER BY n`, [arrayLiteral(locks)]);
    for (const match of matches) {
      const ids = new Set<string>();
      const params = new SqlParams();
      const where = whereOf(match.filter, params);
      const accept = where.exact || !match.filter ? null : compileFilter(match.filter);
      const text = `SELECT id, rev, deleted, data FROM ${this.names.table(match.entity)}${whereClause(["NOT deleted", where.sql].filter(isCondition))}`;
      for (const row of await tx.unsafe<DbRow[]>(text, params.values)) if (!accept || accept(toRow(row))) ids.add(row.id);
      if (ids.size !== match.ids.length || !match.ids.every((id) => ids.has(id))) {
        throw new ConflictError("match", `The ${match.entity} records matching an upsert's values changed.`);
      }
    }
  }

  /** Every row of `entity` (WriteBatch.drops), whose table may be gone or never made: then nothing. */
  private async dropRows(tx: TransactionSql, entity: string): Promise<void> {
    const table = this.names.table(entity);
    const [{ exists }] = await tx.unsafe(`SELECT to_regclass($1) IS NOT NULL AS exists`, [table]);
    // DELETE, not TRUNCATE: readers keep their snapshots, and the commit is all or nothing with the rest.
    if (exists) await tx.unsafe(`DELETE FROM ${table}`);
  }

  /**
   * The batch's events, one per put, in its order, WRITE_CHUNK_ROWS to a statement; and the
   * notification every process hears at commit.
   */
  private async insertEvents(tx: TransactionSql, puts: readonly Put[], types: ReadonlyMap<Put, EventType>, seq: number): Promise<void> {
    for (let from = 0; from < puts.length; from += WRITE_CHUNK_ROWS) {
      let json = "[";
      for (let index = from; index < Math.min(puts.length, from + WRITE_CHUNK_ROWS); index++) {
        const put = puts[index]!;
        const { row } = put;
        const data = row.memo?.dataJson ?? JSON.stringify(row.data);
        json += `${index === from ? "" : ","}{"idx":${index},"entity":${JSON.stringify(put.entity)},"id":${JSON.stringify(row.id)},"type":"${types.get(put)}","rev":${row.rev},"deleted":${row.deleted},"data":${data}}`;
      }
      await tx.unsafe(
        `INSERT INTO ${this.names.changes} (seq, idx, entity, id, type, rev, deleted, data)
         SELECT $1, idx, entity, id, type, rev, deleted, data
         FROM jsonb_to_recordset($2::text::jsonb) AS v(idx integer, entity text, id text, type text, rev bigint, deleted boolean, data jsonb)`,
        [seq, json + "]"],
      );
    }
    await tx.unsafe(`SELECT pg_notify($1, $2::text)`, [this.names.channel, seq]);
  }

  /**
   * New records inserted, others updated where they still have the revision they replace. Answers
   * what each put did to its record (an update reads the version it replaces: restored or deleted;
   * a migration's rewrite is a sync whatever it did). Each statement takes WRITE_CHUNK_ROWS puts of
   * one entity at most, however many the batch holds.
   */
  private async writePuts(tx: TransactionSql, puts: readonly Put[]): Promise<Map<Put, EventType>> {
    const types = new Map<Put, EventType>();
    const byEntity = new Map<string, Put[]>();
    for (const put of puts) {
      const group = byEntity.get(put.entity);
      if (group) group.push(put);
      else byEntity.set(put.entity, [put]);
    }
    for (const [entity, puts] of byEntity) {
      for (let from = 0; from < puts.length; from += WRITE_CHUNK_ROWS) await this.writeEntityPuts(tx, entity, puts.slice(from, from + WRITE_CHUNK_ROWS), types);
    }
    for (const put of puts) if (put.sync) types.set(put, "sync");
    return types;
  }

  /** Puts of one entity (see writePuts), what each did set in `types`. */
  private async writeEntityPuts(tx: TransactionSql, entity: string, group: readonly Put[], types: Map<Put, EventType>): Promise<void> {
    const table = this.names.table(entity);
    const inserts = group.filter((put) => put.replaces === 0);
    const updates = group.filter((put) => put.replaces !== undefined && put.replaces !== 0);
    const overwrites = group.filter((put) => put.replaces === undefined);
    if (inserts.length > 0) {
      const written = await tx.unsafe(`INSERT INTO ${table} (id, rev, deleted, data, created_date, updated_date, seq, idx) ${valuesOf()} ON CONFLICT (id) DO NOTHING RETURNING id`, [rowsJson(inserts)]);
      if (written.length !== inserts.length) throw new ConflictError("rev", `A new ${entity} record's id is taken.`);
      for (const put of inserts) types.set(put, "create");
    }
    if (updates.length > 0) {
      // `old` is the version replaced, as the statement's snapshot sees it.
      const written = await tx.unsafe(
        `UPDATE ${table} AS t SET rev = v.rev, deleted = v.deleted, data = v.data, updated_date = v.updated_date, seq = v.seq, idx = v.idx
         FROM (${valuesOf(true)}) AS v JOIN ${table} AS old ON old.id = v.id WHERE t.id = v.id AND t.rev = v.replaces RETURNING t.id, old.deleted AS was_deleted`,
        [rowsJson(updates)],
      );
      if (written.length !== updates.length) throw new ConflictError("rev", `A ${entity} record changed since it was read.`);
      const wasDeleted = new Map(written.map((row) => [row.id as string, row.was_deleted as boolean]));
      for (const put of updates) types.set(put, changeTypeOf({ ...put.row, deleted: wasDeleted.get(put.row.id)! }, put.row));
    }
    if (overwrites.length > 0) {
      const written = await tx.unsafe(
        `INSERT INTO ${table} (id, rev, deleted, data, created_date, updated_date, seq, idx) ${valuesOf()}
         ON CONFLICT (id) DO UPDATE SET rev = excluded.rev, deleted = excluded.deleted, data = excluded.data, updated_date = excluded.updated_date,
           seq = excluded.seq, idx = excluded.idx
         RETURNING id, (xmax = 0) AS inserted`,
        [rowsJson(overwrites)],
      );
      const inserted = new Map(written.map((row) => [row.id as string, row.inserted as boolean]));
      for (const put of overwrites) types.set(put, inserted.get(put.row.id) ? "create" : "update");
    }
  }

  /**
   * Runs a database call under the health watch (health.ts: 503 at once while the database is
   * away, within 2 s once it goes); a lost connection becomes StoreUnreachableError (503, and the
   * health probe decides whether the next call may try again).
   */
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

/** Resolves when the database answers a statement on a connection of its own, made for the purpose. */
async function probeDatabase(postgres: Awaited<ReturnType<typeof loadDriver>>, url: string): Promise<void> {
  const probe = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: Math.ceil(PROBE_TIMEOUT_MS / 1000), backoff: RECONNECT_BACKOFF_S, fetch_types: FETCH_TYPES });
  try {
    await probe.unsafe("SELECT 1");
  } finally {
    probe.end({ timeout: 0 }).catch(() => {});
  }
}

function toRow(row: DbRow & { seq?: number | string; idx?: number }): Row {
  // Transient: a row read from the database is never read again as this object (Row.isTransient).
  const stored: Row = { id: row.id, rev: Number(row.rev), deleted: row.deleted, data: row.data, isTransient: true };
  if (row.seq !== undefined) {
    stored.seq = Number(row.seq);
    stored.index = row.idx;
  }
  return stored;
}

function deletedCondition(deleted: DeletedFilter): string | null {
  return deleted === "exclude" ? "NOT deleted" : deleted === "only" ? "deleted" : null;
}

function isCondition(condition: string | null | undefined): condition is string {
  return typeof condition === "string" && condition !== "" && condition !== "TRUE";
}

function whereClause(conditions: readonly string[]): string {
  return conditions.length === 0 ? "" : ` WHERE ${conditions.map((c) => `(${c})`).join(" AND ")}`;
}

/**
 * The rows of puts as one SELECT over a JSON parameter ($1): one statement however many rows, the
 * data JSON a new version carries spliced in as it is rather than serialized again.
 */
function valuesOf(withReplaces = false): string {
  return `SELECT id, rev, deleted, data, created_date, updated_date, seq, idx${withReplaces ? ", replaces" : ""}
    FROM jsonb_to_recordset($1::text::jsonb) AS v(id text, rev bigint, deleted boolean, data jsonb, created_date timestamptz,
      updated_date timestamptz, seq bigint, idx integer${withReplaces ? ", replaces bigint" : ""})`;
}

function rowsJson(puts: readonly Put[]): string {
  let json = "[";
  for (const { row, replaces } of puts) {
    const data = row.memo?.dataJson ?? JSON.stringify(row.data);
    const created = JSON.stringify(timestampOf(row.data.created_date));
    const updated = JSON.stringify(timestampOf(row.data.updated_date));
    json += `${json.length > 1 ? "," : ""}{"id":${JSON.stringify(row.id)},"rev":${row.rev},"deleted":${row.deleted},"data":${data},"created_date":${created},"updated_date":${updated},"seq":${row.seq ?? 0},"idx":${row.index ?? 0},"replaces":${replaces ?? 0}}`;
  }
  return json + "]";
}

/** Stored timestamps are ISO strings; a row from an old store without one gets the epoch. */
function timestampOf(value: unknown): string {
  return typeof value === "string" ? value : "1970-01-01T00:00:00.000Z";
}

/** Store.meta()'s values, in the commit's transaction: set, or deleted by a null value. */
async function writeMeta(tx: TransactionSql, names: Names, writes: readonly MetaWrite[]): Promise<void> {
  for (const { key, value } of writes) {
    if (value === null || value === undefined) await tx.unsafe(`DELETE FROM ${names.meta} WHERE key = $1`, [key]);
    else await tx.unsafe(`INSERT INTO ${names.meta} (key, value) VALUES ($1, $2::text::jsonb) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, [key, JSON.stringify(value)]);
  }
}

async function insertAnswer(tx: TransactionSql, names: Names, answer: IdempotentAnswer): Promise<void> {
  const stored = await tx.unsafe(
    `INSERT INTO ${names.answers} (scope, fingerprint, status, headers, body, expires_at) VALUES ($1, $2, $3, $4::text::jsonb, $5, $6)
     ON CONFLICT (scope) DO UPDATE SET fingerprint = excluded.fingerprint, status = excluded.status, headers = excluded.headers,
       body = excluded.body, expires_at = excluded.expires_at
     WHERE ${names.answers}.expires_at <= $7 RETURNING scope`,
    [answer.scope, answer.fingerprint, answer.status, JSON.stringify(answer.headers), answer.body, answer.expiresAt, Date.now()],
  );
  if (stored.length === 0) throw new ConflictError("answer", "This Idempotency-Key was answered meanwhile.");
}

async function largestIdOf(sql: Sql, names: Names, entities: readonly string[]): Promise<string | undefined> {
  if (entities.length === 0) return undefined;
  const text = entities.map((entity) => `SELECT max(id) AS id FROM ${names.table(entity)}`).join(" UNION ALL ");
  const rows = await sql.unsafe(`SELECT max(id) AS id FROM (${text}) AS ids`);
  return (rows[0]?.id as string | null) ?? undefined;
}
