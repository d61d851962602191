// The body of an aggregate (the SDK's EntityAggregateSpec, docs/aggregates.md) → a typed AggregateSpec:
// every name resolved through the schema, every measure fitted to its field, `having` and `sort`
// checked against the columns the rows will carry, so that computing it (aggregate.ts) meets no
// surprise. A wrong shape is invalid_json, an undeclared field unknown_field, a field unfit for its
// use or a value out of range invalid_parameter (details.parameter names the member).

import { ApiError, forbidden, invalidFilter, invalidJson, invalidParameter } from "../errors.ts";
import { parseFilter, resolveField, type FieldAccess } from "../query/filter.ts";
import type { FilterNode } from "../query/filter-tree.ts";
import { isScalar, kindOf, parseDateValue, type EntityDef, type FieldDef, type ValueKind } from "../schema/fields.ts";
import { isPlainObject } from "../schema/load.ts";

export const MAX_GROUP_FIELDS = 4;
export const MAX_AGGREGATE_ROWS = 1000;
export const DATE_BUCKET_UNITS = ["day", "week", "month", "year"] as const;
export const HAVING_OPERATORS = ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"] as const;

export type DateBucketUnit = (typeof DATE_BUCKET_UNITS)[number];
export type MeasureOp = "sum" | "avg" | "min" | "max" | "count_distinct";
export type HavingOp = (typeof HAVING_OPERATORS)[number];

const SPEC_MEMBERS = ["query", "groupBy", "dateBucket", "count", "sum", "avg", "min", "max", "countDistinct", "having", "sort", "limit"];
const EXAMPLE = `{"groupBy": "status", "sum": "estimate", "sort": "-count"}`;

/** A column naming a group: a field's value (an array field's elements, one group each), or a date bucket. */
export interface GroupColumn {
  /** The field, which is also the column's name. */
  readonly name: string;
  /** How the column's values compare: the field's kind; a bucket's label compares as text. */
  readonly kind: ValueKind;
  readonly isArray: boolean;
  readonly bucket: DateBucketUnit | null;
}

export interface Measure {
  /** The column: `sum_<field>`, `avg_<field>`, `min_<field>`, `max_<field>`, `count_distinct_<field>`. */
  readonly name: string;
  readonly op: MeasureOp;
  readonly field: string;
  /** The kind of the field's values (of its elements, for an array). */
  readonly kind: ValueKind;
  readonly isArray: boolean;
}

/** One condition of `having` on a column; the conditions are ANDed. */
export interface HavingTest {
  readonly column: string;
  readonly kind: ValueKind;
  readonly op: HavingOp;
  /** The operand, checked against the column's kind; null means "no value". */
  readonly value: unknown;
}

export interface AggregateSpec {
  readonly filter: FilterNode | null;
  /** The date bucket first (when asked for), then groupBy's fields in their order. */
  readonly groups: readonly GroupColumn[];
  readonly count: boolean;
  readonly measures: readonly Measure[];
  /** Every column of a row, in row order, with the kind its values compare by. */
  readonly columns: ReadonlyMap<string, ValueKind>;
  readonly having: readonly HavingTest[];
  readonly sort: { readonly column: string; readonly descending: boolean } | null;
  readonly limit: number;
}

/** Checks an aggregate body; undefined (no body) asks for the defaults: one row counting every live record. */
export function parseAggregateSpec(entity: EntityDef, body: unknown, access: FieldAccess): AggregateSpec {
  const spec = body === undefined ? {} : body;
  if (!isPlainObject(spec)) throw invalidJson(`The body must be a JSON object such as ${EXAMPLE}.`);
  for (const name of Object.keys(spec)) {
    if (!SPEC_MEMBERS.includes(name)) throw invalidJson(`Unknown member "${name}"; an aggregate takes ${SPEC_MEMBERS.join(", ")}.`, { parameter: name });
  }
  // null is taken as absent, as JavaScript clients send it for "not given".
  const member = (name: string): unknown => spec[name] ?? undefined;
  const resolve = (name: string, parameter: string) => fieldOf(entity, name, parameter, access);
  const groups = [...bucketColumns(member("dateBucket"), resolve), ...groupColumns(member("groupBy"), resolve)];
  const count = member("count") ?? true;
  if (typeof count !== "boolean") throw invalidJson(`"count" must be true or false (got ${JSON.stringify(count)}).`, { parameter: "count" });
  const measures = [
    ...(["sum", "avg", "min", "max"] as const).flatMap((op) => fieldNames(member(op), op).map((name) => measureOf(op, resolve(name, op)))),
    ...countDistinctOf(member("countDistinct"), resolve),
  ];
  const columns = columnsOf(groups, count, measures);
  return {
    filter: filterOf(entity, member("query"), access),
    groups,
    count,
    measures,
    columns,
    having: parseHaving(member("having"), columns, access),
    sort: parseAggregateSort(member("sort"), columns, access),
    limit: limitOf(member("limit")),
  };
}

function filterOf(entity: EntityDef, query: unknown, access: FieldAccess): FilterNode | null {
  if (query === undefined) return null;
  if (!isPlainObject(query)) throw invalidJson(`"query" must be a filter object such as {"status": "done"}.`, { parameter: "query" });
  return parseFilter(entity, query, access);
}

type Resolve = (name: string, parameter: string) => FieldDef;

/** A declared or platform field; created_by_id only for secret keys (docs/api.md). */
function fieldOf(entity: EntityDef, name: string, parameter: string, access: FieldAccess): FieldDef {
  const field = resolveField(entity, name, access);
  if (field.type === "object") throw unfit(parameter, name, "it holds a JSON object; use a field holding one value");
  return field;
}

function unfit(parameter: string, field: string, why: string): ApiError {
  const error = invalidParameter(parameter, `"${parameter}" cannot use "${field}": ${why}.`);
  error.details.field = field;
  return error;
}

/** A field name or an array of them, as the SDK types `groupBy`, `sum`, `avg`, `min` and `max`. */
function fieldNames(value: unknown, parameter: string): string[] {
  if (value === undefined) return [];
  const names = typeof value === "string" ? [value] : value;
  if (!Array.isArray(names) || !names.every((name) => typeof name === "string" && name !== "")) {
    throw invalidJson(`"${parameter}" must be a field name or an array of field names, such as "estimate" or ["estimate", "priority"].`, { parameter });
  }
  return names as string[];
}

/** Whether an array field's elements are declared scalars, which can be grouped and counted. */
function hasScalarItems(field: FieldDef): boolean {
  return field.items !== undefined && isScalar(field.items);
}

function groupColumns(value: unknown, resolve: Resolve): GroupColumn[] {
  const names = fieldNames(value, "groupBy");
  if (names.length > MAX_GROUP_FIELDS) {
    throw invalidParameter("groupBy", `"groupBy" names ${names.length} fields; group by at most ${MAX_GROUP_FIELDS}.`);
  }
  const columns = names.map((name): GroupColumn => {
    const field = resolve(name, "groupBy");
    const isArray = field.type === "array";
    if (isArray && !hasScalarItems(field)) throw unfit("groupBy", name, "its array does not declare scalar items (strings, numbers, booleans or dates)");
    return { name, kind: kindOf(field), isArray, bucket: null };
  });
  // Each element of an array is a group of its own; two arrays would multiply a record into their product.
  const arrays = columns.filter((column) => column.isArray);
  if (arrays.length > 1) throw unfit("groupBy", arrays[1]!.name, `only one array field may be grouped by, and "${arrays[0]!.name}" is one`);
  return columns;
}

function bucketColumns(value: unknown, resolve: Resolve): GroupColumn[] {
  if (value === undefined) return [];
  const units = DATE_BUCKET_UNITS.join(", ");
  const shape = `"dateBucket" must be {"field": <a date or date-time field>, "unit": one of ${units}}`;
  if (!isPlainObject(value) || Object.keys(value).some((name) => name !== "field" && name !== "unit") || typeof value.field !== "string" || typeof value.unit !== "string") {
    throw invalidJson(`${shape}.`, { parameter: "dateBucket" });
  }
  const field = resolve(value.field, "dateBucket");
  if (field.type === "array" || kindOf(field) !== "date") throw unfit("dateBucket", value.field, "it is not a date or date-time field");
  if (!(DATE_BUCKET_UNITS as readonly string[]).includes(value.unit)) {
    throw invalidParameter("dateBucket", `${shape} (got the unit ${JSON.stringify(value.unit)}).`);
  }
  return [{ name: value.field, kind: "string", isArray: false, bucket: value.unit as DateBucketUnit }];
}

const FITS: Record<"sum" | "avg" | "min" | "max", { kinds: readonly ValueKind[]; expected: string }> = {
  sum: { kinds: ["number"], expected: "a number field" },
  avg: { kinds: ["number"], expected: "a number field" },
  min: { kinds: ["number", "date", "string"], expected: "a number, date or string field" },
  max: { kinds: ["number", "date", "string"], expected: "a number, date or string field" },
};

function measureOf(op: "sum" | "avg" | "min" | "max", field: FieldDef): Measure {
  const kind = kindOf(field);
  if (field.type === "array" || !FITS[op].kinds.includes(kind)) {
    throw unfit(op, field.name, `it takes ${FITS[op].expected}, and this one holds ${describeField(field)}`);
  }
  return { name: `${op}_${field.name}`, op, field: field.name, kind, isArray: false };
}

function countDistinctOf(value: unknown, resolve: Resolve): Measure[] {
  if (value === undefined) return [];
  if (typeof value !== "string" || value === "") throw invalidJson(`"countDistinct" must be one field name, such as "email".`, { parameter: "countDistinct" });
  const field = resolve(value, "countDistinct");
  const isArray = field.type === "array";
  if (isArray && !hasScalarItems(field)) throw unfit("countDistinct", value, "its array does not declare scalar items");
  return [{ name: `count_distinct_${value}`, op: "count_distinct", field: value, kind: kindOf(field), isArray }];
}

function describeField(field: FieldDef): string {
  if (field.type === "array") return "an array";
  if (field.type === "string") return field.format === "date" || field.format === "date-time" ? "dates" : "strings";
  return field.type === "boolean" ? "booleans" : "numbers";
}

function columnsOf(groups: readonly GroupColumn[], count: boolean, measures: readonly Measure[]): Map<string, ValueKind> {
  const columns = new Map<string, ValueKind>();
  const add = (name: string, kind: ValueKind, parameter: string) => {
    if (columns.has(name)) {
      throw invalidParameter(parameter, `Two columns of the rows would be named "${name}"; name each group field and measure once${name === "count" ? ', or set "count": false' : ""}.`);
    }
    columns.set(name, kind);
  };
  for (const column of groups) add(column.name, column.kind, column.bucket ? "dateBucket" : "groupBy");
  if (count) add("count", "number", "count");
  for (const measure of measures) {
    const parameter = measure.op === "count_distinct" ? "countDistinct" : measure.op;
    add(measure.name, measure.op === "min" || measure.op === "max" ? measure.kind : "number", parameter);
  }
  return columns;
}

function parseHaving(value: unknown, columns: ReadonlyMap<string, ValueKind>, access: FieldAccess): HavingTest[] {
  if (value === undefined) return [];
  if (!isPlainObject(value)) throw invalidJson(`"having" must be an object keyed by column, such as {"count": {"$gt": 1}}.`, { parameter: "having" });
  const tests: HavingTest[] = [];
  for (const [column, condition] of Object.entries(value)) {
    if (column.startsWith("$")) {
      throw invalidFilter(`"having" takes column names, ANDed; ${column} is not supported there. Write {"count": {"$gt": 1}, "sum_estimate": {"$lte": 10}}.`, { parameter: "having", operator: column });
    }
    const kind = columnKind(column, columns, "having", access);
    const operators = isPlainObject(condition) ? Object.keys(condition) : [];
    if (operators.length > 0 && operators.every((op) => op.startsWith("$"))) {
      for (const op of operators) tests.push(havingTest(column, kind, op, (condition as Record<string, unknown>)[op]));
    } else if (operators.some((op) => op.startsWith("$"))) {
      throw invalidFilter(`The "having" condition on "${column}" mixes operators and plain keys; write {"$op": value, ...} or a plain value.`, { parameter: "having", field: column });
    } else {
      tests.push(havingTest(column, kind, "$eq", condition));
    }
  }
  return tests;
}

/** The kind of a column that `having` or `sort` names; unknown names are refused with the list of columns. */
function columnKind(name: string, columns: ReadonlyMap<string, ValueKind>, parameter: string, access: FieldAccess): ValueKind {
  if (name === "created_by_id" && !access.mayUseCreatedBy) throw forbidden("A publishable key cannot use created_by_id; use a secret key.");
  const kind = columns.get(name);
  if (kind !== undefined) return kind;
  const names = [...columns.keys()];
  const message = `"${parameter}" names "${name}", which is not a column of the rows. The rows have: ${names.join(", ") || "(no columns)"}.`;
  if (parameter === "sort") {
    const error = invalidParameter(parameter, message);
    error.details.fields = names;
    throw error;
  }
  // `having` is a filter over the rows, so an unknown name in it is unknown_field, as in `q`.
  throw new ApiError(400, "unknown_field", message, { parameter, field: name, fields: names });
}

function havingTest(column: string, kind: ValueKind, op: string, operand: unknown): HavingTest {
  if (!(HAVING_OPERATORS as readonly string[]).includes(op)) {
    throw invalidFilter(`Unknown operator ${op} in "having" on "${column}". Operators: ${HAVING_OPERATORS.join(", ")}.`, { parameter: "having", field: column, operator: op });
  }
  const refuse = (expected: string) =>
    invalidFilter(`Operator ${op} on the column "${column}" takes ${expected} (got ${JSON.stringify(operand)}).`, { parameter: "having", field: column, operator: op });
  const expected = describeKind(kind);
  if (op === "$in" || op === "$nin") {
    if (!Array.isArray(operand) || !operand.every((item) => item === null || fitsKind(kind, item))) throw refuse(`an array of ${expected} (null: no value)`);
  } else if (op === "$eq" || op === "$ne") {
    if (operand !== null && !fitsKind(kind, operand)) throw refuse(`${expected} or null`);
  } else if (!fitsKind(kind, operand)) {
    throw refuse(expected);
  }
  return { column, kind, op: op as HavingOp, value: operand };
}

function fitsKind(kind: ValueKind, value: unknown): boolean {
  switch (kind) {
    case "number":
      return typeof value === "number" && Number.isFinite(value);
    case "string":
      return typeof value === "string";
    case "boolean":
      return typeof value === "boolean";
    case "date":
      return !Number.isNaN(parseDateValue(value));
    case "json":
      return false;
  }
}

function describeKind(kind: ValueKind): string {
  return kind === "date" ? "a date (2026-01-01) or a timestamp" : kind === "boolean" ? "true or false" : `a ${kind}`;
}

function parseAggregateSort(value: unknown, columns: ReadonlyMap<string, ValueKind>, access: FieldAccess): AggregateSpec["sort"] {
  if (value === undefined) return null;
  if (typeof value !== "string") throw invalidJson(`"sort" must be a column name with an optional "-" for descending, such as "-count".`, { parameter: "sort" });
  const descending = value.startsWith("-");
  const column = descending || value.startsWith("+") ? value.slice(1) : value;
  columnKind(column, columns, "sort", access);
  return { column, descending };
}

function limitOf(value: unknown): number {
  if (value === undefined) return MAX_AGGREGATE_ROWS;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > MAX_AGGREGATE_ROWS) {
    throw invalidParameter("limit", `"limit" must be a whole number from 1 to ${MAX_AGGREGATE_ROWS} (got ${JSON.stringify(value)}).`);
  }
  return value;
}
