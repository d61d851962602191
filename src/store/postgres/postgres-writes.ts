// The statements of a PostgresStore commit (docs/postgresql.md) besides its events and answer: what
// the batch expects of upserts' matches, checked; puts inserted, or updated where they still have
// the revision they replace, many to one statement; a renamed entity's rows dropped; metadata set.
// Each runs in the commit's transaction; uniqueViolationOf names the holder after a unique index
// refused the commit.

import type { ChangeType } from "../../views.ts";
import { compileFilter } from "../../query/predicate.ts";
import { changeTypeOf, ConflictError, uniqueKeyOf, UniqueViolation, type MatchCheck, type MetaWrite, type Put, type WriteBatch } from "../store.ts";
import type { Sql, TransactionSql } from "./connection.ts";
import { toRow, type DbRow } from "./db-row.ts";
import { isCondition, whereClause, whereOf } from "./sql-filter.ts";
import { arrayLiteral, jsonbParam, SqlParams } from "./sql-values.ts";
import { encodeJsonText, storedJson } from "./stored-text.ts";
import type { Names, UniqueIndex } from "./tables.ts";
import type { TypedColumns } from "./typed-columns.ts";

/**
 * Puts written per statement, and rows read per page by forEachRow: a migration's batch of
 * 100,000 records or more is sent as many statements of one transaction, each parameter a few MB
 * of JSON, never one text near V8's limit on a string's length.
 */
export const WRITE_CHUNK_ROWS = 5000;
export const ROW_PAGE_ROWS = 5000;

/** What a put did to its record, as its event names it: a migration's rewrite is a sync (Put.sync). */
export type EventType = ChangeType | "sync";

export async function checkMatches(tx: TransactionSql, names: Names, matches: readonly MatchCheck[], columnsOf: (entity: string) => TypedColumns): Promise<void> {
  // Locks in one order in every process, so that two upserts cannot wait for each other.
  const locks = [...new Set(matches.flatMap((match) => match.locks))].sort();
  await tx.unsafe(`SELECT pg_advisory_xact_lock(hashtextextended(lock, 0)) FROM unnest($1::text[]) WITH ORDINALITY AS l(lock, n) ORDER BY n`, [arrayLiteral(locks)]);
  for (const match of matches) {
    const ids = new Set<string>();
    const params = new SqlParams();
    const where = whereOf(match.filter, params, columnsOf(match.entity));
    const accept = where.exact || !match.filter ? null : compileFilter(match.filter);
    const text = `SELECT id, rev, deleted, data FROM ${names.table(match.entity)}${whereClause(["NOT deleted", where.sql].filter(isCondition))}`;
    for (const row of await tx.unsafe<DbRow[]>(text, params.values)) if (!accept || accept(toRow(row))) ids.add(row.id);
    if (ids.size !== match.ids.length || !match.ids.every((id) => ids.has(id))) {
      throw new ConflictError("match", `The ${match.entity} records matching an upsert's values changed.`);
    }
  }
}

/**
 * New records inserted, others updated where they still have the revision they replace. Answers
 * what each put did to its record (an update reads the version it replaces: restored or deleted;
 * a migration's rewrite is a sync whatever it did). Each statement takes WRITE_CHUNK_ROWS puts of
 * one entity at most, however many the batch holds.
 */
export async function writePuts(tx: TransactionSql, names: Names, puts: readonly Put[]): Promise<Map<Put, EventType>> {
  const types = new Map<Put, EventType>();
  const byEntity = new Map<string, Put[]>();
  for (const put of puts) {
    const group = byEntity.get(put.entity);
    if (group) group.push(put);
    else byEntity.set(put.entity, [put]);
  }
  for (const [entity, puts] of byEntity) {
    for (let from = 0; from < puts.length; from += WRITE_CHUNK_ROWS) await writeEntityPuts(tx, names, entity, puts.slice(from, from + WRITE_CHUNK_ROWS), types);
  }
  for (const put of puts) if (put.sync) types.set(put, "sync");
  return types;
}

/** Puts of one entity (see writePuts), what each did set in `types`. */
async function writeEntityPuts(tx: TransactionSql, names: Names, entity: string, group: readonly Put[], types: Map<Put, EventType>): Promise<void> {
  const table = names.table(entity);
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
 * Whether a batch only creates records of one entity, and nothing else (no answer, match, drop,
 * metadata or sync): a create, or a bulk create without an Idempotency-Key. insertAtOnce writes it
 * in one statement.
 */
export function isCreateOnly(batch: WriteBatch): boolean {
  const [first] = batch.puts;
  return (
    first !== undefined &&
    batch.puts.length <= WRITE_CHUNK_ROWS &&
    !batch.answer &&
    !batch.matches?.length &&
    !batch.drops?.length &&
    !batch.meta?.length &&
    batch.puts.every((put) => put.replaces === 0 && !put.sync && put.entity === first.entity)
  );
}

/**
 * A batch isCreateOnly accepts, committed in one round trip: a single statement, which PostgreSQL
 * runs as a transaction of its own, takes its transaction id as the feed's seq, inserts the rows
 * and their events and notifies (postgres-feed.ts does the same in three statements of a
 * transaction). A taken id fails the statement on the table's primary key: a ConflictError, as
 * writePuts says; a unique index's refusal is the commit's to name. Answers the seq.
 */
export async function insertAtOnce(sql: Sql, names: Names, batch: WriteBatch, uniqueIndexNames: ReadonlySet<string>): Promise<number> {
  const entity = batch.puts[0]!.entity;
  batch.puts.forEach(({ row }, index) => (row.index = index));
  const text =
    `WITH x AS (SELECT pg_current_xact_id()::text::bigint AS seq), v AS (${valuesOf()}), ` +
    `ins AS (INSERT INTO ${names.table(entity)} (id, rev, deleted, data, created_date, updated_date, seq, idx) ` +
    `SELECT v.id, v.rev, v.deleted, v.data, v.created_date, v.updated_date, x.seq, v.idx FROM v, x), ` +
    `ev AS (INSERT INTO ${names.changes} (seq, idx, entity, id, type, rev, deleted, data) SELECT x.seq, v.idx, $2::text, v.id, 'create', v.rev, v.deleted, v.data FROM v, x) ` +
    `SELECT x.seq, pg_notify($3::text, x.seq::text) FROM x`;
  try {
    const [{ seq }] = await sql.unsafe(text, [rowsJson(batch.puts), entity, names.channel], { prepare: true });
    for (const { row } of batch.puts) row.seq = seq as number;
    return seq as number;
  } catch (error) {
    const { code, constraint_name: constraint } = error as { code?: string; constraint_name?: string };
    if (code === "23505" && !uniqueIndexNames.has(constraint ?? "")) throw new ConflictError("rev", `A new ${entity} record's id is taken.`);
    throw error;
  }
}

/** Every row of `entity` (WriteBatch.drops), whose table may be gone or never made: then nothing. */
export async function dropRows(tx: TransactionSql, names: Names, entity: string): Promise<void> {
  const table = names.table(entity);
  const [{ exists }] = await tx.unsafe(`SELECT to_regclass($1) IS NOT NULL AS exists`, [table]);
  // DELETE, not TRUNCATE: readers keep their snapshots, and the commit is all or nothing with the rest.
  if (exists) await tx.unsafe(`DELETE FROM ${table}`);
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
    // Stored text escapes what jsonb cannot hold (stored-text.ts); most data holds nothing to escape.
    const data = encodeJsonText(row.memo?.dataJson ?? JSON.stringify(row.data));
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
export async function writeMeta(tx: TransactionSql, names: Names, writes: readonly MetaWrite[]): Promise<void> {
  for (const { key, value } of writes) {
    if (value === null || value === undefined) await tx.unsafe(`DELETE FROM ${names.meta} WHERE key = $1`, [key]);
    else await tx.unsafe(`INSERT INTO ${names.meta} (key, value) VALUES ($1, $2::text::jsonb) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, [key, storedJson(value)]);
  }
}

/**
 * The live record that holds values a row of `batch` would take in `index`, the batch's own rows
 * left out (their stored values are theirs to give up); a ConflictError when none does any more
 * (it changed since the batch failed), so that the write is built again. The look-up goes through
 * the index by its key, then compares the values themselves: a holder whose long values only share
 * their digest (tables.ts) is no clash, and the row cannot be stored (a 500, never a 409).
 */
export async function uniqueViolationOf(sql: Sql, names: Names, batch: WriteBatch, index: UniqueIndex): Promise<UniqueViolation | ConflictError> {
  const { entity, fields } = index;
  const puts = batch.puts.filter((put) => put.entity === entity);
  const own = arrayLiteral(puts.map((put) => put.row.id));
  let digestHolder: string | null = null;
  for (const { row } of puts) {
    if (uniqueKeyOf(row, fields) === null) continue;
    const params = new SqlParams();
    const given = fields.map((field) => jsonbParam(params, row.data[field]));
    const isSame = index.values.map((value, i) => `${value} = ${given[i]}`).join(" AND ");
    const text =
      `SELECT id, ${isSame} AS is_same FROM ${names.table(entity)} ` +
      `WHERE ${index.where} AND ${index.keyOf(index.values)} = ${index.keyOf(given)} AND NOT (id = ANY(${params.add(own)}::text[])) ` +
      `ORDER BY is_same DESC LIMIT 1`;
    const [holder] = await sql.unsafe(text, params.values);
    if (holder?.is_same) return new UniqueViolation(entity, fields, fields.map((field) => row.data[field]), holder.id as string);
    if (holder) digestHolder = holder.id as string;
  }
  if (digestHolder !== null) {
    throw new Error(`${entity} ${digestHolder} holds other values of ${fields.join(", ")} with the same SHA-256 as a row of this write, whose index cannot hold both.`);
  }
  return new ConflictError("rev", "A unique value was taken and given up again meanwhile; build the batch again.");
}
