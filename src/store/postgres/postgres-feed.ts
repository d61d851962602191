// The PostgreSQL store's change feed (docs/change-feed.md): each commit's events in the changes
// table, readable in commit order once every older transaction has ended (XMIN), cut back to
// --changes-keep by any process, and a notification at every commit that tells each process's
// readers to look. PostgresStore writes the events in its commit's transaction (insertEvents).

import type { Schema } from "../../schema/load.ts";
import type { FeedEvent, FeedPosition, FeedRead, FeedSource, FeedState, Put } from "../store.ts";
import type { Sql, TransactionSql } from "./connection.ts";
import type { Guard } from "./health.ts";
import { LEGACY_HORIZON_INDEX, type Names } from "./tables.ts";
import { arrayLiteral, SqlParams } from "./sql-values.ts";
import { toRow, type DbRow } from "./db-row.ts";
import { encodeJsonText } from "./stored-text.ts";
import { WRITE_CHUNK_ROWS, type EventType } from "./postgres-writes.ts";

/** How often the change feed's kept events are cut back to --changes-keep (any process may). */
const FEED_TRIM_MS = 10_000;
/** After a trim at a commit, another this much later (see committed). */
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

interface DbEvent extends DbRow {
  seq: number;
  idx: number;
  entity: string;
  type: string;
}

/** A PostgresStore's change feed: the FeedSource it delegates to, and the events its commits write. */
/** How long a close waits for UNLISTEN before the pool's end closes its connection anyway. */
const UNLISTEN_WAIT_MS = 200;

export class PostgresFeed implements FeedSource {
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

  constructor(
    /** The store's pool as it is now (PostgresStore replaces it after an outage). */
    private readonly pool: () => Sql,
    private readonly guard: Guard,
    private readonly names: Names,
    private readonly options: { readonly schema: Schema; readonly changesKeep: number },
  ) {
    this.feedTimers.push(
      setInterval(() => void this.trimChanges().catch(() => {}), FEED_TRIM_MS).unref(),
      setInterval(() => this.tellFeedListeners(), FEED_POLL_MS).unref(),
    );
  }

  private get sql(): Sql {
    return this.pool();
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
  async listen(): Promise<void> {
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

  private tellFeedListeners(): void {
    for (const listener of this.feedListeners) listener();
  }

  /**
   * The batch's events, one per put, in its order, WRITE_CHUNK_ROWS to a statement; and the
   * notification every process hears at commit.
   */
  async insertEvents(tx: TransactionSql, puts: readonly Put[], types: ReadonlyMap<Put, EventType>, seq: number): Promise<void> {
    for (let from = 0; from < puts.length; from += WRITE_CHUNK_ROWS) {
      let json = "[";
      for (let index = from; index < Math.min(puts.length, from + WRITE_CHUNK_ROWS); index++) {
        const put = puts[index]!;
        const { row } = put;
        const data = encodeJsonText(row.memo?.dataJson ?? JSON.stringify(row.data));
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

  /** This process committed `events` events at `seq`: reads wait for it, and the kept events are cut back now and then. */
  committed(seq: number, events: number): void {
    if (seq > this.lastCommittedSeq) this.lastCommittedSeq = seq;
    // Cut back every tenth of the window written, besides the timer: the window stays near its size.
    this.eventsSinceTrim += events;
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
  }

  /** Stops the timers and the listening (PostgresStore.close). */
  async close(): Promise<void> {
    for (const timer of this.feedTimers) clearInterval(timer);
    if (this.trimAgain) clearTimeout(this.trimAgain);
    // Closing the pool ends the listening connection too: its UNLISTEN is not waited for long,
    // behind the statements of a busy database (a stop is bounded, docs/operating.md).
    const unlistened = this.unlisten?.().catch(() => {});
    await Promise.race([unlistened, new Promise((resolve) => setTimeout(resolve, UNLISTEN_WAIT_MS).unref())]);
  }
}
