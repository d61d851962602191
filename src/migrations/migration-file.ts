// Migration files (docs/schema-changes.md): NNNN-words.json in migrations/ beside the schema (or
// --migrations DIR), each {"steps": [...]} (or the list of steps alone). This module finds them,
// reads and checks every step, and names the file and step at fault when one is wrong.

import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { isPlainObject } from "../schema/load.ts";
import { compileMatch, type Match } from "./match.ts";
import { CONVERT_TYPES, type ConvertType } from "./convert.ts";
import { MigrationError } from "./migration-error.ts";

const FILE_RE = /^\d+-[A-Za-z0-9_.-]+\.json$/;
const ENTITY_NAME_RE = /^[A-Za-z_][A-Za-z0-9_-]*$/;
const FIELD_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
const OPERATIONS = ["rename", "convert", "set", "unset", "renameEntity"] as const;

export type Step =
  | { readonly op: "rename"; readonly entity: string; readonly field: string; readonly to: string; readonly q: Match | null }
  | { readonly op: "convert"; readonly entity: string; readonly field: string; readonly to: ConvertType; readonly otherwise: Otherwise; readonly q: Match | null }
  | { readonly op: "set"; readonly entity: string; readonly field: string; readonly value: unknown; readonly q: Match | null }
  | { readonly op: "unset"; readonly entity: string; readonly field: string; readonly q: Match | null }
  | { readonly op: "renameEntity"; readonly entity: string; readonly to: string };

/** What a convert step does with a value that does not convert: refuse the migration, clear the field, or set this value. */
export type Otherwise = { readonly kind: "refuse" } | { readonly kind: "null" } | { readonly kind: "value"; readonly value: unknown };

export interface Migration {
  /** The file's name, which is what the store records. */
  readonly name: string;
  readonly path: string;
  /** SHA-256 of the file's bytes: a recorded migration whose file changed stops the start-up. */
  readonly checksum: string;
  readonly steps: readonly Step[];
  /** Each step as written, for reports. */
  readonly written: readonly string[];
}

/**
 * The folder migrations are read from: the one given, else migrations/ beside the schema (a schema
 * folder or file given as a path); null when neither exists (an embedded schema object has no
 * place beside it).
 */
export function migrationsDirOf(given: string | undefined, schemaPath: string | null): string | null {
  if (given !== undefined) {
    if (!existsSync(given) || !statSync(given).isDirectory()) throw new MigrationError(`The migrations folder ${given} does not exist; give --migrations a folder of NNNN-words.json files.`);
    return given;
  }
  if (schemaPath === null) return null;
  const beside = join(dirname(resolve(schemaPath)), "migrations");
  return existsSync(beside) && statSync(beside).isDirectory() ? beside : null;
}

/** Every migration in `dir`, in the order of their names (their numbers). */
export function readMigrations(dir: string | null): Migration[] {
  if (dir === null) return [];
  const names = readdirSync(dir).filter((name) => name.endsWith(".json")).sort(byNumber);
  return names.map((name) => {
    if (!FILE_RE.test(name)) throw new MigrationError(`${join(dir, name)}: a migration file is named NNNN-words.json, such as 0001-priority-as-text.json.`);
    return readMigration(join(dir, name), name);
  });
}

/** The number the next migration file in `dir` takes: one past the highest there, 0001 in an empty or missing folder. */
export function nextMigrationNumber(dir: string | null): string {
  const names = dir !== null && existsSync(dir) ? readdirSync(dir).filter((name) => FILE_RE.test(name)) : [];
  const highest = Math.max(0, ...names.map((name) => Number(/^\d+/.exec(name)![0])));
  return String(highest + 1).padStart(4, "0");
}

function byNumber(a: string, b: string): number {
  const number = (name: string) => Number(/^\d+/.exec(name)?.[0] ?? Infinity);
  return number(a) - number(b) || (a < b ? -1 : a > b ? 1 : 0);
}

function readMigration(path: string, name: string): Migration {
  const bytes = readFileSync(path);
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString("utf8"));
  } catch (error) {
    throw new MigrationError(`${path}: not valid JSON (${(error as Error).message}).`);
  }
  const steps = Array.isArray(parsed) ? parsed : isPlainObject(parsed) ? parsed.steps : undefined;
  if (isPlainObject(parsed)) {
    const extra = Object.keys(parsed).filter((key) => key !== "steps" && key !== "description");
    if (extra.length > 0) throw new MigrationError(`${path}: unknown key "${extra[0]}"; a migration is {"description": "...", "steps": [...]}.`);
  }
  if (!Array.isArray(steps) || steps.length === 0) throw new MigrationError(`${path}: a migration is {"steps": [...]} with at least one step, such as {"steps": [{"rename": "Task.title", "to": "name"}]}.`);
  return {
    name,
    path,
    checksum: createHash("sha256").update(bytes).digest("hex"),
    steps: steps.map((step, index) => readStep(step, `${path}, step ${index + 1}`)),
    written: steps.map((step) => JSON.stringify(step)),
  };
}

function readStep(step: unknown, at: string): Step {
  if (!isPlainObject(step)) throw new MigrationError(`${at}: a step is an object such as {"convert": "Task.priority", "to": "string"}.`);
  const ops = OPERATIONS.filter((op) => op in step);
  if (ops.length !== 1) throw new MigrationError(`${at}: a step names one of ${OPERATIONS.join(", ")} (found ${ops.length === 0 ? "none" : ops.join(" and ")}).`);
  const op = ops[0]!;
  const allowed: Record<(typeof OPERATIONS)[number], readonly string[]> = {
    rename: ["rename", "to", "q"],
    convert: ["convert", "to", "else", "q"],
    set: ["set", "value", "q"],
    unset: ["unset", "q"],
    renameEntity: ["renameEntity", "to"],
  };
  for (const key of Object.keys(step)) {
    if (!allowed[op].includes(key)) throw new MigrationError(`${at}: "${key}" is not part of a ${op} step, which takes ${allowed[op].map((k) => `"${k}"`).join(", ")}.`);
  }
  const q = step.q === undefined ? null : compileMatch(step.q, `${at}, "q"`);
  if (op === "renameEntity") {
    const entity = entityName(step.renameEntity, at, "renameEntity");
    const to = entityName(step.to, at, "to");
    if (to === entity) throw new MigrationError(`${at}: renameEntity names ${entity} twice; "to" is the new name.`);
    return { op, entity, to };
  }
  const [entity, field] = fieldPath(step[op], at, op);
  switch (op) {
    case "rename": {
      if (typeof step.to !== "string" || !FIELD_NAME_RE.test(step.to)) throw new MigrationError(`${at}: "to" is the field's new name: letters, digits and "_", starting with a letter or "_".`);
      if (step.to === field) throw new MigrationError(`${at}: rename names ${field} twice; "to" is the new name.`);
      return { op, entity, field, to: step.to, q };
    }
    case "convert": {
      if (!(CONVERT_TYPES as readonly unknown[]).includes(step.to)) throw new MigrationError(`${at}: "to" is the type to convert to: one of ${CONVERT_TYPES.join(", ")}.`);
      const otherwise: Otherwise = step.else === undefined || step.else === "refuse" ? { kind: "refuse" } : step.else === "null" || step.else === null ? { kind: "null" } : { kind: "value", value: step.else };
      return { op, entity, field, to: step.to as ConvertType, otherwise, q };
    }
    case "set":
      if (!("value" in step)) throw new MigrationError(`${at}: a set step needs "value" (null clears the field), such as {"set": "Task.owner", "value": "ops", "q": {"owner": null}}.`);
      return { op, entity, field, value: step.value, q };
    case "unset":
      return { op, entity, field, q };
  }
}

function entityName(value: unknown, at: string, key: string): string {
  if (typeof value !== "string" || !ENTITY_NAME_RE.test(value)) throw new MigrationError(`${at}: "${key}" is an entity name: letters, digits, "_" or "-", starting with a letter or "_".`);
  return value;
}

/** "Task.priority" → ["Task", "priority"]: an entity and one of its fields (not a path inside an object). */
function fieldPath(value: unknown, at: string, op: string): [string, string] {
  const parts = typeof value === "string" ? value.split(".") : [];
  if (parts.length !== 2 || !ENTITY_NAME_RE.test(parts[0]!) || !FIELD_NAME_RE.test(parts[1]!)) {
    throw new MigrationError(`${at}: "${op}" names a field as "Entity.field", such as "Task.priority" (got ${JSON.stringify(value)}).`);
  }
  if (["id", "created_date", "updated_date", "created_by_id"].includes(parts[1]!)) throw new MigrationError(`${at}: ${parts[1]} is a platform field, which migrations leave as it is.`);
  return parts as [string, string];
}
