// What a caller may do with an entity's records under its rules (docs/rules.md): each rule bound
// with the caller's values into the same filter tree as `q`, so that every read path, on every
// store, narrows by it as it narrows by `q` (PostgreSQL in SQL, the memory store by its indexes).
// The secret key passes every rule; with no user signed in, every condition is false.

import { forbidden, recordNotFound } from "../errors.ts";
import type { Caller, SessionUser } from "../keys/caller.ts";
import { parseFilter } from "../query/filter.ts";
import type { FilterNode } from "../query/filter-tree.ts";
import { compileFilter, isStructurallyEqual, type Predicate } from "../query/predicate.ts";
import type { EntityDef } from "../schema/fields.ts";
import type { Row } from "../rows/row.ts";
import { FULL_ACCESS, rulesOf, substitute, templatePathOf, type RuleNode, type UserRule } from "./rule-tree.ts";
import { isPlainObject } from "../schema/load.ts";

export type RecordOperation = "create" | "read" | "update" | "delete";

/** A rule bound for one caller: every record, none, or those a filter matches. */
export type Verdict = true | false | BoundFilter;

export interface BoundFilter {
  readonly filter: FilterNode;
  readonly test: Predicate;
}

/** A filter no record matches: what a read rule denying everything narrows a read to. */
export const NO_RECORD: FilterNode = { type: "or", nodes: [] };

export interface Grants {
  readonly create: Verdict;
  readonly read: Verdict;
  readonly update: Verdict;
  readonly delete: Verdict;
  /** Fields the caller may not read on every record: never named in a request, left out of answers where unreadable. */
  readonly unreadable: ReadonlyMap<string, Verdict> | null;
  /** Fields the caller may not set on every record it creates ("rls"."create", else "write"). */
  readonly uncreatable: ReadonlyMap<string, Verdict> | null;
  /** Fields the caller may not change on every record it updates ("rls"."update", else "write"). */
  readonly unupdatable: ReadonlyMap<string, Verdict> | null;
}

const OPEN: Grants = { create: true, read: true, update: true, delete: true, unreadable: null, uncreatable: null, unupdatable: null };

/** Grants per entity for a key with no user, and per signed-in user (the object a token's check returns, reused for a while). */
const anonymousGrants = new WeakMap<EntityDef, Grants>();
const userGrants = new WeakMap<SessionUser, WeakMap<EntityDef, Grants>>();

/** Whether the entity declares any rule: only then does a read or write need its caller's grants. */
export function hasRules(entity: EntityDef): boolean {
  const rules = rulesOf(entity);
  return rules.record.size > 0 || rules.fields.size > 0;
}

export function grantsOf(entity: EntityDef, caller: Caller): Grants {
  if (caller.kind === "secret" || !hasRules(entity)) return OPEN;
  const user = caller.user;
  if (user === undefined) {
    let grants = anonymousGrants.get(entity);
    if (grants === undefined) anonymousGrants.set(entity, (grants = bindGrants(entity, undefined)));
    return grants;
  }
  let byEntity = userGrants.get(user);
  if (byEntity === undefined) userGrants.set(user, (byEntity = new WeakMap()));
  let grants = byEntity.get(entity);
  if (grants === undefined) byEntity.set(entity, (grants = bindGrants(entity, user)));
  return grants;
}

/** The filter a read by `caller` is narrowed by; null when it may read every record. */
export function readFilterOf(entity: EntityDef, caller: Caller): FilterNode | null {
  const verdict = grantsOf(entity, caller).read;
  return verdict === true ? null : verdict === false ? NO_RECORD : verdict.filter;
}

/** `filter` narrowed to what `caller` may read. */
export function narrowedFilter(entity: EntityDef, caller: Caller, filter: FilterNode | null): FilterNode | null {
  const rule = readFilterOf(entity, caller);
  if (rule === null) return filter;
  if (filter === null) return rule;
  // One level of "and", so that a store's planner sees the rule's equalities beside q's.
  return { type: "and", nodes: [...(rule.type === "and" ? rule.nodes : [rule]), ...(filter.type === "and" ? filter.nodes : [filter])] };
}

export function allows(verdict: Verdict, row: Row): boolean {
  return verdict === true || (verdict !== false && verdict.test(row));
}

/** The names of fields `caller` may not name in a request (q, sort, fields, distinct, aggregates); null when none. */
export function hiddenFieldsOf(entity: EntityDef, caller: Caller): ReadonlySet<string> | null {
  const unreadable = grantsOf(entity, caller).unreadable;
  return unreadable === null ? null : hiddenNames(unreadable);
}

const hiddenSets = new WeakMap<ReadonlyMap<string, Verdict>, ReadonlySet<string>>();
function hiddenNames(unreadable: ReadonlyMap<string, Verdict>): ReadonlySet<string> {
  let names = hiddenSets.get(unreadable);
  if (names === undefined) hiddenSets.set(unreadable, (names = new Set(unreadable.keys())));
  return names;
}

/** The fields of `row` that `caller` may not see; null when it may see all. */
export function fieldsHiddenIn(entity: EntityDef, caller: Caller, row: Row): readonly string[] | null {
  const unreadable = grantsOf(entity, caller).unreadable;
  if (unreadable === null) return null;
  let hidden: string[] | null = null;
  for (const [name, verdict] of unreadable) if (!allows(verdict, row)) (hidden ??= []).push(name);
  return hidden;
}

/** Refuses a write of `row` (as it would be stored) that the caller's `operation` rule does not allow (403). */
export function checkWrite(entity: EntityDef, caller: Caller, operation: "create" | "update" | "delete", row: Row, what: string): void {
  if (allows(grantsOf(entity, caller)[operation], row)) return;
  throw forbidden(`${what} is not allowed by ${entity.name}'s "rls"."${operation}" rule for ${caller.user === undefined ? "a caller who is not signed in" : "this user"} (docs/rules.md).`);
}

/** Refuses sent values of fields the caller may not write, at `operation`, on the record they would make (403 naming the field). */
export function checkFieldWrites(entity: EntityDef, caller: Caller, operation: "create" | "update", sent: Iterable<string>, row: Row): void {
  const unwritable = grantsOf(entity, caller)[operation === "create" ? "uncreatable" : "unupdatable"];
  if (unwritable === null) return;
  for (const name of sent) {
    const verdict = unwritable.get(name);
    if (verdict !== undefined && !allows(verdict, row)) {
      throw forbidden(`${entity.name}.${name} may not be written by ${caller.user === undefined ? "a caller who is not signed in" : "this user"}: its "rls" rule for ${operation === "create" ? "a create" : "an update"} does not allow it (docs/rules.md). Leave "${name}" out of the body.`);
    }
  }
}

function bindGrants(entity: EntityDef, user: SessionUser | undefined): Grants {
  const rules = rulesOf(entity);
  const verdictOf = (node: RuleNode | undefined): Verdict => (node === undefined ? true : verdict(entity, node, user));
  const fieldVerdicts = (operation: string): Map<string, Verdict> | null => {
    let out: Map<string, Verdict> | null = null;
    for (const [field, operations] of rules.fields) {
      const bound = verdictOf(operations.get(operation));
      if (bound !== true) (out ??= new Map()).set(field, bound);
    }
    return out;
  };
  return {
    create: verdictOf(rules.record.get("create")),
    read: verdictOf(rules.record.get("read")),
    update: verdictOf(rules.record.get("update")),
    delete: verdictOf(rules.record.get("delete")),
    unreadable: fieldVerdicts("read"),
    uncreatable: fieldVerdicts("create"),
    unupdatable: fieldVerdicts("update"),
  };
}

function verdict(entity: EntityDef, node: RuleNode, user: SessionUser | undefined): Verdict {
  if (node.type === "const") return node.value;
  // With no user signed in, a condition is false (docs/rules.md).
  if (user === undefined) return false;
  const bound = new Binder(entity, user).bind(node);
  if (bound.value === true || bound.value === false) return bound.value;
  return { filter: bound.value, test: compileFilter(bound.value) };
}

/**
 * A bound node, and whether a template without a value (a user lacking `data.department`) was met
 * in it: such a comparison is unknown, as SQL's NULL, so that a negation of it is no more true
 * than it is. An unknown is false where it decides.
 */
interface Bound {
  readonly value: FilterNode | boolean;
  readonly isUnknown: boolean;
}

const FALSE: Bound = { value: false, isUnknown: false };
const TRUE: Bound = { value: true, isUnknown: false };
const UNKNOWN: Bound = { value: false, isUnknown: true };

class Binder {
  constructor(
    private readonly entity: EntityDef,
    private readonly user: SessionUser,
  ) {}

  bind(node: RuleNode): Bound {
    switch (node.type) {
      case "const":
        return node.value ? TRUE : FALSE;
      case "user":
        return this.userTest(node) ? TRUE : FALSE;
      case "field":
        return this.field(node.field, node.operand);
      case "not": {
        const inner = this.bind(node.node);
        if (inner.isUnknown) return UNKNOWN;
        if (typeof inner.value === "boolean") return inner.value ? FALSE : TRUE;
        return { value: { type: "not", node: inner.value }, isUnknown: false };
      }
      case "and": {
        const parts: FilterNode[] = [];
        let isUnknown = false;
        for (const part of node.nodes.map((child) => this.bind(child))) {
          if (part.isUnknown) isUnknown = true;
          else if (part.value === false) return FALSE;
          else if (part.value !== true) parts.push(part.value);
        }
        if (isUnknown) return UNKNOWN;
        return parts.length === 0 ? TRUE : { value: parts.length === 1 ? parts[0]! : { type: "and", nodes: parts }, isUnknown: false };
      }
      case "or": {
        const parts: FilterNode[] = [];
        let isUnknown = false;
        for (const part of node.nodes.map((child) => this.bind(child))) {
          if (part.value === true) return TRUE;
          if (part.isUnknown) isUnknown = true;
          else if (part.value !== false) parts.push(part.value);
        }
        if (parts.length === 0) return isUnknown ? UNKNOWN : FALSE;
        return { value: parts.length === 1 ? parts[0]! : { type: "or", nodes: parts }, isUnknown };
      }
    }
  }

  private field(field: string, operand: unknown): Bound {
    const bound = substitute(operand, (path) => this.userValue(path));
    if (bound === undefined) return UNKNOWN;
    // A user's value is a value, never operators: an object standing for the whole operand
    // ({"team": "{{user.data.prefs}}"}) meets no record, as an object there never did. A user who may
    // edit its own record could otherwise set prefs to {"$ne": null} and meet the rule on every record.
    if (typeof operand === "string" && templatePathOf(operand) !== undefined && isPlainObject(bound)) return UNKNOWN;
    try {
      const node = parseFilter(this.entity, { [field]: bound }, FULL_ACCESS);
      return node === null ? TRUE : { value: node, isUnknown: false };
    } catch {
      // A user's value that does not fit the field (a number where text is declared): no record
      // holds it.
      return UNKNOWN;
    }
  }

  private userValue(path: string): unknown {
    const name = path.startsWith("data.") ? path.slice(5) : path;
    switch (name) {
      case "id":
        return this.user.id;
      case "email":
        return this.user.email;
      case "role":
        return this.user.role;
      default:
        return this.user.fields?.[name] ?? undefined;
    }
  }

  private userTest(rule: UserRule): boolean {
    const value = this.userValue(rule.field);
    switch (rule.op) {
      case "$eq":
        return isStructurallyEqual(value ?? null, rule.value);
      case "$ne":
        return !isStructurallyEqual(value ?? null, rule.value);
      case "$in":
        return (rule.value as unknown[]).some((item) => isStructurallyEqual(value ?? null, item));
      case "$nin":
        return !(rule.value as unknown[]).some((item) => isStructurallyEqual(value ?? null, item));
    }
  }
}

// ---- The checks of each write (docs/rules.md, "Writes") ----

/** A create of `row` (as it would be stored) from `body`: every field sent writable, and the create rule met (403). */
export function checkCreate(entity: EntityDef, caller: Caller, body: unknown, row: Row, what: string): void {
  if (caller.kind === "secret" || !hasRules(entity)) return;
  if (typeof body === "object" && body !== null) checkFieldWrites(entity, caller, "create", Object.keys(body), row);
  checkWrite(entity, caller, "create", row, what);
}

/** An update of the stored `row`: 404 when the caller may not read it (as if absent), 403 when it may read but not change it. */
export function checkUpdateOf(entity: EntityDef, caller: Caller, row: Row): void {
  if (caller.kind === "secret" || !hasRules(entity)) return;
  const grants = grantsOf(entity, caller);
  if (!allows(grants.read, row)) throw recordNotFound(entity.name, row.id);
  checkWrite(entity, caller, "update", row, `Changing ${entity.name} ${row.id}`);
}

/** The record an update would make: each changed field writable, and still within the update rule (403: no update moves a record out of its writer's reach). */
export function checkUpdated(entity: EntityDef, caller: Caller, changed: Iterable<string>, updated: Row): void {
  if (caller.kind === "secret" || !hasRules(entity)) return;
  checkFieldWrites(entity, caller, "update", changed, updated);
  if (allows(grantsOf(entity, caller).update, updated)) return;
  throw forbidden(`This change would move ${entity.name} ${updated.id} out of what its "rls"."update" rule lets this caller change; no update may do that (docs/rules.md).`);
}

/** A delete of the stored `row`: 404 when unreadable, 403 when readable but the delete rule refuses it. */
export function checkDeleteOf(entity: EntityDef, caller: Caller, row: Row): void {
  if (caller.kind === "secret" || !hasRules(entity)) return;
  if (!allows(grantsOf(entity, caller).read, row)) throw recordNotFound(entity.name, row.id);
  checkWrite(entity, caller, "delete", row, `Deleting ${entity.name} ${row.id}`);
}
