// One table of awkward values answered alike by the store under test and the memory store (issue
// 59: on PostgreSQL, typed columns serve these filters, sorts, cursors, counts and distinct values
// where they mean exactly what the values do): missing values and nulls, unicode and escaped text,
// texts longer than a column's prefix, numbers of every shape, dates in several forms, ties; and
// aggregates and distinct values under filters, which PostgreSQL computes over the typed columns.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { q, startTestServer, type TestServer } from "../support/server.ts";

const THING = {
  name: "Thing",
  type: "object",
  properties: {
    n: { type: "integer" },
    s: { type: "string" },
    e: { type: "string", enum: ["red", "green", "blue", "Blue", "x".repeat(600)] },
    x: { type: "number" },
    b: { type: "boolean" },
    d: { type: "string", format: "date" },
    t: { type: "string", format: "date-time" },
    tags: { type: "array", items: { type: "string" } },
  },
  required: ["n"],
};
const PATH = "/api/entities/Thing";
const LONG = "x".repeat(511);

const VALUES: Record<string, unknown[]> = {
  s: ["a", "A", "b", "", "é", "É", "\u{1f600}", "\uff3a", "a\u0000b", "a\u0001", "\u0000", "42", LONG, LONG + "a", LONG + "b", "x".repeat(510), "x".repeat(700), "x".repeat(510) + "\u0000", null],
  e: ["red", "green", "blue", "Blue", "x".repeat(600), null],
  x: [0, -0.5, 0.1, 1, 1.5, 1e21, -1e-7, 2 ** 53, 42, null],
  b: [true, false, null],
  d: ["2026-01-01", "2026-01-02", "2024-02-29", "0001-01-01", "9999-12-31", null],
  t: ["2026-01-01T00:00:00.000Z", "2026-01-01T01:00:00+01:00", "2026-01-01T12:00:00.123Z", "2025-12-31T23:59:59.999Z", null],
};

const OPS = ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists"];

let store: TestServer;
let memory: TestServer;

/** 60 records: each field missing, null or a value, in a pattern that repeats values (ties) across records. */
function recordOf(n: number): Record<string, unknown> {
  const record: Record<string, unknown> = { n };
  for (const [field, values] of Object.entries(VALUES)) {
    const pick = (n * (field.charCodeAt(0) % 7 + 3) + field.length) % (values.length + 2);
    if (pick < values.length && values[pick] !== null) record[field] = values[pick];
    else if (pick === values.length) record[field] = null;
  }
  if (n % 3 === 0) record.tags = ["a", "b"].slice(0, n % 2 + 1);
  return record;
}

before(async () => {
  [store, memory] = await Promise.all([startTestServer({ schema: { Thing: THING } }), startTestServer({ schema: { Thing: THING }, memory: true })]);
  for (const server of [store, memory]) {
    const answer = await server.call("POST", `${PATH}/bulk`, { body: Array.from({ length: 60 }, (_, n) => recordOf(n)) });
    assert.equal(answer.status, 201, answer.text);
  }
});
after(() => Promise.all([store?.close(), memory?.close()]));

/** Both servers' answers to one GET, records as their n (ids differ between servers; both made them in n's order). */
async function both(path: string): Promise<[unknown, unknown]> {
  const shape = (body: unknown) => (Array.isArray(body) ? body.map((record) => (typeof record === "object" && record !== null && "n" in record ? record.n : record)) : body);
  const [ours, theirs] = await Promise.all([store.call("GET", path), memory.call("GET", path)]);
  assert.equal(ours.status, theirs.status, `${path}: ${ours.text} / ${theirs.text}`);
  return [shape(ours.body), shape(theirs.body)];
}

test("every comparison on every scalar field, and its count, selects what the memory store selects", async () => {
  for (const [field, values] of Object.entries(VALUES)) {
    for (const op of OPS) {
      const operands = op === "$exists" ? [true, false] : op === "$in" || op === "$nin" ? [values.slice(0, 3), [values[3], null], []] : values;
      for (const operand of operands) {
        if (operand === null && !["$eq", "$ne"].includes(op)) continue;
        const filter = { [field]: { [op]: operand } };
        const label = JSON.stringify(filter);
        const [ours, theirs] = await both(`${PATH}?q=${q(filter)}&sort_by=n&fields=n&limit=1000`);
        assert.deepEqual(ours, theirs, label);
        const [count, expected] = await both(`${PATH}/count?q=${q(filter)}`);
        assert.deepEqual(count, expected, `count ${label}`);
      }
    }
  }
});

test("sorts by every field, both ways, walked three at a time, meet the memory store's order", async () => {
  for (const field of [...Object.keys(VALUES), "created_date"]) {
    for (const sort of [field, `-${field}`]) {
      // Link: a cursor on created_date, skip on the other sorts (docs/query-language.md).
      const walk = async (server: TestServer) => {
        const found: unknown[] = [];
        for (let path: string | null = `${PATH}?sort_by=${sort}&limit=3`, pages = 0; path !== null && pages < 30; pages++) {
          const answer = await server.call("GET", path);
          assert.equal(answer.status, 200, answer.text);
          found.push(...(answer.body as Array<{ n: number }>).map((record) => record.n));
          const link = /^<([^>]+)>; rel="next"$/.exec(answer.headers.get("link") ?? "");
          path = link ? new URL(link[1]!).pathname + new URL(link[1]!).search : null;
        }
        return found;
      };
      const [ours, theirs] = await Promise.all([walk(store), walk(memory)]);
      assert.equal(ours.length, 60, sort);
      assert.deepEqual(ours, theirs, sort);
    }
  }
});

test("distinct values of an enum and a boolean, and their counts by group, are the memory store's", async () => {
  for (const field of ["e", "b"]) {
    const [ours, theirs] = await both(`${PATH}/distinct/${field}`);
    assert.deepEqual(ours, theirs, field);
    const body = { groupBy: field, sort: "-count" };
    const [a, m] = await Promise.all([store.call("POST", `${PATH}/aggregate`, { body }), memory.call("POST", `${PATH}/aggregate`, { body })]);
    assert.equal(a.status, 200, a.text);
    assert.deepEqual(a.body, m.body, field);
  }
});

/** Filters under which aggregates and distinct values are compared: none, on typed columns, on `data`, and one finished in JavaScript. */
const FILTERS: Array<Record<string, unknown> | null> = [
  null,
  { n: { $gte: 20 } },
  { b: true },
  { s: { $exists: true } },
  { e: { $in: ["red", "Blue", "x".repeat(600)] } },
  { x: { $lt: 2 } },
  { tags: "a" },
  { s: { $regex: "^x" } },
];

/** Both servers' answers to one aggregate body; the same status, and the same rows when it is 200. */
async function bothAggregate(body: Record<string, unknown>): Promise<void> {
  const label = JSON.stringify(body);
  const [ours, theirs] = await Promise.all([store.call("POST", `${PATH}/aggregate`, { body }), memory.call("POST", `${PATH}/aggregate`, { body })]);
  assert.equal(ours.status, theirs.status, `${label}: ${ours.text} / ${theirs.text}`);
  assert.deepEqual(ours.body, theirs.body, label);
}

test("filtered aggregates grouped by each scalar field, measuring numbers, are the memory store's", async () => {
  const measures = { sum: "x", avg: "x", min: "x", max: "x" };
  for (const query of FILTERS) {
    const filter = query === null ? {} : { query };
    await bothAggregate({ ...filter, ...measures });
    await bothAggregate({ ...filter, sum: "n", avg: "n", min: "n", max: "n", count: true });
    for (const field of ["s", "e", "x", "b", "d", "t", "n"]) {
      await bothAggregate({ ...filter, groupBy: field });
      await bothAggregate({ ...filter, groupBy: field, ...measures, sort: "-count", limit: 3 });
      await bothAggregate({ ...filter, groupBy: [field, "b"], sum: "n", min: "n", having: { count: { $gte: 1 } } });
    }
  }
});

test("sums of numbers whose decimals are not their doubles, past the doubles, and past 2^53, are the memory store's", async () => {
  const NUMBERS = [0.1, 0.2, 0.3, 1e308, 1e308, -1e308, 5e-324, 2 ** 53 + 2, 1 / 3, -2.5e-7, 2 ** 53 - 1, 2 ** 52 + 1, 0.375, -7];
  // Integers and binary fractions whose sums pass 2^53 and round: added in SQL on PostgreSQL.
  const exact = { v: { $in: [2 ** 53 - 1, 2 ** 52 + 1, 0.375, -7] } };
  const schema = { Num: { name: "Num", type: "object", properties: { g: { type: "string" }, v: { type: "number" } } } };
  const [ours, theirs] = await Promise.all([startTestServer({ schema }), startTestServer({ schema, memory: true })]);
  try {
    const records = NUMBERS.flatMap((v, i) => Array.from({ length: i + 1 }, (_, j) => ({ g: `g${(i + j) % 3}`, v })));
    for (const server of [ours, theirs]) assert.equal((await server.call("POST", "/api/entities/Num/bulk", { body: records })).status, 201);
    for (const body of [{ groupBy: "g", sum: "v", avg: "v" }, { sum: "v", avg: "v", min: "v", max: "v" }, { groupBy: "g", sum: "v", query: { v: { $lt: 1e300 } } }, { groupBy: "g", sum: "v", avg: "v", min: "v", query: exact }, { sum: "v", avg: "v", max: "v", query: exact }]) {
      const [a, m] = await Promise.all([ours.call("POST", "/api/entities/Num/aggregate", { body }), theirs.call("POST", "/api/entities/Num/aggregate", { body })]);
      assert.equal(a.status, m.status, `${JSON.stringify(body)}: ${a.text} / ${m.text}`);
      assert.deepEqual(a.body, m.body, JSON.stringify(body));
    }
  } finally {
    await Promise.all([ours.close(), theirs.close()]);
  }
});

test("filtered distinct values of each scalar field, walked two at a time, are the memory store's", async () => {
  for (const query of FILTERS) {
    for (const field of ["s", "e", "x", "b", "d", "t", "n", "tags"]) {
      const walk = async (server: TestServer) => {
        const found: unknown[] = [];
        let path: string | null = `${PATH}/distinct/${field}?limit=2${query ? `&q=${q(query)}` : ""}`;
        for (let pages = 0; path !== null && pages < 40; pages++) {
          const answer = await server.call("GET", path);
          assert.equal(answer.status, 200, answer.text);
          found.push(...(answer.body as unknown[]));
          const link = /^<([^>]+)>; rel="next"$/.exec(answer.headers.get("link") ?? "");
          path = link ? new URL(link[1]!).pathname + new URL(link[1]!).search : null;
        }
        return found;
      };
      const [ours, theirs] = await Promise.all([walk(store), walk(memory)]);
      assert.deepEqual(ours, theirs, `${field} ${JSON.stringify(query)}`);
    }
  }
});
