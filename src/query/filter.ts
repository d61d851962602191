// Parses `q` (docs/query-language.md) into a typed filter tree, checked against the entity's
// declaration: unknown fields and operators and wrongly typed operands are refused here, once,
// so that compiling and running the tree never meets a surprise. This file resolves names and
// reads the filter's structure; filter-operand.ts types each operator's operand.

import { forbidden, invalidFilter, invalidJson, unknownField } from "../errors.ts";
import { findTooDeep, MAX_JSON_DEPTH } from "../json-depth.ts";
import { isPlainObject } from "../schema/load.ts";
import { PLATFORM_FIELD_DEFS, kindOf, type EntityDef, type FieldDef, type ValueKind } from "../schema/fields.ts";
import { compareNode, refuseUnlessArray, regexNode, type Target } from "./filter-operand.ts";
import type { FilterNode } from "./filter-tree.ts";

// Deep enough for any filter a person or a query builder writes; bounded so recursion cannot overflow.
const MAX_FILTER_DEPTH = 64;
// A filter's cost is its nodes times the records it is tried on (docs/query-language.md#limits):
// each condition, and each $and/$or/$nor/$not/$elemMatch or object of several conditions, is a
// node. A hand-written filter or a query builder's holds a few dozen, and many equalities on one
// field are one $in (a set lookup), so 512 refuses only filters built to be slow.
export const MAX_FILTER_NODES = 512;
// Values listed in $in, $nin and $all, all lists together: a page of ids fits (lists of 500 for
// publishable keys, aggregates and distinct values of 1,000), and on PostgreSQL each value is a
// parameter of one statement, of which there may be 65,535.
export const MAX_FILTER_LIST_ITEMS = 1000;

export interface FieldAccess {
  /** False for publishable keys: created_by_id may be neither read nor filtered on (docs/api.md). */
  readonly mayUseCreatedBy: boolean;
  /** Fields the caller's rules keep from it (docs/rules.md): naming one is 403, else its values could be inferred. */
  readonly hidden?: ReadonlySet<string> | null;
}

// Lists and counts send the same few `q` texts again and again: each is parsed once per entity and
// access, and the tree (never changed once built) is shared. Bounded; the oldest entry goes first.
const MAX_PARSED_FILTERS = 256;
const parsedFilters = new WeakMap<EntityDef, Map<string, FilterNode | null>>();

/** Parses the text of `q`; null when it is absent or `{}` (no filter). */
export function parseFilterText(entity: EntityDef, text: string | null, access: FieldAccess): FilterNode | null {
  if (text === null || text.trim() === "") return null;
  let parsed = parsedFilters.get(entity);
  if (!parsed) parsedFilters.set(entity, (parsed = new Map()));
  const key = (access.mayUseCreatedBy ? "secret:" : "publishable:") + (access.hidden ? [...access.hidden].join(",") + ":" : "") + text;
  let node = parsed.get(key);
  if (node === undefined) {
    node = parseFilterJson(entity, text, access);
    if (parsed.size >= MAX_PARSED_FILTERS) parsed.delete(parsed.keys().next().value!);
    parsed.set(key, node);
  }
  return node;
}

function parseFilterJson(entity: EntityDef, text: string, access: FieldAccess): FilterNode | null {
  const tooDeep = findTooDeep(text);
  if (tooDeep !== -1) {
    throw invalidFilter(`Parameter q nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels (at position ${tooDeep}); flatten it.`, { parameter: "q", maxDepth: MAX_JSON_DEPTH, position: tooDeep });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalidJson(`Parameter q is not valid JSON; send a URL-encoded JSON object such as q={"status":"done"}.`, { parameter: "q" });
  }
  return parseFilter(entity, value, access);
}

export function parseFilter(entity: EntityDef, value: unknown, access: FieldAccess): FilterNode | null {
  const node = parseSavedFilter(entity, value, access);
  if (node) checkFilterSize(node);
  return node;
}

/**
 * A filter saved when it was accepted (a webhook's q), read again without the size limits: they
 * are checked when it is saved, and one saved before they were set keeps working.
 */
export function parseSavedFilter(entity: EntityDef, value: unknown, access: FieldAccess): FilterNode | null {
  if (!isPlainObject(value)) {
    throw invalidJson(`A filter must be a JSON object keyed by field name, such as {"status":"done"}.`, { parameter: "q" });
  }
  const node = parseObject(fieldsOf(entity, access), value, 0);
  return node.type === "and" && node.nodes.length === 0 ? null : node;
}

/** Refuses a tree of more than MAX_FILTER_NODES nodes, or lists of more than MAX_FILTER_LIST_ITEMS values together. */
function checkFilterSize(root: FilterNode): void {
  let nodes = 0;
  let listItems = 0;
  const stack = [root];
  while (stack.length > 0) {
    const node = stack.pop()!;
    nodes++;
    if (node.type === "and" || node.type === "or") for (const part of node.nodes) stack.push(part);
    else if (node.type === "not" || node.type === "elemMatch") stack.push(node.node);
    else if (node.type === "compare" && (node.op === "$in" || node.op === "$nin" || node.op === "$all")) listItems += (node.value as unknown[]).length;
  }
  if (nodes > MAX_FILTER_NODES) {
    throw invalidFilter(
      `The filter has ${nodes} nodes (each condition counts one, and each $and, $or, $nor, $not, $elemMatch or object of several conditions one more); at most ${MAX_FILTER_NODES} are accepted. ` +
        `Write equalities on one field as one list ({"priority": {"$in": [1, 2, 3]}} rather than an $or of {"priority": 1}, ...), or split the request.`,
      { nodes, maxNodes: MAX_FILTER_NODES },
    );
  }
  if (listItems > MAX_FILTER_LIST_ITEMS) {
    throw invalidFilter(
      `The filter's $in, $nin and $all lists hold ${listItems} values together; at most ${MAX_FILTER_LIST_ITEMS} are accepted. Split the request into several of at most ${MAX_FILTER_LIST_ITEMS} values each.`,
      { listItems, maxListItems: MAX_FILTER_LIST_ITEMS },
    );
  }
}

/** The field a possibly dotted name resolves to, resolved through the schema (or the platform). */
export function resolveField(entity: EntityDef, name: string, access: FieldAccess): FieldDef {
  const field = entity.fields.get(name) ?? PLATFORM_FIELD_DEFS.get(name);
  if (!field) throw unknownField(name, allFieldNames(entity, access), entity.name);
  if (name === "created_by_id" && !access.mayUseCreatedBy) {
    throw forbidden(`A publishable key cannot use created_by_id; use a secret key.`);
  }
  if (access.hidden?.has(name)) throw hiddenField(entity, name);
  return field;
}

/** 403 for naming a field the caller's rules keep from it (docs/rules.md). */
export function hiddenField(entity: EntityDef, name: string) {
  const error = forbidden(`${entity.name}.${name} is not readable by this caller (its "rls"."read" rule, docs/rules.md), so it cannot be named in a filter, sort, field list, distinct or aggregate.`);
  error.details.field = name;
  return error;
}

export function allFieldNames(entity: EntityDef, access: FieldAccess): string[] {
  // created_by (a signed-in user's email, docs/users.md) is filterable too, but only records users made have it.
  const platform = access.mayUseCreatedBy ? ["id", "created_date", "updated_date", "created_by_id"] : ["id", "created_date", "updated_date"];
  const declared = access.hidden ? entity.fieldNames.filter((name) => !access.hidden!.has(name)) : entity.fieldNames;
  return [...declared, ...platform];
}

/** What a name in a filter reaches: a field of the entity, or a member of an array element. */
type Resolve = (name: string) => Target;

const COMBINATORS = ["$and", "$or", "$nor"];

function parseObject(resolve: Resolve, object: Record<string, unknown>, depth: number): FilterNode {
  checkDepth(depth);
  const nodes: FilterNode[] = [];
  for (const [name, value] of Object.entries(object)) {
    if (COMBINATORS.includes(name)) {
      if (!Array.isArray(value) || value.length === 0 || !value.every(isPlainObject)) {
        throw invalidFilter(`${name} takes a non-empty array of filter objects, such as {"${name}":[{"a":1},{"b":2}]}.`, { operator: name });
      }
      const parts = value.map((part) => parseObject(resolve, part as Record<string, unknown>, depth + 1));
      if (name === "$nor") nodes.push({ type: "not", node: { type: "or", nodes: parts } });
      else nodes.push({ type: name === "$and" ? "and" : "or", nodes: parts });
    } else if (name.startsWith("$")) {
      const hint = name === "$not" ? ` $not goes inside a field's condition, as in {"priority": {"$not": {"$gt": 3}}}.` : "";
      throw invalidFilter(`Unknown operator ${name} at the top of a filter; only $and, $or and $nor combine filters there.${hint}`, { operator: name });
    } else {
      nodes.push(...parseCondition(resolve(name), value, depth));
    }
  }
  return allOf(nodes);
}

function allOf(nodes: FilterNode[]): FilterNode {
  return nodes.length === 1 ? nodes[0]! : { type: "and", nodes };
}

function checkDepth(depth: number): void {
  if (depth > MAX_FILTER_DEPTH) throw invalidFilter(`The filter nests deeper than ${MAX_FILTER_DEPTH} levels; flatten it.`);
}

/** Names resolved through the entity's declaration (and the platform fields). */
function fieldsOf(entity: EntityDef, access: FieldAccess): Resolve {
  return (name) => {
    const path = name.split(".");
    const field = resolveField(entity, path[0]!, access);
    if (path.length > 1 && field.type !== "object") {
      throw invalidFilter(`Field "${path[0]}" is not an object field, so "${name}" reaches into nothing; dotted names work on object fields only.`, { field: name });
    }
    refuseEmptyPart(name, path);
    return describeTarget(field, path, name);
  };
}

/**
 * Members of the elements of an array: undeclared (declarations give objects no properties), so
 * compared as JSON, as dotted names inside object fields are.
 */
function membersOf(array: Target): Resolve {
  return (name) => {
    const path = name.split(".");
    refuseEmptyPart(`${array.name}.${name}`, path);
    return { name: `${array.name}.${name}`, path, kind: "json", isArray: false, field: undefined, declared: undefined };
  };
}

function refuseEmptyPart(name: string, path: string[]): void {
  if (path.some((part) => part === "")) throw invalidFilter(`"${name}" has an empty part; write <field>.<subfield>.`, { field: name });
}

function parseCondition(target: Target, value: unknown, depth: number): FilterNode[] {
  const name = target.name;
  const operators = isPlainObject(value) ? Object.keys(value) : [];
  if (operators.length > 0 && operators.every((op) => op.startsWith("$"))) {
    return parseOperators(target, value as Record<string, unknown>, depth);
  }
  if (operators.some((op) => op.startsWith("$"))) {
    throw invalidFilter(`The condition on "${name}" mixes operators and plain keys; write either {"$op": value, ...} or a plain value.`, { field: name });
  }
  // docs/query-language.md and the SDK: a plain array means any of its values, on every field (MongoDB's
  // whole-array equality is written {"$eq": [...]}).
  if (Array.isArray(value)) return [compareNode(target, "$in", value, true)];
  return [compareNode(target, "$eq", value)];
}

function describeTarget(field: FieldDef, path: string[], name: string): Target {
  if (path.length > 1) return { name, path, kind: "json", isArray: false, field: undefined, declared: undefined };
  const isArray = field.type === "array";
  return { name, path, kind: kindOf(field), isArray, field: isArray ? field.items : field, declared: field };
}

/** The conditions of an operator object, such as {"$gte": 1, "$lt": 5}, all to hold. */
function parseOperators(target: Target, operators: Record<string, unknown>, depth: number): FilterNode[] {
  const nodes: FilterNode[] = [];
  for (const [op, operand] of Object.entries(operators)) {
    if (op === "$regex") nodes.push(regexNode(target, operand, operators.$options));
    else if (op === "$not") nodes.push(notNode(target, operand, depth + 1));
    else if (op === "$elemMatch") nodes.push(elemMatchNode(target, operand, depth + 1));
    else if (op === "$options") {
      if (!Object.hasOwn(operators, "$regex")) {
        throw invalidFilter(`$options on "${target.name}" goes with $regex, as in {"$regex": "^ab", "$options": "i"}.`, { field: target.name, operator: op });
      }
    } else nodes.push(compareNode(target, op, operand));
  }
  return nodes;
}

/**
 * `$not` inverts an operator object as a whole, so it matches records lacking the field too
 * (MongoDB's rule): {"n": {"$not": {"$gt": 3}}} matches n ≤ 3 and no n at all.
 */
function notNode(target: Target, operand: unknown, depth: number): FilterNode {
  checkDepth(depth);
  const operators = isPlainObject(operand) ? Object.keys(operand) : [];
  if (operators.length === 0 || !operators.every((op) => op.startsWith("$"))) {
    throw invalidFilter(
      `Operator $not on "${target.name}" takes an operator object, such as {"$not": {"$gt": 3}} (got ${JSON.stringify(operand)}); for "not equal to a value" use $ne.`,
      { field: target.name, operator: "$not" },
    );
  }
  return { type: "not", node: allOf(parseOperators(target, operand as Record<string, unknown>, depth)) };
}

/**
 * `$elemMatch` asks for one element that meets every condition at once. Its operand is an
 * operator object applied to each element ({"$gte": 80, "$lt": 85}), or, for elements that may
 * be objects, a filter over the element's members ({"k": 1, "n": {"$gt": 2}}).
 */
function elemMatchNode(target: Target, operand: unknown, depth: number): FilterNode {
  checkDepth(depth);
  refuseUnlessArray(target, "$elemMatch");
  const details = { field: target.name, operator: "$elemMatch" };
  const names = isPlainObject(operand) ? Object.keys(operand) : [];
  if (names.length === 0) {
    throw invalidFilter(
      `Operator $elemMatch on "${target.name}" takes a non-empty object: an operator object for each element, such as {"$elemMatch": {"$gte": 80, "$lt": 85}}, or conditions on an element's members, such as {"$elemMatch": {"k": 1}} (got ${JSON.stringify(operand)}).`,
      details,
    );
  }
  const element = elementOf(target);
  const isOperator = (name: string) => name.startsWith("$") && !COMBINATORS.includes(name);
  const object = operand as Record<string, unknown>;
  let node: FilterNode;
  if (names.every(isOperator)) node = allOf(parseOperators(element, object, depth));
  else if (names.some(isOperator)) {
    throw invalidFilter(`The $elemMatch on "${target.name}" mixes operators and member names; write either {"$op": value, ...} for the element or {"member": condition, ...}.`, details);
  } else if (element.declared && element.declared.type !== "object") {
    throw invalidFilter(
      `"${target.name}" holds ${element.isArray ? "arrays" : PLURALS[element.kind]}, which have no members, so $elemMatch takes an operator object for each element, such as {"$elemMatch": {"$gte": 1}}.`,
      details,
    );
  } else node = parseObject(membersOf(target), object, depth);
  return { type: "elemMatch", field: target.name, path: target.path, node };
}

const PLURALS: Record<ValueKind, string> = { string: "strings", number: "numbers", boolean: "booleans", date: "dates", json: "JSON values" };

/** One element of the array a target names; its path starts at the element. */
function elementOf(array: Target): Target {
  const items = array.isArray ? array.field : undefined;
  if (!items) return { name: array.name, path: [], kind: "json", isArray: false, field: undefined, declared: undefined };
  const isArray = items.type === "array";
  return { name: array.name, path: [], kind: kindOf(items), isArray, field: isArray ? items.items : items, declared: items };
}

