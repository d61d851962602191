// One operator and its operand, typed by the target it compares (docs/query-language.md): a compare node
// of the filter tree, or a refusal that says how to mend the operand. The structure around it
// (fields, combinators, $not, $elemMatch) is filter.ts's.

import { invalidFilter } from "../errors.ts";
import { isPlainObject } from "../schema/load.ts";
import { isFinerThanMillisecond, parseDateValue, type FieldDef, type ValueKind } from "../schema/fields.ts";
import type { CompareNode, CompareOp, RegexOperand } from "./filter-tree.ts";
import { findRegexProblem } from "./regex-guard.ts";

const OPERATORS: readonly CompareOp[] = ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$contains", "$exists", "$regex", "$all", "$size"];
/** Operators as they may be written: $options rides along with $regex, $not and $elemMatch wrap others. */
const WRITTEN_OPERATORS = [...OPERATORS, "$options", "$not", "$elemMatch"];
const REGEX_OPTIONS_RE = /^[ims]*$/;

/** What a condition compares: the field's kind, and whether it holds an array. */
export interface Target {
  readonly name: string;
  /** From the record, or from the element inside $elemMatch (filter-tree.ts, CompareNode.path). */
  readonly path: readonly string[];
  readonly kind: ValueKind;
  readonly isArray: boolean;
  /** The declaration of the compared values, when there is one (not inside JSON). */
  readonly field: FieldDef | undefined;
  /** The declaration the name resolves to (an array's own, not its items'); undefined inside JSON. */
  readonly declared: FieldDef | undefined;
}

/** $regex with its sibling $options, kept sorted and once each so that equal filters make equal trees. */
export function regexNode(target: Target, pattern: unknown, options: unknown = ""): CompareNode {
  const details = { field: target.name, operator: "$regex" };
  if (target.kind !== "string" && target.kind !== "json") {
    throw invalidFilter(`Operator $regex works on text fields only, and "${target.name}" is not one; use $eq, $in or a range.`, details);
  }
  if (typeof pattern !== "string") throw invalidFilter(`Operator $regex on "${target.name}" takes a pattern as a string, such as "^ab" (got ${JSON.stringify(pattern)}).`, details);
  if (typeof options !== "string" || !REGEX_OPTIONS_RE.test(options)) {
    throw invalidFilter(`$options on "${target.name}" takes some of the letters i, m and s, such as "i" (got ${JSON.stringify(options)}).`, { field: target.name, operator: "$options" });
  }
  const value: RegexOperand = { pattern, options: [..."ims"].filter((letter) => options.includes(letter)).join("") };
  const problem = findRegexProblem(value.pattern, value.options);
  if (problem) throw invalidFilter(`The $regex pattern on "${target.name}" ${problem}`, details);
  return { type: "compare", field: target.name, path: target.path, kind: target.kind, isArray: target.isArray, op: "$regex", value };
}

export function compareNode(target: Target, op: string, operand: unknown, isPlainArray = false): CompareNode {
  if (!(OPERATORS as readonly string[]).includes(op)) {
    throw invalidFilter(`Unknown operator ${op} on "${target.name}". Operators: ${WRITTEN_OPERATORS.join(", ")}.`, { field: target.name, operator: op });
  }
  const node = { type: "compare", field: target.name, path: target.path, kind: target.kind, isArray: target.isArray, op: op as CompareOp, value: operand } as const;
  checkOperand(target, node.op, operand, isPlainArray);
  return node.kind === "date" ? alignDateOperand(node) : node;
}

/**
 * Stored timestamps are whole milliseconds (a write keeps no finer digits), so an operand inside a
 * millisecond (`…00.0019Z`) is rewritten into the same test on whole milliseconds, here in the
 * tree, so that every store answers it alike: `$lt`/`$lte` become `$lte` its millisecond,
 * `$gt`/`$gte` become `$gt` it, and it equals no stored value. Exact, where cutting the digits off
 * made `$lt "…00.0019Z"` miss `…00.001Z`.
 */
function alignDateOperand(node: CompareNode): CompareNode {
  switch (node.op) {
    case "$lt":
    case "$lte":
    case "$gt":
    case "$gte": {
      if (!isFinerThanMillisecond(node.value)) return node;
      const op = node.op === "$lt" || node.op === "$lte" ? "$lte" : "$gt";
      return { ...node, op, value: new Date(parseDateValue(node.value)).toISOString() };
    }
    case "$eq":
    case "$ne":
      return isFinerThanMillisecond(node.value) ? { ...node, op: node.op === "$eq" ? "$in" : "$nin", value: [] } : node;
    case "$in":
    case "$nin":
      return { ...node, value: (node.value as unknown[]).filter((item) => !isFinerThanMillisecond(item)) };
    case "$all":
      return (node.value as unknown[]).some(isFinerThanMillisecond) ? { ...node, op: "$in", value: [] } : node;
    default:
      return node;
  }
}

function checkOperand(target: Target, op: CompareOp, operand: unknown, isPlainArray: boolean): void {
  const written = isPlainArray ? `A plain array on "${target.name}" means any of its values, and` : `Operator ${op} on "${target.name}"`;
  const refuse = (expected: string) => invalidFilter(`${written} takes ${expected} (got ${JSON.stringify(operand)}).`, { field: target.name, operator: op });
  switch (op) {
    case "$exists":
      if (typeof operand !== "boolean") throw refuse("true or false");
      return;
    case "$in":
    case "$nin":
      if (!Array.isArray(operand)) throw refuse(`an array of ${describeKind(target)}`);
      // null among the values means "has no value", as {"field": null} does, on every field kind.
      for (const item of operand) if (item !== null && !isJsonStructure(target, item)) checkValue(target, op, item, refuse);
      return;
    case "$size":
      refuseUnlessArray(target, op);
      if (!Number.isInteger(operand) || (operand as number) < 0) throw refuse("a whole number of elements, 0 or more");
      return;
    case "$all":
      refuseUnlessArray(target, op);
      if (!Array.isArray(operand) || operand.length === 0) throw refuse(`a non-empty array of values that elements must all equal, each ${describeKind(target)}`);
      for (const item of operand) {
        if (item === null) throw refuse(`values that are not null (no element holds "no value"; ask for that with {"$exists": false})`);
        if (!isJsonStructure(target, item)) checkValue(target, op, item, refuse);
      }
      return;
    case "$contains":
      if (target.kind !== "string" && target.kind !== "json") {
        throw invalidFilter(`Operator $contains works on text fields only, and "${target.name}" is not one; use $eq or a range.`, { field: target.name, operator: op });
      }
      if (typeof operand !== "string") throw refuse("a string");
      return;
    case "$eq":
    case "$ne":
      if (operand === null) return; // "has no value"
      if (Array.isArray(operand) && (target.isArray || target.kind === "json")) return; // the whole array
      if (isPlainObject(operand) && target.kind === "json") return;
      checkValue(target, op, operand, refuse);
      return;
    default:
      checkValue(target, op, operand, refuse);
      if (target.kind === "json" && typeof operand !== "number" && typeof operand !== "string") throw refuse("a number or a string");
  }
}

/** An object or array listed for JSON values: it compares as a JSON value, as under $eq. */
function isJsonStructure(target: Target, item: unknown): boolean {
  return target.kind === "json" && (isPlainObject(item) || Array.isArray(item));
}

/** $all, $size and $elemMatch ask about an array: a declared array field, or JSON that may hold one. */
export function refuseUnlessArray(target: Target, op: string): void {
  const declared = target.declared;
  if (target.isArray || !declared) return;
  const type = declared.format ?? declared.type;
  throw invalidFilter(
    `Operator ${op} works on array fields only, and "${target.name}" is ${/^[aeiou]/.test(type) ? "an" : "a"} ${type} field; use it on an array field, or compare the value with $eq or $in.`,
    { field: target.name, operator: op },
  );
}

function checkValue(target: Target, op: CompareOp, value: unknown, refuse: (expected: string) => Error): void {
  const ok = (() => {
    switch (target.kind) {
      case "string":
        return typeof value === "string";
      case "number":
        return typeof value === "number" && Number.isFinite(value);
      case "boolean":
        return typeof value === "boolean";
      case "date":
        return !Number.isNaN(parseDateValue(value));
      case "json":
        return value === null || ["string", "number", "boolean"].includes(typeof value);
    }
  })();
  if (!ok) throw refuse(describeKind(target));
  const allowed = target.field?.enum;
  // An enum is part of its field's type, so an operand outside it is "an operand of the wrong type"
  // (invalid_filter), under $ne and $nin too, where it would match every record: it is a typo or a
  // stale value far more often than a wish for everything.
  if (allowed && (op === "$eq" || op === "$ne" || op === "$in" || op === "$nin" || op === "$all") && !allowed.includes(value)) {
    throw invalidFilter(
      `"${target.name}" takes one of ${allowed.map((v) => JSON.stringify(v)).join(", ")}; ${JSON.stringify(value)} is outside the enum, so no record holds it: use one of those values.`,
      { field: target.name, operator: op, allowed },
    );
  }
}

function describeKind(target: Target): string {
  switch (target.kind) {
    case "string":
      return "a string";
    case "number":
      return "a number";
    case "boolean":
      return "true or false";
    case "date":
      return "a date (2026-01-01) or a timestamp (2026-01-01T12:00:00Z)";
    case "json":
      return "a JSON value";
  }
}
