// compileFilter (docs/query-language.md): which records a parsed filter matches, as tables
// of [filter, record data, matches].

import assert from "node:assert/strict";
import { test } from "node:test";
import { parseFilter } from "../../src/query/filter.ts";
import { compileFilter, isStructurallyEqual } from "../../src/query/predicate.ts";
import { loadSchemaObject } from "../../src/schema/load.ts";
import { TASK } from "../support/server.ts";

const DECLARATION = { ...TASK, properties: { ...TASK.properties, level: { type: "integer", enum: [1, 2, 3] } } };
const entity = loadSchemaObject({ Task: DECLARATION }).entities.get("Task")!;

type Case = [filter: Record<string, unknown>, data: Record<string, unknown>, matches: boolean];

function check(table: Case[]): void {
  for (const [filter, data, matches] of table) {
    const predicate = compileFilter(parseFilter(entity, filter, { mayUseCreatedBy: true })!);
    const actual = predicate({ id: "1", rev: 1, deleted: false, data });
    if (actual !== matches) assert.fail(`${JSON.stringify(filter)} on ${JSON.stringify(data).slice(0, 200)}: ${actual}, expected ${matches}`);
  }
}

test("null listed in $in or $nin means no value, on JSON paths and typed fields alike", () =>
  check([
    [{ "meta.sub": { $in: [null] } }, { meta: { sub: { x: 1 } } }, false],
    [{ "meta.sub": { $in: [null] } }, { meta: {} }, true],
    [{ "meta.sub": { $in: [null] } }, { meta: { sub: null } }, true],
    [{ "meta.sub": { $in: [null] } }, {}, true],
    [{ "meta.sub": { $nin: [null] } }, { meta: { sub: { x: 1 } } }, true],
    [{ "meta.sub": { $nin: [null] } }, { meta: {} }, false],
    [{ "meta.sub": { $in: [null, 2] } }, { meta: { sub: 2 } }, true],
    [{ "meta.sub": { $in: [null, 2] } }, { meta: { sub: 3 } }, false],
    [{ "meta.sub": { $in: [2] } }, { meta: { sub: { x: 1 } } }, false],
    [{ "meta.sub": { $nin: [2] } }, { meta: { sub: { x: 1 } } }, true],
    [{ priority: { $in: [null, 3] } }, {}, true],
    [{ priority: { $in: [null, 3] } }, { priority: 3 }, true],
    [{ priority: { $in: [null, 3] } }, { priority: 4 }, false],
    [{ priority: { $nin: [null, 3] } }, { priority: 4 }, true],
    [{ priority: { $nin: [null, 3] } }, {}, false],
    [{ level: { $in: [null] } }, { level: 1 }, false],
    [{ tags: { $in: [null, "a"] } }, { tags: ["b"] }, false],
    [{ tags: { $in: [null, "a"] } }, { tags: ["b", "a"] }, true],
    [{ tags: { $nin: [null] } }, { tags: [] }, true],
  ]));

test("a dotted path steps into arrays: any element, a numeric step picks one, negations mean none", () =>
  check([
    [{ "meta.items.k": 1 }, { meta: { items: [{ k: 1 }, { k: 2 }] } }, true],
    [{ "meta.items.k": 2 }, { meta: { items: [{ k: 1 }, { k: 2 }] } }, true],
    [{ "meta.items.k": 3 }, { meta: { items: [{ k: 1 }, { k: 2 }] } }, false],
    [{ "meta.items.k": 1 }, { meta: { items: { k: 1 } } }, true],
    [{ "meta.items.k": 1 }, { meta: { items: [[{ k: 1 }]] } }, false],
    [{ "meta.items.k": 1 }, { meta: { items: ["k", 1, null] } }, false],
    [{ "meta.items.k": 1 }, { meta: { items: [{ k: [0, 1] }] } }, true],
    [{ "meta.items.k": { $gt: 1 } }, { meta: { items: [{ k: 1 }, { k: 2 }] } }, true],
    [{ "meta.items.k": { $ne: 1 } }, { meta: { items: [{ k: 1 }, { k: 2 }] } }, false],
    [{ "meta.items.k": { $ne: 3 } }, { meta: { items: [{ k: 1 }, { k: 2 }] } }, true],
    [{ "meta.items.k": { $nin: [2] } }, { meta: { items: [{ k: 1 }, { k: 2 }] } }, false],
    [{ "meta.items.k": { $nin: [2] } }, { meta: { items: [] } }, true],
    [{ "meta.items.k": { $exists: true } }, { meta: { items: [{}, { k: 0 }] } }, true],
    [{ "meta.items.k": { $exists: true } }, { meta: { items: [{}, { k: null }] } }, false],
    [{ "meta.items.k": null }, { meta: { items: [{}, { k: null }] } }, true],
    [{ "meta.items.k": null }, { meta: { items: [{ k: 1 }, {}] } }, false],
    [{ "meta.items.0.k": 1 }, { meta: { items: [{ k: 1 }, { k: 2 }] } }, true],
    [{ "meta.items.1.k": 1 }, { meta: { items: [{ k: 1 }, { k: 2 }] } }, false],
    [{ "meta.items.2.k": { $exists: false } }, { meta: { items: [{ k: 1 }, { k: 2 }] } }, true],
    [{ "meta.items.0": "a" }, { meta: { items: ["a", "b"] } }, true],
    [{ "meta.items.01": "a" }, { meta: { items: ["a", "b"] } }, false],
    [{ "meta.items.0": "a" }, { meta: { items: { "0": "a" } } }, true],
    [{ "meta.items.length": 2 }, { meta: { items: ["a", "b"] } }, false],
    [{ "meta.items.k": { $contains: "Σ" } }, { meta: { items: [{ k: "x" }, { k: "ΟΔΟΣ" }] } }, true],
    [{ "meta.a.b.c": 1 }, { meta: { a: [{ b: [{ c: 2 }, { c: 1 }] }] } }, true],
    [{ "meta.a.b.c": 1 }, { meta: { a: [{ b: [{ c: 2 }] }, { b: { c: 3 } }] } }, false],
    // arrays of typed fields hold elements of the field's kind; a typed scalar field never expands an array
    [{ tags: "a" }, { tags: ["b", "a"] }, true],
    [{ tags: { $ne: "a" } }, { tags: ["b", "a"] }, false],
    [{ title: "a" }, { title: ["a"] }, false],
    [{ status: { $ne: "todo" } }, { status: ["todo"] }, true],
  ]));

test("$regex is a JavaScript regular expression with the u flag and the options i, m and s", () =>
  check([
    [{ title: { $regex: "^ab" } }, { title: "abc" }, true],
    [{ title: { $regex: "^ab" } }, { title: "cab" }, false],
    [{ title: { $regex: "^ab" } }, { title: "ABc" }, false],
    [{ title: { $regex: "^ab", $options: "i" } }, { title: "ABc" }, true],
    [{ title: { $regex: "foo$" } }, { title: "foo\nbar" }, false],
    [{ title: { $regex: "foo$", $options: "m" } }, { title: "foo\nbar" }, true],
    [{ title: { $regex: "a.b" } }, { title: "a\nb" }, false],
    [{ title: { $regex: "a.b", $options: "s" } }, { title: "a\nb" }, true],
    [{ title: { $regex: "^.$" } }, { title: "😀" }, true], // u: one code point is one character
    [{ title: { $regex: "\\p{Lu}" } }, { title: "aÉ" }, true],
    [{ title: { $regex: "" } }, { title: "" }, true],
    [{ title: { $regex: "" } }, {}, false], // a missing value is no text
    [{ title: { $regex: "" } }, { title: null }, false],
    [{ title: { $regex: "1" } }, { title: 1 }, false], // a value an older declaration left is no text
    // arrays of strings: any element
    [{ tags: { $regex: "^b" } }, { tags: ["a", "bc"] }, true],
    [{ tags: { $regex: "^b" } }, { tags: ["a", "cb"] }, false],
    [{ tags: { $regex: "^b" } }, { tags: [] }, false],
    // JSON paths: strings only
    [{ "meta.owner": { $regex: "^an" } }, { meta: { owner: "ann" } }, true],
    [{ "meta.owner": { $regex: "^1" } }, { meta: { owner: 12 } }, false],
    [{ "meta.items.k": { $regex: "x" } }, { meta: { items: [{ k: "a" }, { k: "x" }] } }, true],
    [{ status: { $regex: "^do" } }, { status: "doing" }, true],
  ]));

test("a compiled $regex keeps no state from one record to the next", () => {
  const predicate = compileFilter(parseFilter(entity, { title: { $regex: "a" } }, { mayUseCreatedBy: true })!);
  for (let i = 0; i < 3; i++) assert.equal(predicate({ id: "1", rev: 1, deleted: false, data: { title: "a" } }), true);
});

test("$not matches where its operator object does not, records lacking the field included; $nor where no filter does", () =>
  check([
    [{ priority: { $not: { $gt: 3 } } }, { priority: 2 }, true],
    [{ priority: { $not: { $gt: 3 } } }, { priority: 3 }, true],
    [{ priority: { $not: { $gt: 3 } } }, { priority: 4 }, false],
    [{ priority: { $not: { $gt: 3 } } }, {}, true],
    [{ priority: { $not: { $gt: 3 } } }, { priority: null }, true],
    [{ priority: { $not: { $gte: 1, $lt: 5 } } }, { priority: 3 }, false],
    [{ priority: { $not: { $gte: 1, $lt: 5 } } }, { priority: 5 }, true],
    [{ priority: { $not: { $gte: 1, $lt: 5 } } }, { priority: 0 }, true],
    [{ priority: { $not: { $eq: null } } }, {}, false],
    [{ priority: { $not: { $eq: null } } }, { priority: 0 }, true],
    [{ priority: { $not: { $ne: 3 } } }, { priority: 3 }, true],
    [{ priority: { $not: { $ne: 3 } } }, {}, false],
    [{ priority: { $not: { $not: { $gt: 3 } } } }, { priority: 4 }, true],
    [{ priority: { $not: { $not: { $gt: 3 } } } }, {}, false],
    // on an array field, the inner operator matches when any element does, so $not when none does
    [{ tags: { $not: { $eq: "a" } } }, { tags: ["a", "b"] }, false],
    [{ tags: { $not: { $eq: "a" } } }, { tags: ["b"] }, true],
    [{ tags: { $not: { $eq: "a" } } }, { tags: [] }, true],
    [{ tags: { $not: { $in: ["a", "b"] } } }, { tags: ["c"] }, true],
    [{ title: { $not: { $regex: "^a", $options: "i" } } }, { title: "Ab" }, false],
    [{ title: { $not: { $regex: "^a", $options: "i" } } }, { title: "ba" }, true],
    [{ title: { $not: { $regex: "^a" } } }, {}, true],
    [{ title: { $not: { $contains: "x" } } }, { title: 3 }, true],
    [{ "meta.owner": { $not: { $eq: "ann" } } }, { meta: { owner: "bob" } }, true],
    [{ "meta.owner": { $not: { $eq: "ann" } } }, { meta: {} }, true],
    [{ "meta.items.k": { $not: { $gt: 1 } } }, { meta: { items: [{ k: 1 }, { k: 2 }] } }, false],
    [{ "meta.items.k": { $not: { $gt: 1 } } }, { meta: { items: [{ k: 1 }] } }, true],
    // $nor
    [{ $nor: [{ title: "a" }, { done: true }] }, { title: "b", done: false }, true],
    [{ $nor: [{ title: "a" }, { done: true }] }, { title: "a", done: false }, false],
    [{ $nor: [{ title: "a" }, { done: true }] }, { title: "b", done: true }, false],
    [{ $nor: [{ title: "a" }, { done: true }] }, {}, true],
    [{ $nor: [{ title: "a", done: true }] }, { title: "a", done: false }, true],
    [{ title: "a", $nor: [{ done: true }] }, { title: "a" }, true],
    [{ $and: [{ $nor: [{ priority: { $gt: 1 } }] }, { $or: [{ title: "a" }] }] }, { title: "a", priority: 1 }, true],
    [{ $and: [{ $nor: [{ priority: { $gt: 1 } }] }, { $or: [{ title: "a" }] }] }, { title: "a", priority: 2 }, false],
  ]));

test("$all matches arrays holding every listed value, $size arrays of that many elements", () =>
  check([
    [{ tags: { $all: ["a", "b"] } }, { tags: ["b", "c", "a"] }, true],
    [{ tags: { $all: ["a", "b"] } }, { tags: ["a", "c"] }, false],
    [{ tags: { $all: ["a", "a"] } }, { tags: ["a"] }, true],
    [{ tags: { $all: ["a"] } }, { tags: [] }, false],
    [{ tags: { $all: ["a"] } }, {}, false],
    [{ tags: { $all: ["a"] } }, { tags: null }, false],
    [{ tags: { $not: { $all: ["a", "b"] } } }, { tags: ["a"] }, true],
    [{ tags: { $not: { $all: ["a"] } } }, {}, true],
    [{ tags: { $size: 2 } }, { tags: ["a", "b"] }, true],
    [{ tags: { $size: 2 } }, { tags: ["a"] }, false],
    [{ tags: { $size: 0 } }, { tags: [] }, true],
    [{ tags: { $size: 0 } }, {}, false], // no array at all has no size
    [{ tags: { $size: 0 } }, { tags: null }, false],
    [{ tags: { $not: { $size: 0 } } }, {}, true],
    [{ tags: { $size: 1 } }, { tags: "a" }, false], // a value an older declaration left is no array
    // JSON paths: elements compare as JSON values, and a scalar is a list of one (MongoDB's $all)
    [{ "meta.items": { $all: [{ k: 1 }, 2] } }, { meta: { items: [2, { k: 1 }] } }, true],
    [{ "meta.items": { $all: [{ k: 1 }, 2] } }, { meta: { items: [2, { k: 1, j: 0 }] } }, false],
    [{ "meta.items": { $all: [[1, 2]] } }, { meta: { items: [[1, 2], 3] } }, true],
    [{ "meta.items": { $all: [[1, 2]] } }, { meta: { items: [1, 2] } }, true],
    [{ "meta.items": { $all: ["x"] } }, { meta: { items: "x" } }, true],
    [{ "meta.items": { $size: 1 } }, { meta: { items: [[1, 2]] } }, true],
    [{ "meta.items": { $size: 2 } }, { meta: { items: [[1, 2]] } }, false],
    [{ "meta.items": { $size: 2 } }, { meta: { items: { length: 2 } } }, false],
    [{ "meta.a.list": { $size: 1 } }, { meta: { a: [{ list: [1] }, { list: [] }] } }, true],
  ]));

test("$all on an array of dates compares instants, and a value inside a millisecond is held by no stored array", () => {
  const declaration = { ...DECLARATION, properties: { ...DECLARATION.properties, days: { type: "array", items: { type: "string", format: "date-time" } } } };
  const withDays = loadSchemaObject({ Task: declaration }).entities.get("Task")!;
  const table: Array<[unknown[], boolean]> = [
    [["2026-01-01T01:00:00+01:00"], true],
    [["2026-01-01T00:00:00.000Z", "2026-01-02T00:00:00Z"], true],
    [["2026-01-01T00:00:00.0001Z"], false],
    [["2026-01-03"], false],
  ];
  for (const [all, matches] of table) {
    const predicate = compileFilter(parseFilter(withDays, { days: { $all: all } }, { mayUseCreatedBy: true })!);
    const data = { days: ["2026-01-01T00:00:00.000Z", "2026-01-02T00:00:00.000Z"] };
    assert.equal(predicate({ id: "1", rev: 1, deleted: false, data }), matches, JSON.stringify(all));
  }
});

test("$elemMatch needs one element meeting every condition: operators on values, a filter on objects' members", () => {
  const properties = {
    ...DECLARATION.properties,
    scores: { type: "array", items: { type: "number" } },
    lines: { type: "array", items: { type: "object" } },
    list: { type: "array" },
    grid: { type: "array", items: { type: "array", items: { type: "integer" } } },
  };
  const arrays = loadSchemaObject({ Task: { ...DECLARATION, properties } }).entities.get("Task")!;
  const table: Case[] = [
    // values: one element satisfies all the operators at once
    [{ scores: { $elemMatch: { $gte: 80, $lt: 85 } } }, { scores: [70, 82, 90] }, true],
    [{ scores: { $elemMatch: { $gte: 80, $lt: 85 } } }, { scores: [79, 90] }, false], // each bound met by a different element
    [{ scores: { $gte: 80, $lt: 85 } }, { scores: [79, 90] }, true], // ... which plain operators accept
    [{ scores: { $elemMatch: { $gte: 80 } } }, { scores: [] }, false],
    [{ scores: { $elemMatch: { $gte: 80 } } }, {}, false],
    [{ scores: { $elemMatch: { $gte: 80 } } }, { scores: null }, false],
    [{ scores: { $elemMatch: { $gte: 80 } } }, { scores: 90 }, false], // a value an older declaration left is no array
    [{ scores: { $elemMatch: { $in: [1, 2] } } }, { scores: [3, 2] }, true],
    [{ scores: { $elemMatch: { $ne: 3 } } }, { scores: [3, 3] }, false],
    [{ scores: { $elemMatch: { $ne: 3 } } }, { scores: [3, 4] }, true],
    [{ scores: { $elemMatch: { $not: { $gt: 5 } } } }, { scores: [6, 7] }, false],
    [{ scores: { $elemMatch: { $not: { $gt: 5 } } } }, { scores: [6, 5] }, true],
    [{ scores: { $not: { $elemMatch: { $gt: 5 } } } }, { scores: [6, 5] }, false],
    [{ scores: { $not: { $elemMatch: { $gt: 5 } } } }, {}, true],
    [{ tags: { $elemMatch: { $regex: "^b", $options: "i" } } }, { tags: ["a", "Bc"] }, true],
    [{ tags: { $elemMatch: { $regex: "^b" } } }, { tags: ["a", "Bc"] }, false],
    [{ tags: { $elemMatch: { $eq: null } } }, { tags: ["a"] }, false],
    // arrays of arrays: the element is an array, with its own operators
    [{ grid: { $elemMatch: { $size: 2, $all: [1] } } }, { grid: [[1], [2, 3], [1, 4]] }, true],
    [{ grid: { $elemMatch: { $size: 2, $all: [1] } } }, { grid: [[1], [2, 1, 3]] }, false],
    [{ grid: { $elemMatch: { $elemMatch: { $gt: 8 } } } }, { grid: [[1], [9]] }, true],
    // objects: a filter over one element's members, compared as JSON
    [{ lines: { $elemMatch: { sku: "a", qty: { $gt: 1 } } } }, { lines: [{ sku: "a", qty: 1 }, { sku: "b", qty: 2 }] }, false],
    [{ lines: { $elemMatch: { sku: "a", qty: { $gt: 1 } } } }, { lines: [{ sku: "b", qty: 2 }, { sku: "a", qty: 3 }] }, true],
    [{ lines: { $elemMatch: { "dim.w": { $gte: 2 } } } }, { lines: [{ dim: { w: 1 } }, { dim: { w: 2 } }] }, true],
    [{ lines: { $elemMatch: { "dim.w": { $gte: 2 } } } }, { lines: [{ dim: { w: 1 } }] }, false],
    [{ lines: { $elemMatch: { $or: [{ sku: "x" }, { qty: 0 }] } } }, { lines: [{ sku: "a", qty: 0 }] }, true],
    [{ lines: { $elemMatch: { $nor: [{ sku: "a" }] } } }, { lines: [{ sku: "a" }] }, false],
    [{ lines: { $elemMatch: { $nor: [{ sku: "a" }] } } }, { lines: [{ sku: "a" }, {}] }, true],
    [{ lines: { $elemMatch: { sku: { $exists: false } } } }, { lines: [{ sku: "a" }, { qty: 1 }] }, true],
    [{ lines: { $elemMatch: { sku: { $not: { $eq: "a" } } } } }, { lines: [{ sku: "a" }] }, false],
    [{ lines: { $elemMatch: { sku: { $not: { $eq: "a" } } } } }, { lines: [{ sku: "a" }, { sku: "b" }] }, true],
    [{ lines: { $elemMatch: { tags: { $elemMatch: { $eq: "x" } } } } }, { lines: [{ tags: ["y"] }, { tags: ["x"] }] }, true],
    [{ lines: { $elemMatch: { constructor: { $exists: true } } } }, { lines: [{}] }, false], // own members only
    [{ lines: { $elemMatch: { sku: "a" } } }, { lines: [[{ sku: "a" }]] }, false], // an array inside the array is not entered
    [{ lines: { $elemMatch: { sku: "a" } } }, { lines: ["a", null, 1] }, false],
    // undeclared items: the operand's keys tell values from members
    [{ list: { $elemMatch: { $gt: 2 } } }, { list: ["3", 3] }, true],
    [{ list: { $elemMatch: { $gt: 2 } } }, { list: ["3", { k: 3 }] }, false],
    [{ list: { $elemMatch: { k: 3 } } }, { list: ["3", { k: 3 }] }, true],
    [{ list: { $elemMatch: { $eq: { k: 3 } } } }, { list: [{ k: 3 }] }, true],
    // JSON paths
    [{ "meta.items": { $elemMatch: { k: { $gte: 2 }, tag: "x" } } }, { meta: { items: [{ k: 2 }, { k: 1, tag: "x" }] } }, false],
    [{ "meta.items": { $elemMatch: { k: { $gte: 2 }, tag: "x" } } }, { meta: { items: [{ k: 2, tag: "x" }] } }, true],
    [{ "meta.items": { $elemMatch: { $gte: 2 } } }, { meta: { items: { k: 2 } } }, false],
    [{ "meta.a.list": { $elemMatch: { $eq: 2 } } }, { meta: { a: [{ list: [1] }, { list: [2] }] } }, true],
  ];
  for (const [filter, data, matches] of table) {
    const predicate = compileFilter(parseFilter(arrays, filter, { mayUseCreatedBy: true })!);
    assert.equal(predicate({ id: "1", rev: 1, deleted: false, data }), matches, `${JSON.stringify(filter)} on ${JSON.stringify(data)}`);
  }
});

test("a path over deep stored data is walked without recursion", () => {
  let deep: Record<string, unknown> = { k: 1 };
  for (let i = 0; i < 100_000; i++) deep = { a: [deep] };
  check([
    [{ "meta.a.a.a.a": { $exists: true } }, { meta: deep }, true],
    [{ "meta.a.k": 1 }, { meta: deep }, false],
  ]);
});

test("isStructurallyEqual compares JSON values whatever the order of object members, in the order of array items", () => {
  const table: Array<[unknown, unknown, boolean]> = [
    [{ a: 1, b: 2 }, { b: 2, a: 1 }, true],
    [{ a: 1 }, { a: 1, b: 2 }, false],
    [{ a: 1, b: undefined }, { a: 1, c: undefined }, false],
    [{ a: null }, {}, false],
    [[1, 2], [2, 1], false],
    [[1, { x: [2, { y: 3 }] }], [1, { x: [2, { y: 3 }] }], true],
    [[], {}, false],
    [{}, {}, true],
    [{ "0": 1 }, [1], false],
    ["1", 1, false],
    [0, -0, true],
    [null, null, true],
    [null, {}, false],
    [JSON.parse(`{"__proto__": 1}`), {}, false],
    [JSON.parse(`{"__proto__": 1}`), JSON.parse(`{"__proto__": 1}`), true],
  ];
  for (const [a, b, equal] of table) {
    assert.equal(isStructurallyEqual(a, b), equal, `${JSON.stringify(a)} = ${JSON.stringify(b)}`);
    assert.equal(isStructurallyEqual(b, a), equal, `${JSON.stringify(b)} = ${JSON.stringify(a)}`);
  }
  let deep: unknown = 1;
  let other: unknown = 1;
  for (let i = 0; i < 100_000; i++) [deep, other] = [{ a: [deep] }, { a: [other] }];
  assert.equal(isStructurallyEqual(deep, other), true, "deep data is compared without recursion");
});
