// One table of awkward values answered alike by the store under test and the memory store (issue
// 59: on PostgreSQL, typed columns serve these filters, sorts, cursors, counts and distinct values
// where they mean exactly what the values do): missing values and nulls, unicode and escaped text,
// texts longer than a column's prefix, numbers of every shape, dates in several forms, ties.

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
