// Checks written bodies against a declaration (docs/entities.md, docs/errors.md) and returns
// the values to store. Pure: it never touches the store, so a refused write changes nothing.

import { ApiError, invalidField, invalidJson, readOnlyField, unknownField } from "../errors.ts";
import { DEFAULT_SIZE_LIMITS, findOversize, type Oversize, type SizeLimits } from "../json-depth.ts";
import { settingName } from "../option-names.ts";
import { isDateOnly, isPlatformField, parseDateValue, type EntityDef, type FieldDef } from "./fields.ts";
import { USER_ENTITY } from "./user-entity.ts";

const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Why `value` does not fit `field`, as the end of "Field "x" ..."; null when it fits. */
export function checkFieldValue(field: FieldDef, value: unknown): string | null {
  const problem = checkType(field, value);
  if (problem) return problem;
  if (field.enum && !field.enum.includes(value)) {
    return `must be one of ${field.enum.map((v) => JSON.stringify(v)).join(", ")}`;
  }
  return null;
}

function checkType(field: FieldDef, value: unknown): string | null {
  switch (field.type) {
    case "string":
      if (typeof value !== "string") return "must be a string";
      return checkString(field, value);
    case "number":
    case "integer":
      if (typeof value !== "number" || !Number.isFinite(value)) return `must be a ${field.type === "integer" ? "whole number" : "number"}`;
      if (field.type === "integer" && !Number.isInteger(value)) return "must be a whole number";
      if (field.minimum !== undefined && value < field.minimum) return `must be at least ${field.minimum}`;
      if (field.maximum !== undefined && value > field.maximum) return `must be at most ${field.maximum}`;
      return null;
    case "boolean":
      return typeof value === "boolean" ? null : "must be true or false";
    case "object": {
      if (typeof value !== "object" || value === null || Array.isArray(value)) return "must be a JSON object";
      if (!field.properties) return null;
      for (const [name, member] of field.properties) {
        const held = (value as Record<string, unknown>)[name];
        if (held === undefined || held === null) {
          if (member.required) return `lacks its member "${name}", which the declaration requires`;
          continue;
        }
        const problem = checkFieldValue(member, held);
        if (problem) return `member "${name}" ${problem}`;
      }
      return null;
    }
    case "array": {
      if (!Array.isArray(value)) return "must be an array";
      if (!field.items) return null;
      for (let i = 0; i < value.length; i++) {
        const problem = checkFieldValue(field.items, value[i]);
        if (problem) return `item ${i} ${problem}`;
      }
      return null;
    }
  }
}

function checkString(field: FieldDef, value: string): string | null {
  switch (field.format) {
    case "date":
      if (!isDateOnly(value)) return "must be a date as YYYY-MM-DD";
      break;
    case "date-time":
      if (isDateOnly(value) || Number.isNaN(parseDateValue(value))) return "must be an ISO 8601 timestamp with a time zone, such as 2026-11-22T12:00:00.000Z";
      break;
    case "email":
      if (!EMAIL_RE.test(value)) return "must be an email address such as ada@example.com";
      break;
    case "uri":
      if (!URL.canParse(value)) return "must be an absolute URI such as https://example.com/page";
      break;
  }
  // JSON Schema counts characters (code points), not UTF-16 units: "😀" has length 1.
  const length = field.minLength === undefined && field.maxLength === undefined ? 0 : codePointLength(value);
  if (field.minLength !== undefined && length < field.minLength) return `must be at least ${field.minLength} characters long`;
  if (field.maxLength !== undefined && length > field.maxLength) return `must be at most ${field.maxLength} characters long`;
  if (field.pattern && !field.pattern.test(value)) return `must match the pattern ${field.pattern.source}`;
  return null;
}

function codePointLength(value: string): number {
  let length = 0;
  for (const _ of value) length++;
  return length;
}

/** Timestamps are stored in one form (UTC, milliseconds) so that they compare as text too. */
function normalize(field: FieldDef, value: unknown): unknown {
  if (field.format === "date-time" && typeof value === "string") return new Date(parseDateValue(value)).toISOString();
  if (field.type === "array" && field.items?.format === "date-time" && Array.isArray(value)) {
    return value.map((item) => normalize(field.items!, item));
  }
  return value;
}

/**
 * Checks a write body and returns the changes it makes: declared field → value to store, or
 * undefined to clear the field (a written null means "no value"). Refuses every bad member at once.
 */
export function validateChanges(entity: EntityDef, body: unknown, limits: SizeLimits = DEFAULT_SIZE_LIMITS): Map<string, unknown> {
  const members = bodyObject(entity, body);
  const changes = new Map<string, unknown>();
  const problems: ApiError[] = [];
  for (const name of Object.keys(members)) {
    const value = members[name];
    const checked = checkMember(entity, name, value, limits);
    if (checked instanceof ApiError) problems.push(checked);
    else changes.set(name, storedValue(entity, checked, value));
  }
  if (problems.length > 0) throw refusalOf(problems);
  return changes;
}

/** Checks a create body; returns the declared fields to store, in declaration order, defaults filled in. */
export function validateCreate(entity: EntityDef, body: unknown, limits: SizeLimits = DEFAULT_SIZE_LIMITS): Record<string, unknown> {
  const members = bodyObject(entity, body);
  // Refusals come in body order (as for an update), then missing required fields in declaration order.
  const problems: ApiError[] = [];
  for (const name of Object.keys(members)) {
    const checked = checkMember(entity, name, members[name], limits);
    if (checked instanceof ApiError) problems.push(checked);
  }
  const fitting = problems.length === 0 ? members : withoutRefused(members, problems);
  const values: Record<string, unknown> = {};
  for (const field of entity.fields.values()) {
    const value = Object.hasOwn(members, field.name) ? fitting[field.name] : field.default;
    if (value !== undefined && value !== null) values[field.name] = storedValue(entity, field, value);
    else if (field.required && !Object.hasOwn(members, field.name)) problems.push(invalidField(field.name, `is required; add it to the body.`));
  }
  if (problems.length > 0) throw refusalOf(problems);
  return values;
}

/** The members no problem names, so that a refused value is never converted. */
function withoutRefused(members: Record<string, unknown>, problems: readonly ApiError[]): Record<string, unknown> {
  const refused = new Set(problems.map((problem) => problem.details.field));
  return Object.fromEntries(Object.entries(members).filter(([name]) => !refused.has(name)));
}

/**
 * One refusal for every bad member of a body, so that a form or a batch is mended in one round
 * trip: the first problem's code, message and details, and all of them in details.errors.
 */
function refusalOf(problems: readonly ApiError[]): ApiError {
  const first = problems[0]!;
  const errors = problems.map((problem) => ({ field: problem.details.field, code: problem.code, message: problem.message }));
  const others = problems.slice(1).map((problem) => `"${String(problem.details.field)}"`);
  const message = others.length === 0 ? first.message : `${first.message} ${others.length === 1 ? "Field" : "Fields"} ${others.join(", ")} ${others.length === 1 ? "needs" : "need"} mending too: details.errors lists each.`;
  return new ApiError(first.status, first.code, message, { ...first.details, errors });
}

function bodyObject(entity: EntityDef, body: unknown): Record<string, unknown> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw invalidJson(`The body must be a JSON object of ${entity.name} fields, such as {"${entity.fieldNames[0] ?? "field"}": ...}.`);
  }
  return body as Record<string, unknown>;
}

/** The declared field a written member sets, once its value is known to fit; else why it cannot. */
function checkMember(entity: EntityDef, name: string, value: unknown, limits: SizeLimits): FieldDef | ApiError {
  const field = entity.fields.get(name); // never a platform field: load.ts refuses to declare one
  if (!field) return isPlatformField(name) ? readOnlyField(name) : unknownField(name, [...entity.fieldNames], entity.name);
  if (value === null) {
    if (field.required) return invalidField(name, `is required and cannot be null; give it a value.`);
    return field;
  }
  // Before the type: checking each item of an array too long to keep would be wasted.
  const oversize = findOversize(value, limits);
  if (oversize) return oversizeProblem(name, oversize);
  const problem = checkFieldValue(field, value);
  if (problem) return invalidField(name, `${problem} (got ${describe(value)}).`, { value });
  const lone = findLoneSurrogate(value);
  if (lone) return loneSurrogateProblem(name, lone);
  return field;
}

/**
 * Half of a surrogate pair alone ("\ud800"; an emoji is two halves, "\ud83d\ude00"): JSON can
 * write one as an escape, but it is no Unicode text. PostgreSQL keeps it neither in jsonb nor in
 * text, and no escape could keep it there in the order sorts promise (docs/entities.md), so every
 * store refuses it, as a body holding one as raw UTF-8 bytes is refused (docs/errors.md).
 */
const LONE_SURROGATE_RE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

interface LoneSurrogate {
  /** Member names and indexes from the field down to the string (or member name) holding it. */
  readonly steps: readonly string[];
  readonly unit: number;
}

interface Step {
  readonly item: unknown;
  readonly parent: Step | null;
  readonly name: string;
}

/**
 * The first string or member name in `value` holding a lone surrogate, found without recursion; a
 * string costs one native scan, and a path is made only for the one found.
 */
function findLoneSurrogate(value: unknown): LoneSurrogate | null {
  const found = (text: string) => LONE_SURROGATE_RE.exec(text)?.[0].charCodeAt(0);
  const at = (step: Step | null, unit: number): LoneSurrogate => {
    const steps: string[] = [];
    for (let each = step; each !== null && each.parent !== null; each = each.parent) steps.unshift(each.name);
    return { steps, unit };
  };
  if (typeof value === "string") {
    const unit = found(value);
    return unit === undefined ? null : { steps: [], unit };
  }
  if (value === null || typeof value !== "object") return null;
  const stack: Step[] = [{ item: value, parent: null, name: "" }];
  while (stack.length > 0) {
    const step = stack.pop()!;
    const visit = (item: unknown, name: string | number): LoneSurrogate | null => {
      if (typeof item === "string") {
        const unit = found(item);
        if (unit !== undefined) return at({ item, parent: step, name: String(name) }, unit);
      } else if (item !== null && typeof item === "object") stack.push({ item, parent: step, name: String(name) });
      return null;
    };
    if (Array.isArray(step.item)) {
      for (let i = 0; i < step.item.length; i++) {
        const lone = visit(step.item[i], i);
        if (lone) return lone;
      }
      continue;
    }
    for (const [name, item] of Object.entries(step.item as Record<string, unknown>)) {
      const inName = found(name);
      if (inName !== undefined) return at({ item, parent: step, name }, inName);
      const lone = visit(item, name);
      if (lone) return lone;
    }
  }
  return null;
}

function loneSurrogateProblem(name: string, { steps, unit }: LoneSurrogate): ApiError {
  const half = `\\u${unit.toString(16)}`;
  const where = steps.length === 0 ? "holds" : `holds at ${[name, ...steps].join(".")}`;
  const details = steps.length === 0 ? {} : { path: [name, ...steps].join(".") };
  return invalidField(name, `${where} half of a surrogate pair alone (${half}), which is not Unicode text; send whole characters (an emoji's two halves together, such as \\ud83d\\ude00).`, details);
}

/**
 * A written value holding an array or object wider than the server keeps (docs/entities.md). Only
 * writes are checked, so a record stored before a limit was lowered is still read and updated.
 */
function oversizeProblem(name: string, { steps, isArray, count, limit }: Oversize): ApiError {
  const path = [name, ...steps].join(".");
  const where = steps.length === 0 ? "holds" : `holds at ${path}`;
  const what = isArray ? `an array of ${count} items` : `an object of ${count} keys`;
  const setting = settingName(isArray ? "maxArrayItems" : "maxObjectKeys");
  const mend = isArray
    ? "keep a list that long as records of their own (one per item, naming this record's id)"
    : "keep that many entries as records of their own";
  const details = isArray ? { path, items: count, maxArrayItems: limit } : { path, keys: count, maxObjectKeys: limit };
  return invalidField(name, `${where} ${what}, over the ${limit} this server keeps in one ${isArray ? "array" : "object"} (${setting}); ${mend}.`, details);
}

/**
 * What a checked value is stored as: null clears the field (undefined), timestamps in UTC, and a
 * User's email lowercased whoever writes it (a secret key, an admin, an import): sign-up, sign-in
 * and `unique` compare it so (docs/users.md), and "Ada@Example.com" written as it came would be a
 * second user beside "ada@example.com" that no sign-in finds.
 */
function storedValue(entity: EntityDef, field: FieldDef, value: unknown): unknown {
  if (value === null) return undefined;
  if (entity.name === USER_ENTITY && field.name === "email" && typeof value === "string") return value.toLowerCase();
  return normalize(field, value);
}

function describe(value: unknown): string {
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
