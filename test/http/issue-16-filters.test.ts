// Regression tests of issue 16's filter defects, through the real HTTP interface: each describe
// block is one defect, with its own entity and records so that the cases do not disturb one another.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { q, startTestServer, TASK, type TestServer } from "../support/server.ts";

const PATH = "/api/entities/Task";

let server: TestServer;
before(async () => {
  server = await startTestServer({
    schema: { Task: { ...TASK, properties: { ...TASK.properties, level: { type: "integer", enum: [1, 2, 3] } } } },
  });
});
after(() => server.close());

/** Creates records and returns their ids by name. */
async function createAll(records: Record<string, Record<string, unknown>>): Promise<Record<string, string>> {
  const ids: Record<string, string> = {};
  for (const [name, record] of Object.entries(records)) {
    const answer = await server.call("POST", PATH, { body: record });
    assert.equal(answer.status, 201, answer.text);
    ids[name] = answer.body.id;
  }
  return ids;
}

/** Checks [query, expected names] through the list, restricted to the named records' ids. */
async function checkQueries(ids: Record<string, string>, table: Array<[string, string[]]>): Promise<void> {
  const only = { id: { $in: Object.values(ids) } };
  for (const [query, expected] of table) {
    const [name, value] = query.split("=", 2) as [string, string];
    const params = name === "q" ? `q=${q({ $and: [only, JSON.parse(value)] })}` : `${name}=${encodeURIComponent(value)}&q=${q(only)}`;
    const answer = await server.call("GET", `${PATH}?${params}`);
    assert.equal(answer.status, 200, `${query}: ${answer.text}`);
    const names = answer.body.map((record: { id: string }) => Object.keys(ids).find((n) => ids[n] === record.id));
    assert.deepEqual(names.sort(), [...expected].sort(), query);
    const count = await server.call("GET", `${PATH}/count?${params}`);
    assert.deepEqual(count.body, { count: expected.length }, `${query}: count`);
  }
}

describe("issue 16, defect 1: case-insensitive matching folds case", () => {
  test("$contains and search find a word-final capital sigma whichever sigma the text or the needle has", async () => {
    const ids = await createAll({
      road: { title: "ΟΔΟΣ" },
      osa: { title: "ΟΣΑ" },
      tagged: { title: "tagged", tags: ["ΟΣ"] },
    });
    await checkQueries(ids, [
      [`q={"title":{"$contains":"Σ"}}`, ["road", "osa"]],
      [`q={"title":{"$contains":"ΟΣ"}}`, ["road", "osa"]],
      [`q={"title":{"$contains":"ος"}}`, ["road", "osa"]],
      [`q={"title":{"$contains":"οδοσ"}}`, ["road"]],
      [`q={"tags":{"$contains":"σ"}}`, ["tagged"]],
      [`q={"tags":{"$contains":"ς"}}`, ["tagged"]],
      ["search=Σ", ["road", "osa"]],
      ["search=ς", ["road", "osa"]],
      ["search=οδοσ", ["road"]],
    ]);
  });
});

describe("issue 16, defect 2: null in $in and $nin means no value", () => {
  test("$in with null matches records without a value, as {field: null} does, on JSON paths and typed fields", async () => {
    const ids = await createAll({
      a: { title: "a", priority: 3, meta: { sub: { x: 1 } } },
      b: { title: "b", priority: 4, meta: {} },
      c: { title: "c", meta: { sub: null } },
      d: { title: "d" },
    });
    await checkQueries(ids, [
      [`q={"meta.sub":null}`, ["b", "c", "d"]],
      [`q={"meta.sub":{"$in":[null]}}`, ["b", "c", "d"]],
      [`q={"meta.sub":{"$nin":[null]}}`, ["a"]],
      [`q={"meta.sub":{"$in":[null,"x"]}}`, ["b", "c", "d"]],
      [`q={"meta.sub":{"$in":["x"]}}`, []],
      [`q={"meta.sub":{"$nin":["x"]}}`, ["a", "b", "c", "d"]],
      [`q={"priority":{"$in":[null]}}`, ["c", "d"]],
      [`q={"priority":{"$in":[null,3]}}`, ["a", "c", "d"]],
      [`q={"priority":{"$nin":[null,3]}}`, ["b"]],
      [`q={"priority":{"$nin":[null]}}`, ["a", "b"]],
      [`q={"level":{"$in":[null,2]}}`, ["a", "b", "c", "d"]],
      [`q={"tags":{"$in":[null]}}`, ["a", "b", "c", "d"]],
    ]);
  });
});

describe("issue 16, defect 3: what dotted paths, object operands, fine timestamps and enums do", () => {
  test("a dotted path steps into arrays: any element matches, a numeric step picks one, negations mean no element matches", async () => {
    const ids = await createAll({
      one: { title: "one", meta: { items: [{ k: 1 }, { k: 2, tags: ["x"] }] } },
      two: { title: "two", meta: { items: [{ k: 3 }, "loose", [{ k: 1 }]] } },
      flat: { title: "flat", meta: { items: { k: 1 } } },
      none: { title: "none", meta: { items: [] } },
      bare: { title: "bare" },
    });
    await checkQueries(ids, [
      [`q={"meta.items.k":1}`, ["one", "flat"]],
      [`q={"meta.items.k":{"$gte":2}}`, ["one", "two"]],
      [`q={"meta.items.k":{"$in":[2,3]}}`, ["one", "two"]],
      [`q={"meta.items.k":{"$ne":1}}`, ["two", "none", "bare"]],
      [`q={"meta.items.k":{"$nin":[1,3]}}`, ["none", "bare"]],
      [`q={"meta.items.k":{"$exists":true}}`, ["one", "two", "flat"]],
      [`q={"meta.items.k":null}`, ["none", "bare"]],
      [`q={"meta.items.0.k":1}`, ["one"]],
      [`q={"meta.items.1.k":2}`, ["one"]],
      [`q={"meta.items.1":"loose"}`, ["two"]],
      [`q={"meta.items.tags":"x"}`, ["one"]],
      [`q={"meta.items.tags":{"$contains":"X"}}`, ["one"]],
      [`q={"meta.items":{"k":2,"tags":["x"]}}`, ["one"]],
      [`q={"meta.items":"loose"}`, ["two"]],
    ]);
  });

  test("an object operand compares structurally: the order of its members does not matter, the order of array items does", async () => {
    const ids = await createAll({
      ab: { title: "ab", meta: { sub: { a: 1, b: 2 } } },
      nested: { title: "nested", meta: { sub: { a: { x: [1, { y: 2, z: 3 }] }, b: null } } },
      list: { title: "list", meta: { sub: [{ b: 2, a: 1 }, 3] } },
    });
    await checkQueries(ids, [
      [`q={"meta.sub":{"b":2,"a":1}}`, ["ab", "list"]],
      [`q={"meta.sub":{"$eq":{"a":1,"b":2}}}`, ["ab", "list"]],
      [`q={"meta.sub":{"$ne":{"b":2,"a":1}}}`, ["nested"]],
      [`q={"meta.sub":{"b":null,"a":{"x":[1,{"z":3,"y":2}]}}}`, ["nested"]],
      [`q={"meta.sub":{"a":{"x":[{"z":3,"y":2},1]},"b":null}}`, []],
      [`q={"meta.sub":{"a":1}}`, []],
      [`q={"meta.sub":{"a":1,"b":2,"c":null}}`, []],
      [`q={"meta.sub":{"$eq":[3,{"a":1,"b":2}]}}`, []],
      [`q={"meta.sub":{"$eq":[{"a":1,"b":2},3]}}`, ["list"]],
    ]);
  });

  test("a timestamp with digits past the millisecond compares as the instant it names, and a write keeps its millisecond", async () => {
    const created = await server.call("POST", PATH, { body: { title: "fine", start_at: "2026-01-01T01:00:00.001999+01:00" } });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.start_at, "2026-01-01T00:00:00.001Z", "stored to the millisecond, in UTC");
    const ids = { early: created.body.id };
    await checkQueries(ids, [
      [`q={"start_at":{"$lt":"2026-01-01T00:00:00.0019Z"}}`, ["early"]],
      [`q={"start_at":{"$lte":"2026-01-01T00:00:00.0009Z"}}`, []],
      [`q={"start_at":{"$gt":"2026-01-01T00:00:00.0009Z"}}`, ["early"]],
      [`q={"start_at":{"$gte":"2026-01-01T00:00:00.0011Z"}}`, []],
      [`q={"start_at":{"$gte":"2026-01-01T00:00:00.001000000Z"}}`, ["early"]],
      [`q={"start_at":"2026-01-01T00:00:00.001000Z"}`, ["early"]],
      [`q={"start_at":"2026-01-01T00:00:00.0011Z"}`, []],
      [`q={"start_at":{"$ne":"2026-01-01T00:00:00.0011Z"}}`, ["early"]],
      [`q={"start_at":{"$in":["2026-01-01T00:00:00.0011Z","2026-01-01T01:00:00.001+01:00"]}}`, ["early"]],
      [`q={"start_at":{"$nin":["2026-01-01T00:00:00.0011Z"]}}`, ["early"]],
      [`q={"created_date":{"$gt":"2000-01-01T00:00:00.123456+01:00"}}`, ["early"]],
    ]);
  });

  test("an operand outside an enum is invalid_filter for every equality operator, $ne and $nin included, and says so", async () => {
    const table: Array<[unknown, string, string, string]> = [
      [{ level: { $ne: 7 } }, "level", "$ne", `"level" takes one of 1, 2, 3; 7 is outside the enum`],
      [{ level: 7 }, "level", "$eq", `"level" takes one of 1, 2, 3; 7 is outside the enum`],
      [{ level: { $nin: [1, 7] } }, "level", "$nin", `"level" takes one of 1, 2, 3; 7 is outside the enum`],
      [{ status: { $in: ["todo", "Done"] } }, "status", "$in", `"status" takes one of "todo", "doing", "done"; "Done" is outside the enum`],
    ];
    for (const [filter, field, operator, message] of table) {
      const answer = await server.call("GET", `${PATH}/count?q=${q(filter)}`);
      assert.equal(answer.status, 400, answer.text);
      assert.equal(answer.body.error.code, "invalid_filter", answer.text);
      assert.deepEqual(answer.body.error.details, { field, operator, allowed: field === "level" ? [1, 2, 3] : ["todo", "doing", "done"] });
      assert.ok(answer.body.error.message.startsWith(message), answer.text);
    }
  });
});
