// Seeded property test of the memory store's planner (store/memory/plan.ts through memory-store.ts):
// random records, random filters (parsed by query/filter.ts), sorts and pages, checked against a
// brute-force reference written here from docs/query-language.md alone: it reads the raw `q` JSON, not the
// parsed tree, then filters → sorts → slices. Cursor walks must equal one big page.

import assert from "node:assert/strict";
import { test } from "node:test";
import { parseFilter } from "../../src/query/filter.ts";
import type { FilterNode, SortPosition, SortSpec } from "../../src/query/filter-tree.ts";
import { parseSort } from "../../src/query/sort.ts";
import { loadSchemaObject } from "../../src/schema/load.ts";
import { MemoryStore } from "../../src/store/memory/memory-store.ts";
import type { DeletedFilter, Row } from "../../src/store/store.ts";
import { seeded, type Random } from "../support/random.ts";
import { TASK } from "../support/server.ts";

const SEED = 20260101;
const ENTITY = "Item";
const DECLARATION = { ...TASK, name: ENTITY, properties: { ...TASK.properties, level: { type: "integer", enum: [1, 2, 3] } } };
const entity = loadSchemaObject({ [ENTITY]: DECLARATION }).entities.get(ENTITY)!;
/** The fields server.ts gives a value index: booleans and scalar enums. */
const VALUE_INDEXED = ["status", "done", "level"];
const ACCESS = { mayUseCreatedBy: true };

type Data = Record<string, unknown>;
// ---------------------------------------------------------------- value domains

const TITLES = ["alpha", "Beta", "gamma", "ALPHA beta", "é", "\uff3a", "\u{1f600}x", "", "delta", "alp", "ΟΔΟΣ", "İstanbul"];
const STATUSES = ["todo", "doing", "done"];
const PRIORITIES = [-2, 0, 1, 2, 3, 5];
const ESTIMATES = [-1, 0.5, 1, 1.5, 2.25];
const DUE_DATES = ["2026-01-01", "2026-01-02", "2026-01-03", "2026-01-05"];
const START_ATS = ["2026-01-01T00:00:00.000Z", "2026-01-01T12:00:00.000Z", "2026-01-02T00:00:00.000Z", "2026-01-03T06:30:00.000Z"];
const EMAILS = ["ann@x.io", "bob@x.io", "Cy@Y.io"];
const TAGS = ["a", "b", "c"];
const OWNERS = ["ann", "bob", "Ann"];
const KEY_IDS = ["key_a", "key_b"];
const SEARCHES = ["alp", "BETA", "x.io", "do", "2026-01-02", "é", "zzz", "a", "ς", "ISTAN"];
const BASE_MS = Date.UTC(2026, 0, 1);

function pick<T>(next: Random, values: readonly T[]): T {
  return values[Math.floor(next() * values.length)]!;
}

function maybe<T>(next: Random, make: () => T, present = 0.8): T | undefined {
  return next() < present ? make() : undefined;
}

function randomMeta(next: Random): Data {
  const meta: Data = {};
  if (next() < 0.7) meta.owner = pick(next, OWNERS);
  if (next() < 0.5) meta.n = next() < 0.7 ? pick(next, [1, 2, 3]) : pick(next, ["2", "x"]);
  if (next() < 0.4) meta.flag = next() < 0.5;
  if (next() < 0.3) meta.a = next() < 0.8 ? pick(next, [{ b: pick(next, [1, 2]) }, { b: 1, c: 1 }, { c: 1, b: 1 }]) : "flat";
  if (next() < 0.3) meta.items = Array.from({ length: Math.floor(next() * 3) }, () => (next() < 0.8 ? { k: pick(next, [1, 2, 3]) } : pick(next, [1, "k", null])));
  if (next() < 0.1) meta.owner = null;
  return meta;
}

function randomFields(next: Random): Data {
  const data: Data = {
    title: maybe(next, () => pick(next, TITLES), 0.95),
    status: maybe(next, () => pick(next, STATUSES), 0.9),
    priority: maybe(next, () => pick(next, PRIORITIES)),
    estimate: maybe(next, () => pick(next, ESTIMATES), 0.6),
    done: maybe(next, () => next() < 0.5, 0.7),
    due_date: maybe(next, () => pick(next, DUE_DATES), 0.6),
    start_at: maybe(next, () => pick(next, START_ATS), 0.6),
    email: maybe(next, () => pick(next, EMAILS), 0.5),
    tags: maybe(next, () => TAGS.filter(() => next() < 0.4), 0.7),
    meta: maybe(next, () => randomMeta(next), 0.6),
    level: maybe(next, () => pick(next, [1, 2, 3]), 0.7),
  };
  for (const name of Object.keys(data)) if (data[name] === undefined) delete data[name];
  return data;
}

// ---------------------------------------------------------------- the store under test and a mirror

class World {
  readonly store = new MemoryStore(new Map([[ENTITY, VALUE_INDEXED]]));
  /** The newest version of every row, kept beside the store for the reference. */
  readonly rows = new Map<string, Row>();
  private ms = BASE_MS;
  private counter = 0;
  private rev = 0;

  constructor(private readonly next: Random) {}

  private put(row: Row): void {
    this.rows.set(row.id, row);
    void this.store.commit({ puts: [{ entity: ENTITY, row }] });
  }

  insert(): void {
    // Several records share a millisecond: created_date ties break on id.
    if (this.next() < 0.6) this.ms += 1 + Math.floor(this.next() * 3);
    const id = this.ms.toString(16).padStart(12, "0") + (this.counter++).toString(16).padStart(12, "0");
    const created = new Date(this.ms).toISOString();
    const data = { id, ...randomFields(this.next), created_date: created, updated_date: created, created_by_id: pick(this.next, KEY_IDS) };
    this.put({ id, rev: ++this.rev, deleted: this.next() < 0.1, data });
  }

  /** A new version of a random row: new field values, a later (or equal) updated_date, maybe deleted or restored. */
  change(): void {
    const old = pick(this.next, [...this.rows.values()]);
    const roll = this.next();
    let data: Data = { ...old.data };
    let deleted = old.deleted;
    if (roll < 0.2) deleted = !deleted;
    else {
      const fresh = randomFields(this.next);
      data = { id: old.id, ...fresh, created_date: old.data.created_date, created_by_id: old.data.created_by_id };
    }
    const updated = Date.parse(old.data.updated_date as string) + Math.floor(this.next() * 5000);
    data.updated_date = new Date(updated).toISOString();
    this.put({ id: old.id, rev: ++this.rev, deleted, data });
  }
}

// ---------------------------------------------------------------- the reference evaluator

type Kind = "string" | "number" | "boolean" | "date" | "json";

function kindOfField(name: string): { kind: Kind; isArray: boolean } {
  if (name.includes(".")) return { kind: "json", isArray: false };
  switch (name) {
    case "priority":
    case "estimate":
    case "level":
      return { kind: "number", isArray: false };
    case "done":
      return { kind: "boolean", isArray: false };
    case "due_date":
    case "start_at":
    case "created_date":
    case "updated_date":
      return { kind: "date", isArray: false };
    case "tags":
      return { kind: "string", isArray: true };
    case "meta":
      return { kind: "json", isArray: false };
    default:
      return { kind: "string", isArray: false };
  }
}

function isObject(value: unknown): value is Data {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The values a (dotted) name reaches, nulls and missing ones left out: objects by own members, and
 * a step over an array into each element that is an object, or to the element a numeric step names.
 */
function reached(data: Data, name: string): unknown[] {
  const [first, ...rest] = name.split(".");
  let values: unknown[] = [data[first!]];
  for (const part of rest) {
    values = values.flatMap((value) => {
      if (Array.isArray(value)) {
        if (/^(0|[1-9][0-9]*)$/.test(part)) return [value[Number(part)]];
        return value.filter((element) => isObject(element) && Object.hasOwn(element, part)).map((element) => (element as Data)[part]);
      }
      return isObject(value) && Object.hasOwn(value, part) ? [value[part]] : [];
    });
  }
  return values.filter((value) => value !== undefined && value !== null);
}

/** JSON text with every object's members sorted by name: equal for values equal whatever their order. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_, v) => (isObject(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1))) : v));
}

function dateMs(value: unknown): number | undefined {
  if (typeof value !== "string") return undefined;
  const ms = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value);
  return Number.isNaN(ms) ? undefined : ms;
}

function codePointOrder(a: string, b: string): number {
  const x = Array.from(a, (c) => c.codePointAt(0)!);
  const y = Array.from(b, (c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

/** The comparable form of a scalar for a kind; undefined when it is not of that kind. */
function comparable(kind: Kind, value: unknown): string | number | boolean | undefined {
  if (kind === "date") return dateMs(value);
  if (kind === "string") return typeof value === "string" ? value : undefined;
  if (kind === "number") return typeof value === "number" ? value : undefined;
  if (kind === "boolean") return typeof value === "boolean" ? value : undefined;
  return ["string", "number", "boolean"].includes(typeof value) ? (value as string | number | boolean) : undefined;
}

function order(a: string | number | boolean, b: string | number | boolean): number {
  if (typeof a === "string" && typeof b === "string") return codePointOrder(a, b);
  return Number(a) - Number(b);
}

/** One operator against one present scalar (an element, for array fields). */
function testScalar(kind: Kind, op: string, operand: unknown, value: unknown): boolean {
  const v = comparable(kind, value);
  switch (op) {
    case "$eq":
      return v !== undefined && v === comparable(kind, operand);
    case "$contains":
      return typeof value === "string" && containsFolded(value, String(operand));
    default: {
      const bound = comparable(kind, operand)!;
      if (v === undefined || typeof v !== typeof bound) return false;
      const o = order(v, bound);
      return op === "$gt" ? o > 0 : op === "$gte" ? o >= 0 : op === "$lt" ? o < 0 : o <= 0;
    }
  }
}

function matchesCondition(data: Data, name: string, op: string, operand: unknown): boolean {
  const { kind, isArray } = kindOfField(name);
  const values = reached(data, name);
  if (op === "$exists") return (values.length > 0) === operand;
  if ((op === "$eq" || op === "$ne") && operand === null) return (values.length > 0) === (op === "$ne");
  // null listed in $in/$nin stands for "no value".
  if ((op === "$in" || op === "$nin") && (operand as unknown[]).includes(null)) {
    const rest = (operand as unknown[]).filter((item) => item !== null);
    const listed = values.length === 0 || matchesCondition(data, name, "$in", rest);
    return op === "$in" ? listed : !listed;
  }
  // A negation matches exactly where its operator does not.
  const positive = op === "$ne" ? "$eq" : op === "$nin" ? "$in" : op;
  const negated = positive !== op;
  const any = values.some((value) => {
    // An array reached matches when an element does (a typed scalar field never holds one).
    const elements = !Array.isArray(value) ? [value] : isArray || kind === "json" ? value : [];
    if (positive !== "$eq" && positive !== "$in") return elements.some((element) => testScalar(kind, positive, operand, element));
    // $in is $eq with any listed value. Arrays and objects compare whole, or with an element of a reached array.
    const listed = positive === "$in" ? (operand as unknown[]) : [operand];
    return listed.some((item) =>
      typeof item === "object" ? [value, ...elements].some((v) => canonicalJson(v) === canonicalJson(item)) : elements.some((element) => testScalar(kind, "$eq", item, element)),
    );
  });
  return negated ? !any : any;
}

/** The operators of issue 17 (docs/query-language.md), from their definitions; the others go to matchesCondition. */
function matchesOperators(data: Data, name: string, operators: Data): boolean {
  return Object.entries(operators).every(([op, operand]) => {
    switch (op) {
      case "$options":
        return true;
      case "$regex": {
        const { kind, isArray } = kindOfField(name);
        const regex = new RegExp(operand as string, `${(operators.$options as string | undefined) ?? ""}u`);
        return reached(data, name).some((value) =>
          (Array.isArray(value) ? (isArray || kind === "json" ? value : []) : [value]).some((text) => typeof text === "string" && regex.test(text)),
        );
      }
      case "$not":
        return !matchesOperators(data, name, operand as Data);
      case "$all":
        return (operand as unknown[]).every((item) => matchesCondition(data, name, "$eq", item));
      case "$size":
        return reached(data, name).some((value) => Array.isArray(value) && value.length === operand);
      case "$elemMatch":
        return reached(data, name).some((value) => Array.isArray(value) && value.some((element) => elementMatches(name, element, operand as Data)));
      default:
        return matchesCondition(data, name, op, operand);
    }
  });
}

/**
 * One element against an $elemMatch operand, by putting it where a field of the same kind would
 * be: a tag as a title (a string field), an object element's members inside meta (JSON).
 */
function elementMatches(name: string, element: unknown, operand: Data): boolean {
  const isOperatorObject = Object.keys(operand).every((key) => key.startsWith("$") && !["$and", "$or", "$nor"].includes(key));
  if (name === "tags") return matchesOperators({ title: element }, "title", operand);
  if (isOperatorObject) return matchesOperators({ meta: element }, "meta", operand);
  // Members are looked up in an element that is an object only.
  return matchesFilter({ meta: isObject(element) ? element : {} }, insideMeta(operand));
}

function insideMeta(filter: Data): Data {
  return Object.fromEntries(
    Object.entries(filter).map(([key, condition]) =>
      key.startsWith("$") ? [key, (condition as Data[]).map(insideMeta)] : [`meta.${key}`, condition],
    ),
  );
}

function matchesFilter(data: Data, filter: Data): boolean {
  return Object.entries(filter).every(([name, condition]) => {
    if (name === "$and") return (condition as Data[]).every((part) => matchesFilter(data, part));
    if (name === "$or") return (condition as Data[]).some((part) => matchesFilter(data, part));
    if (name === "$nor") return !(condition as Data[]).some((part) => matchesFilter(data, part));
    if (isObject(condition) && Object.keys(condition).length > 0 && Object.keys(condition).every((op) => op.startsWith("$"))) {
      return matchesOperators(data, name, condition);
    }
    // A plain array means any of its values (docs/query-language.md).
    return matchesCondition(data, name, Array.isArray(condition) ? "$in" : "$eq", condition);
  });
}

/** Case-insensitive by a /iu regular expression (Unicode simple case folding), İ read as i (docs/query-language.md, "Search"). */
function containsFolded(text: string, needle: string): boolean {
  const dotless = (s: string) => s.replaceAll("\u0130", "i");
  return new RegExp(dotless(needle).replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "iu").test(dotless(text));
}

function matchesSearch(data: Data, text: string): boolean {
  return entity.textFields.some((name) => typeof data[name] === "string" && containsFolded(data[name] as string, text));
}

/** A row's sort value: numbers, ms for dates, 0/1 for booleans, strings; null when missing. */
function sortValue(data: Data, field: string): string | number | null {
  const value = data[field];
  const { kind } = kindOfField(field);
  if (kind === "date") return dateMs(value) ?? null;
  if (kind === "boolean") return typeof value === "boolean" ? Number(value) : null;
  if (kind === "number") return typeof value === "number" ? value : null;
  return typeof value === "string" ? value : null;
}

function compareRows(a: Row, b: Row, field: string): number {
  const x = sortValue(a.data, field);
  const y = sortValue(b.data, field);
  if (x !== y) {
    if (x === null) return 1;
    if (y === null) return -1;
    const o = typeof x === "string" ? codePointOrder(x, y as string) : (x as number) - (y as number);
    if (o !== 0) return o;
  }
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

interface Case {
  q: Data | null;
  search: string | null;
  sort: string;
  deleted: DeletedFilter;
}

function referenceList(rows: Iterable<Row>, c: Case): Row[] {
  const field = c.sort.replace(/^-/, "");
  const matching = [...rows].filter(
    (row) =>
      (c.deleted === "include" || row.deleted === (c.deleted === "only")) &&
      (c.q === null || matchesFilter(row.data as Data, c.q)) &&
      (c.search === null || matchesSearch(row.data as Data, c.search)),
  );
  matching.sort((a, b) => compareRows(a, b, field));
  if (c.sort.startsWith("-")) matching.reverse();
  return matching;
}

// ---------------------------------------------------------------- random filters

/** An operand for `op` on `name`; `ops` are the operators a $not there may wrap. */
function randomOperand(next: Random, name: string, op: string, world: World, ops: string[] = []): unknown {
  const { kind, isArray } = kindOfField(name);
  const scalar = (): unknown => {
    switch (name) {
      case "title":
        return pick(next, TITLES);
      case "status":
        return pick(next, STATUSES);
      case "priority":
        return pick(next, [...PRIORITIES, 4, 2.5]);
      case "estimate":
        return pick(next, [...ESTIMATES, 1.2]);
      case "level":
        return pick(next, [1, 2, 3]);
      case "done":
        return next() < 0.5;
      case "due_date":
        return next() < 0.5 ? pick(next, [...DUE_DATES, "2026-01-04"]) : pick(next, ["2026-01-02T00:00:00Z", "2026-01-02T12:00:00.000Z", "2026-01-03T00:00:00+01:00"]);
      case "start_at":
        return next() < 0.5 ? pick(next, START_ATS) : pick(next, ["2026-01-01", "2026-01-02", "2026-01-01T12:00:00+00:00", "2026-01-03T07:30:00+01:00"]);
      case "email":
        return pick(next, [...EMAILS, "cy@y.io"]);
      case "tags":
      case "tag":
        return pick(next, [...TAGS, "d"]);
      case "id":
      case "created_date":
      case "updated_date": {
        const row = pick(next, [...world.rows.values()]);
        return row.data[name];
      }
      case "created_by_id":
        return pick(next, KEY_IDS);
      case "meta.owner":
        return pick(next, OWNERS);
      case "meta.n":
        return op === "$eq" || op === "$ne" || op === "$in" || op === "$nin" ? pick(next, [1, 2, "2", "x", true]) : pick(next, [1, 2, "2", "x"]);
      case "meta.flag":
        return next() < 0.5;
      case "meta.a.b":
        return pick(next, [1, 2]);
      case "meta.a":
        return pick(next, [{ b: 1 }, { b: 2 }, { c: 1, b: 1 }, { b: 1, c: 1 }, { b: 1, c: 2 }]);
      case "meta.items":
        return pick(next, [{ k: 1 }, [{ k: 1 }], [{ k: 1 }, { k: 2 }], "k"]);
      case "meta.items.k":
      case "meta.items.0.k":
        return pick(next, [1, 2, 3]);
      default:
        throw new Error(`no operand for ${name}`);
    }
  };
  switch (op) {
    case "$regex":
      return name === "title"
        ? pick(next, ["^a", "a$", "^.$", "lp", "^(alpha|beta)", "\\p{Lu}", "ΟΔ", "^$", "İ", "^[^a]*$"])
        : name === "tags" || name === "tag" ? pick(next, ["^a", "b|c", "^[ab]$"]) : pick(next, ["^an", "N$", "^(ann|bob)$"]);
    case "$all":
      if (name === "tags") return [...TAGS, "d"].filter(() => next() < 0.4).concat(pick(next, TAGS));
      return pick(next, [[{ k: 1 }], [1], [{ k: 1 }, { k: 2 }], ["k", { k: 3 }], [{ k: 2 }]]);
    case "$size":
      return pick(next, [0, 1, 2, 3]);
    case "$not":
      return randomOperators(next, name, ops.filter((other) => other !== "$not" && other !== "$elemMatch"), world);
    case "$elemMatch":
      // "tag": one element of tags, a string.
      if (name === "tags") return randomOperators(next, "tag", ["$eq", "$ne", "$in", "$gt", "$lt", "$regex", "$not"], world);
      if (next() < 0.3) return randomOperators(next, "meta.items", ["$eq", "$ne", "$in"], world);
      if (next() < 0.3) return { $or: [{ k: randomOperand(next, "meta.items.k", "$eq", world) }, { k: { $exists: false } }] };
      return { k: randomOperators(next, "meta.items.k", ["$eq", "$ne", "$gt", "$in", "$exists", "$not"], world) };
    case "$exists":
      return next() < 0.5;
    case "$in":
    case "$nin":
      return Array.from({ length: Math.floor(next() * 3) }, () => (next() < 0.1 ? null : scalar()));
    case "$contains":
      return name === "title" ? pick(next, ["alp", "BET", "a", "😀", "É", "Σ", "ος", "i"]) : name === "email" ? pick(next, ["@X", "ann", "y.io"]) : name === "tags" ? pick(next, ["A", "b"]) : pick(next, ["an", "O", "x"]);
    case "$eq":
    case "$ne":
      if (next() < 0.08) return null;
      if (isArray && next() < 0.2) return TAGS.filter(() => next() < 0.5);
      if (name === "meta" && kind === "json") return next() < 0.5 ? { owner: "ann" } : { flag: true };
      return scalar();
    default:
      return scalar();
  }
}

const FIELDS_AND_OPS: Array<[string, string[]]> = [
  ["title", ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$contains", "$exists", "$regex", "$not"]],
  ["status", ["$eq", "$eq", "$eq", "$ne", "$in", "$nin", "$exists", "$gt"]],
  ["priority", ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$not"]],
  ["estimate", ["$eq", "$gt", "$lte", "$in", "$exists"]],
  ["level", ["$eq", "$eq", "$ne", "$in", "$lt"]],
  ["done", ["$eq", "$eq", "$eq", "$ne", "$in", "$nin", "$exists", "$gt"]],
  ["due_date", ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists"]],
  ["start_at", ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$exists"]],
  ["email", ["$eq", "$contains", "$exists", "$in"]],
  ["tags", ["$eq", "$ne", "$in", "$nin", "$contains", "$exists", "$gt", "$regex", "$not", "$all", "$size", "$elemMatch"]],
  ["meta", ["$exists", "$eq", "$ne"]],
  ["meta.owner", ["$eq", "$ne", "$in", "$nin", "$contains", "$exists", "$gt", "$regex", "$not"]],
  ["meta.n", ["$eq", "$ne", "$gt", "$lte", "$in", "$exists"]],
  ["meta.flag", ["$eq", "$ne", "$exists"]],
  ["meta.a.b", ["$eq", "$gte", "$exists"]],
  ["meta.a", ["$eq", "$ne", "$in", "$nin"]],
  ["meta.items", ["$eq", "$ne", "$exists", "$in", "$all", "$size", "$elemMatch", "$not"]],
  ["meta.items.k", ["$eq", "$ne", "$gt", "$in", "$nin", "$exists"]],
  ["meta.items.0.k", ["$eq", "$ne", "$exists"]],
  ["id", ["$eq", "$gt", "$lte", "$in"]],
  ["created_date", ["$gt", "$lte", "$eq"]],
  ["updated_date", ["$gte", "$lt"]],
  ["created_by_id", ["$eq", "$ne"]],
];

/** An operator object of one or two operators; $regex sometimes with $options. */
function randomOperators(next: Random, name: string, ops: string[], world: World): Data {
  const conditions: Data = {};
  for (let i = next() < 0.8 ? 1 : 2; i > 0; i--) {
    const op = pick(next, ops);
    conditions[op] = randomOperand(next, name, op, world, ops);
    if (op === "$regex" && next() < 0.5) conditions.$options = pick(next, ["i", "m", "s", "is"]);
  }
  return conditions;
}

function randomCondition(next: Random, world: World): [string, unknown] {
  const [name, ops] = pick(next, FIELDS_AND_OPS);
  const conditions = randomOperators(next, name, ops, world);
  const count = Object.keys(conditions).length;
  const [onlyOp] = Object.keys(conditions);
  // A plain value is $eq (unless it is an object, which would read as a whole-object equality), a
  // plain array $in.
  if (count === 1 && onlyOp === "$eq" && !isObject(conditions.$eq) && !Array.isArray(conditions.$eq) && next() < 0.6) return [name, conditions.$eq];
  if (count === 1 && onlyOp === "$in" && next() < 0.4) return [name, conditions.$in];
  return [name, conditions];
}

function randomFilter(next: Random, world: World, depth: number): Data {
  const filter: Data = {};
  const parts = 1 + Math.floor(next() * (depth === 0 ? 3 : 2));
  for (let i = 0; i < parts; i++) {
    const roll = next();
    if (depth < 2 && roll < 0.15) filter.$or = Array.from({ length: 1 + Math.floor(next() * 3) }, () => randomFilter(next, world, depth + 1));
    else if (depth < 2 && roll < 0.22) filter.$and = Array.from({ length: 1 + Math.floor(next() * 2) }, () => randomFilter(next, world, depth + 1));
    else if (depth < 2 && roll < 0.28) filter.$nor = Array.from({ length: 1 + Math.floor(next() * 2) }, () => randomFilter(next, world, depth + 1));
    else {
      const [name, condition] = randomCondition(next, world);
      filter[name] = condition;
    }
  }
  return filter;
}

/** Equality on a value-indexed field at the top, so the value-index path is taken often. */
function indexedEquality(next: Random): Data {
  const roll = next();
  if (roll < 0.4) return { status: pick(next, STATUSES) };
  if (roll < 0.7) return { done: next() < 0.5 };
  return { level: { $eq: pick(next, [1, 2, 3]) } };
}

const SORT_FIELDS = ["created_date", "updated_date", "id", "title", "status", "priority", "estimate", "done", "due_date", "start_at", "email", "level", "created_by_id"];

function randomCase(next: Random, world: World): Case {
  let q: Data | null = next() < 0.15 ? null : randomFilter(next, world, 0);
  if (next() < 0.3) q = { ...indexedEquality(next), ...(q ?? {}) };
  const sortField = next() < 0.5 ? pick(next, ["created_date", "updated_date", "id"]) : pick(next, SORT_FIELDS);
  return {
    q,
    search: next() < 0.15 ? pick(next, SEARCHES) : null,
    sort: (next() < 0.5 ? "-" : "") + sortField,
    deleted: next() < 0.8 ? "exclude" : pick(next, ["only", "include"] as const),
  };
}

function treeOf(c: Case): FilterNode | null {
  const filter = c.q === null ? null : parseFilter(entity, c.q, ACCESS);
  const search: FilterNode | null = c.search === null ? null : { type: "search", fields: entity.textFields, text: c.search };
  if (!filter || !search) return filter ?? search;
  return { type: "and", nodes: [filter, search] };
}

// ---------------------------------------------------------------- the properties

const ids = (rows: readonly Row[]) => rows.map((row) => row.id);

interface Prepared {
  c: Case;
  label: string;
  filter: FilterNode | null;
  sort: SortSpec;
  expected: Row[];
}

function prepare(world: World, c: Case, n: number): Prepared {
  const label = `case ${n}: ${JSON.stringify(c)}`;
  return { c, label, filter: treeOf(c), sort: parseSort(entity, c.sort, ACCESS), expected: referenceList(world.rows.values(), c) };
}

async function checkPage(world: World, p: Prepared, skip: number, limit: number): Promise<void> {
  const answer = (await world.store.list(ENTITY, { filter: p.filter, sort: p.sort, after: null, skip, limit, deleted: p.c.deleted }));
  assert.deepEqual(ids(answer.rows), ids(p.expected.slice(skip, skip + limit)), `${p.label} skip=${skip} limit=${limit}`);
  assert.equal(answer.hasMore, skip + limit < p.expected.length, `${p.label} skip=${skip} limit=${limit}: hasMore`);
}

async function checkCount(world: World, p: Prepared): Promise<void> {
  assert.equal((await world.store.count(ENTITY, p.filter, p.c.deleted)), p.expected.length, `${p.label}: count`);
}

/** Walks page by page from positions of the last row; the pages together equal one big page. */
async function checkCursorWalk(world: World, p: Prepared, limit: number): Promise<void> {
  const walked: Row[] = [];
  let after: SortPosition | null = null;
  for (let pages = 0; pages < 10_000; pages++) {
    const answer = (await world.store.list(ENTITY, { filter: p.filter, sort: p.sort, after, skip: 0, limit, deleted: p.c.deleted }));
    walked.push(...answer.rows);
    if (!answer.hasMore) break;
    assert.equal(answer.rows.length, limit, `${p.label}: a page before the last is full`);
    after = world.store.positionOf(ENTITY, answer.rows[answer.rows.length - 1]!, p.sort);
  }
  assert.deepEqual(ids(walked), ids(p.expected), `${p.label}: cursor walk with limit ${limit}`);
}

test("random filters, searches, sorts and pages agree with the brute-force reference", async () => {
  const next = seeded(SEED);
  const world = new World(next);
  for (let i = 0; i < 700; i++) world.insert();
  let matchedSome = 0;
  for (let n = 0; n < 400; n++) {
    // Keep writing between cases, so indexes built by earlier cases must follow inserts, updates, deletes.
    for (let w = Math.floor(next() * 6); w > 0; w--) (next() < 0.4 ? world.insert() : world.change());
    const p = prepare(world, randomCase(next, world), n);
    if (p.expected.length > 0) matchedSome++;
    await checkPage(world, p, 0, 1 + Math.floor(next() * 120));
    await checkPage(world, p, Math.floor(next() * 50), 1 + Math.floor(next() * 30));
    await checkCount(world, p);
  }
  assert.ok(matchedSome > 200, `filters should match something most of the time (${matchedSome}/400)`);
});

test("a cursor walk over any sort equals one big page, while filters use the value index or not", async () => {
  const next = seeded(SEED + 1);
  const world = new World(next);
  for (let i = 0; i < 600; i++) world.insert();
  for (let n = 0; n < 150; n++) {
    for (let w = Math.floor(next() * 4); w > 0; w--) (next() < 0.5 ? world.insert() : world.change());
    const p = prepare(world, randomCase(next, world), n);
    await checkCursorWalk(world, p, 1 + Math.floor(next() * 60));
  }
});

test("value-indexed equality (enum, boolean, integer enum) pages and counts like a scan", async () => {
  const next = seeded(SEED + 2);
  const world = new World(next);
  for (let i = 0; i < 1500; i++) world.insert();
  // Small pages favour walking the sort index; large ones favour sorting the candidates: both paths.
  const filters: Data[] = [
    { status: "todo" },
    { status: "doing", priority: { $gt: 0 } },
    { status: { $eq: "done" }, done: true },
    { done: false },
    { done: true, $or: [{ title: "alpha" }, { tags: "a" }] },
    { level: 2 },
    { level: 3, status: "todo", done: false },
  ];
  let n = 0;
  for (const q of filters) {
    for (const sort of ["-created_date", "created_date", "id", "-updated_date", "priority", "-title", "done"]) {
      for (let round = 0; round < 2; round++) {
        world.change();
        world.insert();
        const p = prepare(world, { q, search: round === 1 ? "a" : null, sort, deleted: "exclude" }, n++);
        for (const limit of [1, 7, 100, 2000]) await checkPage(world, p, 0, limit);
        await checkPage(world, p, 5, 10);
        await checkCount(world, p);
        await checkCursorWalk(world, p, pick(next, [3, 50, 400]));
      }
    }
  }
});

test("deleted rows leave the value index, restored rows return to it", async () => {
  const store = new MemoryStore(new Map([[ENTITY, VALUE_INDEXED]]));
  const sort = parseSort(entity, "-created_date", ACCESS);
  const filter = parseFilter(entity, { status: "todo" }, ACCESS);
  const base = { id: "000000000001000000000000", created_date: "2026-01-01T00:00:00.000Z", updated_date: "2026-01-01T00:00:00.000Z" };
  const versions: Array<[Row, number, number]> = [
    // row, then the count and page length of {status:"todo"} (live), and of deleted=only
    [{ id: base.id, rev: 1, deleted: false, data: { ...base, status: "todo" } }, 1, 0],
    [{ id: base.id, rev: 2, deleted: false, data: { ...base, status: "done" } }, 0, 0],
    [{ id: base.id, rev: 3, deleted: false, data: { ...base, status: "todo" } }, 1, 0],
    [{ id: base.id, rev: 4, deleted: true, data: { ...base, status: "todo" } }, 0, 1],
    [{ id: base.id, rev: 5, deleted: false, data: { ...base, status: "todo" } }, 1, 0],
  ];
  for (const [row, live, deleted] of versions) {
    void store.commit({ puts: [{ entity: ENTITY, row }] });
    assert.equal((await store.count(ENTITY, filter, "exclude")), live, `rev ${row.rev}: count`);
    assert.equal((await store.list(ENTITY, { filter, sort, after: null, skip: 0, limit: 10, deleted: "exclude" })).rows.length, live, `rev ${row.rev}: list`);
    assert.equal((await store.count(ENTITY, filter, "only")), deleted, `rev ${row.rev}: deleted count`);
    assert.equal((await store.count(ENTITY, null, "exclude")), row.deleted ? 0 : 1, `rev ${row.rev}: live count`);
  }
});

test("a value index built on first use, after writes, deletes and restores, holds the live rows only", async () => {
  const store = new MemoryStore(new Map([[ENTITY, VALUE_INDEXED]]));
  const filter = parseFilter(entity, { status: "todo" }, ACCESS);
  const at = "2026-01-01T00:00:00.000Z";
  const row = (n: number, rev: number, status: string, deleted = false): Row => {
    const id = n.toString(16).padStart(24, "0");
    return { id, rev, deleted, data: { id, created_date: at, updated_date: at, status } };
  };
  // 1 and 2 stay todo, 3 moves away from todo, 4 is deleted, 5 is deleted and restored.
  const writes = [row(1, 1, "todo"), row(2, 2, "todo"), row(3, 3, "todo"), row(4, 4, "todo"), row(5, 5, "todo"), row(3, 6, "done"), row(4, 7, "todo", true), row(5, 8, "todo", true), row(5, 9, "todo")];
  for (const version of writes) void store.commit({ puts: [{ entity: ENTITY, row: version }] });
  assert.equal((await store.count(ENTITY, filter, "exclude")), 3, "built now: rows 1, 2 and 5");
  void store.commit({ puts: [{ entity: ENTITY, row: row(1, 10, "doing") }] });
  assert.equal((await store.count(ENTITY, filter, "exclude")), 2, "maintained from then on");
  assert.equal((await store.count(ENTITY, filter, "only")), 1, "row 4, deleted, answered by a scan");
});

test("an equality answered by a value index agrees with the predicate on values an older declaration left", async () => {
  const store = new MemoryStore(new Map([[ENTITY, VALUE_INDEXED]]));
  const at = "2026-01-01T00:00:00.000Z";
  const values = ["todo", ["todo"], { todo: true }, 7, null, "TODO", true, [true], 1, [1]];
  values.forEach((value, n) => {
    const id = (n + 1).toString(16).padStart(24, "0");
    const data = { id, created_date: at, updated_date: at, status: value, done: value, level: value };
    void store.commit({ puts: [{ entity: ENTITY, row: { id, rev: n + 1, deleted: false, data } }] });
  });
  for (const q of [{ status: "todo" }, { done: true }, { level: 1 }, { level: { $eq: 1 } }]) {
    const indexed = parseFilter(entity, q, ACCESS);
    const scanned = parseFilter(entity, { $or: [q] }, ACCESS); // an $or is never answered from an index
    const sort = parseSort(entity, "id", ACCESS);
    assert.equal((await store.count(ENTITY, indexed, "exclude")), 1, JSON.stringify(q));
    assert.equal((await store.count(ENTITY, scanned, "exclude")), 1, `${JSON.stringify(q)} scanned`);
    const list = async (filter: FilterNode | null) => ids((await store.list(ENTITY, { filter, sort, after: null, skip: 0, limit: 100, deleted: "exclude" })).rows);
    assert.deepEqual(await list(indexed), await list(scanned), JSON.stringify(q));
  }
});
