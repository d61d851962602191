// The "q" of a migration step (docs/schema-changes.md): the query language's filter operators,
// matched against stored values as they are, not as the declaration says they should be. A
// migration exists to mend values the declaration no longer allows, so it must be able to name
// them: {"state": "b"} after "b" left the enum, {"priority": 3} in a field now declared text.

import { isPlainObject } from "../schema/load.ts";
import { MigrationError } from "./migration-error.ts";

export type Match = (data: Readonly<Record<string, unknown>>) => boolean;

const OPERATORS = ["$eq", "$ne", "$in", "$nin", "$exists", "$gt", "$gte", "$lt", "$lte"] as const;

export function compileMatch(q: unknown, at: string): Match {
  if (!isPlainObject(q)) throw new MigrationError(`${at} must be a filter object such as {"state": "b"}.`);
  const parts: Match[] = [];
  for (const [key, operand] of Object.entries(q)) {
    if (key === "$and" || key === "$or") {
      if (!Array.isArray(operand) || operand.length === 0) throw new MigrationError(`${at}: ${key} takes a non-empty list of filters.`);
      const each = operand.map((part, index) => compileMatch(part, `${at}, ${key}[${index}]`));
      parts.push(key === "$and" ? (data) => each.every((match) => match(data)) : (data) => each.some((match) => match(data)));
      continue;
    }
    if (key.startsWith("$")) throw new MigrationError(`${at}: unknown operator ${key} at the top; use $and, $or or field names.`);
    const path = key.split(".");
    const test = fieldTest(operand, `${at}, field "${key}"`);
    parts.push((data) => test(valueAt(data, path)));
  }
  return (data) => parts.every((match) => match(data));
}

function valueAt(data: Readonly<Record<string, unknown>>, path: readonly string[]): unknown {
  let value: unknown = data;
  for (const part of path) {
    if (!isPlainObject(value)) return undefined;
    value = value[part];
  }
  return value;
}

/** What a field's value must be: an operand, a list (any of), or operators. */
function fieldTest(operand: unknown, at: string): (value: unknown) => boolean {
  if (Array.isArray(operand)) return (value) => operand.some((item) => equals(value, item));
  if (!isPlainObject(operand) || !Object.keys(operand).some((key) => key.startsWith("$"))) return (value) => equals(value, operand);
  const tests = Object.entries(operand).map(([operator, argument]): ((value: unknown) => boolean) => {
    switch (operator) {
      case "$eq":
        return (value) => equals(value, argument);
      case "$ne":
        return (value) => !equals(value, argument);
      case "$in":
      case "$nin": {
        if (!Array.isArray(argument)) throw new MigrationError(`${at}: ${operator} takes a list of values.`);
        return operator === "$in" ? (value) => argument.some((item) => equals(value, item)) : (value) => !argument.some((item) => equals(value, item));
      }
      case "$exists":
        if (typeof argument !== "boolean") throw new MigrationError(`${at}: $exists takes true or false.`);
        return (value) => (value !== undefined && value !== null) === argument;
      case "$gt":
      case "$gte":
      case "$lt":
      case "$lte": {
        if (typeof argument !== "number" && typeof argument !== "string") throw new MigrationError(`${at}: ${operator} takes a number or a text.`);
        return (value) => {
          if (typeof value !== typeof argument) return false;
          const a = value as number | string;
          return operator === "$gt" ? a > argument : operator === "$gte" ? a >= argument : operator === "$lt" ? a < argument : a <= argument;
        };
      }
      default:
        throw new MigrationError(`${at}: unknown operator ${operator}; a migration's q takes ${OPERATORS.join(", ")}, $and and $or.`);
    }
  });
  return (value) => tests.every((test) => test(value));
}

/** null means "no value" (missing or null); other values compare as JSON, and an array matches when an element does. */
function equals(value: unknown, operand: unknown): boolean {
  if (operand === null || operand === undefined) return value === undefined || value === null;
  if (Array.isArray(value) && !Array.isArray(operand)) return value.some((item) => equals(item, operand));
  if (typeof operand !== "object") return value === operand;
  return JSON.stringify(value) === JSON.stringify(operand);
}
