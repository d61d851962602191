// Compiles a typed filter tree into a predicate over stored rows: done once per tree (trees of
// repeated `q` texts are shared, see filter.ts), so that testing a row is a few closure calls. The
// tree was checked against the schema when parsed (filter.ts); this file only decides how values
// compare (CONTRACT §6).

import { compareCodePoints, parseDateValue } from "../schema/fields.ts";
import type { Row } from "../store/store.ts";
import { compileFoldedIncludes, foldCase } from "./case-fold.ts";
import type { CompareNode, FilterNode, ValueKind } from "./filter-tree.ts";

export type Predicate = (row: Row) => boolean;

const compiled = new WeakMap<FilterNode, Predicate>();

export function compileFilter(node: FilterNode): Predicate {
  let predicate = compiled.get(node);
  if (!predicate) compiled.set(node, (predicate = compileNode(node)));
  return predicate;
}

function compileNode(node: FilterNode): Predicate {
  switch (node.type) {
    case "and": {
      const parts = node.nodes.map(compileFilter);
      return (row) => parts.every((part) => part(row));
    }
    case "or": {
      const parts = node.nodes.map(compileFilter);
      return (row) => parts.some((part) => part(row));
    }
    case "search": {
      const needle = foldCase(node.text);
      const fields = node.fields;
      return (row) => searchTextOf(row, fields).includes(needle);
    }
    case "compare":
      return compileCompare(node);
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

function valueAt(row: Row, path: readonly string[]): unknown {
  let value: unknown = row.data[path[0]!];
  for (let i = 1; i < path.length && value !== undefined; i++) {
    // Own members only: "meta.constructor" or "meta.__proto__" must not reach Object.prototype.
    const isObject = typeof value === "object" && value !== null && !Array.isArray(value);
    value = isObject && Object.hasOwn(value as object, path[i]!) ? (value as Record<string, unknown>)[path[i]!] : undefined;
  }
  return value ?? undefined;
}

function compileCompare(node: CompareNode): Predicate {
  const { path, op } = node;
  if (op === "$exists") {
    const wanted = node.value === true;
    return (row) => (valueAt(row, path) !== undefined) === wanted;
  }
  // `null` as an operand, or in the list of $in/$nin, means "no value": {"f": null} matches records without f.
  if (node.value === null && (op === "$eq" || op === "$ne")) {
    const wanted = op === "$ne";
    return (row) => (valueAt(row, path) !== undefined) === wanted;
  }
  if ((op === "$in" || op === "$nin") && (node.value as unknown[]).includes(null)) {
    const listed = compileCompare({ ...node, op: "$in", value: (node.value as unknown[]).filter((item) => item !== null) });
    const matches = (row: Row) => valueAt(row, path) === undefined || listed(row);
    return op === "$in" ? matches : (row) => !matches(row);
  }
  const test = compileValueTest(node);
  // Negations match records lacking the field, and arrays where no element matches.
  const isNegation = op === "$ne" || op === "$nin";
  const whole = isStructured(node.value) && (op === "$eq" || op === "$ne");
  return (row) => {
    const value = valueAt(row, path);
    if (value === undefined) return isNegation;
    if (Array.isArray(value) && !whole) return isNegation ? value.every(test) : value.some(test);
    return test(value);
  };
}

/** A test of one (non-array, present) value; negations are tested as "does not equal". */
function compileValueTest(node: CompareNode): (value: unknown) => boolean {
  const { kind, op } = node;
  const toComparable = comparableOf(kind);
  switch (op) {
    case "$eq":
    case "$ne": {
      if (isStructured(node.value)) {
        const wanted = JSON.stringify(node.value);
        const equal = (value: unknown) => JSON.stringify(value) === wanted;
        return op === "$eq" ? equal : (value) => !equal(value);
      }
      const wanted = toComparable(node.value);
      return op === "$eq" ? (value) => toComparable(value) === wanted : (value) => toComparable(value) !== wanted;
    }
    case "$in":
    case "$nin": {
      const wanted = new Set((node.value as unknown[]).map(toComparable));
      return op === "$in" ? (value) => wanted.has(toComparable(value)) : (value) => !wanted.has(toComparable(value));
    }
    case "$contains": {
      const includes = compileFoldedIncludes(node.value as string);
      return (value) => typeof value === "string" && includes(value);
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

/** Arrays and objects compare whole, by their JSON text. */
function isStructured(value: unknown): boolean {
  return typeof value === "object" && value !== null;
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
