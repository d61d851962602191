// Random records and random list cases for test/store/postgres-sql.test.ts: plan-property.test.ts's
// generators, widened with what SQL finds hard: values an older declaration left (a string in a
// number field, dates in odd forms), letters whose case folding differs between engines, LIKE's
// special characters, U+0000 and U+0001 (which the store escapes: stored-text.ts) in values and
// operands, text PostgreSQL cannot hold in operands, JSON reached through arrays.

import { parseFilter } from "../../src/query/filter.ts";
import type { FilterNode } from "../../src/query/filter-tree.ts";
import { loadSchemaObject } from "../../src/schema/load.ts";
import type { DeletedFilter, Row } from "../../src/store/store.ts";
import type { Random } from "../support/random.ts";
import { TASK } from "../support/server.ts";

export const ENTITY = "Item";
const DECLARATION = { ...TASK, name: ENTITY, properties: { ...TASK.properties, level: { type: "integer", enum: [1, 2, 3] } } };
export const entity = loadSchemaObject({ [ENTITY]: DECLARATION }).entities.get(ENTITY)!;
/** The fields server.ts gives a value index: booleans and scalar enums. */
export const VALUE_INDEXED = ["status", "done", "level"];
export const ACCESS = { mayUseCreatedBy: true };

type Data = Record<string, unknown>;

/** Around the characters a text's typed column keeps of its sort key ("a" + the text: typed-columns.ts). */
const LONG_TITLES = ["x".repeat(510), "x".repeat(511), "x".repeat(512), "x".repeat(511) + "a", "x".repeat(511) + "b", "x".repeat(600), "x".repeat(600) + "a", "x".repeat(510) + "\u0000", "x".repeat(510) + "\u0001y", "x".repeat(510) + "\u{1f600}", "x".repeat(509) + "\u{1f600}z"];
const TITLES = ["alpha", "Beta", "gamma", "ALPHA beta", "é", "É", "\uff3a", "\u{1f600}x", "", "delta", "alp", "ΟΔΟΣ", "İstanbul", "ſtop", "\u212aelvin", "Straße", "STRASSE", "\ufb05", "x%y_z\\w", "a\u0001b", "\ue000", "\u{10000}", "σς", "a\u0000b", "\u0000", "a\u0000", "a\u0001\u0002", "a\u0002", ...LONG_TITLES];
const STATUSES = ["todo", "doing", "done"];
const PRIORITIES = [-2, 0, 1, 2, 3, 5, 1e21, -0.5, 2 ** 53 + 2];
const ESTIMATES = [-1, 0.5, 1, 1.5, 2.25, 0.1, 1e-7];
const DUE_DATES = ["2026-01-01", "2026-01-02", "2026-01-03", "2026-01-05", "0000-02-29", "9999-12-31"];
const START_ATS = ["2026-01-01T00:00:00.000Z", "2026-01-01T12:00:00.000Z", "2026-01-02T00:00:00.000Z", "2026-01-03T06:30:00.000Z", "2026-01-01T12:00:00.123Z"];
const EMAILS = ["ann@x.io", "bob@x.io", "Cy@Y.io"];
const TAGS = ["a", "b", "c"];
const OWNERS = ["ann", "bob", "Ann", "ſam", "a\u0000nn"];
const KEY_IDS = ["key_a", "key_b"];
const SEARCHES = ["alp", "BETA", "x.io", "do", "2026-01-02", "é", "zzz", "a", "ς", "ISTAN", "stop", "KELVIN", "%", "_z", "a\u0000b", "ſ", "\u0001", "x%y", "", "\u0000", "\u0002", "A\u0000"];
/** Values of a field's wrong type, or dates in the forms parseDateValue takes or refuses. */
const LEFTOVERS: Record<string, unknown[]> = {
  title: [42, ["alpha"], null, true],
  status: ["TODO", 3, ["todo"], null],
  priority: ["2", true, [1, 2], null, { n: 1 }],
  estimate: ["1.5", null],
  done: ["true", 1, [true]],
  due_date: ["2026-01-02T10:00:00+01:00", "2026-1-2", "2026-02-30", "2024-02-29", "2100-02-29", 20260101, "2026-01-03T00:00:00.000Z", "2026-01-02 ", null],
  start_at: ["2026-01-01t12:00:00z", "2026-01-01T13:00+01:00", "2026-01-01T12:00:00.1239Z", "2026-01-02", "2026-01-01T24:00:00Z", "2026-01-01T12:00:00+24:00", "garbage", "2026-01-01T12:00:00.5-00:30", "0000-01-01T00:30:00+01:00"],
  email: [7],
  tags: ["a", [["b"]], ["a", ["a"], 1, null], ["A"], { a: 1 }],
  meta: ["flat", [{ owner: "ann" }, { owner: "bob", items: [{ k: 1 }] }], 5],
  level: ["2", 2.5],
};

export function pick<T>(next: Random, values: readonly T[]): T {
  return values[Math.floor(next() * values.length)]!;
}

function maybe(next: Random, field: string, make: () => unknown, present = 0.8): unknown {
  if (next() >= present) return undefined;
  return next() < 0.08 ? pick(next, LEFTOVERS[field]!) : make();
}

function randomMeta(next: Random): Data {
  const meta: Data = {};
  if (next() < 0.7) meta.owner = pick(next, OWNERS);
  if (next() < 0.5) meta.n = next() < 0.7 ? pick(next, [1, 2, 3]) : pick(next, ["2", "x"]);
  if (next() < 0.4) meta.flag = next() < 0.5;
  if (next() < 0.3) meta.a = next() < 0.8 ? pick(next, [{ b: pick(next, [1, 2]) }, { b: 1, c: 1 }, { c: 1, b: 1 }, [{ b: 1 }, { b: 2 }]]) : "flat";
  if (next() < 0.3) meta.items = Array.from({ length: Math.floor(next() * 3) }, () => (next() < 0.8 ? { k: pick(next, [1, 2, 3]) } : pick(next, [1, "k", null, [{ k: 1 }]])));
  if (next() < 0.1) meta.owner = null;
  if (next() < 0.1) meta["x'y"] = pick(next, ["q", 1]);
  return meta;
}

function randomFields(next: Random): Data {
  const data: Data = {
    title: maybe(next, "title", () => pick(next, TITLES), 0.95),
    status: maybe(next, "status", () => pick(next, STATUSES), 0.9),
    priority: maybe(next, "priority", () => pick(next, PRIORITIES)),
    estimate: maybe(next, "estimate", () => pick(next, ESTIMATES), 0.6),
    done: maybe(next, "done", () => next() < 0.5, 0.7),
    due_date: maybe(next, "due_date", () => pick(next, DUE_DATES), 0.6),
    start_at: maybe(next, "start_at", () => pick(next, START_ATS), 0.6),
    email: maybe(next, "email", () => pick(next, EMAILS), 0.5),
    tags: maybe(next, "tags", () => TAGS.filter(() => next() < 0.4), 0.7),
    meta: maybe(next, "meta", () => randomMeta(next), 0.6),
    level: maybe(next, "level", () => pick(next, [1, 2, 3]), 0.7),
  };
  for (const name of Object.keys(data)) if (data[name] === undefined) delete data[name];
  return data;
}

/** `count` rows as the memory store holds them: ids in time order, some sharing a millisecond, some deleted. */
export function randomRows(next: Random, count: number): Row[] {
  let ms = Date.UTC(2026, 0, 1);
  return Array.from({ length: count }, (_, n) => {
    if (next() < 0.6) ms += 1 + Math.floor(next() * 3);
    const id = ms.toString(16).padStart(12, "0") + n.toString(16).padStart(12, "0");
    const created = new Date(ms).toISOString();
    const updated = new Date(ms + Math.floor(next() * 3) * 1000).toISOString();
    const data = { id, ...randomFields(next), created_date: created, updated_date: updated, created_by_id: pick(next, KEY_IDS) };
    return { id, rev: n + 1, deleted: next() < 0.1, data };
  });
}

// ---------------------------------------------------------------- random filters

function randomOperand(next: Random, name: string, op: string, rows: readonly Row[], ops: string[]): unknown {
  const scalar = (): unknown => {
    switch (name) {
      case "title":
        return pick(next, [...TITLES, "a\u0000\u0000", "\ud800", "b\udc00", "Z"]);
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
        return pick(next, [...DUE_DATES, "2026-01-04", "2026-01-02T00:00:00Z", "2026-01-02T12:00:00.000Z", "2026-01-03T00:00:00+01:00", "2026-01-02T00:00:00.0019Z"]);
      case "start_at":
        return pick(next, [...START_ATS, "2026-01-01", "2026-01-02", "2026-01-01T12:00:00+00:00", "2026-01-03T07:30:00+01:00", "2026-01-01T12:00:00.1239Z", "2026-01-01T12:00:00.1230Z"]);
      case "email":
        return pick(next, [...EMAILS, "cy@y.io"]);
      case "tags":
      case "tag":
        return pick(next, [...TAGS, "d", "A"]);
      case "id":
      case "created_date":
      case "updated_date":
        return pick(next, rows).data[name];
      case "created_by_id":
        return pick(next, KEY_IDS);
      case "meta.owner":
        return pick(next, OWNERS);
      case "meta.n":
        return op === "$eq" || op === "$ne" || op === "$in" || op === "$nin" ? pick(next, [1, 2, "2", "x", true]) : pick(next, [1, 2, "2", "x"]);
      case "meta.flag":
        return next() < 0.5;
      case "meta.a.b":
      case "meta.a.1.b":
        return pick(next, [1, 2]);
      case "meta.a":
        return pick(next, [{ b: 1 }, { b: 2 }, { c: 1, b: 1 }, { b: 1, c: 1 }, { b: 1, c: 2 }, "flat"]);
      case "meta.items":
        return pick(next, [{ k: 1 }, [{ k: 1 }], [{ k: 1 }, { k: 2 }], "k", 1]);
      case "meta.items.k":
      case "meta.items.0.k":
        return pick(next, [1, 2, 3]);
      case "meta.x'y":
        return pick(next, ["q", 1]);
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
      return randomOperators(next, name, ops.filter((other) => other !== "$not" && other !== "$elemMatch"), rows);
    case "$elemMatch":
      if (name === "tags") return randomOperators(next, "tag", ["$eq", "$ne", "$in", "$gt", "$lt", "$regex", "$not", "$contains"], rows);
      if (next() < 0.3) return randomOperators(next, "meta.items", ["$eq", "$ne", "$in"], rows);
      if (next() < 0.3) return { $or: [{ k: randomOperand(next, "meta.items.k", "$eq", rows, []) }, { k: { $exists: false } }] };
      return { k: randomOperators(next, "meta.items.k", ["$eq", "$ne", "$gt", "$in", "$exists", "$not"], rows) };
    case "$exists":
      return next() < 0.5;
    case "$in":
    case "$nin":
      return Array.from({ length: Math.floor(next() * 3) }, () => (next() < 0.1 ? null : scalar()));
    case "$contains":
      if (name === "title" || name === "tag") return pick(next, ["alp", "BET", "a", "😀", "É", "Σ", "ος", "i", "stop", "STOP", "KEL", "%", "_", "\\", "x%y", "ß", "SS", "İ", "İST", "\u0001", "a\u0000", "\ud83d", "\ufb06", "", "\u0000", "\u0002", "\u0000b", "A\u0001"]);
      return name === "email" ? pick(next, ["@X", "ann", "y.io"]) : name === "tags" ? pick(next, ["A", "b"]) : pick(next, ["an", "O", "x", "AM"]);
    case "$eq":
    case "$ne":
      if (next() < 0.08) return null;
      if (name === "tags" && next() < 0.2) return TAGS.filter(() => next() < 0.5);
      if (name === "meta") return next() < 0.5 ? { owner: "ann" } : { flag: true };
      return scalar();
    default:
      return scalar();
  }
}

const FIELDS_AND_OPS: Array<[string, string[]]> = [
  ["title", ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$contains", "$contains", "$exists", "$regex", "$not"]],
  ["status", ["$eq", "$eq", "$eq", "$ne", "$in", "$nin", "$exists", "$gt"]],
  ["priority", ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$not"]],
  ["estimate", ["$eq", "$gt", "$lte", "$in", "$exists", "$ne"]],
  ["level", ["$eq", "$eq", "$ne", "$in", "$lt"]],
  ["done", ["$eq", "$eq", "$eq", "$ne", "$in", "$nin", "$exists", "$gt", "$lte"]],
  ["due_date", ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists"]],
  ["start_at", ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$exists"]],
  ["email", ["$eq", "$contains", "$exists", "$in"]],
  ["tags", ["$eq", "$ne", "$in", "$nin", "$contains", "$exists", "$gt", "$regex", "$not", "$all", "$size", "$elemMatch"]],
  ["meta", ["$exists", "$eq", "$ne"]],
  ["meta.owner", ["$eq", "$ne", "$in", "$nin", "$contains", "$exists", "$gt", "$regex", "$not"]],
  ["meta.n", ["$eq", "$ne", "$gt", "$lte", "$in", "$exists"]],
  ["meta.flag", ["$eq", "$ne", "$exists"]],
  ["meta.a.b", ["$eq", "$gte", "$exists"]],
  ["meta.a.1.b", ["$eq", "$exists"]],
  ["meta.a", ["$eq", "$ne", "$in", "$nin"]],
  ["meta.items", ["$eq", "$ne", "$exists", "$in", "$all", "$size", "$elemMatch", "$not"]],
  ["meta.items.k", ["$eq", "$ne", "$gt", "$in", "$nin", "$exists"]],
  ["meta.items.0.k", ["$eq", "$ne", "$exists"]],
  ["meta.x'y", ["$eq", "$exists"]],
  ["id", ["$eq", "$gt", "$lte", "$in"]],
  ["created_date", ["$gt", "$lte", "$eq"]],
  ["updated_date", ["$gte", "$lt"]],
  ["created_by_id", ["$eq", "$ne"]],
];

function randomOperators(next: Random, name: string, ops: string[], rows: readonly Row[]): Data {
  const conditions: Data = {};
  for (let i = next() < 0.8 ? 1 : 2; i > 0; i--) {
    const op = pick(next, ops);
    conditions[op] = randomOperand(next, name, op, rows, ops);
    if (op === "$regex" && next() < 0.5) conditions.$options = pick(next, ["i", "m", "s", "is"]);
  }
  return conditions;
}

function randomCondition(next: Random, rows: readonly Row[]): [string, unknown] {
  const [name, ops] = pick(next, FIELDS_AND_OPS);
  const conditions = randomOperators(next, name, ops, rows);
  const [onlyOp, ...others] = Object.keys(conditions);
  const operand = conditions[onlyOp!];
  // A plain value is $eq (unless it is an object, which would read as a whole-object equality), a plain array $in.
  if (others.length === 0 && onlyOp === "$eq" && (typeof operand !== "object" || operand === null) && next() < 0.6) return [name, operand];
  if (others.length === 0 && onlyOp === "$in" && next() < 0.4) return [name, operand];
  return [name, conditions];
}

function randomFilter(next: Random, rows: readonly Row[], depth: number): Data {
  const filter: Data = {};
  const parts = 1 + Math.floor(next() * (depth === 0 ? 3 : 2));
  for (let i = 0; i < parts; i++) {
    const roll = next();
    if (depth < 2 && roll < 0.15) filter.$or = Array.from({ length: 1 + Math.floor(next() * 3) }, () => randomFilter(next, rows, depth + 1));
    else if (depth < 2 && roll < 0.22) filter.$and = Array.from({ length: 1 + Math.floor(next() * 2) }, () => randomFilter(next, rows, depth + 1));
    else if (depth < 2 && roll < 0.3) filter.$nor = Array.from({ length: 1 + Math.floor(next() * 2) }, () => randomFilter(next, rows, depth + 1));
    else {
      const [name, condition] = randomCondition(next, rows);
      filter[name] = condition;
    }
  }
  return filter;
}

export const SORT_FIELDS = ["created_date", "updated_date", "id", "title", "status", "priority", "estimate", "done", "due_date", "start_at", "email", "level", "created_by_id"];

export interface Case {
  readonly q: Data | null;
  readonly search: string | null;
  readonly sort: string;
  readonly deleted: DeletedFilter;
}

export function randomCase(next: Random, rows: readonly Row[]): Case {
  return {
    q: next() < 0.1 ? null : randomFilter(next, rows, 0),
    search: next() < 0.15 ? pick(next, SEARCHES) : null,
    sort: (next() < 0.5 ? "-" : "") + pick(next, SORT_FIELDS),
    deleted: next() < 0.8 ? "exclude" : pick(next, ["only", "include"] as const),
  };
}

/** The filter tree of a case, as list-params.ts builds it: q and search ANDed. */
export function treeOf(q: Data | null, search: string | null): FilterNode | null {
  const filter = q === null ? null : parseFilter(entity, q, ACCESS);
  const searchNode: FilterNode | null = search === null ? null : { type: "search", fields: entity.textFields, text: search };
  if (!filter || !searchNode) return filter ?? searchNode;
  return { type: "and", nodes: [filter, searchNode] };
}
