// Aggregates and distinct values in SQL over the typed columns (typed-columns.ts), so that the
// database groups and measures the matching rows rather than sending each of them here to be
// walked (docs/postgresql.md, "Typed columns"). Only where the answer is exactly the one walking
// the rows gives (records/aggregate.ts, records/distinct.ts); elsewhere null, and the caller walks.

import type { DistinctPageRequest, GroupTotals, GroupTotalsRequest } from "../store.ts";
import { isCondition, whereClause, whereOf } from "./sql-filter.ts";
import { isStorable, NUMERIC_LAST, numericParam, SORT_PREFIX_CHARS, sortKeyExpression, SqlParams, TEXT_LAST, TEXT_PRESENT_PREFIX } from "./sql-values.ts";
import { columnOf, columnPrefixOf, literalOf, storedTextKey, type TypedColumn, type TypedColumns } from "./typed-columns.ts";
import { decodeText } from "./stored-text.ts";

/** A statement and how to read its rows. */
export interface Statement<T> {
  readonly text: string;
  readonly values: unknown[];
  /** null: the rows do not give the exact answer after all (the caller walks). */
  readonly read: (rows: readonly Record<string, unknown>[]) => T | null;
}

/**
 * A sum's numbers are the JSON texts the records hold, which jsonb keeps as exact decimals; the
 * memory store adds the doubles they parse to, exactly, and rounds once (exact-sum.ts). The two
 * sums are the same where every decimal is its double: an integer up to 2^53, or a multiple of
 * 2^-20 up to 2^33 (0.5, 0.25, 1.375…). Then SQL's exact numeric sum, rounded once as it is
 * parsed, is the memory store's; a group holding any other number (0.1) is left to the walk.
 */
function isItsDouble(column: string): string {
  return `(abs(${column}) <= 9007199254740992 AND ${column} * 1048576 = trunc(${column} * 1048576) AND (${column} = trunc(${column}) OR abs(${column}) <= 8589934592))`;
}

/**
 * The groups of an aggregate over scalar fields with sums, averages, minimums and maximums of
 * number fields; null when a column does not serve (a date's value is its text, not the instant
 * its column holds) or the filter is not exact in SQL. `maxGroups + 1` rows at most: one more
 * than allowed says there are too many.
 */
export function groupTotalsStatement(
  table: string,
  columns: TypedColumns,
  request: GroupTotalsRequest,
): Statement<GroupTotals[] | "too many"> | null {
  const groups: TypedColumn[] = [];
  for (const { field, kind } of request.groups) {
    const column = kind === "date" ? null : columnOf(columns, field, kind);
    if (!column) return null;
    groups.push(column);
  }
  const measured: TypedColumn[] = [];
  for (const { field } of request.measured) {
    const column = columnOf(columns, field, "number");
    if (!column) return null;
    measured.push(column);
  }
  const params = new SqlParams();
  const where = whereOf(request.filter, params, columns);
  if (!where.exact) return null;
  const selected = groups.map((column, i) => `${groupKeyOf(column)}::text AS g${i}`);
  selected.push("count(*)::int AS count");
  measured.forEach((column, i) => {
    const numbers = `FILTER (WHERE ${column.sql} < ${NUMERIC_LAST})`;
    selected.push(
      `(count(*) ${numbers})::int AS n${i}`,
      `(sum(${column.sql}) ${numbers})::text AS sum${i}`,
      `(bool_and(${isItsDouble(column.sql)}) ${numbers}) AS exact${i}`,
      `(min(${column.sql}) ${numbers})::text AS min${i}`,
      `(max(${column.sql}) ${numbers})::text AS max${i}`,
    );
  });
  const grouping = groups.length > 0 ? ` GROUP BY ${groups.map(groupKeyOf).join(", ")} LIMIT ${request.maxGroups + 1}` : "";
  const text = `SELECT ${selected.join(", ")} FROM ${table}${whereClause(["NOT deleted", where.sql].filter(isCondition))}${grouping}`;
  const readers = groups.map(groupValueReader);
  const read = (rows: readonly Record<string, unknown>[]): GroupTotals[] | "too many" | null => {
    if (rows.length > request.maxGroups) return "too many";
    const seen = new Set<string>();
    const totals: GroupTotals[] = [];
    for (const row of rows) {
      const values = readers.map((reader, i) => reader(row[`g${i}`] as string));
      // Two decimals that parse to one double would be one group here: never written by tabula (JSON.stringify), but then walk.
      const key = JSON.stringify(values);
      if (seen.has(key)) return null;
      seen.add(key);
      const numbers = [];
      for (let i = 0; i < measured.length; i++) {
        const n = row[`n${i}`] as number;
        if (n > 0 && request.measured[i]!.isSummed && row[`exact${i}`] !== true) return null;
        const sum = n === 0 ? 0 : Number(row[`sum${i}`]);
        numbers.push({ n, sum, min: numberOrNull(row[`min${i}`]), max: numberOrNull(row[`max${i}`]) });
      }
      totals.push({ values, count: row.count as number, numbers });
    }
    return totals;
  };
  return { text, values: params.values, read };
}

/**
 * A page of the distinct values of a scalar field, ascending by sort key from strictly after
 * `after`; null where the filter is not exact in SQL, or `after` is text that PostgreSQL cannot hold.
 */
export function distinctStatement(
  table: string,
  columns: TypedColumns,
  request: DistinctPageRequest,
): Statement<unknown[]> | null {
  const { kind, after } = request;
  const column = columnOf(columns, request.field, kind);
  if (!column) return null;
  const params = new SqlParams();
  const where = whereOf(request.filter, params, columns);
  if (!where.exact) return null;
  const key = groupKeyOf(column);
  const conditions = ["NOT deleted", where.sql, `${column.sql} < ${column.kind === "string" ? TEXT_LAST : NUMERIC_LAST}`];
  if (after !== undefined && after !== null) {
    if (column.kind === "string") {
      if (typeof after !== "string" || !isStorable(after)) return null;
      const stored = storedTextKey(TEXT_PRESENT_PREFIX + after);
      // The column's part of the bound, implied by the whole one, is a range of its index.
      conditions.push(`${column.sql} >= ${params.add(columnPrefixOf(stored))}::text`, `${key} > ${params.add(stored)}::text`);
    } else {
      if (typeof after !== "number") return null;
      conditions.push(`${column.sql} > ${numericParam(params, after)}`);
    }
  }
  const found = whereClause(conditions.filter(isCondition));
  const limit = params.add(request.limit);
  // A date's value is the text of the first record (by id) holding its instant, as the walk finds it.
  const text =
    kind === "date"
      ? `SELECT DISTINCT ON (${key}) data -> ${literalOf(column.field)} AS value FROM ${table}${found} ORDER BY ${key}, id LIMIT ${limit}`
      : `SELECT ${key}::text AS key FROM ${table}${found} GROUP BY ${key} ORDER BY ${key} LIMIT ${limit}`;
  const reader = groupValueReader(column);
  const read = (rows: readonly Record<string, unknown>[]): unknown[] | null => {
    if (kind === "date") return rows.map((row) => row.value);
    const values = rows.map((row) => reader(row.key as string));
    // As in groupTotalsStatement: two decimals of one double would be one value here.
    return new Set(values).size === values.length ? values : null;
  };
  return { text, values: params.values, read };
}

/**
 * What tells a column's groups apart, never null: the column itself, except that a text as long as
 * the column's prefix is told apart by its whole sort key (sql-sort.ts orders such ties the same
 * way). The text key is ordered by code point (COLLATE "C"), as a distinct page needs.
 */
function groupKeyOf(column: TypedColumn): string {
  if (column.kind !== "string") return column.sql;
  return `(CASE WHEN length(${column.sql}) >= ${SORT_PREFIX_CHARS} THEN ${sortKeyExpression("string", literalOf(column.field))} ELSE ${column.sql} END)`;
}

/** A group key's text (groupKeyOf) → the value: a field's key for missing values and other types is null. */
function groupValueReader(column: TypedColumn): (key: string) => string | number | boolean | null {
  switch (column.kind) {
    case "string":
      return (key) => (key.startsWith(TEXT_PRESENT_PREFIX) ? decodeText(key.slice(TEXT_PRESENT_PREFIX.length)) : null);
    case "boolean":
      return (key) => (key === "1" ? true : key === "0" ? false : null);
    default:
      return (key) => (key === "Infinity" ? null : Number(key));
  }
}

function numberOrNull(text: unknown): number | null {
  return text === null || text === undefined ? null : Number(text);
}
