// Compiles a typed filter tree into a predicate over stored rows: done once per tree (trees of
// repeated `q` texts are shared, see filter.ts), so that testing a row is a few closure calls. The
// tree was checked against the schema when parsed (filter.ts); this file only decides how values
// compare (docs/query-language.md).

import { compareCodePoints, parseDateValue, type ValueKind } from "../schema/fields.ts";
import type { Row } from "../rows/row.ts";
import { StoredRow } from "../rows/stored-row.ts";
import { compileFoldedIncludes, foldCase } from "./case-fold.ts";
import type { CompareNode, ElemMatchNode, FilterNode, RegexOperand } from "./filter-tree.ts";
import { linearRegexOf } from "./regex-guard.ts";

export type Predicate = (row: Row) => boolean;

/**
 * Where a node's paths start: at a record's data, or, inside $elemMatch, at one element of an
 * array, which is tested as the data of a row of its own (elementRow).
 */
type Scope = "record" | "element";

const compiled = new WeakMap<FilterNode, Predicate>();

export function compileFilter(node: FilterNode): Predicate {
  let predicate = compiled.get(node);
  if (!predicate) compiled.set(node, (predicate = compileNode(node, "record")));
  return predicate;
}

function compileNode(node: FilterNode, scope: Scope): Predicate {
  const compileChild = scope === "record" ? compileFilter : (child: FilterNode) => compileNode(child, scope);
  switch (node.type) {
    case "and": {
      const parts = node.nodes.map(compileChild);
      return (row) => parts.every((part) => part(row));
    }
    case "or": {
      const parts = node.nodes.map(compileChild);
      return (row) => parts.some((part) => part(row));
    }
    case "not": {
      const inner = compileChild(node.node);
      return (row) => !inner(row);
    }
    case "elemMatch":
      return compileElemMatch(node, scope);
    case "search": {
      const needle = foldCase(node.text);
      const fields = node.fields;
      return (row) => searchTextOf(row, fields).includes(needle);
    }
    case "compare":
      return compileCompare(node, scope);
  }
}

/**
 * The case-folded text of a row's string fields, joined by a separator no search text can span
 * (U+0000 is not typed into search boxes), cached on the row version.
 */
function searchTextOf(row: Row, fields: readonly string[]): string {
  const memo = (row.memo ??= {});
  let text = memo.search;
  if (text === undefined) {
    const parts: string[] = [];
    for (const field of fields) {
      const value = row.data[field];
      if (typeof value === "string") parts.push(foldCase(value));
    }
    text = memo.search = parts.join("\u0000");
  }
  return text;
}

/** Whether some value a path reaches in a row passes `test`; missing values and nulls reach nothing. */
type Reach = (row: Row, test: (value: unknown) => boolean) => boolean;

const IS_PRESENT = () => true;
const ARRAY_INDEX_RE = /^(?:0|[1-9]\d*)$/;

/**
 * A dotted path steps into objects by their own members ("meta.constructor" must not reach
 * Object.prototype) and over arrays (MongoDB's rule): a numeric step picks that element, any
 * other step is taken in each element that is an object. Walked step by step, never recursively:
 * the work is bounded by the path's length and the values it passes, however deep the data.
 */
function compileReach(path: readonly string[], scope: Scope): Reach {
  if (scope === "element") return compileElementReach(path);
  // Record data holds declared fields only (filter.ts resolved the first step), so it is read directly.
  const first = path[0]!;
  if (path.length === 1) {
    return (row, test) => {
      const value = row.data[first];
      return value !== undefined && value !== null && test(value);
    };
  }
  return (row, test) => reachFrom(row.data[first], path, 1, test);
}

/**
 * An element's members are undeclared, so every step is taken by own members; and they are
 * looked up only in an element that is an object: an array inside the array is not entered.
 */
function compileElementReach(path: readonly string[]): Reach {
  if (path.length === 0) return (row, test) => reachFrom(row.data, path, 0, test);
  return (row, test) => !Array.isArray(row.data) && reachFrom(row.data, path, 0, test);
}

function reachFrom(start: unknown, path: readonly string[], from: number, test: (value: unknown) => boolean): boolean {
  let value = start;
  let i = from;
  // Objects only, the usual case: follow one value.
  for (; i < path.length && !Array.isArray(value); i++) value = memberOf(value, path[i]!);
  if (i === path.length) return value !== undefined && value !== null && test(value);
  // An array on the way: follow every value reached, one array level per step.
  let values: unknown[] = [value];
  for (; i < path.length && values.length > 0; i++) {
    const step = path[i]!;
    const isIndex = ARRAY_INDEX_RE.test(step);
    const next: unknown[] = [];
    for (const current of values) {
      if (!Array.isArray(current)) next.push(memberOf(current, step));
      else if (isIndex) next.push(current[Number(step)]);
      else for (const element of current) next.push(memberOf(element, step));
    }
    values = next.filter((reached) => reached !== undefined && reached !== null);
  }
  return values.some(test);
}

function memberOf(value: unknown, name: string): unknown {
  const isObject = typeof value === "object" && value !== null && !Array.isArray(value);
  return isObject && Object.hasOwn(value as object, name) ? (value as Record<string, unknown>)[name] : undefined;
}

/** Arrays (wherever the path reaches one) holding an element that the sub-tree matches on its own. */
function compileElemMatch(node: ElemMatchNode, scope: Scope): Predicate {
  const reach = compileReach(node.path, scope);
  const matchesElement = compileNode(node.node, "element");
  const test = (value: unknown) => Array.isArray(value) && value.some((element) => matchesElement(elementRow(element)));
  return (row) => reach(row, test);
}

/** The sub-tree of $elemMatch reads only `data`, which is the element. */
function elementRow(element: unknown): Row {
  return new StoredRow("", 0, false, element as Row["data"]);
}

function compileCompare(node: CompareNode, scope: Scope): Predicate {
  const { path, op } = node;
  const reach = compileReach(path, scope);
  // `null` as an operand, or in the list of $in/$nin, means "no value": {"f": null} matches
  // records the path reaches no value in, exactly as {"f": {"$exists": false}}.
  if (op === "$exists" || (node.value === null && (op === "$eq" || op === "$ne"))) {
    const wanted = op === "$exists" ? node.value === true : op === "$ne";
    return (row) => reach(row, IS_PRESENT) === wanted;
  }
  if ((op === "$in" || op === "$nin") && (node.value as unknown[]).includes(null)) {
    const listed = compileCompare({ ...node, op: "$in", value: (node.value as unknown[]).filter((item) => item !== null) }, scope);
    const matches = (row: Row) => !reach(row, IS_PRESENT) || listed(row);
    return op === "$in" ? matches : (row) => !matches(row);
  }
  if (op === "$size") {
    const size = node.value as number;
    return (row) => reach(row, (value) => Array.isArray(value) && value.length === size);
  }
  if (op === "$all") {
    // MongoDB's definition: {"$all": [a, b]} is {"$and": [{field: a}, {field: b}]}.
    const tests = (node.value as unknown[]).map((item) => compileValueTest({ ...node, op: "$eq", value: item }));
    return (row) => tests.every((test) => reach(row, test));
  }
  // A negation is the opposite of its operator: it matches records lacking the field, and arrays
  // where no element matches.
  const isNegation = op === "$ne" || op === "$nin";
  const test = compileValueTest({ ...node, op: op === "$ne" ? "$eq" : op === "$nin" ? "$in" : op });
  return isNegation ? (row) => !reach(row, test) : (row) => reach(row, test);
}

/**
 * A test of one present value the path reached. An array there (of an array field, or inside
 * JSON) matches when any element does; a structured operand also matches the array whole.
 */
function compileValueTest(node: CompareNode): (value: unknown) => boolean {
  const test = compileScalarTest(node);
  if (node.isArray || node.kind === "json") {
    return (value) => (Array.isArray(value) ? test(value) || value.some(test) : test(value));
  }
  return test;
}

/** A test of one value by a positive operator ($eq, $in, $contains, a range). */
function compileScalarTest(node: CompareNode): (value: unknown) => boolean {
  const { kind, op } = node;
  const toComparable = comparableOf(kind);
  switch (op) {
    case "$eq": {
      if (isStructured(node.value)) return (value) => isStructurallyEqual(value, node.value);
      const wanted = toComparable(node.value);
      return (value) => toComparable(value) === wanted;
    }
    case "$in": {
      const items = node.value as unknown[];
      const wanted = new Set(items.filter((item) => !isStructured(item)).map(toComparable));
      // Objects and arrays are listed only for JSON values (filter.ts), and compare as $eq does.
      const structured = items.filter(isStructured);
      if (structured.length === 0) return (value) => wanted.has(toComparable(value));
      return (value) => wanted.has(toComparable(value)) || structured.some((item) => isStructurallyEqual(value, item));
    }
    case "$contains":
      return compileFoldedIncludes(node.value as string);
    case "$regex": {
      // Compiled once per tree, which is shared by every request with the same `q` text; the
      // engine keeps no state between rows and takes time linear in each value.
      const { pattern, options } = node.value as RegexOperand;
      const regex = linearRegexOf(pattern, options);
      return (value) => typeof value === "string" && regex.test(value);
    }
    default: {
      const bound = toComparable(node.value);
      const accept = ORDER_TESTS[op]!;
      return (value) => {
        const comparable = toComparable(value);
        if (comparable === undefined || typeof comparable !== typeof bound) return false;
        return accept(orderOf(comparable, bound!));
      };
    }
  }
}

/** Arrays and objects compare whole, structurally. */
function isStructured(value: unknown): boolean {
  return typeof value === "object" && value !== null;
}

/**
 * JSON values equal as values: objects whatever their members' order, arrays in order. Walked
 * with a stack of pairs, never recursively, so deep stored data cannot overflow the stack.
 */
export function isStructurallyEqual(a: unknown, b: unknown): boolean {
  const pending: unknown[] = [a, b];
  while (pending.length > 0) {
    const y = pending.pop();
    const x = pending.pop();
    if (x === y) continue;
    if (typeof x !== "object" || typeof y !== "object" || x === null || y === null || Array.isArray(x) !== Array.isArray(y)) return false;
    if (Array.isArray(x)) {
      const other = y as unknown[];
      if (x.length !== other.length) return false;
      for (let i = 0; i < x.length; i++) pending.push(x[i], other[i]);
      continue;
    }
    const names = Object.keys(x);
    if (names.length !== Object.keys(y).length) return false;
    for (const name of names) {
      if (!Object.hasOwn(y, name)) return false;
      pending.push((x as Record<string, unknown>)[name], (y as Record<string, unknown>)[name]);
    }
  }
  return true;
}

const ORDER_TESTS: Partial<Record<string, (order: number) => boolean>> = {
  $gt: (order) => order > 0,
  $gte: (order) => order >= 0,
  $lt: (order) => order < 0,
  $lte: (order) => order <= 0,
};

type Comparable = string | number | boolean | undefined;

/**
 * Maps a value to what compares for its kind: dates to milliseconds (so either written form
 * matches), JSON scalars to themselves; values of another type to undefined (never equal).
 */
function comparableOf(kind: ValueKind): (value: unknown) => Comparable {
  switch (kind) {
    case "date":
      return (value) => {
        const ms = parseDateValue(value);
        return Number.isNaN(ms) ? undefined : ms;
      };
    case "string":
      return (value) => (typeof value === "string" ? value : undefined);
    case "number":
      return (value) => (typeof value === "number" ? value : undefined);
    case "boolean":
      return (value) => (typeof value === "boolean" ? value : undefined);
    case "json":
      return (value) =>
        typeof value === "string" || typeof value === "number" || typeof value === "boolean" ? value : undefined;
  }
}

function orderOf(a: string | number | boolean, b: string | number | boolean): number {
  if (typeof a === "string") return compareCodePoints(a, b as string);
  const x = Number(a);
  const y = Number(b);
  return x === y ? 0 : x < y ? -1 : 1;
}
