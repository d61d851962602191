// The typed columns of an entity's table (issue 59): each sortable field's sort key (sql-values.ts,
// sortKeyExpression) as a column PostgreSQL generates from `data` and keeps equal to it, so that
// filters, sorts, cursors and counts on it read a plain btree (index-only for a count) rather than
// the jsonb. sql-filter.ts and sql-sort.ts use a column where it means exactly what `data` does;
// tables.ts adds, drops and indexes them.

import { createHash } from "node:crypto";
import { isScalar, kindOf, type EntityDef, type ValueKind } from "../../schema/fields.ts";
import { searchText, SORT_PREFIX_CHARS, sortKeyExpression, sortPrefixOf } from "./sql-values.ts";
import { encodeText } from "./stored-text.ts";
import type { OpenTransaction } from "./connection.ts";

/** Bumped when a column's expression changes: every name changes with it, so start-up makes the new ones. */
const TYPED_COLUMN_VERSION = "v1";
/** The longest part of a field's name kept in its column's name (PostgreSQL keeps 63 bytes). */
const NAME_PART_BYTES = 40;

export type ColumnKind = Exclude<ValueKind, "json">;

export interface TypedColumn {
  readonly field: string;
  readonly kind: ColumnKind;
  /** The column's name, as a quoted identifier. */
  readonly sql: string;
  /** Its name unquoted: f_<field, sanitized>_<8 hex digits of a hash of field and kind>. */
  readonly name: string;
  /** What follows the name in ADD COLUMN: type and generation expression. */
  readonly definition: string;
  /**
   * A boolean or enum field, whose values repeat: it gets an index on the column alone too, which
   * PostgreSQL deduplicates (a tenth of the (column, id) one), for its equality filters and counts.
   */
  readonly isFewValued: boolean;
  /** The search column's (SEARCH_COLUMN) text fields, in the order its text joins them; none for a field's. */
  readonly searchFields?: readonly string[];
}

/**
 * Where TypedColumns keeps the search column: the text `search` looks in (sql-values.ts, searchText)
 * over the entity's text fields, which a trigram index serves. No field name holds "$".
 */
export const SEARCH_COLUMN = "$search";

/** The typed columns of one table, by field name. */
export type TypedColumns = ReadonlyMap<string, TypedColumn>;

export const NO_COLUMNS: TypedColumns = new Map();

/** A name columnNameOf can give: other columns (id, data, seq…) never match. */
export const TYPED_COLUMN_NAME_RE = /^f_[a-z0-9_]*_[0-9a-f]{8}$/;

/**
 * Safe for any field name, deterministic, and distinct for each field and kind: the hash tells
 * apart fields whose sanitized names agree, and a field whose kind changes (a declaration or a
 * convert migration) gets a new column, the old one dropped (tables.ts).
 */
export function columnNameOf(field: string, kind: ColumnKind, label = field): string {
  let part = label.toLowerCase().replace(/[^a-z0-9_]/g, "_");
  while (Buffer.byteLength(part) > NAME_PART_BYTES) part = part.slice(0, -1);
  const hash = createHash("sha256").update(`${TYPED_COLUMN_VERSION}\u0000${field}\u0000${kind}`).digest("hex").slice(0, 8);
  return `f_${part}_${hash}`;
}

/**
 * Every sortable field's column: declared scalar fields and the platform fields records carry.
 * A text's column holds the first SORT_PREFIX_CHARS characters of its key, as a btree row holds
 * at most 2,704 bytes and a text may be as long as a body; keys shorter than that are whole in it.
 */
export function typedColumnsOf(entity: EntityDef): TypedColumns {
  const fields: Array<[string, ColumnKind, boolean]> = [];
  for (const name of entity.fieldNames) {
    const field = entity.fields.get(name)!;
    const kind = kindOf(field);
    if (isScalar(field) && kind !== "json") fields.push([name, kind, kind === "boolean" || (kind !== "date" && field.enum !== undefined)]);
  }
  fields.push(["created_date", "date", false], ["updated_date", "date", false], ["created_by_id", "string", false], ["created_by", "string", false]);
  const columns = new Map<string, TypedColumn>();
  for (const [field, kind, isFewValued] of fields) {
    if (columns.has(field)) continue;
    const name = columnNameOf(field, kind);
    const key = sortKeyExpression(kind, literalOf(field));
    const definition = kind === "string" ? `text COLLATE "C" GENERATED ALWAYS AS (${sortPrefixOf(key)}) STORED` : `numeric GENERATED ALWAYS AS (${key}) STORED`;
    columns.set(field, { field, kind, name, sql: `"${name}"`, definition, isFewValued });
  }
  if (entity.textFields.length > 0) {
    const name = columnNameOf(`${SEARCH_COLUMN}\u0000${entity.textFields.join("\u0000")}`, "string", "search");
    const definition = `text GENERATED ALWAYS AS (${searchText(entity.textFields.map(literalOf))}) STORED`;
    columns.set(SEARCH_COLUMN, { field: SEARCH_COLUMN, kind: "string", name, sql: `"${name}"`, definition, isFewValued: false, searchFields: entity.textFields });
  }
  return columns;
}

/** The column of a field for a value of `kind`, when the table has one: the same sort key, so the same meaning. */
export function columnOf(columns: TypedColumns, field: string, kind: ValueKind): TypedColumn | null {
  const column = columns.get(field);
  return column !== undefined && column.kind === kind ? column : null;
}

/**
 * Whether a text sort key (as stored: encoded, with its "a" in front) is whole in a text column: it
 * is shorter than the prefix the column keeps. Then the column compares with it (=, <, >) exactly
 * as the whole key does: a key that reaches the end of a shorter text decides before the cut.
 */
export function isWholeInColumn(storedKey: string): boolean {
  let count = 0;
  for (const _ of storedKey) if (++count >= SORT_PREFIX_CHARS) return false;
  return true;
}

/** A text sort key as stored (encoded, stored-text.ts): what a text column holds of it, or the start of it. */
export function storedTextKey(key: string): string {
  return encodeText(key);
}

/** The first SORT_PREFIX_CHARS characters of a stored key, as a column holds them. */
export function columnPrefixOf(storedKey: string): string {
  let prefix = "";
  let count = 0;
  for (const char of storedKey) {
    if (count++ === SORT_PREFIX_CHARS) break;
    prefix += char;
  }
  return prefix;
}

// Schema field names (schema/load.ts), or platform ones: a name that is one cannot close a literal.
const FIELD_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function literalOf(field: string): string {
  if (!FIELD_NAME_RE.test(field)) throw new Error(`typed-columns: "${field}" is not a schema field name`);
  return `'${field}'`;
}

/**
 * Makes a table's typed columns those of the entity's declaration, in one ALTER TABLE, under the
 * setup lock (tables.ts), so that processes starting together do it once: columns of fields no
 * longer declared, or declared with another type, dropped (with their indexes); new ones added.
 * Adding a generated column rewrites the table, taking as long as copying it, and holds its lock
 * meanwhile: `progress` hears about it first when the table holds rows (a database made before
 * typed columns, or a field added). Processes still serving older declarations should be stopped
 * first: a column they read may be gone. Answers whether it told `progress` of a rewrite.
 */
export async function settleTypedColumns(
  tx: OpenTransaction,
  pgSchema: string,
  entity: EntityDef,
  table: string,
  progress?: (line: string) => void,
): Promise<boolean> {
  const wanted = [...typedColumnsOf(entity).values()];
  const found = await tx.unsafe(`SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2`, [pgSchema, entity.name]);
  const present = new Set(found.map((row) => row.column_name as string));
  const names = new Set(wanted.map((column) => column.name));
  const stale = [...present].filter((name) => TYPED_COLUMN_NAME_RE.test(name) && !names.has(name));
  const missing = wanted.filter((column) => !present.has(column.name));
  if (stale.length === 0 && missing.length === 0) return false;
  let isTold = false;
  if (missing.length > 0 && progress) {
    const [{ rows }] = await tx.unsafe(`SELECT (SELECT count(*) FROM (SELECT 1 FROM ${table} LIMIT 1000) AS sampled)::int AS rows`);
    if ((rows as number) > 0) {
      const [{ estimate }] = await tx.unsafe(`SELECT greatest(reltuples, 0)::bigint AS estimate FROM pg_class WHERE oid = $1::regclass`, [table]);
      const count = Math.max(rows as number, Number(estimate));
      progress(`PostgreSQL: ${entity.name}: adding ${missing.length} typed ${missing.length === 1 ? "column" : "columns"} rewrites the table (about ${count.toLocaleString("en-US")} rows)…`);
      isTold = true;
    }
  }
  const changes = [...stale.map((name) => `DROP COLUMN "${name}"`), ...missing.map((column) => `ADD COLUMN ${column.sql} ${column.definition}`)];
  await tx.unsafe(`ALTER TABLE ${table} ${changes.join(", ")}`);
  return isTold;
}

/**
 * How many of the search column's values PostgreSQL's planner samples (its default target is 100).
 * It estimates a search's `LIKE '%word%'` by trying the pattern on that sample, then chooses: walk
 * the sort's index until the page is full, or read every match and sort them. With 100 values a
 * word in 1% of the records is often in none of them, estimated at 0.01% and planned as the second:
 * at 1,000,000 records, 10,000 rows read and sorted (105 ms) where the walk reads 2,000 (1.5 ms).
 * With 1,000 such a word is seen, and words rarer than about 0.1% still read their few matches.
 */
export const SEARCH_STATISTICS = 1000;

/**
 * Gives the search column SEARCH_STATISTICS, under the setup lock (tables.ts), once per table: a
 * table that holds rows has the column sampled again at once (ANALYZE reads 300 rows per value, so
 * at most 300,000: seconds at a million records), as autovacuum would not until a tenth of it changed.
 * `progress` hears about that sampling first.
 */
export async function settleSearchStatistics(tx: OpenTransaction, entity: EntityDef, table: string, holdsRows: () => Promise<boolean>, progress?: (line: string) => void): Promise<void> {
  const column = typedColumnsOf(entity).get(SEARCH_COLUMN);
  if (!column) return;
  const [found] = await tx.unsafe(`SELECT attstattarget FROM pg_attribute WHERE attrelid = $1::regclass AND attname = $2`, [table, column.name]);
  if (found === undefined || Number(found.attstattarget) === SEARCH_STATISTICS) return;
  await tx.unsafe(`ALTER TABLE ${table} ALTER COLUMN ${column.sql} SET STATISTICS ${SEARCH_STATISTICS}`);
  if (!(await holdsRows())) return;
  progress?.(`PostgreSQL: ${entity.name}: sampling the search text for the planner…`);
  await tx.unsafe(`ANALYZE ${table} (${column.sql})`);
}
