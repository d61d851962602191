// What the PostgreSQL store keeps in its schema (--pg-schema, default "tabula"), created at start-up
// when missing: a table per entity, the idempotent answers, the change feed's kept events and its
// horizon, the store's metadata (Store.meta), and the sequences of revisions, node numbers and
// positions of rows older than the feed. Internal names start with "$", which no entity name can
// (schema/load.ts), so an entity can never take one. A table that exists in another shape stops
// the start-up; a unique set declared over stored duplicates does not (it is reported).

import type { Schema } from "../../schema/load.ts";
import type { OpenTransaction, Sql, TransactionSql } from "./connection.ts";
import { settingName } from "../../option-names.ts";
import type { UniqueClashReport } from "../store.ts";
import { indexesOf } from "./sql-sort.ts";
import { settleSearchStatistics, settleTypedColumns } from "./typed-columns.ts";

export const DEFAULT_PG_SCHEMA = "tabula";
const PG_SCHEMA_RE = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** Quoted, schema-qualified names of everything the store uses. */
export interface Names {
  table(entity: string): string;
  readonly answers: string;
  readonly keys: string;
  /** Sequence names as text, for nextval('…'). */
  readonly revs: string;
  readonly nodes: string;
  readonly legacy: string;
  /** The change feed's kept events (docs/change-feed.md). */
  readonly changes: string;
  /** One row: the newest event no longer kept. */
  readonly feed: string;
  /** Store.meta()'s values, by key. */
  readonly meta: string;
  /** The NOTIFY channel a commit announces its events on, one per schema. */
  readonly channel: string;
}

/**
 * The horizon of a feed that has dropped nothing: after every position of a version older than the
 * feed (0.n), so that a resume from 0 catches up from the rows themselves.
 */
export const LEGACY_HORIZON_INDEX = 2 ** 31 - 1;

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** The columns of an entity's table, as information_schema names their types. */
const ENTITY_COLUMNS: Readonly<Record<string, string>> = {
  id: "text",
  rev: "bigint",
  deleted: "boolean",
  data: "jsonb",
  created_date: "timestamp with time zone",
  updated_date: "timestamp with time zone",
};

/**
 * A unique key's JSON text longer than this is indexed by its digest: a btree row holds at most
 * 2,704 bytes, whatever the number of fields. The index's definition holds it: changing it needs a
 * new index name, as the old definition would otherwise stay.
 */
const UNIQUE_KEY_INLINE_BYTES = 1024;

/** The unique index of a "unique" declaration (docs/entities.md), as created and as looked up. */
export interface UniqueIndex {
  readonly entity: string;
  readonly fields: readonly string[];
  /** Its name, which PostgreSQL gives as the constraint of a unique violation. */
  readonly name: string;
  /** The index an older tabula made for the same declaration, over the whole values. */
  readonly replaces: string;
  /** The rows it holds: live records that hold every field. */
  readonly where: string;
  /** The fields' values in a row (jsonb), in the declaration's order. */
  readonly values: readonly string[];
  /** The key of given values (jsonb expressions): the indexed expression is keyOf(values). */
  keyOf(values: readonly string[]): string;
}

/**
 * A row's key in a unique index: the JSON text of its values while it is short, so that equality is
 * that of the values; past UNIQUE_KEY_INLINE_BYTES (a text up to the body limit: docs/postgresql.md)
 * "#" and the SHA-256 of that text, which no JSON text starts with. The texts of equal values are
 * equal (jsonb prints a value one way; the values are written by JSON.stringify), so equal values
 * always clash; two different values could only clash if they shared a SHA-256, which the store
 * tells from a real clash when it looks for the holder. Every function here is immutable, as an
 * index needs: sha256 takes bytes, and a text cast to bytea with its backslashes doubled is its
 * bytes (convert_to is only stable).
 */
function uniqueKeyExpression(values: readonly string[]): string {
  const text = `('[' || ${values.map((value) => `(${value})::text`).join(` || ',' || `)} || ']')`;
  const digest = `'#' || encode(sha256(replace(${text}, E'\\\\', E'\\\\\\\\')::bytea), 'hex')`;
  return `(CASE WHEN octet_length(${text}) <= ${UNIQUE_KEY_INLINE_BYTES} THEN ${text} ELSE ${digest} END)`;
}

export function uniqueIndexOf(entity: string, fields: readonly string[]): UniqueIndex {
  // Field names are declared names (letters, digits, "_"; schema/load.ts), so literals are safe here.
  const values = fields.map((field) => `(data -> '${field}')`);
  const holdsAll = fields.map((field) => `data ? '${field}' AND jsonb_typeof(data -> '${field}') IS DISTINCT FROM 'null'`);
  return {
    entity,
    fields,
    // No field name holds "(" or ",": the name differs from every older one, and from another set's.
    name: indexNameOf(entity, `unique_(${fields.join(",")})`),
    replaces: indexNameOf(entity, `unique_${fields.join("_")}`),
    where: `NOT deleted AND ${holdsAll.join(" AND ")}`,
    values,
    keyOf: uniqueKeyExpression,
  };
}

/**
 * The unique index of a "unique" declaration: over live records that hold every field, so that two
 * processes cannot race past it (docs/entities.md). It replaces the whole-value index of an older
 * tabula, which refused a text over about 2,700 bytes; under the setup lock, so that processes
 * starting together drop and create each once. Over stored duplicates it cannot be made: it is left
 * out, and the groups of duplicates are answered (ids in id order, which is the order they were
 * made in: the first holder first), for the start-up to report (docs/schema-changes.md).
 */
async function createUniqueIndex(tx: OpenTransaction, table: string, pgSchema: string, index: UniqueIndex): Promise<UniqueClashReport[]> {
  await tx.unsafe(`DROP INDEX IF EXISTS ${quoteIdent(pgSchema)}.${quoteIdent(index.replaces)}`);
  try {
    await tx.savepoint((savepoint) => savepoint.unsafe(`CREATE UNIQUE INDEX IF NOT EXISTS ${quoteIdent(index.name)} ON ${table} (${index.keyOf(index.values)}) WHERE ${index.where}`));
    return [];
  } catch (error) {
    if ((error as { code?: string }).code !== "23505") throw error;
    const groups = await tx.unsafe(`SELECT json_agg(id ORDER BY id) AS ids FROM ${table} WHERE ${index.where} GROUP BY ${index.values.join(", ")} HAVING count(*) > 1 ORDER BY min(id)`);
    return groups.map((group) => ({ entity: index.entity, fields: index.fields, ids: group.ids as string[] }));
  }
}

/**
 * pg_trgm, whose index serves search: created when missing if tabula's user may (it ships with
 * PostgreSQL's contrib, which Debian's postgresql includes); without it a search scans the rows.
 */
async function enableTrigram(tx: OpenTransaction): Promise<boolean> {
  // An extension belongs to the database, not to a schema: processes setting up different schemas
  // at once would race to create it (23505 on pg_extension_name_index), so they take turns.
  await tx.unsafe(`SELECT pg_advisory_xact_lock(hashtextextended('tabula extension pg_trgm', 0))`);
  try {
    // In the driver's savepoint: a failure (no pg_trgm here, or no right to create it) undoes this
    // statement alone, where a raw SAVEPOINT caught in our code still lost the whole setup.
    await tx.savepoint((savepoint) => savepoint.unsafe("CREATE EXTENSION IF NOT EXISTS pg_trgm"));
    return true;
  } catch {
    return false;
  }
}

/** Whether a table holds a row (live or not): a sample of one, never a count of them all. */
async function holdsRows(tx: OpenTransaction, table: string): Promise<boolean> {
  const rows = await tx.unsafe(`SELECT 1 FROM ${table} LIMIT 1`);
  return rows.length > 0;
}

/** An index's name: the entity's, then the index's; PostgreSQL keeps 63 bytes, so long ones end in a hash. */
function indexNameOf(entity: string, index: string): string {
  const name = `${entity}_${index}`;
  if (Buffer.byteLength(name) <= 63) return name;
  let hash = 0;
  for (const char of name) hash = (Math.imul(hash, 31) + char.codePointAt(0)!) >>> 0;
  return `${name.slice(0, 50)}_${hash.toString(16)}`;
}

export function namesIn(pgSchema: string): Names {
  if (!PG_SCHEMA_RE.test(pgSchema)) {
    throw new Error(`The schema name ${JSON.stringify(pgSchema)} (${settingName("pgSchema")}) is not usable: use letters, digits and "_", starting with a letter or "_", at most 63.`);
  }
  const schema = quoteIdent(pgSchema);
  return {
    table: (entity) => `${schema}.${quoteIdent(entity)}`,
    answers: `${schema}."$answers"`,
    keys: `${schema}."$keys"`,
    revs: `${schema}."$revs"`,
    nodes: `${schema}."$nodes"`,
    legacy: `${schema}."$legacy"`,
    changes: `${schema}."$changes"`,
    feed: `${schema}."$feed"`,
    meta: `${schema}."$meta"`,
    channel: `tabula_changes_${pgSchema}`.slice(0, 63),
  };
}

/** API keys (docs/operating.md): a key's SHA-256 and first characters, never the key itself. */
export const KEYS_COLUMNS =
  "id text PRIMARY KEY, kind text NOT NULL, name text NOT NULL, prefix text NOT NULL, sha256 text NOT NULL UNIQUE, " +
  "created timestamptz NOT NULL, expires_at timestamptz, last_used timestamptz";

/** The lock that setting up a schema's tables takes (createTables), for other set-up steps to take too. */
export function takeSetupLock(tx: TransactionSql, pgSchema: string): Promise<unknown> {
  return tx.unsafe(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`tabula setup ${pgSchema}`]);
}

/**
 * Creates what is missing, under a lock so that processes starting together do not race, and
 * refuses tables of another shape. Indexes serve every sort (typed sort expression, then id) and
 * equality filters (a GIN index over the live rows' data). Answers the names, and the unique sets
 * whose index could not be made over stored duplicates (Store.uniqueClashes).
 */
export async function createTables(sql: Sql, schema: Schema, pgSchema: string, progress?: (line: string) => void): Promise<{ names: Names; clashes: UniqueClashReport[] }> {
  const names = namesIn(pgSchema);
  const clashes: UniqueClashReport[] = [];
  await sql.begin(async (tx) => {
    await tx.unsafe(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`tabula setup ${pgSchema}`]);
    await tx.unsafe(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(pgSchema)}`);
    const hasTrigram = await enableTrigram(tx);
    for (const [name, entity] of schema.entities) {
      const columns = await tx.unsafe(`SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2`, [pgSchema, name]);
      if (columns.length > 0) {
        const found = Object.fromEntries(columns.map((column) => [column.column_name as string, column.data_type as string]));
        const wrong = Object.entries(ENTITY_COLUMNS).filter(([column, type]) => found[column] !== type);
        if (wrong.length > 0) {
          throw new Error(
            `Table ${pgSchema}.${name} exists but is not one tabula made: it lacks ${wrong.map(([column, type]) => `${column} ${type}`).join(", ")}. ` +
              `Give tabula a schema of its own with ${settingName("pgSchema")}, or rename that table.`,
          );
        }
      }
      const table = names.table(name);
      await tx.unsafe(`CREATE TABLE IF NOT EXISTS ${table} (
        id text COLLATE "C" PRIMARY KEY,
        rev bigint NOT NULL,
        deleted boolean NOT NULL DEFAULT false,
        data jsonb NOT NULL,
        created_date timestamptz NOT NULL,
        updated_date timestamptz NOT NULL
      )`);
      // Each version's feed position (its batch's seq, its index in it); tables made before the
      // feed get the columns, and their rows the positions 0.1, 0.2… (older than any event).
      await tx.unsafe(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS seq bigint NOT NULL DEFAULT 0, ADD COLUMN IF NOT EXISTS idx integer NOT NULL DEFAULT 0`);
      await tx.unsafe(`CREATE INDEX IF NOT EXISTS ${quoteIdent(indexNameOf(name, "feed"))} ON ${table} (seq, idx)`);
      await tx.unsafe(`CREATE SEQUENCE IF NOT EXISTS ${names.legacy}`);
      await tx.unsafe(`UPDATE ${table} SET idx = nextval('${names.legacy}') WHERE seq = 0 AND idx = 0`);
      const startedAt = performance.now();
      const hasToldRewrite = await settleTypedColumns(tx, pgSchema, entity, table, progress);
      const indexes = indexesOf(entity);
      const found = await tx.unsafe(`SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = $2`, [pgSchema, name]);
      const present = new Set(found.map((row) => row.indexname as string));
      const missing = indexes.filter((index) => (hasTrigram || !index.needsTrigram) && !present.has(indexNameOf(name, index.name)));
      // Each index made over a table that holds rows reads every row: the start-up says which, and how many are left.
      const tell = progress && missing.length > 0 && (hasToldRewrite || (await holdsRows(tx, table))) ? progress : undefined;
      for (const index of indexes) {
        // Under the setup lock, so that processes starting together drop and create each once.
        for (const replaced of index.replaces ?? []) await tx.unsafe(`DROP INDEX IF EXISTS ${quoteIdent(pgSchema)}.${quoteIdent(indexNameOf(name, replaced))}`);
        if (!missing.includes(index)) continue;
        tell?.(`PostgreSQL: ${name}: making index ${missing.indexOf(index) + 1} of ${missing.length} (${index.name})…`);
        await tx.unsafe(`CREATE INDEX IF NOT EXISTS ${quoteIdent(indexNameOf(name, index.name))} ON ${table} ${index.definition}`);
      }
      if (tell) tell(`PostgreSQL: ${name}: typed columns and indexes ready in ${((performance.now() - startedAt) / 1000).toFixed(1)} s`);
      await settleSearchStatistics(tx, entity, table, async () => hasToldRewrite || (await holdsRows(tx, table)), progress);
      for (const fields of entity.unique) clashes.push(...(await createUniqueIndex(tx, table, pgSchema, uniqueIndexOf(name, fields))));
    }
    await tx.unsafe(`CREATE TABLE IF NOT EXISTS ${names.answers} (
      scope text PRIMARY KEY,
      fingerprint text NOT NULL,
      status int NOT NULL,
      headers jsonb NOT NULL,
      body text NOT NULL,
      expires_at bigint NOT NULL
    )`);
    // A $keys table of the shape before keys were hashed is upgraded by the key vault (key-vault.ts).
    await tx.unsafe(`CREATE TABLE IF NOT EXISTS ${names.keys} (${KEYS_COLUMNS})`);
    await tx.unsafe(`CREATE TABLE IF NOT EXISTS ${names.changes} (
      seq bigint NOT NULL,
      idx integer NOT NULL,
      entity text NOT NULL,
      id text NOT NULL,
      type text NOT NULL,
      rev bigint NOT NULL,
      deleted boolean NOT NULL,
      data jsonb NOT NULL,
      PRIMARY KEY (seq, idx)
    )`);
    await tx.unsafe(`CREATE TABLE IF NOT EXISTS ${names.feed} (one boolean PRIMARY KEY DEFAULT true CHECK (one), horizon_seq bigint NOT NULL, horizon_idx integer NOT NULL)`);
    await tx.unsafe(`INSERT INTO ${names.feed} (horizon_seq, horizon_idx) VALUES (0, ${LEGACY_HORIZON_INDEX}) ON CONFLICT DO NOTHING`);
    await tx.unsafe(`CREATE TABLE IF NOT EXISTS ${names.meta} (key text PRIMARY KEY, value jsonb NOT NULL)`);
    for (const sequence of [names.revs, names.nodes, names.legacy]) await tx.unsafe(`CREATE SEQUENCE IF NOT EXISTS ${sequence}`);
  });
  return { names, clashes };
}
