// The typed filter tree and sorts (query/filter-tree.ts) in PostgreSQL's terms, for tables of the
// layout tables.ts makes (id, rev, deleted, data jsonb). Values only ever travel as parameters,
// field names too (`data -> $1`): nothing a request sends reaches the SQL text.
//
// A filter becomes SQL that is exact where the translation is plainly the memory store's meaning
// (predicate.ts): typed comparisons of a declared scalar field, presence, and/or/not of those.
// Anything else (arrays, JSON paths, $contains and search with their Unicode case folding,
// JavaScript regular expressions, $elemMatch, $all, $size) becomes a superset, and the store runs
// the memory predicate over what SQL returns: results are the same on every store, and the SQL
// still narrows wherever it can.

import type { CompareNode, FilterNode, SortPosition, SortSpec, ValueKind } from "../../query/filter-tree.ts";
import { parseDateValue, toSortKey } from "../../schema/fields.ts";

/** The parameters of one statement: add() a value, write the "$n" it answers. */
export class SqlParams {
  readonly values: unknown[];

  constructor(values: readonly unknown[] = []) {
    this.values = [...values];
  }

  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/**
 * A list as a PostgreSQL array literal, sent as one text parameter and cast (`$1::text[]`): the
 * driver's own array encoding needs type information that parameterized text does not give it.
 */
export function arrayLiteral(items: ReadonlyArray<string | number>): string {
  return `{${items.map((item) => (typeof item === "number" ? String(item) : `"${item.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`)).join(",")}}`;
}

/** The SQL of a filter, and whether it selects exactly the filter's records (else a superset). */
export interface SqlFilter {
  readonly sql: string;
  readonly exact: boolean;
}

/** Names the SQL refers to: the schema's date function (tables.ts). */
export interface SqlNames {
  /** "schema"."$date_ms": milliseconds since the epoch of a date text, NULL when it is none. */
  readonly dateMs: string;
}

const EVERYTHING: SqlFilter = { sql: "TRUE", exact: false };
const COMPARISONS: Partial<Record<string, string>> = { $eq: "=", $gt: ">", $gte: ">=", $lt: "<", $lte: "<=" };

export function whereOf(filter: FilterNode | null, params: SqlParams, names: SqlNames): SqlFilter {
  if (filter === null) return { sql: "TRUE", exact: true };
  return translate(filter, params, names);
}

/** A node's SQL; parameters added for a condition that ends up dropped (TRUE) are taken back out. */
function translate(node: FilterNode, params: SqlParams, names: SqlNames): SqlFilter {
  const mark = params.values.length;
  const translated = translateNode(node, params, names);
  // PostgreSQL refuses a statement with a parameter it cannot type, as an unused one is.
  if (translated.sql === "TRUE") params.values.length = mark;
  return translated;
}

function translateNode(node: FilterNode, params: SqlParams, names: SqlNames): SqlFilter {
  switch (node.type) {
    case "and":
    case "or": {
      const parts = node.nodes.map((inner) => translate(inner, params, names));
      const exact = parts.every((part) => part.exact);
      // A superset of an or needs a superset of every branch; "TRUE" in one makes it all TRUE.
      if (node.type === "or" && parts.some((part) => part.sql === "TRUE")) return { sql: "TRUE", exact };
      const kept = parts.filter((part) => part.sql !== "TRUE");
      if (kept.length === 0) return { sql: "TRUE", exact };
      return { sql: kept.map((part) => `(${part.sql})`).join(node.type === "and" ? " AND " : " OR "), exact };
    }
    case "not": {
      // Only an exact inner condition may be negated: the negation of a superset is no superset.
      const inner = translate(node.node, params, names);
      return inner.exact ? { sql: `NOT (${inner.sql})`, exact: true } : EVERYTHING;
    }
    case "compare":
      return compare(node, params, names);
    default:
      return EVERYTHING;
  }
}

/** Exact SQL for a typed comparison of a declared scalar field; the superset TRUE for anything else. */
function compare(node: CompareNode, params: SqlParams, names: SqlNames): SqlFilter {
  if (node.path.length !== 1 || node.isArray || node.kind === "json") return EVERYTHING;
  const { op, value } = node;
  // Every condition is true or false, never NULL, so that NOT keeps records lacking the field.
  if (op === "$exists" || (value === null && (op === "$eq" || op === "$ne"))) {
    const present = `COALESCE(jsonb_typeof(data -> ${params.add(node.path[0])}::text) <> 'null', false)`;
    const wanted = op === "$exists" ? value === true : op === "$ne";
    return { sql: wanted ? present : `NOT ${present}`, exact: true };
  }
  const key = keyExpression(node.path[0]!, node.kind, params, names);
  const cast = SQL_TYPES[node.kind];
  if (op === "$in" || op === "$nin") {
    const items = value as unknown[];
    if (items.some((item) => item === null || typeof item === "object")) return EVERYTHING;
    const keys = items.map((item) => keyOfOperand(node.kind, item));
    const listed = `COALESCE(${key} = ANY(${params.add(arrayLiteral(keys.filter((key) => key !== null)))}::${cast}[]), false)`;
    return { sql: op === "$in" ? listed : `NOT ${listed}`, exact: true };
  }
  const operator = COMPARISONS[op === "$ne" ? "$eq" : op];
  if (!operator || value === null || typeof value === "object") return EVERYTHING;
  const bound = keyOfOperand(node.kind, value);
  // An operand of no value for the kind (a date that is none) matches nothing, as in predicate.ts.
  const test = bound === null ? "false" : `COALESCE(${key} ${operator} ${params.add(bound)}::${cast}, false)`;
  return { sql: op === "$ne" ? `NOT ${test}` : test, exact: true };
}

const SQL_TYPES: Record<ValueKind, string> = { string: "text", number: "float8", boolean: "int", date: "float8", json: "text" };

/** An operand as the key expression compares: booleans as 0/1, dates as milliseconds. */
function keyOfOperand(kind: ValueKind, value: unknown): string | number | null {
  if (kind === "date") {
    const ms = parseDateValue(value);
    return Number.isNaN(ms) ? null : ms;
  }
  return toSortKey(kind, value);
}

/**
 * The typed key of a field, as toSortKey makes it (schema/fields.ts): NULL when the field is
 * missing or holds a value of another type; strings compare by code point (COLLATE "C").
 * `field` is a parameter unless `inline` (index definitions cannot take parameters; field names
 * are declared names, letters, digits and "_", checked by schema/load.ts).
 */
function keyExpression(field: string, kind: ValueKind, params: SqlParams | null, names: SqlNames): string {
  if (field === "id") return "id";
  const name = params ? `${params.add(field)}::text` : `'${field}'`;
  const value = `(data -> ${name})`;
  switch (kind) {
    case "string":
    case "json":
      return `(CASE WHEN jsonb_typeof(${value}) = 'string' THEN (data ->> ${name}) END) COLLATE "C"`;
    case "number":
      return `(CASE WHEN jsonb_typeof(${value}) = 'number' THEN ${value}::float8 END)`;
    case "boolean":
      return `(CASE WHEN jsonb_typeof(${value}) = 'boolean' THEN ${value}::boolean::int END)`;
    case "date":
      return `${names.dateMs}(CASE WHEN jsonb_typeof(${value}) = 'string' THEN (data ->> ${name}) END)`;
  }
}

/** The sort's key expression, written out (no parameters) so that an index on it serves the sort. */
export function sortExpression(sort: SortSpec, names: SqlNames): string {
  return keyExpression(sort.field, sort.kind, null, names);
}

/**
 * ORDER BY for a sort, as the memory store's sorted index walks it: ascending by key with values
 * missing last, then by id; descending is the exact reverse (missing first, ids descending).
 */
export function orderByOf(sort: SortSpec, names: SqlNames): string {
  if (sort.field === "id") return sort.descending ? "id DESC" : "id ASC";
  const key = sortExpression(sort, names);
  return sort.descending ? `${key} DESC NULLS FIRST, id DESC` : `${key} ASC NULLS LAST, id ASC`;
}

/** Rows strictly after `after` in the order of orderByOf. */
export function afterOf(sort: SortSpec, after: SortPosition, params: SqlParams, names: SqlNames): string {
  const id = params.add(after.id);
  if (sort.field === "id") return sort.descending ? `id < ${id}` : `id > ${id}`;
  const key = sortExpression(sort, names);
  const cast = SQL_TYPES[sort.kind];
  if (after.key === null) {
    // Among the rows without a value: ascending they come last, descending first.
    return sort.descending ? `(${key} IS NOT NULL OR id < ${id})` : `(${key} IS NULL AND id > ${id})`;
  }
  const value = `${params.add(after.key)}::${cast}`;
  return sort.descending
    ? `(${key} < ${value} OR (${key} = ${value} AND id < ${id}))`
    : `(${key} > ${value} OR (${key} = ${value} AND id > ${id}) OR ${key} IS NULL)`;
}

/**
 * The indexes of an entity's table: one per sortable field on (key, id) over live rows, which
 * serves its sorts, cursors at any depth and equality and range filters on it.
 */
export function indexesOf(entity: string, sorts: ReadonlyArray<{ field: string; kind: ValueKind }>, names: SqlNames): Array<{ name: string; definition: string }> {
  return sorts
    .filter((sort) => sort.kind !== "json")
    .map(({ field, kind }) => ({
      name: indexName(entity, field),
      definition: `((${sortExpression({ field, kind, descending: false }, names)}), id) WHERE NOT deleted`,
    }));
}

/** PostgreSQL names are at most 63 bytes: long ones end in a hash instead. */
function indexName(entity: string, field: string): string {
  const name = `${entity}_${field}_sort`;
  if (Buffer.byteLength(name) <= 63) return name;
  let hash = 0;
  for (const char of name) hash = (Math.imul(hash, 31) + char.codePointAt(0)!) >>> 0;
  return `${name.slice(0, 50)}_${hash.toString(16)}`;
}
