// Loads entity declarations (docs/entities.md) from a folder of <Entity>.json or .jsonc files, one
// such file holding { "<Entity>": declaration }, or objects given by an embedding program. Every
// refusal names the file, the entity and the field at fault.

import { readdirSync, readFileSync, statSync } from "node:fs";
import { basename, extname, join } from "node:path";
import { ACCESS_OPERATIONS, isPlatformField, type AccessOperation, type RuleSource, type EntityDef, type FieldDef, type FieldType, type StringFormat } from "./fields.ts";
import { checkFieldValue } from "./validate.ts";
import { USER_ENTITY, userDeclaration } from "./user-entity.ts";
import { settingName } from "../option-names.ts";
import { parseJsonc, placeOf } from "./jsonc.ts";

export interface Schema {
  readonly entities: ReadonlyMap<string, EntityDef>;
}

export class SchemaError extends Error {
  override name = "SchemaError";
}

export type Declarations = Record<string, unknown>;

const FIELD_TYPES: readonly FieldType[] = ["string", "number", "integer", "boolean", "array", "object"];
const STRING_FORMATS: readonly StringFormat[] = ["date", "date-time", "email", "uri", "richtext"];
/** A schema file's endings; both are read as JSONC (comments and trailing commas allowed), as Base44 reads them. */
const SCHEMA_FILE_EXTENSIONS = [".json", ".jsonc"];
const ENTITY_NAME_RE = /^[A-Za-z_][A-Za-z0-9_-]*$/;
const FIELD_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Keywords that document a declaration without changing what it accepts. */
const ANNOTATIONS = ["title", "description", "examples", "$comment", "$schema", "$id"];
/** Base44's labels of an enum's values, for its forms: checked, then only documentation here. */
const ENUM_NAMES = "enumNames";
const ENTITY_KEYWORDS = ["name", "type", "properties", "required", "additionalProperties", "access", "unique", "rls", ...ANNOTATIONS];
const FIELD_KEYWORDS = [
  "type", "format", "enum", ENUM_NAMES, "default", "items", "properties", "required", "minimum", "maximum", "minLength", "maxLength", "pattern", "rls",
  ...ANNOTATIONS,
];

/** Reads a schema folder or file. */
export function loadSchemaPath(path: string): Schema {
  let isFolder: boolean;
  try {
    isFolder = statSync(path).isDirectory();
  } catch {
    throw new SchemaError(`Schema not found: ${path} does not exist. Give ${settingName("schema")} a folder of <Entity>.json (or .jsonc) files or one such file.`);
  }
  if (!isFolder) {
    const declarations = readJson(path);
    if (!isPlainObject(declarations)) throw new SchemaError(`${path}: a schema file must be a JSON object { "<Entity>": <declaration>, ... }.`);
    // One entity's <Entity>.json, given on its own, is a schema of that entity.
    if (isOneDeclaration(declarations)) return buildSchema([{ file: path, fallbackName: entityNameOf(path), declaration: declarations }]);
    return buildSchema(Object.entries(declarations).map(([name, declaration]) => ({ file: path, fallbackName: name, declaration })));
  }
  const files = readdirSync(path).filter((file) => SCHEMA_FILE_EXTENSIONS.includes(extname(file))).sort();
  if (files.length === 0) throw new SchemaError(`Schema folder ${path} holds no <Entity>.json or <Entity>.jsonc files.`);
  // Every file is read before any refusal: one start-up names every file at fault.
  const problems = new Problems();
  const sources = files.flatMap((file) => problems.collect(() => [{ file: join(path, file), fallbackName: entityNameOf(file), declaration: readJson(join(path, file)) }]) ?? []);
  return buildSchema(sources, problems);
}

/** Refusals gathered, so that a schema's every mistake is named at once rather than one per start. */
class Problems {
  private readonly messages: string[] = [];

  /** Runs `step`; a SchemaError it throws is kept (the answer is then undefined), anything else goes on. */
  collect<T>(step: () => T): T | undefined {
    try {
      return step();
    } catch (error) {
      if (!(error instanceof SchemaError)) throw error;
      this.messages.push(...(error instanceof SchemaProblems ? error.all : [error.message]));
      return undefined;
    }
  }

  throwIfAny(): void {
    if (this.messages.length === 1) throw new SchemaError(this.messages[0]!);
    if (this.messages.length > 1) throw new SchemaProblems(this.messages);
  }
}

/** Several refusals at once, each on a line of the message. */
class SchemaProblems extends SchemaError {
  constructor(readonly all: readonly string[]) {
    super(`The schema has ${all.length} problems:\n${all.map((message) => `- ${message}`).join("\n")}`);
  }
}

/** Builds a schema from declarations given as objects: { "<Entity>": declaration }. */
export function loadSchemaObject(declarations: Declarations): Schema {
  return buildSchema(
    Object.entries(declarations).map(([name, declaration]) => ({ file: "(schema object)", fallbackName: name, declaration })),
  );
}

/**
 * A declaration, not a map of them: it has properties, and a "type" of "object" or a "name" (in a
 * map those keys would name entities, whose values are objects, not strings).
 */
function isOneDeclaration(value: Record<string, unknown>): boolean {
  return isPlainObject(value.properties) && (value.type === "object" || typeof value.name === "string");
}

/** The entity a file declares when its declaration has no "name": the file's name, less its ending. */
function entityNameOf(file: string): string {
  const ending = extname(file);
  return basename(file, SCHEMA_FILE_EXTENSIONS.includes(ending) ? ending : undefined);
}

/** A schema file, read as JSONC (jsonc.ts); a syntax error names its file:line:column, for an editor to jump to. */
function readJson(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new SchemaError(`${file}: cannot be read (${(error as Error).message}).`);
  }
  try {
    return parseJsonc(text);
  } catch (error) {
    const kind = extname(file) === ".jsonc" ? "JSONC" : "JSON";
    throw new SchemaError(`${file}${placeOf(text, error as Error)}: not valid ${kind} (${(error as Error).message}).`);
  }
}

interface Source {
  file: string;
  fallbackName: string;
  declaration: unknown;
}

function buildSchema(declaredSources: Source[], problems = new Problems()): Schema {
  if (declaredSources.length === 0) {
    problems.throwIfAny();
    throw new SchemaError(`The schema declares no entities.`);
  }
  const entities = new Map<string, EntityDef>();
  // Every schema serves the built-in User; an app's own User declaration adds fields to it.
  const ownUser = declaredSources.find((source) => isPlainObject(source.declaration) && (source.declaration.name ?? source.fallbackName) === USER_ENTITY);
  const userSource: Source = ownUser
    ? { ...ownUser, declaration: userDeclaration(ownUser.declaration as Record<string, unknown>) }
    : { file: "(built in)", fallbackName: USER_ENTITY, declaration: userDeclaration(undefined) };
  const sources = [...declaredSources.filter((source) => source !== ownUser), userSource];
  for (const source of sources) {
    const built = problems.collect(() => buildEntity(source));
    if (built === undefined) continue;
    const entity: EntityDef = source === userSource && !ownUser ? { ...built, isBuiltIn: true } : built;
    const earlier = entities.get(entity.name);
    if (earlier) problems.collect(() => {
      throw new SchemaError(`${source.file}: entity "${entity.name}" is already declared in ${earlier.file}.`);
    });
    else entities.set(entity.name, entity);
  }
  problems.throwIfAny();
  return { entities };
}

function buildEntity({ file, fallbackName, declaration }: Source): EntityDef {
  const at = `${file}: entity "${fallbackName}"`;
  if (!isPlainObject(declaration)) throw new SchemaError(`${at}: a declaration must be a JSON object with "properties".`);
  refuseUnknownKeywords(declaration, ENTITY_KEYWORDS, at);
  const name = declaration.name ?? fallbackName;
  if (typeof name !== "string" || !ENTITY_NAME_RE.test(name)) {
    throw new SchemaError(`${at}: "name" must be letters, digits, "_" or "-", starting with a letter or "_".`);
  }
  const where = `${file}: entity "${name}"`;
  if (declaration.type !== undefined && declaration.type !== "object") throw new SchemaError(`${where}: "type" must be "object".`);
  if (declaration.additionalProperties !== undefined && declaration.additionalProperties !== false) {
    throw new SchemaError(`${where}: "additionalProperties" can only be false (undeclared fields are always refused).`);
  }
  const properties = declaration.properties ?? {};
  if (!isPlainObject(properties)) throw new SchemaError(`${where}: "properties" must be an object of field declarations.`);
  const required = declaration.required ?? [];
  if (!Array.isArray(required) || !required.every((field) => typeof field === "string")) {
    throw new SchemaError(`${where}: "required" must be an array of field names.`);
  }
  for (const field of required) {
    if (!(field in properties)) throw new SchemaError(`${where}: field "${field}" is listed in "required" but not declared in "properties".`);
  }
  const fields = new Map<string, FieldDef>();
  const problems = new Problems();
  for (const [fieldName, spec] of Object.entries(properties)) {
    const field = problems.collect(() => buildField(fieldName, spec, required.includes(fieldName), `${where}, field "${fieldName}"`));
    if (field !== undefined) fields.set(fieldName, field);
  }
  problems.throwIfAny();
  const fieldNames = [...fields.keys()];
  const textFields = fieldNames.filter((field) => fields.get(field)!.type === "string");
  const unique = parseUnique(declaration.unique, fields, where);
  const rls = parseRuleShape(declaration.rls, RECORD_RULE_OPERATIONS, where);
  return { name, file, fields, fieldNames, textFields, publishableAccess: parseAccess(declaration.access, where), unique, ...(rls ? { rls } : {}) };
}

/** `"unique": [["email"], ["sku", "warehouse"]]`: each a non-empty list of declared fields holding one value. */
function parseUnique(unique: unknown, fields: ReadonlyMap<string, FieldDef>, where: string): string[][] {
  if (unique === undefined) return [];
  const example = `such as [["email"], ["sku", "warehouse"]]`;
  if (!Array.isArray(unique)) throw new SchemaError(`${where}: "unique" must be a list of field lists, ${example}.`);
  return unique.map((constraint) => {
    if (!Array.isArray(constraint) || constraint.length === 0 || !constraint.every((name) => typeof name === "string")) {
      throw new SchemaError(`${where}: "unique" holds ${JSON.stringify(constraint)}; each entry must be a non-empty list of field names, ${example}.`);
    }
    for (const name of constraint) {
      const field = fields.get(name);
      if (!field) throw new SchemaError(`${where}: "unique" names "${name}", which is not a declared field (declared: ${[...fields.keys()].join(", ")}).`);
      if (field.type === "array" || field.type === "object") throw new SchemaError(`${where}: "unique" names "${name}", which holds ${field.type === "array" ? "an array" : "an object"}; name fields holding one value.`);
    }
    if (new Set(constraint).size !== constraint.length) throw new SchemaError(`${where}: "unique" names a field twice in ${JSON.stringify(constraint)}.`);
    return constraint as string[];
  });
}

/** `"access": { "publishable": ["read", "create"] }`: what a publishable key may do; all of it when not given. */
function parseAccess(access: unknown, where: string): ReadonlySet<AccessOperation> {
  if (access === undefined) return new Set(ACCESS_OPERATIONS);
  const example = `such as {"publishable": ["read", "create"]}`;
  if (!isPlainObject(access)) throw new SchemaError(`${where}: "access" must be an object ${example}.`);
  for (const kind of Object.keys(access)) {
    if (kind === "secret") throw new SchemaError(`${where}: "access" names "secret", but secret keys may always do everything; list what "publishable" keys may do.`);
    if (kind !== "publishable") throw new SchemaError(`${where}: "access" names the key kind "${kind}"; the only kind it narrows is "publishable", ${example}.`);
  }
  const operations = access.publishable ?? [...ACCESS_OPERATIONS];
  if (!Array.isArray(operations)) throw new SchemaError(`${where}: "access"."publishable" must be an array of operations (${ACCESS_OPERATIONS.join(", ")}).`);
  for (const operation of operations) {
    if (!(ACCESS_OPERATIONS as readonly unknown[]).includes(operation)) {
      throw new SchemaError(`${where}: "access"."publishable" lists ${JSON.stringify(operation)}, which is no operation; use ${ACCESS_OPERATIONS.map((op) => `"${op}"`).join(", ")}.`);
    }
  }
  return new Set(operations as AccessOperation[]);
}

function buildField(name: string, spec: unknown, required: boolean, at: string): FieldDef {
  if (isPlatformField(name)) throw new SchemaError(`${at}: "${name}" is a platform field set by the server; it cannot be declared.`);
  if (!FIELD_NAME_RE.test(name)) throw new SchemaError(`${at}: field names are letters, digits and "_", starting with a letter or "_".`);
  if (!isPlainObject(spec)) throw new SchemaError(`${at}: a field declaration must be an object such as { "type": "string" }.`);
  refuseUnknownKeywords(spec, FIELD_KEYWORDS, at);
  const type = declaredType(spec.type, at);
  const field: { -readonly [K in keyof FieldDef]: FieldDef[K] } = { name, type, required };
  const rls = parseRuleShape(spec.rls, FIELD_RULE_OPERATIONS, at);
  if (rls) field.rls = rls;
  if (spec.format !== undefined) {
    if (type !== "string" || !STRING_FORMATS.includes(spec.format as StringFormat)) {
      throw new SchemaError(`${at}: "format" must be one of ${STRING_FORMATS.join(", ")}, on a string field.`);
    }
    field.format = spec.format as StringFormat;
  }
  if (spec.items !== undefined) {
    if (type !== "array") throw new SchemaError(`${at}: "items" is only for array fields.`);
    field.items = buildField(name, spec.items, false, `${at} (items)`);
  }
  if (spec.properties !== undefined || spec.required !== undefined) {
    if (type !== "object") throw new SchemaError(`${at}: "properties" and "required" inside a field are only for object fields.`);
    field.properties = buildMembers(spec.properties ?? {}, spec.required ?? [], at);
  }
  for (const bound of ["minimum", "maximum"] as const) {
    if (spec[bound] === undefined) continue;
    if ((type !== "number" && type !== "integer") || typeof spec[bound] !== "number") throw new SchemaError(`${at}: "${bound}" must be a number, on a number or integer field.`);
    field[bound] = spec[bound] as number;
  }
  for (const bound of ["minLength", "maxLength"] as const) {
    if (spec[bound] === undefined) continue;
    if (type !== "string" || !Number.isInteger(spec[bound])) throw new SchemaError(`${at}: "${bound}" must be an integer, on a string field.`);
    field[bound] = spec[bound] as number;
  }
  if (spec.pattern !== undefined) {
    if (type !== "string" || typeof spec.pattern !== "string") throw new SchemaError(`${at}: "pattern" must be a regular expression string, on a string field.`);
    try {
      field.pattern = new RegExp(spec.pattern, "u");
    } catch (error) {
      throw new SchemaError(`${at}: "pattern" is not a valid regular expression (${(error as Error).message}).`);
    }
  }
  if (spec.enum !== undefined) {
    if (!Array.isArray(spec.enum) || spec.enum.length === 0) throw new SchemaError(`${at}: "enum" must be a non-empty array of values.`);
    if (type === "array" || type === "object") throw new SchemaError(`${at}: "enum" is only for scalar fields (string, number, integer, boolean).`);
    field.enum = spec.enum;
    for (const value of spec.enum) {
      const problem = checkFieldValue({ ...field, enum: undefined }, value);
      if (problem) throw new SchemaError(`${at}: enum value ${JSON.stringify(value)} ${problem}.`);
    }
  }
  const names = spec[ENUM_NAMES];
  if (names !== undefined && (!Array.isArray(names) || !Array.isArray(spec.enum) || names.length !== spec.enum.length || !names.every((label) => typeof label === "string"))) {
    throw new SchemaError(`${at}: "enumNames" labels the values of "enum": an array of as many strings, such as ["To do", "Done"] for ["todo", "done"].`);
  }
  if (spec.default !== undefined) {
    const problem = spec.default === null ? null : checkFieldValue(field, spec.default);
    if (problem) throw new SchemaError(`${at}: "default" ${JSON.stringify(spec.default)} ${problem}.`);
    field.default = spec.default;
  }
  return field;
}

// "write" is Base44's: the rule of each of create, update and delete that is not given its own
// (rules/rule-tree.ts reads it so). A field's "create" and "update" rules are its "write" rule split
// in two; its "delete" rule, which Base44 also takes, decides nothing (a field is not deleted alone).
const RECORD_RULE_OPERATIONS = ["create", "read", "update", "delete", "write"];
const FIELD_RULE_OPERATIONS = ["read", "write", "create", "update", "delete"];

/**
 * `"rls": { "read": <rule>, ... }` (docs/rules.md): its shape only, each rule true, false or a
 * condition object (null or "", as Base44 writes no rule, is left out); what a condition says is
 * checked against the whole schema by rules/, at start-up.
 */
function parseRuleShape(rls: unknown, operations: readonly string[], where: string): Readonly<Record<string, RuleSource>> | undefined {
  if (rls === undefined) return undefined;
  const example = operations === RECORD_RULE_OPERATIONS ? `{"read": {"created_by": "{{user.email}}"}, "create": true}` : `{"read": {"user_condition": {"role": "admin"}}, "write": false}`;
  if (!isPlainObject(rls)) throw new SchemaError(`${where}: "rls" must be an object of rules by operation, such as ${example}.`);
  const rules: Record<string, RuleSource> = {};
  for (const [operation, rule] of Object.entries(rls)) {
    if (!operations.includes(operation)) throw new SchemaError(`${where}: "rls" names "${operation}", which is no operation here; use ${operations.map((op) => `"${op}"`).join(", ")}.`);
    if (rule === null || rule === "") continue;
    if (typeof rule !== "boolean" && !isPlainObject(rule)) {
      throw new SchemaError(`${where}: "rls"."${operation}" must be true (anyone), false (the secret key only), a condition object, such as {"created_by": "{{user.email}}"}, or null (no rule).`);
    }
    rules[operation] = rule;
  }
  return rules;
}

/** An object field's declared members (as Base44's "array of objects" declares its items'), each a field declaration. */
function buildMembers(properties: unknown, required: unknown, at: string): ReadonlyMap<string, FieldDef> {
  if (!isPlainObject(properties)) throw new SchemaError(`${at}: "properties" must be an object of member declarations, such as {"name": {"type": "string"}}.`);
  if (!Array.isArray(required) || !required.every((member) => typeof member === "string" && member in properties)) {
    throw new SchemaError(`${at}: "required" must list members declared in "properties".`);
  }
  return new Map(Object.entries(properties).map(([member, spec]) => [member, buildMember(member, spec, required.includes(member), `${at}, member "${member}"`)]));
}

/** A member of an object field: a field declaration whose name may be any JSON member name. */
function buildMember(name: string, spec: unknown, required: boolean, at: string): FieldDef {
  return buildField(FIELD_NAME_RE.test(name) && !isPlatformField(name) ? name : "member", spec, required, at);
}

function declaredType(type: unknown, at: string): FieldType {
  // JSON Schema's ["string", "null"] means a nullable string; every optional field accepts null.
  const types = Array.isArray(type) ? type.filter((t) => t !== "null") : [type];
  if (types.length === 1 && FIELD_TYPES.includes(types[0] as FieldType)) return types[0] as FieldType;
  throw new SchemaError(`${at}: unknown type ${JSON.stringify(type)}; use one of ${FIELD_TYPES.join(", ")}.`);
}

function refuseUnknownKeywords(spec: Record<string, unknown>, allowed: readonly string[], at: string): void {
  for (const keyword of Object.keys(spec)) {
    if (!allowed.includes(keyword)) throw new SchemaError(`${at}: unsupported keyword "${keyword}"; supported: ${allowed.join(", ")}.`);
  }
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
