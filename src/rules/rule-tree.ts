// A declaration's rules (docs/rules.md) read into a tree once, and checked against the whole
// schema at start-up: every field a condition names, every template, every operator. A rule that
// cannot be read stops the start-up, naming the entity, the operation and what is wrong.

import { ApiError } from "../errors.ts";
import { isPlainObject, SchemaError, type Schema } from "../schema/load.ts";
import { kindOf, PLATFORM_FIELD_DEFS, type EntityDef, type FieldDef, type RuleSource } from "../schema/fields.ts";
import { USER_ENTITY } from "../schema/user-entity.ts";
import { parseFilter } from "../query/filter.ts";

/** A condition on the record (`field`, a template's value bound per user), on the user (`user`), or both combined. */
export type RuleNode =
  | { readonly type: "const"; readonly value: boolean }
  | { readonly type: "and" | "or"; readonly nodes: readonly RuleNode[] }
  | { readonly type: "not"; readonly node: RuleNode }
  | FieldRule
  | UserRule;

/** `"<field>": <operand>`: the operand as declared, templates ("{{user.email}}") still in it. */
export interface FieldRule {
  readonly type: "field";
  readonly field: string;
  readonly operand: unknown;
  readonly hasTemplate: boolean;
}

/** One member of `"user_condition"`: the signed-in user's own field compared with a literal. */
export interface UserRule {
  readonly type: "user";
  readonly field: string;
  readonly op: UserOp;
  readonly value: unknown;
}

export type UserOp = "$eq" | "$ne" | "$in" | "$nin";
const USER_OPS: readonly string[] = ["$eq", "$ne", "$in", "$nin"];

/** `{{user.id}}`, `{{user.email}}`, `{{user.role}}`, `{{user.full_name}}`, `{{user.data.<field>}}`. */
const TEMPLATE_RE = /^\{\{\s*user\.([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)\s*\}\}$/;
/** The user's own fields, beside those of the app's User declaration. */
const SESSION_FIELDS = ["id", "email", "role", "full_name"];

/** The declared rules of an entity, read: per operation, and per field. */
export interface EntityRules {
  readonly record: ReadonlyMap<string, RuleNode>;
  readonly fields: ReadonlyMap<string, ReadonlyMap<string, RuleNode>>;
}

const NO_RULES: EntityRules = { record: new Map(), fields: new Map() };
const read = new WeakMap<EntityDef, EntityRules>();

/**
 * The entity's rules as a tree, read once: checkRules has read them at start-up, against the
 * schema; read without one, a template may name any user field.
 */
export function rulesOf(entity: EntityDef, schema?: Schema): EntityRules {
  let rules = read.get(entity);
  if (rules === undefined) read.set(entity, (rules = readRules(entity, schema)));
  return rules;
}

/** Refuses a schema any of whose rules cannot be read or could never apply, naming every one. */
export function checkRules(schema: Schema): void {
  const problems: string[] = [];
  for (const entity of schema.entities.values()) {
    try {
      const rules = rulesOf(entity, schema);
      for (const [operation, node] of rules.record) tryBinding(entity, node, `"rls"."${operation}"`);
      for (const [field, operations] of rules.fields) for (const [operation, node] of operations) tryBinding(entity, node, `field "${field}": "rls"."${operation}"`);
    } catch (error) {
      if (!(error instanceof SchemaError)) throw error;
      read.delete(entity);
      problems.push(error.message);
    }
  }
  if (problems.length === 1) throw new SchemaError(problems[0]!);
  if (problems.length > 1) throw new SchemaError(`The schema has ${problems.length} problems:\n${problems.map((message) => `- ${message}`).join("\n")}`);
}

function readRules(entity: EntityDef, schema: Schema | undefined): EntityRules {
  const fieldRules = [...entity.fields.values()].filter((field) => field.rls !== undefined);
  if (entity.rls === undefined && fieldRules.length === 0) return NO_RULES;
  const reader = new RuleReader(entity, schema);
  const record = new Map<string, RuleNode>();
  for (const [operation, [source, named]] of ruleByOperation(entity.rls ?? {}, RECORD_OPERATIONS)) record.set(operation, reader.rule(source, `"rls"."${named}"`));
  const fields = new Map<string, Map<string, RuleNode>>();
  for (const field of fieldRules) {
    const operations = new Map<string, RuleNode>();
    for (const [operation, [source, named]] of ruleByOperation(field.rls!, FIELD_OPERATIONS)) operations.set(operation, reader.rule(source, `field "${field.name}": "rls"."${named}"`));
    if (operations.size > 0) fields.set(field.name, operations);
  }
  return { record, fields };
}

/** What each rule decides: a record's create, read, update and delete; a field's read, and its writes at create and at update. */
const RECORD_OPERATIONS = ["create", "read", "update", "delete"];
const FIELD_OPERATIONS = ["read", "create", "update"];

/**
 * Each operation's rule, and the name it was declared under: its own, else Base44's "write", which
 * stands for every writing operation not given a rule of its own (docs/rules.md).
 */
function ruleByOperation(declared: Readonly<Record<string, RuleSource>>, operations: readonly string[]): Map<string, [RuleSource, string]> {
  const rules = new Map<string, [RuleSource, string]>();
  for (const operation of operations) {
    if (declared[operation] !== undefined) rules.set(operation, [declared[operation], operation]);
    else if (operation !== "read" && declared.write !== undefined) rules.set(operation, [declared.write, "write"]);
  }
  return rules;
}

class RuleReader {
  /** The fields users have; null when any name is accepted (no schema to check against). */
  private readonly userFields: ReadonlySet<string> | null;

  constructor(
    private readonly entity: EntityDef,
    schema: Schema | undefined,
  ) {
    this.userFields = schema === undefined ? null : new Set([...SESSION_FIELDS, ...(schema.entities.get(USER_ENTITY)?.fieldNames ?? [])]);
  }

  private hasUserField(name: string): boolean {
    return this.userFields === null || this.userFields.has(name);
  }

  private get userFieldList(): string {
    return [...(this.userFields ?? SESSION_FIELDS)].join(", ");
  }

  rule(source: RuleSource, where: string): RuleNode {
    if (typeof source === "boolean") return { type: "const", value: source };
    return this.condition(source, where);
  }

  private fail(where: string, message: string): never {
    throw new SchemaError(`${this.entity.file}: entity "${this.entity.name}", ${where}: ${message}`);
  }

  private condition(condition: Readonly<Record<string, unknown>>, where: string): RuleNode {
    const nodes: RuleNode[] = [];
    for (const [key, value] of Object.entries(condition)) {
      if (key === "$or" || key === "$and" || key === "$nor") {
        if (!Array.isArray(value) || value.length === 0 || !value.every(isPlainObject)) this.fail(where, `${key} takes a non-empty array of conditions, such as {"${key}": [{"created_by": "{{user.email}}"}, {"user_condition": {"role": "admin"}}]}.`);
        const parts = (value as Record<string, unknown>[]).map((part, at) => this.condition(part, `${where} ${key}[${at}]`));
        if (key === "$nor") nodes.push({ type: "not", node: { type: "or", nodes: parts } });
        else nodes.push({ type: key === "$and" ? "and" : "or", nodes: parts });
      } else if (key === "user_condition") {
        if (!isPlainObject(value)) this.fail(where, `"user_condition" must be an object of the user's fields, such as {"role": "admin"}.`);
        for (const [field, operand] of Object.entries(value)) nodes.push(this.userRule(field, operand, where));
      } else if (key.startsWith("$")) {
        this.fail(where, `"${key}" is no combinator; a condition combines with "$and", "$or" and "$nor", and compares fields by name.`);
      } else {
        nodes.push(this.fieldRule(key, value, where));
      }
    }
    return nodes.length === 1 ? nodes[0]! : { type: "and", nodes };
  }

  private fieldRule(key: string, operand: unknown, where: string): FieldRule {
    // Base44 writes a declared field as data.<field>, as its records hold them, and the id as _id too.
    const field = key === "_id" ? "id" : key.startsWith("data.") ? key.slice(5) : key;
    const root = field.split(".")[0]!;
    if (!this.entity.fields.has(root) && !PLATFORM_FIELD_DEFS.has(root)) {
      this.fail(where, `the condition names "${key}", which ${this.entity.name} does not have; name a declared field (${this.entity.fieldNames.join(", ") || "none"}) or id, created_by, created_by_id, created_date, updated_date.`);
    }
    let hasTemplate = false;
    visitStrings(operand, (text) => {
      if (!text.includes("{{")) return;
      hasTemplate = true;
      this.templatePath(text, where);
    });
    return { type: "field", field, operand, hasTemplate };
  }

  /** The user field a template names ("email", "data.department"), refused when the user has no such field. */
  private templatePath(text: string, where: string): string {
    const match = TEMPLATE_RE.exec(text);
    if (!match) this.fail(where, `${JSON.stringify(text)} is no template; a template is the whole value, one of "{{user.id}}", "{{user.email}}", "{{user.role}}", "{{user.data.<field>}}".`);
    const path = match[1]!;
    const name = path.startsWith("data.") ? path.slice(5) : path;
    if (name.includes(".") || !this.hasUserField(name)) {
      this.fail(where, `${JSON.stringify(text)} names a user field "${name}" that users do not have; users have ${this.userFieldList} (declare more in entities/User.json).`);
    }
    return path;
  }

  private userRule(key: string, operand: unknown, where: string): UserRule {
    const field = key.startsWith("data.") ? key.slice(5) : key;
    if (!this.hasUserField(field)) this.fail(where, `"user_condition" names "${key}", which users do not have; users have ${this.userFieldList} (declare more in entities/User.json).`);
    if (!isPlainObject(operand)) return { type: "user", field, op: "$eq", value: operand };
    const entries = Object.entries(operand);
    const [op, value] = entries[0] ?? [];
    if (entries.length !== 1 || !USER_OPS.includes(op!)) this.fail(where, `"user_condition"."${key}" takes a value or one of ${USER_OPS.join(", ")}, such as {"$in": ["admin", "editor"]}.`);
    if ((op === "$in" || op === "$nin") && !Array.isArray(value)) this.fail(where, `"user_condition"."${key}": ${op} takes an array of values.`);
    return { type: "user", field, op: op as UserOp, value };
  }
}

/** The fields a read rule compares for equality with a template ("each user's own"): worth an index of their values. */
export function ruleEqualityFields(entity: EntityDef, schema: Schema): string[] {
  const out: string[] = [];
  const visit = (node: RuleNode): void => {
    if (node.type === "and" || node.type === "or") node.nodes.forEach(visit);
    else if (node.type === "field" && typeof node.operand === "string" && node.hasTemplate && !node.field.includes(".")) out.push(node.field);
  };
  const read = rulesOf(entity, schema).record.get("read");
  if (read !== undefined) visit(read);
  return out;
}

function visitStrings(value: unknown, visit: (text: string) => void): void {
  if (typeof value === "string") visit(value);
  else if (Array.isArray(value)) for (const item of value) visitStrings(item, visit);
  else if (isPlainObject(value)) for (const item of Object.values(value)) visitStrings(item, visit);
}

/** The user field path a template names ("email", "data.department"), or undefined when `text` is none. */
export function templatePathOf(text: string): string | undefined {
  return TEMPLATE_RE.exec(text)?.[1];
}

/** Parses every field condition of `node` once, with templates given a value of their field's kind: a rule whose operands cannot fit its field is refused now, not on its first request. */
function tryBinding(entity: EntityDef, node: RuleNode, where: string): void {
  switch (node.type) {
    case "and":
    case "or":
      for (const part of node.nodes) tryBinding(entity, part, where);
      return;
    case "not":
      tryBinding(entity, node.node, where);
      return;
    case "field": {
      const field = entity.fields.get(node.field.split(".")[0]!) ?? PLATFORM_FIELD_DEFS.get(node.field)!;
      const operand = substitute(node.operand, () => sampleOf(field));
      try {
        parseFilter(entity, { [node.field]: operand }, FULL_ACCESS);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        throw new SchemaError(`${entity.file}: entity "${entity.name}", ${where}: ${error.message}`);
      }
      return;
    }
    default:
      return;
  }
}

/** Rules may name any field: they run for the service, whoever asks. */
export const FULL_ACCESS = { mayUseCreatedBy: true } as const;

/** `value` with each template replaced by `valueOf(its path)`; undefined when one has no value. */
export function substitute(value: unknown, valueOf: (path: string) => unknown): unknown {
  if (typeof value === "string") {
    const path = templatePathOf(value);
    return path === undefined ? value : valueOf(path);
  }
  if (Array.isArray(value)) {
    const items = value.map((item) => substitute(item, valueOf));
    return items.includes(undefined) ? undefined : items;
  }
  if (isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      const bound = substitute(item, valueOf);
      if (bound === undefined) return undefined;
      out[key] = bound;
    }
    return out;
  }
  return value;
}

function sampleOf(field: FieldDef): unknown {
  const declared = field.enum ?? field.items?.enum;
  if (declared !== undefined) return declared[0];
  switch (kindOf(field)) {
    case "number":
      return 0;
    case "boolean":
      return false;
    case "date":
      return "2000-01-01T00:00:00.000Z";
    default:
      return "x";
  }
}
