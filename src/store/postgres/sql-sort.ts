// Sorts and cursors in SQL: the ORDER BY of a SortSpec, the keyset condition "strictly after this
// position", and the indexes that serve them (and filters) at any depth. Orders are those of the
// memory store's sorted index (toSortKey, compareSortKeys, then id). Filters are sql-filter.ts's.

import type { SortPosition, SortSpec } from "../../query/filter-tree.ts";
import type { EntityDef, SortKey } from "../../schema/fields.ts";
import { firstUnstorable, isStorable, NUMERIC_LAST, numericParam, SORT_PREFIX_CHARS, sortKeyExpression, sortPrefixOf, TEXT_LAST, TEXT_PRESENT_PREFIX, textParam, type SqlParams } from "./sql-values.ts";
import { columnOf, columnPrefixOf, isWholeInColumn, literalOf, NO_COLUMNS, SEARCH_COLUMN, storedTextKey, typedColumnsOf, type TypedColumns } from "./typed-columns.ts";

/**
 * The expression ORDER BY sorts a field by: never null, missing values last ascending (first
 * descending). Field names are written into the text here, as literals, because an index must
 * name its expression: they come from the schema (parseSort resolved the request's name there),
 * and literalOf refuses anything but a schema field name.
 */
export function sortExpression(sort: SortSpec): string {
  return sort.field === "id" ? "id" : sortKeyExpression(sort.kind, literalOf(sort.field));
}

/**
 * ORDER BY's list: the sort key, then id in the same direction, as the memory store walks its index
 * backwards. With a typed column (typed-columns.ts) the key is the column; a text column holds the
 * key's first characters, and rows whose columns tie there (only keys that long) are put in order
 * by their whole keys (an incremental sort over each run). Without one, a text key is led by its
 * indexed prefix (sortPrefixOf), which orders rows as the key does.
 */
export function orderByOf(sort: SortSpec, columns: TypedColumns = NO_COLUMNS): string {
  const direction = sort.descending ? "DESC" : "ASC";
  if (sort.field === "id") return `id ${direction}`;
  const expression = sortExpression(sort);
  const column = columnOf(columns, sort.field, sort.kind);
  if (column && sort.kind === "string") return `${column.sql} ${direction}, (CASE WHEN length(${column.sql}) >= ${SORT_PREFIX_CHARS} THEN ${expression} END) ${direction}, id ${direction}`;
  if (column) return `${column.sql} ${direction}, id ${direction}`;
  const prefix = sort.kind === "string" ? `${sortPrefixOf(expression)} ${direction}, ` : "";
  return `${prefix}${expression} ${direction}, id ${direction}`;
}

/**
 * The rows strictly after `after` in the sort's order, as a row comparison (key, id) > ($1, $2)
 * that the index (sortExpression, id) answers as one range, so a deep page costs what the first
 * does. A position normally comes from a row of this sort (toSortKey); one from a cursor a client
 * made up may carry a key of another type, or text PostgreSQL cannot hold (a lone surrogate): it
 * is answered as the memory store would answer it all the same.
 */
export function afterOf(sort: SortSpec, after: SortPosition, params: SqlParams, columns: TypedColumns = NO_COLUMNS): string {
  const isAscending = !sort.descending;
  const { key, id } = after;
  if (sort.field === "id") return afterId(key, id, isAscending, params);
  const column = columnOf(columns, sort.field, sort.kind);
  let expression = sortExpression(sort);
  let prefix = "";
  let encoded: string;
  let isWhole = false;
  if (sort.kind === "string") {
    // compareSortKeys puts numbers before every string.
    if (typeof key === "number") return isAscending ? "TRUE" : "FALSE";
    if (key === null) {
      encoded = TEXT_LAST;
      isWhole = true;
    } else if (isStorable(key)) {
      const stored = storedTextKey(TEXT_PRESENT_PREFIX + key);
      isWhole = isWholeInColumn(stored);
      encoded = `${params.add(stored)}::text`;
      if (column && !isWhole) prefix = `(${params.add(columnPrefixOf(stored))}::text COLLATE "C")`;
    } else return textBeyond(expression, TEXT_PRESENT_PREFIX + key, isAscending, params); // no row's key equals it
  } else {
    // A string key sorts after every number and before null (compareSortKeys).
    if (column) expression = column.sql;
    if (typeof key === "string") return `${expression} ${isAscending ? "=" : "<"} ${NUMERIC_LAST}`;
    encoded = key === null ? NUMERIC_LAST : numericParam(params, key);
  }
  // A key whole in a text column compares with the column as with the whole key (typed-columns.ts).
  if (column && sort.kind === "string" && isWhole) expression = column.sql;
  const op = isAscending ? ">" : "<";
  const beyond = isStorable(id)
    ? `(${expression}, id) ${op} (${encoded}, ${textParam(params, id)})`
    : `(${expression} ${op} ${encoded} OR (${expression} = ${encoded} AND ${textBeyond("id", id, isAscending, params)}))`;
  if (sort.kind !== "string" || (column && isWhole)) return beyond;
  // A text key's index holds its prefix: the bound on it (implied by the rest) is the index's range.
  if (column) return `(${column.sql} ${op}= ${prefix} AND ${beyond})`;
  return `(${sortPrefixOf(expression)} ${op}= ${sortPrefixOf(encoded)} AND ${beyond})`;
}

/** Sorting by id, the key is the row's id: (id, id) after (key, id). */
function afterId(key: SortKey, id: string, isAscending: boolean, params: SqlParams): string {
  if (typeof key !== "string") {
    // null sorts after every id, a number before every one.
    const isBeforeAll = typeof key === "number";
    return isAscending === isBeforeAll ? "TRUE" : "FALSE";
  }
  if (!isStorable(key)) return textBeyond("id", key, isAscending, params);
  // The row whose id is the key itself follows the position when its id follows the position's.
  const isKeyRowAfter = isAscending ? key > id : key < id;
  return `id ${isAscending ? ">" : "<"}${isKeyRowAfter ? "=" : ""} ${textParam(params, key)}`;
}

/**
 * `column` (stored text, compared by code point) beyond `text`, which holds a lone surrogate and
 * so cannot be sent. Only its part before the first one can (encoded as stored text is, which
 * keeps order and prefixes: stored-text.ts); from there on, compareCodePoints decides as follows
 * against text PostgreSQL can hold: a lone high surrogate sorts like the characters above U+FFFF
 * that it starts (those from the first one it starts are beyond), and a lone low surrogate after
 * every character that can follow the part (so beyond it is what is beyond the part and does not
 * start with it).
 */
function textBeyond(column: string, text: string, isAscending: boolean, params: SqlParams): string {
  const end = firstUnstorable(text);
  const unit = text.charCodeAt(end);
  if (unit >= 0xd800 && unit < 0xdc00) {
    const first = textParam(params, text.slice(0, end) + String.fromCodePoint(0x10000 + (unit - 0xd800) * 0x400));
    return isAscending ? `${column} >= ${first}` : `${column} < ${first}`;
  }
  const head = textParam(params, text.slice(0, end));
  return isAscending ? `(${column} > ${head} AND NOT starts_with(${column}, ${head}))` : `(${column} <= ${head} OR starts_with(${column}, ${head}))`;
}

// ---------------------------------------------------------------- indexes

export interface IndexSpec {
  /** Unique within an entity's table: a typed column's name (f_…), equality, search. */
  readonly name: string;
  /** Indexes this one replaces, dropped at start-up when found: older definitions under other names. */
  readonly replaces?: readonly string[];
  /** What follows `CREATE INDEX <name> ON <table>`. */
  readonly definition: string;
  /** Needs `CREATE EXTENSION pg_trgm`; without the index, a search scans. */
  readonly needsTrigram: boolean;
}

/**
 * The indexes of an entity's table, over its live rows (lists that exclude deleted records say
 * `NOT deleted`, which these need). A btree per typed column (typed-columns.ts) on (column, id)
 * serves its field's sorts both ways and their cursors, equality, ranges, and counts of them read
 * from the index alone; it replaces the expression indexes an older tabula made over `data`
 * (sort_<field>, order_<field>). A boolean or enum field's column has an index of its own too
 * (<column>_eq), which PostgreSQL deduplicates, so that counting one of its few values reads a
 * small index. One GIN jsonb_path_ops index on data serves $eq and $in on arrays of strings,
 * numbers and booleans and on values the columns do not answer (`data @> …`); a trigram index on
 * the search column serves search (it replaces the one an older tabula made over the same text as
 * an expression). Filters that read `data` name their fields with parameters: run them unprepared
 * (sql.unsafe's default), so that each plan sees the names as constants and matches the
 * expressions (a generic plan of a prepared statement would not).
 */
export function indexesOf(entity: EntityDef): IndexSpec[] {
  const columns = typedColumnsOf(entity);
  const search = columns.get(SEARCH_COLUMN);
  const indexes: IndexSpec[] = [...columns.values()].filter((column) => column !== search).flatMap((column) => [
    { name: column.name, replaces: [`sort_${column.field}`, `order_${column.field}`], definition: `(${column.sql}, id) WHERE NOT deleted`, needsTrigram: false },
    ...(column.isFewValued ? [{ name: `${column.name}_eq`, definition: `(${column.sql}) WHERE NOT deleted`, needsTrigram: false }] : []),
  ]);
  indexes.push({ name: "equality", definition: "USING gin (data jsonb_path_ops) WHERE NOT deleted", needsTrigram: false });
  if (search) indexes.push({ name: search.name, replaces: ["search"], definition: `USING gin (${search.sql} gin_trgm_ops) WHERE NOT deleted`, needsTrigram: true });
  return indexes;
}
