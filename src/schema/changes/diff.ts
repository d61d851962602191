// What changed between the declarations a store last served and the schema it is started with
// (docs/schema-changes.md), each change with the test a stored record fails when the change breaks
// it, and the migration step that would settle such records. migrations/check.ts runs the tests
// on the records.

import type { EntityDef, FieldDef } from "../fields.ts";
import type { Schema } from "../load.ts";
import { checkFieldValue } from "../validate.ts";

export interface SchemaChange {
  readonly entity: string;
  /** What changed, as the banner says it: "Task: + owner (text, optional)", "Task.priority: integer → number". */
  readonly words: string;
  /**
   * Why a live record's data breaks this change, or null when it fits. Absent: the change holds
   * whatever the records are (a field made optional, an enum widened).
   */
  readonly problemOf?: (data: Readonly<Record<string, unknown>>) => Problem | null;
  /** What breaking records are said to do, given a problem of each of them: "hold a number where the declaration now says text". */
  readonly breakWords?: (problems: readonly Problem[]) => string;
  /** The migration step that would settle the breaking records, when one step can. */
  readonly step?: (problems: readonly Problem[]) => Record<string, unknown> | null;
  /** Said instead of a step (or beside it). */
  readonly advice?: string;
  /** Not a change the records can break, but one the operator hears of (an entity no longer declared). */
  readonly removedEntity?: true;
}

/** Why one record breaks a change. */
export type Problem =
  | { readonly kind: "lacks" }
  | { readonly kind: "holds" }
  | { readonly kind: "type"; readonly held: string }
  | { readonly kind: "enum"; readonly value: unknown }
  | { readonly kind: "bounds"; readonly words: string };

const LACKS: Problem = { kind: "lacks" };
const HOLDS: Problem = { kind: "holds" };

/** The changes from `stored` (null: the store kept no declarations) to `next`, entity by entity. */
export function diffSchemas(stored: Schema | null, next: Schema): SchemaChange[] {
  if (stored === null) return [...next.entities.values()].flatMap(declaredCheckOf);
  const changes: SchemaChange[] = [];
  for (const entity of next.entities.values()) {
    const before = stored.entities.get(entity.name);
    if (before) changes.push(...entityChanges(before, entity));
    else changes.push({ entity: entity.name, words: `${entity.name}: + entity (${entity.fields.size} ${entity.fields.size === 1 ? "field" : "fields"})` });
  }
  for (const entity of stored.entities.values()) {
    if (!next.entities.has(entity.name)) {
      changes.push({ entity: entity.name, words: `${entity.name}: − entity`, removedEntity: true });
    }
  }
  return changes;
}

/**
 * A store that kept no declarations (written by an older tabula): every declared field is checked
 * against the records as they are. These are not changes a banner names, so their words say what
 * was found wrong.
 */
function declaredCheckOf(entity: EntityDef): SchemaChange[] {
  return [...entity.fields.values()].map((field) => ({
    entity: entity.name,
    words: `${entity.name}.${field.name}: declared ${typeName(field)}${field.required ? ", required" : ""}`,
    problemOf: (data) => (data[field.name] === undefined ? (field.required ? LACKS : null) : valueProblem(field, data[field.name])),
    breakWords: (problems) => breakWordsOf(field, problems),
    step: (problems) => stepFor(entity.name, field, problems),
  }));
}

function entityChanges(before: EntityDef, after: EntityDef): SchemaChange[] {
  const changes: SchemaChange[] = [];
  const name = after.name;
  for (const field of after.fields.values()) {
    const old = before.fields.get(field.name);
    if (!old) {
      changes.push({
        entity: name,
        words: `${name}: + ${field.name} (${typeName(field)}, ${field.required ? "required" : "optional"})`,
        // A record may hold a value for a field declared anew: one declared before, dropped, and declared again.
        problemOf: (data) => (data[field.name] === undefined ? (field.required ? LACKS : null) : valueProblem(field, data[field.name])),
        breakWords: (problems) => breakWordsOf(field, problems),
        step: (problems) => stepFor(name, field, problems),
      });
      continue;
    }
    changes.push(...fieldChanges(name, old, field));
  }
  for (const old of before.fields.values()) {
    if (after.fields.has(old.name)) continue;
    changes.push({
      entity: name,
      words: `${name}: − ${old.name}`,
      problemOf: (data) => (data[old.name] === undefined ? null : HOLDS),
      breakWords: () => "hold a value for it",
      step: () => ({ unset: `${name}.${old.name}` }),
      advice: `or, to keep the values under another name, {"rename": "${name}.${old.name}", "to": "<new name>"} before declaring that name`,
    });
  }
  const key = (fields: readonly string[]) => JSON.stringify(fields);
  const hadUnique = new Set(before.unique.map(key));
  for (const fields of after.unique) {
    // Records sharing values are found by grouping them (migrations/check.ts), not by a test of each alone.
    if (!hadUnique.has(key(fields))) changes.push({ entity: name, words: `${name}: unique (${fields.join(", ")})` });
  }
  const hasUnique = new Set(after.unique.map(key));
  for (const fields of before.unique) if (!hasUnique.has(key(fields))) changes.push({ entity: name, words: `${name}: no longer unique (${fields.join(", ")})` });
  const access = (entity: EntityDef) => [...entity.publishableAccess].sort().join(", ") || "nothing";
  if (access(before) !== access(after)) changes.push({ entity: name, words: `${name}: publishable keys may ${access(before)} → ${access(after)}` });
  // A rule decides who reads and writes, not what records hold: shown, and nothing to check (docs/rules.md).
  for (const operation of ["create", "read", "update", "delete"]) {
    const was = ruleWords(before.rls?.[operation]);
    const is = ruleWords(after.rls?.[operation]);
    if (was !== is) changes.push({ entity: name, words: `${name}: rule "${operation}" ${was} → ${is}` });
  }
  for (const field of after.fields.values()) {
    const old = before.fields.get(field.name);
    if (old === undefined) continue;
    for (const operation of ["read", "write"]) {
      const was = ruleWords(old.rls?.[operation]);
      const is = ruleWords(field.rls?.[operation]);
      if (was !== is) changes.push({ entity: name, words: `${name}.${field.name}: rule "${operation}" ${was} → ${is}` });
    }
  }
  return changes;
}

/** A rule in a line: "open" where none is declared, else its JSON. */
function ruleWords(rule: unknown): string {
  return rule === undefined ? "open" : JSON.stringify(rule);
}

function fieldChanges(entity: string, old: FieldDef, field: FieldDef): SchemaChange[] {
  const changes: SchemaChange[] = [];
  const at = `${entity}.${field.name}`;
  const checkValues = (words: string): SchemaChange => ({
    entity,
    words,
    problemOf: (data) => (data[field.name] === undefined ? null : valueProblem(field, data[field.name])),
    breakWords: (problems) => breakWordsOf(field, problems),
    step: (problems) => stepFor(entity, field, problems),
  });
  if (typeName(old) !== typeName(field)) {
    changes.push(checkValues(`${at}: ${typeName(old)} → ${typeName(field)}`));
  } else if (itemsOf(old) !== itemsOf(field)) {
    changes.push(checkValues(`${at}: items ${itemsOf(field)}`));
  } else if (JSON.stringify(old.enum) !== JSON.stringify(field.enum)) {
    changes.push(checkValues(`${at}: ${enumWords(old, field)}`));
  } else if (shapeOf(old) !== shapeOf(field)) {
    changes.push(checkValues(`${at}: ${boundsWords(field)}`));
  }
  if (!old.required && field.required) {
    changes.push({ entity, words: `${at}: now required`, problemOf: (data) => (data[field.name] === undefined ? LACKS : null), breakWords: () => "lack it", step: (problems) => stepFor(entity, field, problems) });
  } else if (old.required && !field.required) {
    changes.push({ entity, words: `${at}: no longer required` });
  }
  if (JSON.stringify(old.default) !== JSON.stringify(field.default)) {
    changes.push({ entity, words: `${at}: default ${JSON.stringify(old.default ?? null)} → ${JSON.stringify(field.default ?? null)} (for records created from now on)` });
  }
  return changes;
}

/** What an array's items are declared to hold, as compared and said: `{"type":"string","enum":["a"]}`. */
function itemsOf(field: FieldDef): string {
  if (!field.items) return "of any value";
  const { name: _name, required: _required, pattern, ...items } = field.items;
  return JSON.stringify({ ...items, ...(pattern ? { pattern: pattern.source } : {}) });
}

/** The constraints a value is checked against, apart from type and enum. */
function shapeOf(field: FieldDef): string {
  return JSON.stringify([field.minimum, field.maximum, field.minLength, field.maxLength, field.pattern?.source]);
}

function enumWords(old: FieldDef, field: FieldDef): string {
  if (field.enum === undefined) return "any value (no enum)";
  if (old.enum === undefined) return `enum ${field.enum.map((value) => JSON.stringify(value)).join(", ")}`;
  const removed = old.enum.filter((value) => !field.enum!.includes(value));
  const added = field.enum.filter((value) => !old.enum!.includes(value));
  return ["enum", ...added.map((value) => `+ ${JSON.stringify(value)}`), ...removed.map((value) => `− ${JSON.stringify(value)}`)].join(" ");
}

function boundsWords(field: FieldDef): string {
  const parts: string[] = [];
  if (field.minimum !== undefined) parts.push(`minimum ${field.minimum}`);
  if (field.maximum !== undefined) parts.push(`maximum ${field.maximum}`);
  if (field.minLength !== undefined) parts.push(`minLength ${field.minLength}`);
  if (field.maxLength !== undefined) parts.push(`maxLength ${field.maxLength}`);
  if (field.pattern !== undefined) parts.push(`pattern ${field.pattern.source}`);
  return parts.length === 0 ? "no bounds" : parts.join(", ");
}

/** A declared type in the words of the banner: string fields by their format, else "text". */
export function typeName(field: FieldDef): string {
  if (field.type === "string") return field.format ?? "text";
  if (field.type === "array" && field.items) return `array of ${typeName(field.items)}`;
  return field.type;
}

/** Why a stored value does not fit `field`: a value of another type, outside the enum, or out of bounds. */
function valueProblem(field: FieldDef, value: unknown): Problem | null {
  const problem = checkFieldValue(field, value);
  if (problem === null) return null;
  if (checkFieldValue({ name: field.name, type: field.type, required: false }, value) !== null) return { kind: "type", held: kindOfValue(value) };
  if (field.enum && checkFieldValue({ ...field, enum: undefined }, value) === null) return { kind: "enum", value };
  return { kind: "bounds", words: problem };
}

function kindOfValue(value: unknown): string {
  if (typeof value === "string") return "text";
  if (typeof value === "number") return "a number";
  if (typeof value === "boolean") return "true or false";
  if (Array.isArray(value)) return "an array";
  return "an object";
}

/** "hold a number where the declaration now says text", for the problems of the breaking records. */
function breakWordsOf(field: FieldDef, problems: readonly Problem[]): string {
  const words: string[] = [];
  const types = [...new Set(problems.flatMap((problem) => (problem.kind === "type" ? [problem.held] : [])))];
  if (types.length > 0) words.push(`hold ${types.join(" or ")} where the declaration now says ${typeName(field)}`);
  const values = [...new Set(problems.flatMap((problem) => (problem.kind === "enum" ? [JSON.stringify(problem.value)] : [])))];
  if (values.length > 0) words.push(`hold ${values.slice(0, 5).join(", ")}${values.length > 5 ? ` and ${values.length - 5} more values` : ""}, outside the enum`);
  const bounds = [...new Set(problems.flatMap((problem) => (problem.kind === "bounds" ? [problem.words] : [])))];
  if (bounds.length > 0) words.push(`hold values that now ${bounds.slice(0, 3).join("; ")}`);
  if (problems.some((problem) => problem.kind === "lacks")) words.push("lack it");
  return words.join("; ");
}

/** The migration step that settles the records breaking `field`'s declaration, by what they hold. */
function stepFor(entity: string, field: FieldDef, problems: readonly Problem[]): Record<string, unknown> | null {
  const at = `${entity}.${field.name}`;
  if (problems.every((problem) => problem.kind === "lacks")) return { set: at, value: sampleValue(field), q: { [field.name]: null } };
  if (problems.every((problem) => problem.kind === "enum")) {
    const values = [...new Set(problems.map((problem) => (problem as { value: unknown }).value))];
    return { set: at, value: sampleValue(field), q: { [field.name]: values.length === 1 ? values[0] : { $in: values } } };
  }
  if (field.type === "array" || field.type === "object" || !problems.some((problem) => problem.kind === "type")) return null;
  const to = field.type === "string" && (field.format === "date" || field.format === "date-time") ? field.format : field.type;
  return { convert: at, to, else: "refuse" };
}

/** A value that fits `field`, for a suggested step: its default, its first enum value, else an example. */
function sampleValue(field: FieldDef): unknown {
  if (field.default !== undefined && field.default !== null) return field.default;
  if (field.enum) return field.enum[0];
  switch (field.type) {
    case "string":
      return field.format === "date" ? "2026-01-01" : field.format === "date-time" ? "2026-01-01T00:00:00.000Z" : field.format === "email" ? "nobody@example.com" : field.format === "uri" ? "https://example.com/" : "<value>";
    case "number":
    case "integer":
      return field.minimum ?? 0;
    case "boolean":
      return false;
    case "array":
      return [];
    case "object":
      return {};
  }
}
