// parseFilter (docs/query-language.md): `q` becomes a typed tree checked against the schema, and
// every refusal is decided here, before anything runs.

import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError } from "../../src/errors.ts";
import { parseFilter, parseFilterText, type FieldAccess } from "../../src/query/filter.ts";
import type { FilterNode } from "../../src/query/filter-tree.ts";
import { loadSchemaObject } from "../../src/schema/load.ts";
import { TASK } from "../support/server.ts";

const entity = loadSchemaObject({ Task: TASK }).entities.get("Task")!;
const SECRET: FieldAccess = { mayUseCreatedBy: true };
const PUBLIC: FieldAccess = { mayUseCreatedBy: false };

/** A compare node, with the schema facts filled in from the field name. */
function cmp(field: string, op: string, value: unknown): FilterNode {
  const path = field.split(".");
  const kinds: Record<string, [string, boolean]> = {
    title: ["string", false],
    status: ["string", false],
    priority: ["number", false],
    estimate: ["number", false],
    done: ["boolean", false],
    due_date: ["date", false],
    start_at: ["date", false],
    email: ["string", false],
    tags: ["string", true],
    meta: ["json", false],
    id: ["string", false],
    created_date: ["date", false],
    updated_date: ["date", false],
    created_by_id: ["string", false],
  };
  const [kind, isArray] = path.length > 1 ? ["json", false] : kinds[field]!;
  return { type: "compare", field, path, kind: kind as never, isArray, op: op as never, value };
}

const TREES: Array<[unknown, FilterNode | null]> = [
  [{}, null],
  [{ title: "a" }, cmp("title", "$eq", "a")],
  [{ title: null }, cmp("title", "$eq", null)],
  [{ priority: { $gt: 3 } }, cmp("priority", "$gt", 3)],
  [{ priority: { $gte: 1, $lt: 5 } }, { type: "and", nodes: [cmp("priority", "$gte", 1), cmp("priority", "$lt", 5)] }],
  [{ estimate: { $lte: 1.5 } }, cmp("estimate", "$lte", 1.5)],
  [{ done: false }, cmp("done", "$eq", false)],
  [{ status: { $in: ["todo", "done"] } }, cmp("status", "$in", ["todo", "done"])],
  [{ status: { $nin: [] } }, cmp("status", "$nin", [])],
  [{ priority: { $in: [null, 3] } }, cmp("priority", "$in", [null, 3])],
  [{ status: { $nin: [null] } }, cmp("status", "$nin", [null])],
  [{ "meta.sub": { $in: [null, "x"] } }, cmp("meta.sub", "$in", [null, "x"])],
  [{ status: { $ne: "doing" } }, cmp("status", "$ne", "doing")],
  [{ due_date: "2026-01-01" }, cmp("due_date", "$eq", "2026-01-01")],
  [{ due_date: { $lt: "2026-01-01T12:00:00Z" } }, cmp("due_date", "$lt", "2026-01-01T12:00:00Z")],
  [{ start_at: { $gte: "2026-01-01" } }, cmp("start_at", "$gte", "2026-01-01")],
  [{ start_at: { $lt: "2026-01-01T12:30:00.123+02:00" } }, cmp("start_at", "$lt", "2026-01-01T12:30:00.123+02:00")],
  [{ tags: "x" }, cmp("tags", "$eq", "x")],
  // A plain array means any of its values (docs/query-language.md), on every field; whole-array equality is $eq.
  [{ tags: ["x", "y"] }, cmp("tags", "$in", ["x", "y"])],
  [{ tags: { $eq: ["x", "y"] } }, cmp("tags", "$eq", ["x", "y"])],
  [{ title: ["a", "b"] }, cmp("title", "$in", ["a", "b"])],
  [{ priority: [1, null] }, cmp("priority", "$in", [1, null])],
  [{ tags: [] }, cmp("tags", "$in", [])],
  [{ "meta.sub": [{ a: 1 }, [2], 3] }, cmp("meta.sub", "$in", [{ a: 1 }, [2], 3])],
  [{ "meta.x": { $nin: [{ a: 1 }] } }, cmp("meta.x", "$nin", [{ a: 1 }])],
  [{ due_date: ["2026-01-01T00:00:00.000001Z", "2026-01-02"] }, cmp("due_date", "$in", ["2026-01-02"])],
  [{ tags: { $contains: "x" } }, cmp("tags", "$contains", "x")],
  [{ title: { $contains: "Wr" } }, cmp("title", "$contains", "Wr")],
  [{ email: { $exists: true } }, cmp("email", "$exists", true)],
  [{ meta: { $exists: false } }, cmp("meta", "$exists", false)],
  [{ "meta.owner": "ann" }, cmp("meta.owner", "$eq", "ann")],
  [{ "meta.a.b": { $gt: 2 } }, cmp("meta.a.b", "$gt", 2)],
  [{ "meta.flag": true }, cmp("meta.flag", "$eq", true)],
  [{ "meta.owner": { $contains: "an" } }, cmp("meta.owner", "$contains", "an")],
  [{ meta: { $eq: { a: 1 } } }, cmp("meta", "$eq", { a: 1 })],
  [{ id: "0123" }, cmp("id", "$eq", "0123")],
  [{ created_date: { $gt: "2026-01-01" } }, cmp("created_date", "$gt", "2026-01-01")],
  [{ updated_date: { $lte: "2026-01-01T00:00:00.000Z" } }, cmp("updated_date", "$lte", "2026-01-01T00:00:00.000Z")],
  [{ created_by_id: "k1" }, cmp("created_by_id", "$eq", "k1")],
  [{ title: "a", done: true }, { type: "and", nodes: [cmp("title", "$eq", "a"), cmp("done", "$eq", true)] }],
  [{ $or: [{ title: "a" }, { done: true }] }, { type: "or", nodes: [cmp("title", "$eq", "a"), cmp("done", "$eq", true)] }],
  [{ $and: [{ title: "a" }] }, { type: "and", nodes: [cmp("title", "$eq", "a")] }],
  [
    { status: "todo", $or: [{ priority: { $gt: 2 } }, { $and: [{ done: true }, { tags: { $in: ["a"] } }] }] },
    {
      type: "and",
      nodes: [
        cmp("status", "$eq", "todo"),
        { type: "or", nodes: [cmp("priority", "$gt", 2), { type: "and", nodes: [cmp("done", "$eq", true), cmp("tags", "$in", ["a"])] }] },
      ],
    },
  ],
  // A timestamp inside a millisecond becomes the same test on whole milliseconds (stored values).
  [{ start_at: { $lt: "2026-01-01T00:00:00.0019Z" } }, cmp("start_at", "$lte", "2026-01-01T00:00:00.001Z")],
  [{ start_at: { $lte: "2026-01-01T01:00:00.0019+01:00" } }, cmp("start_at", "$lte", "2026-01-01T00:00:00.001Z")],
  [{ start_at: { $gt: "2026-01-01T00:00:00.0019Z" } }, cmp("start_at", "$gt", "2026-01-01T00:00:00.001Z")],
  [{ created_date: { $gte: "2026-01-01T00:00:00.000001Z" } }, cmp("created_date", "$gt", "2026-01-01T00:00:00.000Z")],
  [{ start_at: "2026-01-01T00:00:00.0019Z" }, cmp("start_at", "$in", [])],
  [{ start_at: { $ne: "2026-01-01T00:00:00.0019Z" } }, cmp("start_at", "$nin", [])],
  [{ due_date: { $in: ["2026-01-01T00:00:00.000001Z", "2026-01-02"] } }, cmp("due_date", "$in", ["2026-01-02"])],
  // $not wraps an operator object whole; $nor is not-or, at the top or inside $and/$or
  [{ priority: { $not: { $gt: 3 } } }, { type: "not", node: cmp("priority", "$gt", 3) }],
  [{ priority: { $not: { $gte: 1, $lt: 5 } } }, { type: "not", node: { type: "and", nodes: [cmp("priority", "$gte", 1), cmp("priority", "$lt", 5)] } }],
  [{ priority: { $gt: 0, $not: { $eq: 3 } } }, { type: "and", nodes: [cmp("priority", "$gt", 0), { type: "not", node: cmp("priority", "$eq", 3) }] }],
  [{ title: { $not: { $regex: "^a", $options: "i" } } }, { type: "not", node: cmp("title", "$regex", { pattern: "^a", options: "i" }) }],
  [{ tags: { $not: { $not: { $in: ["a"] } } } }, { type: "not", node: { type: "not", node: cmp("tags", "$in", ["a"]) } }],
  [{ $nor: [{ title: "a" }, { done: true }] }, { type: "not", node: { type: "or", nodes: [cmp("title", "$eq", "a"), cmp("done", "$eq", true)] } }],
  [{ $and: [{ $nor: [{ title: "a" }] }] }, { type: "and", nodes: [{ type: "not", node: { type: "or", nodes: [cmp("title", "$eq", "a")] } }] }],
  [{ $or: [{ $nor: [{ title: "a" }] }, { done: true }] }, { type: "or", nodes: [{ type: "not", node: { type: "or", nodes: [cmp("title", "$eq", "a")] } }, cmp("done", "$eq", true)] }],
  // $all and $size on array fields and JSON paths
  [{ tags: { $all: ["a", "b"] } }, cmp("tags", "$all", ["a", "b"])],
  [{ tags: { $size: 0 } }, cmp("tags", "$size", 0)],
  [{ tags: { $size: 2, $all: ["a"] } }, { type: "and", nodes: [cmp("tags", "$size", 2), cmp("tags", "$all", ["a"])] }],
  [{ "meta.items": { $all: [1, { k: 1 }, [2]] } }, cmp("meta.items", "$all", [1, { k: 1 }, [2]])],
  [{ "meta.items": { $size: 3 } }, cmp("meta.items", "$size", 3)],
  // $regex carries its pattern and its options (sorted, each once) as data.
  [{ title: { $regex: "^a" } }, cmp("title", "$regex", { pattern: "^a", options: "" })],
  [{ title: { $regex: "^a", $options: "sii" } }, cmp("title", "$regex", { pattern: "^a", options: "is" })],
  [{ tags: { $options: "m", $regex: "x$" } }, cmp("tags", "$regex", { pattern: "x$", options: "m" })],
  [{ "meta.owner": { $regex: "(ann|bob)" } }, cmp("meta.owner", "$regex", { pattern: "(ann|bob)", options: "" })],
  [{ status: { $regex: "^do" } }, cmp("status", "$regex", { pattern: "^do", options: "" })],
  // Zeros past the millisecond name the millisecond itself: nothing to rewrite.
  [{ start_at: { $gte: "2026-01-01T00:00:00.001000Z" } }, cmp("start_at", "$gte", "2026-01-01T00:00:00.001000Z")],
];

test("parseFilter builds the typed tree of every operator, field kind and combinator", () => {
  for (const [input, expected] of TREES) {
    assert.deepEqual(parseFilter(entity, input, SECRET), expected, JSON.stringify(input));
  }
});

interface Refusal {
  status: number;
  code: string;
  details?: Record<string, unknown>;
}

const invalidFilter = (field: string | undefined, operator: string | undefined): Refusal => ({
  status: 400,
  code: "invalid_filter",
  details: { ...(field === undefined ? {} : { field }), ...(operator === undefined ? {} : { operator }) },
});

const REFUSALS: Array<[unknown, Refusal, FieldAccess?]> = [
  // not an object
  [[], { status: 400, code: "invalid_json" }],
  ["title", { status: 400, code: "invalid_json" }],
  [null, { status: 400, code: "invalid_json" }],
  [3, { status: 400, code: "invalid_json" }],
  // unknown fields list the real ones
  [{ nope: 1 }, { status: 400, code: "unknown_field", details: { field: "nope" } }],
  [{ "nope.x": 1 }, { status: 400, code: "unknown_field", details: { field: "nope" } }],
  [{ $or: [{ nope: 1 }] }, { status: 400, code: "unknown_field", details: { field: "nope" } }],
  [{ Title: "a" }, { status: 400, code: "unknown_field", details: { field: "Title" } }],
  // publishable keys may not filter on created_by_id
  [{ created_by_id: "k" }, { status: 403, code: "forbidden" }, PUBLIC],
  [{ $or: [{ title: "a" }, { created_by_id: "k" }] }, { status: 403, code: "forbidden" }, PUBLIC],
  // unknown operators
  [{ title: { $match: "a" } }, invalidFilter("title", "$match")],
  [{ title: { $eq: "a", $like: "b" } }, invalidFilter("title", "$like")],
  [{ $not: { title: "a" } }, invalidFilter(undefined, "$not")],
  // wrong operand types
  [{ priority: { $gt: "3" } }, invalidFilter("priority", "$gt")],
  [{ priority: "3" }, invalidFilter("priority", "$eq")],
  [{ priority: { $in: [1, "2"] } }, invalidFilter("priority", "$in")],
  [{ priority: { $in: 1 } }, invalidFilter("priority", "$in")],
  [{ priority: { $nin: "1" } }, invalidFilter("priority", "$nin")],
  [{ estimate: { $lt: true } }, invalidFilter("estimate", "$lt")],
  [{ done: "true" }, invalidFilter("done", "$eq")],
  [{ done: { $ne: 1 } }, invalidFilter("done", "$ne")],
  [{ title: 3 }, invalidFilter("title", "$eq")],
  [{ title: { $gt: 3 } }, invalidFilter("title", "$gt")],
  [{ title: [1] }, invalidFilter("title", "$in")],
  [{ title: [["a"]] }, invalidFilter("title", "$in")],
  [{ tags: [["a"]] }, invalidFilter("tags", "$in")],
  [{ status: ["todo", "finished"] }, invalidFilter("status", "$in")],
  [{ title: { $eq: { a: 1 } } }, invalidFilter("title", "$eq")],
  [{ due_date: "yesterday" }, invalidFilter("due_date", "$eq")],
  [{ due_date: { $gt: "2026-02-30" } }, invalidFilter("due_date", "$gt")],
  [{ start_at: { $lt: 1767225600000 } }, invalidFilter("start_at", "$lt")],
  [{ created_date: { $gt: "soon" } }, invalidFilter("created_date", "$gt")],
  [{ tags: { $in: [1] } }, invalidFilter("tags", "$in")],
  [{ email: { $exists: 1 } }, invalidFilter("email", "$exists")],
  [{ email: { $exists: "true" } }, invalidFilter("email", "$exists")],
  [{ "meta.x": { $gt: true } }, invalidFilter("meta.x", "$gt")],
  // $contains on text fields only, with a string
  [{ priority: { $contains: "1" } }, invalidFilter("priority", "$contains")],
  [{ done: { $contains: "t" } }, invalidFilter("done", "$contains")],
  [{ due_date: { $contains: "2026" } }, invalidFilter("due_date", "$contains")],
  [{ title: { $contains: 1 } }, invalidFilter("title", "$contains")],
  // $regex: text fields, a string pattern, options of i, m and s, nothing the automaton cannot run
  [{ priority: { $regex: "1" } }, invalidFilter("priority", "$regex")],
  [{ due_date: { $regex: "^2026" } }, invalidFilter("due_date", "$regex")],
  [{ done: { $regex: "t" } }, invalidFilter("done", "$regex")],
  [{ title: { $regex: 1 } }, invalidFilter("title", "$regex")],
  [{ title: { $regex: null } }, invalidFilter("title", "$regex")],
  [{ title: { $regex: "a", $options: "g" } }, invalidFilter("title", "$options")],
  [{ title: { $regex: "a", $options: "x" } }, invalidFilter("title", "$options")],
  [{ title: { $regex: "a", $options: 1 } }, invalidFilter("title", "$options")],
  [{ title: { $regex: "a", $options: "I" } }, invalidFilter("title", "$options")],
  [{ title: { $options: "i" } }, invalidFilter("title", "$options")],
  [{ title: { $regex: "a(?=b)" } }, invalidFilter("title", "$regex")],
  [{ title: { $regex: "(" } }, invalidFilter("title", "$regex")],
  [{ title: { $regex: "a".repeat(257) } }, invalidFilter("title", "$regex")],
  [{ title: { $regex: "(a)\\1" } }, invalidFilter("title", "$regex")],
  // enums are checked
  [{ status: "finished" }, invalidFilter("status", "$eq")],
  [{ status: { $ne: "finished" } }, invalidFilter("status", "$ne")],
  [{ status: { $in: ["todo", "finished"] } }, invalidFilter("status", "$in")],
  [{ status: { $nin: ["Todo"] } }, invalidFilter("status", "$nin")],
  // $all and $size: on arrays, with a non-empty typed list and a whole number
  [{ title: { $size: 1 } }, invalidFilter("title", "$size")],
  [{ meta: { $size: 1 } }, invalidFilter("meta", "$size")],
  [{ due_date: { $all: ["2026-01-01"] } }, invalidFilter("due_date", "$all")],
  [{ priority: { $all: [1] } }, invalidFilter("priority", "$all")],
  [{ tags: { $size: -1 } }, invalidFilter("tags", "$size")],
  [{ tags: { $size: 1.5 } }, invalidFilter("tags", "$size")],
  [{ tags: { $size: "1" } }, invalidFilter("tags", "$size")],
  [{ tags: { $size: null } }, invalidFilter("tags", "$size")],
  [{ tags: { $all: [] } }, invalidFilter("tags", "$all")],
  [{ tags: { $all: "a" } }, invalidFilter("tags", "$all")],
  [{ tags: { $all: [1] } }, invalidFilter("tags", "$all")],
  [{ tags: { $all: ["a", null] } }, invalidFilter("tags", "$all")],
  [{ tags: { $all: [["a"]] } }, invalidFilter("tags", "$all")],
  [{ "meta.items": { $all: [null] } }, invalidFilter("meta.items", "$all")],
  // $not takes a non-empty operator object, typed like any other
  [{ priority: { $not: 3 } }, invalidFilter("priority", "$not")],
  [{ priority: { $not: null } }, invalidFilter("priority", "$not")],
  [{ priority: { $not: {} } }, invalidFilter("priority", "$not")],
  [{ priority: { $not: [{ $gt: 3 }] } }, invalidFilter("priority", "$not")],
  [{ meta: { $not: { owner: "ann" } } }, invalidFilter("meta", "$not")],
  [{ priority: { $not: { $gt: "3" } } }, invalidFilter("priority", "$gt")],
  [{ priority: { $not: { $like: 3 } } }, invalidFilter("priority", "$like")],
  [{ status: { $not: { $eq: "finished" } } }, invalidFilter("status", "$eq")],
  [{ title: { $not: { $regex: "(?<!a)b" } } }, invalidFilter("title", "$regex")],
  [{ nope: { $not: { $gt: 3 } } }, { status: 400, code: "unknown_field", details: { field: "nope" } }],
  // combinators take non-empty arrays of objects
  [{ $nor: [] }, invalidFilter(undefined, "$nor")],
  [{ $nor: { title: "a" } }, invalidFilter(undefined, "$nor")],
  [{ $nor: [3] }, invalidFilter(undefined, "$nor")],
  [{ $nor: [{ nope: 1 }] }, { status: 400, code: "unknown_field", details: { field: "nope" } }],
  [{ $or: [] }, invalidFilter(undefined, "$or")],
  [{ $and: [] }, invalidFilter(undefined, "$and")],
  [{ $or: { title: "a" } }, invalidFilter(undefined, "$or")],
  [{ $and: ["a"] }, invalidFilter(undefined, "$and")],
  // dotted names reach into object fields only
  [{ "title.x": "a" }, invalidFilter("title.x", undefined)],
  [{ "tags.x": "a" }, invalidFilter("tags.x", undefined)],
  [{ "meta.": "a" }, invalidFilter("meta.", undefined)],
  [{ "meta..x": "a" }, invalidFilter("meta..x", undefined)],
  // mixing operators and plain keys
  [{ meta: { $eq: 1, owner: "a" } }, invalidFilter("meta", undefined)],
];

test("parseFilter refuses unknown fields, operators, wrongly typed operands and bad enum values", () => {
  for (const [input, expected, access] of REFUSALS) {
    assert.throws(
      () => parseFilter(entity, input, access ?? SECRET),
      (error: unknown) => {
        assert.ok(error instanceof ApiError, `${JSON.stringify(input)} threw ${String(error)}`);
        assert.equal(error.status, expected.status, JSON.stringify(input));
        assert.equal(error.code, expected.code, JSON.stringify(input));
        for (const [name, value] of Object.entries(expected.details ?? {})) {
          assert.deepEqual(error.details[name], value, `${JSON.stringify(input)}: details.${name}`);
        }
        assert.ok(error.message.length > 0);
        return true;
      },
      JSON.stringify(input),
    );
  }
});

test("an unknown field is refused with the entity's real fields, created_by_id only for secret keys", () => {
  const fieldsOf = (access: FieldAccess) => {
    try {
      parseFilter(entity, { nope: 1 }, access);
    } catch (error) {
      return (error as ApiError).details.fields;
    }
    assert.fail("no error");
  };
  const declared = Object.keys(TASK.properties);
  assert.deepEqual(fieldsOf(SECRET), [...declared, "id", "created_date", "updated_date", "created_by_id"]);
  assert.deepEqual(fieldsOf(PUBLIC), [...declared, "id", "created_date", "updated_date"]);
});

test("$elemMatch holds a sub-tree whose paths start at the element: [] for values, members for objects", () => {
  const properties = { ...TASK.properties, scores: { type: "array", items: { type: "number" } }, lines: { type: "array", items: { type: "object" } } };
  const arrays = loadSchemaObject({ Task: { ...TASK, properties } }).entities.get("Task")!;
  const at = (field: string, path: string[], kind: string, isArray: boolean, op: string, value: unknown): FilterNode =>
    ({ type: "compare", field, path, kind: kind as never, isArray, op: op as never, value });
  const table: Array<[unknown, FilterNode]> = [
    [
      { scores: { $elemMatch: { $gte: 80, $lt: 85 } } },
      { type: "elemMatch", field: "scores", path: ["scores"], node: { type: "and", nodes: [at("scores", [], "number", false, "$gte", 80), at("scores", [], "number", false, "$lt", 85)] } },
    ],
    [{ tags: { $elemMatch: { $not: { $regex: "^a" } } } }, { type: "elemMatch", field: "tags", path: ["tags"], node: { type: "not", node: at("tags", [], "string", false, "$regex", { pattern: "^a", options: "" }) } }],
    [
      { lines: { $elemMatch: { sku: "a", "dim.w": { $gt: 1 } } } },
      { type: "elemMatch", field: "lines", path: ["lines"], node: { type: "and", nodes: [at("lines.sku", ["sku"], "json", false, "$eq", "a"), at("lines.dim.w", ["dim", "w"], "json", false, "$gt", 1)] } },
    ],
    [
      { lines: { $elemMatch: { $or: [{ sku: "a" }], tags: { $elemMatch: { $eq: "x" } } } } },
      {
        type: "elemMatch",
        field: "lines",
        path: ["lines"],
        node: {
          type: "and",
          nodes: [
            { type: "or", nodes: [at("lines.sku", ["sku"], "json", false, "$eq", "a")] },
            { type: "elemMatch", field: "lines.tags", path: ["tags"], node: at("lines.tags", [], "json", false, "$eq", "x") },
          ],
        },
      },
    ],
    [{ "meta.items": { $elemMatch: { k: 1 } } }, { type: "elemMatch", field: "meta.items", path: ["meta", "items"], node: at("meta.items.k", ["k"], "json", false, "$eq", 1) }],
  ];
  for (const [input, expected] of table) assert.deepEqual(parseFilter(arrays, input, SECRET), expected, JSON.stringify(input));
  const refusals: Array<[unknown, string, RegExp]> = [
    [{ title: { $elemMatch: { $eq: "a" } } }, "invalid_filter", /"title" is a string field/],
    [{ meta: { $elemMatch: { k: 1 } } }, "invalid_filter", /"meta" is an object field/],
    [{ scores: { $elemMatch: 80 } }, "invalid_filter", /takes a non-empty object/],
    [{ scores: { $elemMatch: {} } }, "invalid_filter", /takes a non-empty object/],
    [{ scores: { $elemMatch: [] } }, "invalid_filter", /takes a non-empty object/],
    [{ scores: { $elemMatch: { k: 1 } } }, "invalid_filter", /"scores" holds numbers, which have no members/],
    [{ scores: { $elemMatch: { $gt: "80" } } }, "invalid_filter", /\$gt on "scores" takes a number/],
    [{ scores: { $elemMatch: { $contains: "8" } } }, "invalid_filter", /\$contains works on text fields only/],
    [{ lines: { $elemMatch: { sku: "a", $gt: 1 } } }, "invalid_filter", /mixes operators and member names/],
    [{ lines: { $elemMatch: { "sku.": 1 } } }, "invalid_filter", /"lines.sku." has an empty part/],
    [{ lines: { $elemMatch: { sku: { $like: 1 } } } }, "invalid_filter", /Unknown operator \$like on "lines.sku"/],
    [{ lines: { $elemMatch: { $not: { sku: 1 } } } }, "invalid_filter", /\$not on "lines" takes an operator object/],
  ];
  for (const [input, code, message] of refusals) {
    assert.throws(() => parseFilter(arrays, input, SECRET), (error: ApiError) => error.code === code && message.test(error.message), JSON.stringify(input));
  }
});

test("a refused plain array says that it means any of its values", () => {
  assert.throws(() => parseFilter(entity, { priority: [1, "2"] }, SECRET), (error: ApiError) => {
    assert.equal(error.message, `A plain array on "priority" means any of its values, and takes a number (got [1,"2"]).`);
    assert.deepEqual(error.details, { field: "priority", operator: "$in" });
    return true;
  });
});

test("an array operator on another field names the field's type", () => {
  const table: Array<[unknown, RegExp]> = [
    [{ title: { $size: 1 } }, /^Operator \$size works on array fields only, and "title" is a string field/],
    [{ priority: { $all: [1] } }, /"priority" is an integer field/],
    [{ due_date: { $size: 1 } }, /"due_date" is a date field/],
    [{ meta: { $size: 1 } }, /"meta" is an object field/],
  ];
  for (const [filter, message] of table) {
    assert.throws(() => parseFilter(entity, filter, SECRET), (error: ApiError) => message.test(error.message), JSON.stringify(filter));
  }
});

test("an invalid filter message names the field and the operator", () => {
  assert.throws(() => parseFilter(entity, { priority: { $gt: "3" } }, SECRET), (error: ApiError) => {
    assert.match(error.message, /priority/);
    assert.match(error.message, /\$gt/);
    return true;
  });
  assert.throws(() => parseFilter(entity, { status: "finished" }, SECRET), (error: ApiError) => {
    assert.match(error.message, /status/);
    assert.match(error.message, /todo/);
    return true;
  });
});

test("parseFilterText reads q: absent or blank is no filter, bad JSON is invalid_json", () => {
  const table: Array<[string | null, FilterNode | null | string]> = [
    [null, null],
    ["", null],
    ["  ", null],
    ["{}", null],
    [`{"title":"a"}`, cmp("title", "$eq", "a")],
    [`{"title":`, "invalid_json"],
    [`{title:"a"}`, "invalid_json"],
    [`[]`, "invalid_json"],
    [`"a"`, "invalid_json"],
    [`{"priority":{"$gt":"3"}}`, "invalid_filter"],
  ];
  for (const [text, expected] of table) {
    if (typeof expected === "string") {
      assert.throws(() => parseFilterText(entity, text, SECRET), (error: ApiError) => error.code === expected, String(text));
    } else {
      assert.deepEqual(parseFilterText(entity, text, SECRET), expected, String(text));
    }
  }
});

test("filters nested deeper than the limit are refused, not stack-overflowed", () => {
  let filter: Record<string, unknown> = { title: "a" };
  for (let i = 0; i < 100; i++) filter = { $and: [filter] };
  assert.throws(() => parseFilter(entity, filter, SECRET), (error: ApiError) => error.code === "invalid_filter");
  let negation: Record<string, unknown> = { $gt: 3 };
  for (let i = 0; i < 100; i++) negation = { $not: negation };
  assert.throws(() => parseFilter(entity, { priority: negation }, SECRET), (error: ApiError) => error.code === "invalid_filter", "$not in $not");
  let shallow: Record<string, unknown> = { title: "a" };
  for (let i = 0; i < 10; i++) shallow = { $or: [shallow] };
  assert.ok(parseFilter(entity, shallow, SECRET));
});

test("a q text parsed once is answered from the cache only for the same entity and access", () => {
  const q = `{"created_by_id":"key_1","status":"todo"}`;
  const first = parseFilterText(entity, q, SECRET);
  assert.equal(parseFilterText(entity, q, SECRET), first, "the same tree, not parsed again");
  assert.throws(() => parseFilterText(entity, q, PUBLIC), (error: ApiError) => error.code === "forbidden", "a publishable key is still refused");
  const other = loadSchemaObject({ Task: { ...TASK, properties: { title: { type: "string" } } } }).entities.get("Task")!;
  assert.throws(() => parseFilterText(other, q, SECRET), (error: ApiError) => error.code === "unknown_field", "another declaration of Task parses anew");
  assert.throws(() => parseFilterText(entity, `{"status":`, SECRET), (error: ApiError) => error.code === "invalid_json");
  assert.throws(() => parseFilterText(entity, `{"status":`, SECRET), (error: ApiError) => error.code === "invalid_json", "a refusal is not cached as an answer");
});
