// Sorts and cursors in SQL: the ORDER BY of a SortSpec, the keyset condition "strictly after this
// position", and the indexes that serve them (and filters) at any depth. Orders are those of the
// memory store's sorted index (toSortKey, compareSortKeys, then id). Filters are sql-filter.ts's.

import type { SortPosition, SortSpec } from "../../query/filter-tree.ts";
import { isScalar, kindOf, type EntityDef, type SortKey, type ValueKind } from "../../schema/fields.ts";
import { firstUnstorable, isStorable, NUMERIC_LAST, numericParam, searchText, sortKeyExpression, sortPrefixOf, TEXT_LAST, TEXT_PRESENT_PREFIX, textParam, type SqlParams } from "./sql-values.ts";

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
 * backwards. A text key is led by its indexed prefix (sortPrefixOf), which orders rows as the key does.
 */
export function orderByOf(sort: SortSpec): string {
  const direction = sort.descending ? "DESC" : "ASC";
  if (sort.field === "id") return `id ${direction}`;
  const expression = sortExpression(sort);
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
export function afterOf(sort: SortSpec, after: SortPosition, params: SqlParams): string {
  const isAscending = !sort.descending;
  const { key, id } = after;
  if (sort.field === "id") return afterId(key, id, isAscending, params);
  const expression = sortExpression(sort);
  let encoded: string;
  if (sort.kind === "string") {
    // compareSortKeys puts numbers before every string.
    if (typeof key === "number") return isAscending ? "TRUE" : "FALSE";
    if (key === null) encoded = TEXT_LAST;
    else if (isStorable(key)) encoded = textParam(params, TEXT_PRESENT_PREFIX + key);
    else return textBeyond(expression, TEXT_PRESENT_PREFIX + key, isAscending, params); // no row's key equals it
  } else {
    // A string key sorts after every number and before null (compareSortKeys).
    if (typeof key === "string") return `${expression} ${isAscending ? "=" : "<"} ${NUMERIC_LAST}`;
    encoded = key === null ? NUMERIC_LAST : numericParam(params, key);
  }
  const op = isAscending ? ">" : "<";
  const beyond = isStorable(id)
    ? `(${expression}, id) ${op} (${encoded}, ${textParam(params, id)})`
    : `(${expression} ${op} ${encoded} OR (${expression} = ${encoded} AND ${textBeyond("id", id, isAscending, params)}))`;
  // A text key's index holds its prefix: the bound on it (implied by the rest) is the index's range.
  return sort.kind === "string" ? `(${sortPrefixOf(expression)} ${op}= ${sortPrefixOf(encoded)} AND ${beyond})` : beyond;
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
  /** Unique within an entity's table, from schema names: sort_<field>, order_<field>, equality, search. */
  readonly name: string;
  /** An index this one replaces, dropped at start-up when found: an older definition under another name. */
  readonly replaces?: string;
  /** What follows `CREATE INDEX <name> ON <table>`. */
  readonly definition: string;
  /** Needs `CREATE EXTENSION pg_trgm`; without the index, a search scans. */
  readonly needsTrigram: boolean;
}

/**
 * The indexes of an entity's table, over its live rows (lists that exclude deleted records say
 * `NOT deleted`, which these need). A btree per sortable field on (sortExpression, id) serves its
 * sorts both ways and their cursors, and ranges and date equality on it; a text field's holds its
 * key's prefix instead (order_<field>: sortPrefixOf), as a key of any length would not fit, and
 * replaces the sort_<field> index that held the whole key; one GIN jsonb_path_ops
 * index on data serves $eq and $in on string, number and boolean fields and on arrays of them
 * (`data @> …`); a trigram index serves search. Filters name their fields with parameters: run
 * them unprepared (sql.unsafe's default), so that each plan sees the names as constants and
 * matches these expressions (a generic plan of a prepared statement would not).
 */
export function indexesOf(entity: EntityDef): IndexSpec[] {
  const sortable = [...entity.fieldNames.filter((name) => isScalar(entity.fields.get(name)!)), "created_date", "updated_date", "created_by_id"];
  const indexes: IndexSpec[] = sortable.map((field) => {
    const kind: ValueKind = ["created_date", "updated_date"].includes(field) ? "date" : field === "created_by_id" ? "string" : kindOf(entity.fields.get(field)!);
    const expression = sortExpression({ field, kind, descending: false });
    if (kind === "string") return { name: `order_${field}`, replaces: `sort_${field}`, definition: `(${sortPrefixOf(expression)}, id) WHERE NOT deleted`, needsTrigram: false };
    return { name: `sort_${field}`, definition: `(${expression}, id) WHERE NOT deleted`, needsTrigram: false };
  });
  indexes.push({ name: "equality", definition: "USING gin (data jsonb_path_ops) WHERE NOT deleted", needsTrigram: false });
  if (entity.textFields.length > 0) {
    indexes.push({ name: "search", definition: `USING gin ((${searchText(entity.textFields.map(literalOf))}) gin_trgm_ops) WHERE NOT deleted`, needsTrigram: true });
  }
  return indexes;
}

// Schema field names (schema/load.ts): a name that is one cannot close a literal.
const FIELD_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

function literalOf(field: string): string {
  if (!FIELD_NAME_RE.test(field)) throw new Error(`sql-sort: "${field}" is not a schema field name`);
  return `'${field}'`;
}
