// Computes an aggregate (docs/aggregates.md; the spec was checked by aggregate-spec.ts) over an entity's
// live records: one pass over the matching rows into groups, or none when the store can count by
// value; then having, sort and limit over the rows. No HTTP here: each URL prefix shapes the reply.

import { compareSortKeys, toSortKey, type EntityDef, type SortKey, type ValueKind } from "../schema/fields.ts";
import type { GroupTotals, RecordStore, Row } from "../store/store.ts";
import type { AggregateSpec, GroupColumn, HavingTest, Measure } from "./aggregate-spec.ts";
import { bucketLabel, bucketOf } from "./date-bucket.ts";
import { ExactSum } from "./exact-sum.ts";
import { ApiError } from "../errors.ts";
import { settingName } from "../option-names.ts";

// Each group holds its values, its measures' states and a map per group column: about 2 KiB with
// four columns and four measures, so grouping by unique fields costs memory in proportion to the
// records. The rows an answer may carry are 1,000 (aggregate-spec.ts); ten times as many groups
// leave room for `having` to choose among them (docs/aggregates.md#limits).
export const DEFAULT_MAX_GROUPS = 10_000;
// count_distinct keeps each group's values in a set, about 26 bytes a value. Without arrays the
// values held are at most the records read; grouping by an array and counting the distinct
// elements of an array puts each record's elements in each of its groups, the square of its
// length. 2,000,000 values (about 50 MiB) is a count over every record of a big store.
export const MAX_DISTINCT_VALUES_HELD = 2_000_000;

export interface AggregateResult {
  /** One row per group: the group columns by name, then `count` and the measures. */
  readonly rows: Record<string, unknown>[];
  /** More rows passed `having` than `limit` let through. */
  readonly truncated: boolean;
}

/** A group column's value in a group: a field's value, a bucket's number, or null for none. */
type GroupValue = string | number | boolean | null;

/** One measure's running state in one group; one shape for every measure, so that its code stays monomorphic. */
interface MeasureState {
  /** sum/avg: the exact running sum. */
  total: ExactSum | null;
  /** sum/avg: values added; min/max: whether `best` holds one. */
  n: number;
  best: unknown;
  bestKey: SortKey;
  seen: Set<SortKey> | null;
}

interface Group {
  readonly values: GroupValue[];
  count: number;
  readonly states: MeasureState[];
}

/** `maxGroups`: the groups gathered at most; one more refuses the aggregate, before its memory is spent. */
export async function aggregate(store: RecordStore, entity: EntityDef, spec: AggregateSpec, maxGroups = DEFAULT_MAX_GROUPS): Promise<AggregateResult> {
  const groups =
    (await countedGroups(store, entity.name, spec, maxGroups)) ?? (await storeGroups(store, entity.name, spec, maxGroups)) ?? (await walkedGroups(store, entity.name, spec, maxGroups));
  let rows = groups.map((group) => rowOf(spec, group));
  if (spec.having.length > 0) rows = rows.filter(compileHaving(spec.having));
  rows = sortRows(spec, rows);
  return { rows: rows.length > spec.limit ? rows.slice(0, spec.limit) : rows, truncated: rows.length > spec.limit };
}

/**
 * The groups, when the store can count them without reading rows: a count alone with no group
 * (the store's count), or grouped by one value-indexed field with no filter (its value counts).
 */
async function countedGroups(store: RecordStore, entity: string, spec: AggregateSpec, maxGroups: number): Promise<Group[] | null> {
  if (spec.measures.length > 0) return null;
  if (spec.groups.length === 0) return [{ values: [], count: await store.count(entity, spec.filter, "exclude"), states: [] }];
  const column = spec.groups[0]!;
  if (spec.filter !== null || spec.groups.length > 1 || column.bucket !== null || column.isArray) return null;
  const counts = await store.valueCounts(entity, column.name);
  if (!counts) return null;
  const groups = new Map<GroupValue, Group>();
  for (const [stored, count] of counts) {
    // A value of another type (left by an older declaration) is no value, as when walking rows.
    const value = isOfKind(column.kind, stored) ? (stored as GroupValue) : null;
    const group = groups.get(value);
    if (group) group.count += count;
    else if (groups.size === maxGroups) throw tooManyGroups(spec, maxGroups);
    else groups.set(value, { values: [value], count, states: [] });
  }
  return [...groups.values()];
}

/**
 * The groups, when the store computes them itself (PostgreSQL, over its typed columns): scalar
 * group columns without a date bucket, and sums, averages, minimums and maximums of numbers. The
 * store answers only where its totals are exactly those walking the rows gives.
 */
async function storeGroups(store: RecordStore, entity: string, spec: AggregateSpec, maxGroups: number): Promise<Group[] | null> {
  if (!store.groupTotals) return null;
  if (spec.groups.some((column) => column.isArray || column.bucket !== null)) return null;
  if (spec.measures.some((measure) => measure.isArray || measure.kind !== "number" || measure.op === "count_distinct")) return null;
  const fields = [...new Set(spec.measures.map((measure) => measure.field))];
  const isSummed = (field: string) => spec.measures.some((measure) => measure.field === field && (measure.op === "sum" || measure.op === "avg"));
  const measured = fields.map((field) => ({ field, isSummed: isSummed(field) }));
  const groups = spec.groups.map((column) => ({ field: column.name, kind: column.kind }));
  const totals = await store.groupTotals(entity, { filter: spec.filter, groups, measured, maxGroups });
  if (totals === "too many") throw tooManyGroups(spec, maxGroups);
  return totals?.map(({ values, count, numbers }) => ({ values, count, states: spec.measures.map((measure) => stateOf(measure, numbers[fields.indexOf(measure.field)]!)) })) ?? null;
}

/** A measure's state as if its group's numbers had been added one by one. */
function stateOf(measure: Measure, numbers: GroupTotals["numbers"][number]): MeasureState {
  const state = newState();
  if (measure.op === "sum" || measure.op === "avg") {
    if (numbers.n === 0) return state;
    (state.total = new ExactSum()).add(numbers.sum);
    state.n = numbers.n;
    return state;
  }
  const best = measure.op === "min" ? numbers.min : numbers.max;
  if (best !== null) {
    state.best = best;
    state.bestKey = best;
    state.n = 1;
  }
  return state;
}

/** Reads every matching live row once into its groups (an array column: the group of each element). */
async function walkedGroups(store: RecordStore, entity: string, spec: AggregateSpec, maxGroups: number): Promise<Group[]> {
  const measures = spec.measures.map(accumulatorOf);
  const add = (group: Group, row: Row) => {
    group.count++;
    for (let i = 0; i < measures.length; i++) measures[i]!(group.states[i]!, row);
  };
  const tree = new GroupTree(spec.groups.length, (values, made) => {
    if (made === maxGroups) throw tooManyGroups(spec, maxGroups);
    return { values, count: 0, states: measures.map(newState) };
  });
  const readers = spec.groups.map(readerOf);
  const arrayAt = spec.groups.findIndex((column) => column.isArray);
  // The elements of the current record already counted: one set, emptied for each record.
  const seen = new Set<unknown>();
  const { values } = tree;
  await store.forEachLive(entity, spec.filter, (row) => {
    for (let i = 0; i < readers.length; i++) if (i !== arrayAt) values[i] = readers[i]!(row);
    if (arrayAt === -1) return add(tree.current(), row);
    // Each distinct element is a group the record belongs to; an array with none is the null group.
    const { name, kind } = spec.groups[arrayAt]!;
    const elements = row.data[name];
    let isInSome = false;
    if (Array.isArray(elements)) {
      seen.clear();
      for (let i = 0; i < elements.length; i++) {
        const element = elements[i];
        if (!isOfKind(kind, element) || seen.has(element)) continue;
        seen.add(element);
        values[arrayAt] = element as GroupValue;
        add(tree.current(), row);
        isInSome = true;
      }
    }
    if (!isInSome) {
      values[arrayAt] = null;
      add(tree.current(), row);
    }
  });
  if (spec.groups.length === 0) tree.current(); // one total row, even of no record
  return tree.groups;
}

/**
 * Groups in a tree of maps, one level per group column, keyed by the column's value. The caller
 * fills `values` in for each row; they are copied only when a group is first seen, so a row
 * allocates nothing.
 */
class GroupTree {
  readonly groups: Group[] = [];
  readonly values: GroupValue[];
  private readonly root = new Map<GroupValue, unknown>();

  /** `newGroup` is told how many groups there are before the one it makes. */
  constructor(
    columns: number,
    private readonly newGroup: (values: GroupValue[], made: number) => Group,
  ) {
    this.values = new Array<GroupValue>(columns).fill(null);
  }

  /** The group of the current values, made on first sight. */
  current(): Group {
    const { values } = this;
    const last = values.length - 1;
    let node = this.root;
    for (let i = 0; i < last; i++) {
      let next = node.get(values[i]!) as Map<GroupValue, unknown> | undefined;
      if (!next) node.set(values[i]!, (next = new Map()));
      node = next;
    }
    // With no column at all, every row is in the one group under null.
    const value = last < 0 ? null : values[last]!;
    let group = node.get(value) as Group | undefined;
    if (!group) {
      group = this.newGroup(values.slice(), this.groups.length);
      node.set(value, group);
      this.groups.push(group);
    }
    return group;
  }
}

function tooManyGroups(spec: AggregateSpec, maxGroups: number): ApiError {
  const parameter = spec.groups.some((column) => column.bucket === null) ? "groupBy" : "dateBucket";
  return new ApiError(
    400,
    "invalid_parameter",
    `The aggregate would make more than ${maxGroups} groups, the most this server gathers (${settingName("maxGroups")}); narrow "query", group by fewer fields or by a longer dateBucket unit, ` +
      `or page through one field's values with GET …/distinct/<field>.`,
    { parameter, maxGroups },
  );
}

function tooManyDistinctValues(measure: Measure): ApiError {
  return new ApiError(
    400,
    "invalid_parameter",
    `Counting the distinct values of ${measure.field} in each group would hold more than ${MAX_DISTINCT_VALUES_HELD} values; narrow "query", or group by fewer values (grouping by an array field puts each record's elements in each of its groups).`,
    { parameter: "countDistinct", field: measure.field, maxDistinctValues: MAX_DISTINCT_VALUES_HELD },
  );
}

/** How a scalar group column reads its value from a row. */
function readerOf(column: GroupColumn): (row: Row) => GroupValue {
  const { name, kind, bucket } = column;
  if (bucket !== null) return (row) => bucketOf(bucket, row.data[name]);
  return (row) => {
    const value = row.data[name];
    return isOfKind(kind, value) ? (value as GroupValue) : null;
  };
}

/** Whether a stored value is one of a field kind's values (not null, nor left by an older declaration). */
function isOfKind(kind: ValueKind, value: unknown): boolean {
  switch (kind) {
    case "string":
    case "date":
      return typeof value === "string";
    case "number":
      return typeof value === "number";
    case "boolean":
      return typeof value === "boolean";
    case "json":
      return false;
  }
}

function newState(): MeasureState {
  return { total: null, n: 0, best: null, bestKey: null, seen: null };
}

type Accumulator = (state: MeasureState, row: Row) => void;

function accumulatorOf(measure: Measure): Accumulator {
  const { field, kind } = measure;
  switch (measure.op) {
    case "sum":
    case "avg":
      return (state, row) => {
        const value = row.data[field];
        if (typeof value !== "number") return;
        // Exact, so that the answer does not hang on the order the store reads rows in.
        (state.total ??= new ExactSum()).add(value);
        state.n++;
      };
    case "min":
    case "max": {
      const direction = measure.op === "min" ? 1 : -1;
      return (state, row) => {
        const value = row.data[field];
        const key = toSortKey(kind, value);
        if (key === null) return;
        if (state.n === 0 || direction * compareSortKeys(key, state.bestKey) < 0) {
          state.best = value;
          state.bestKey = key;
          state.n = 1;
        }
      };
    }
    case "count_distinct": {
      // One accumulator serves every group of an aggregate: `held` counts the values of them all.
      let held = 0;
      // Values are told apart by their sort keys: dates by instant, whatever their text.
      const add = (seen: Set<SortKey>, value: unknown) => {
        const key = toSortKey(kind, value);
        if (key === null || seen.has(key)) return;
        if (++held > MAX_DISTINCT_VALUES_HELD) throw tooManyDistinctValues(measure);
        seen.add(key);
      };
      return (state, row) => {
        const value = row.data[field];
        const seen = (state.seen ??= new Set());
        if (!measure.isArray) add(seen, value);
        else if (Array.isArray(value)) for (const element of value) add(seen, element);
      };
    }
  }
}

/** Empty measures: a sum of no numbers is 0; an average, minimum or maximum of none is null. */
function resultOf(measure: Measure, state: MeasureState, group: Record<string, unknown>): unknown {
  switch (measure.op) {
    case "sum":
      return finite(measure, state.total?.value() ?? 0, group);
    case "avg":
      return state.n === 0 ? null : finite(measure, state.total!.mean(state.n), group);
    case "min":
    case "max":
      return state.n === 0 ? null : state.best;
    case "count_distinct":
      return state.seen?.size ?? 0;
  }
}

function rowOf(spec: AggregateSpec, group: Group): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  spec.groups.forEach((column, i) => {
    const value = group.values[i]!;
    row[column.name] = column.bucket !== null && value !== null ? bucketLabel(column.bucket, value as number) : value;
  });
  const columns = { ...row };
  if (spec.count) row.count = group.count;
  spec.measures.forEach((measure, i) => (row[measure.name] = resultOf(measure, group.states[i]!, columns)));
  return row;
}

/**
 * A sum or mean past ±1.8e308 has no JSON number: refused, the same on every store and in any
 * order (a running sum that overflowed on the way, and came back, is exact: see exact-sum.ts).
 */
function finite(measure: Measure, value: number, group: Record<string, unknown>): number {
  if (Number.isFinite(value)) return value;
  const where = Object.keys(group).length === 0 ? "" : ` in the group ${JSON.stringify(group)}`;
  throw new ApiError(
    400,
    "invalid_parameter",
    `The ${measure.op} of ${measure.field}${where} is ${value > 0 ? "over" : "under"} ${value > 0 ? "" : "-"}1.8e308, past what a JSON number holds; narrow "query", or group by a field that splits it.`,
    { parameter: measure.op, field: measure.field, group },
  );
}

/** `having`'s conditions, ANDed, over a row's columns: the comparison rules of filters (docs/query-language.md). */
function compileHaving(tests: readonly HavingTest[]): (row: Record<string, unknown>) => boolean {
  const checks = tests.map((test): ((row: Record<string, unknown>) => boolean) => {
    const { column, kind, op } = test;
    const keyOf = (value: unknown) => toSortKey(kind, value);
    if (op === "$in" || op === "$nin") {
      const listed = new Set((test.value as unknown[]).map(keyOf));
      return op === "$in" ? (row) => listed.has(keyOf(row[column])) : (row) => !listed.has(keyOf(row[column]));
    }
    const operand = keyOf(test.value);
    if (op === "$eq") return (row) => keyOf(row[column]) === operand;
    if (op === "$ne") return (row) => keyOf(row[column]) !== operand;
    // A range never matches a row without a value, as a filter never matches a record lacking the field.
    const accept = RANGE_TESTS[op]!;
    return (row) => {
      const key = keyOf(row[column]);
      return key !== null && accept(compareSortKeys(key, operand));
    };
  });
  return (row) => checks.every((check) => check(row));
}

const RANGE_TESTS: Partial<Record<string, (order: number) => boolean>> = {
  $gt: (order) => order > 0,
  $gte: (order) => order >= 0,
  $lt: (order) => order < 0,
  $lte: (order) => order <= 0,
};

/**
 * By the sort column when one is given, then by the group columns in row order, ascending: the
 * default order, and the tie-break that makes every order total. A missing value sorts after
 * every value ascending and before every value descending (docs/aggregates.md).
 */
function sortRows(spec: AggregateSpec, rows: Record<string, unknown>[]): Record<string, unknown>[] {
  const columns: Array<[name: string, kind: ValueKind, direction: number]> = spec.groups.map((column) => [column.name, spec.columns.get(column.name)!, 1]);
  if (spec.sort) columns.unshift([spec.sort.column, spec.columns.get(spec.sort.column)!, spec.sort.descending ? -1 : 1]);
  if (columns.length === 0 || rows.length < 2) return rows;
  // Sort keys once per row, not once per comparison: dates would be parsed again and again.
  const entries = rows.map((row) => ({ row, keys: columns.map(([name, kind]) => toSortKey(kind, row[name])) }));
  entries.sort((a, b) => {
    for (let i = 0; i < columns.length; i++) {
      const order = compareSortKeys(a.keys[i]!, b.keys[i]!);
      if (order !== 0) return order * columns[i]![2];
    }
    return 0;
  });
  return entries.map((entry) => entry.row);
}
