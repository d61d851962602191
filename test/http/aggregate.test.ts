// POST /api/entities/<E>/aggregate over HTTP (docs/aggregates.md, the SDK's EntityAggregateSpec): every
// measure with its exact value, groups of 1 to 4 fields, array fields, date buckets of every unit
// in UTC, having, sort, limit and truncated, records lacking fields, deleted records, publishable
// keys, and every kind of bad spec with its code.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { PUBLISHABLE, startTestServer, type Answer, type TestServer } from "../support/server.ts";

const PATH = "/api/entities/Task";

/** Five live records with gaps (r5 lacks most fields), and r6, deleted before every test. */
const RECORDS = {
  r1: { title: "a1", status: "todo", priority: 1, estimate: 0.5, done: false, due_date: "2025-12-29", start_at: "2025-12-31T23:30:00Z", tags: ["red", "blue"] },
  r2: { title: "b2", status: "todo", priority: 3, estimate: 2.25, done: true, due_date: "2026-01-04", start_at: "2026-01-01T00:30:00+02:00", tags: ["blue"] },
  r3: { title: "c3", status: "doing", priority: 5, estimate: 10, done: true, due_date: "2026-01-05", start_at: "2026-02-10T12:00:00Z", tags: [] },
  r4: { title: "d4", status: "done", priority: 10, done: false, due_date: "2026-03-15", start_at: "2027-01-01T00:00:00Z", tags: ["red", "red", "green"] },
  r5: { title: "e5", status: "todo", estimate: 1 },
  r6: { title: "f6", status: "done", priority: 7, estimate: 3, done: true, due_date: "2026-01-01", tags: ["gone"] },
};

let server: TestServer;
let createdDate = "";

before(async () => {
  server = await startTestServer();
  const ids: Record<string, string> = {};
  for (const [name, record] of Object.entries(RECORDS)) {
    const answer = await server.call("POST", PATH, { body: record });
    assert.equal(answer.status, 201, answer.text);
    ids[name] = answer.body.id;
    createdDate = answer.body.created_date;
  }
  // Counted once from the value index while r6 is live, so that its delete must reach the index.
  assert.deepEqual((await rowsOf({ groupBy: "status" })).find((row) => row.status === "done"), { status: "done", count: 2 });
  assert.equal((await server.call("DELETE", `${PATH}/${ids.r6}`)).status, 200);
});
after(() => server.close());

function aggregate(spec: unknown, apiKey?: string): Promise<Answer> {
  return server.call("POST", `${PATH}/aggregate`, { body: spec, apiKey });
}

async function rowsOf(spec: unknown, apiKey?: string): Promise<Record<string, unknown>[]> {
  const answer = await aggregate(spec, apiKey);
  assert.equal(answer.status, 200, `${JSON.stringify(spec)}: ${answer.text}`);
  assert.deepEqual(Object.keys(answer.body), ["rows", "truncated"]);
  return answer.body.rows;
}

/** A table of [spec, expected rows], compared whole: values, row order and column order. */
async function check(table: Array<[spec: unknown, rows: Record<string, unknown>[]]>): Promise<void> {
  for (const [spec, expected] of table) {
    const rows = await rowsOf(spec);
    assert.deepEqual(rows, expected, JSON.stringify(spec));
    rows.forEach((row, i) => assert.deepEqual(Object.keys(row), Object.keys(expected[i]!), `${JSON.stringify(spec)}: column order`));
  }
}

function assertError(answer: Answer, status: number, code: string, details: Record<string, unknown> = {}): void {
  assert.equal(answer.status, status, answer.text);
  assert.equal(answer.body?.error?.code, code, answer.text);
  assert.ok(answer.body.error.message.length > 20, answer.text);
  for (const [name, value] of Object.entries(details)) assert.deepEqual(answer.body.error.details?.[name], value, `${answer.text}: details.${name}`);
}

describe("measures", () => {
  test("with no groupBy one total row carries every measure, exactly", () =>
    check([
      [{}, [{ count: 5 }]],
      [{ sum: ["priority", "estimate"], avg: ["priority", "estimate"] }, [{ count: 5, sum_priority: 19, sum_estimate: 13.75, avg_priority: 4.75, avg_estimate: 3.4375 }]],
      [{ min: ["priority", "estimate", "due_date", "start_at", "title"], count: false }, [{ min_priority: 1, min_estimate: 0.5, min_due_date: "2025-12-29", min_start_at: "2025-12-31T22:30:00.000Z", min_title: "a1" }]],
      [{ max: ["priority", "estimate", "due_date", "start_at", "title"], count: false }, [{ max_priority: 10, max_estimate: 10, max_due_date: "2026-03-15", max_start_at: "2027-01-01T00:00:00.000Z", max_title: "e5" }]],
      [{ countDistinct: "tags" }, [{ count: 5, count_distinct_tags: 3 }]],
      [{ countDistinct: "status" }, [{ count: 5, count_distinct_status: 3 }]],
      [{ countDistinct: "done" }, [{ count: 5, count_distinct_done: 2 }]],
      [{ countDistinct: "due_date" }, [{ count: 5, count_distinct_due_date: 4 }]],
    ]));

  test("a row lists the group fields, then count, sum, avg, min, max and count_distinct", () =>
    check([
      [
        { countDistinct: "tags", max: "title", min: "title", avg: "priority", sum: "priority", groupBy: "status", query: { status: "doing" } },
        [{ status: "doing", count: 1, sum_priority: 5, avg_priority: 5, min_title: "c3", max_title: "c3", count_distinct_tags: 0 }],
      ],
    ]));

  test("measures of a group without numbers: sum 0, avg, min and max null; count_distinct 0", () =>
    check([
      [{ query: { priority: { $gt: 100 } }, sum: "priority", avg: "priority", min: "due_date", max: "priority", countDistinct: "tags" },
        [{ count: 0, sum_priority: 0, avg_priority: null, min_due_date: null, max_priority: null, count_distinct_tags: 0 }]],
      [{ groupBy: "status", query: { status: "done" }, sum: "estimate", avg: "estimate", min: "estimate" },
        [{ status: "done", count: 1, sum_estimate: 0, avg_estimate: null, min_estimate: null }]],
    ]));

  test("query filters before grouping, with the filter language of q", () =>
    check([
      [{ query: { done: true }, groupBy: "status", sum: "priority" }, [{ status: "doing", count: 1, sum_priority: 5 }, { status: "todo", count: 1, sum_priority: 3 }]],
      [{ query: { $or: [{ priority: { $gte: 5 } }, { tags: "blue" }] } }, [{ count: 4 }]],
      [{ query: { tags: { $in: ["green"] } }, count: true }, [{ count: 1 }]],
      [{ query: {} }, [{ count: 5 }]],
    ]));

  test("no body, or null members, ask for the defaults", async () => {
    const answer = await server.call("POST", `${PATH}/aggregate`);
    assert.deepEqual([answer.status, answer.body], [200, { rows: [{ count: 5 }], truncated: false }]);
    await check([[{ groupBy: null, query: null, sort: null, limit: null, count: null }, [{ count: 5 }]]]);
  });
});

describe("groups", () => {
  test("one field: enum, boolean and number, records lacking it under null, deleted records never", () =>
    check([
      [{ groupBy: "status" }, [{ status: "doing", count: 1 }, { status: "done", count: 1 }, { status: "todo", count: 3 }]],
      [{ groupBy: "done" }, [{ done: false, count: 2 }, { done: true, count: 2 }, { done: null, count: 1 }]],
      [{ groupBy: "priority", count: false }, [{ priority: 1 }, { priority: 3 }, { priority: 5 }, { priority: 10 }, { priority: null }]],
      [{ groupBy: ["status"], sum: "priority", avg: "estimate" }, [
        { status: "doing", count: 1, sum_priority: 5, avg_estimate: 10 },
        { status: "done", count: 1, sum_priority: 10, avg_estimate: null },
        { status: "todo", count: 3, sum_priority: 4, avg_estimate: 1.25 },
      ]],
    ]));

  test("the value-index count and the row walk agree", async () => {
    for (const field of ["status", "done"]) {
      const counted = await rowsOf({ groupBy: field });
      // A measure makes the aggregate read rows; each record has its own id.
      const walked = await rowsOf({ groupBy: field, countDistinct: "id" });
      assert.deepEqual(walked.map((row) => ({ [field]: row[field], count: row.count })), counted);
      for (const row of walked) assert.equal(row.count_distinct_id, row.count);
    }
  });

  test("two, three and four fields, ordered by each in turn", () =>
    check([
      [{ groupBy: ["status", "done"] }, [
        { status: "doing", done: true, count: 1 }, { status: "done", done: false, count: 1 },
        { status: "todo", done: false, count: 1 }, { status: "todo", done: true, count: 1 }, { status: "todo", done: null, count: 1 },
      ]],
      [{ groupBy: ["done", "status", "priority"], sum: "estimate" }, [
        { done: false, status: "done", priority: 10, count: 1, sum_estimate: 0 },
        { done: false, status: "todo", priority: 1, count: 1, sum_estimate: 0.5 },
        { done: true, status: "doing", priority: 5, count: 1, sum_estimate: 10 },
        { done: true, status: "todo", priority: 3, count: 1, sum_estimate: 2.25 },
        { done: null, status: "todo", priority: null, count: 1, sum_estimate: 1 },
      ]],
      [{ groupBy: ["status", "done", "priority", "due_date"], query: { status: "todo" } }, [
        { status: "todo", done: false, priority: 1, due_date: "2025-12-29", count: 1 },
        { status: "todo", done: true, priority: 3, due_date: "2026-01-04", count: 1 },
        { status: "todo", done: null, priority: null, due_date: null, count: 1 },
      ]],
    ]));

  test("an array field groups by each distinct element; an empty or missing array is the null group", () =>
    check([
      [{ groupBy: "tags", sum: "priority" }, [
        { tags: "blue", count: 2, sum_priority: 4 }, { tags: "green", count: 1, sum_priority: 10 },
        { tags: "red", count: 2, sum_priority: 11 }, { tags: null, count: 2, sum_priority: 5 },
      ]],
      [{ groupBy: ["status", "tags"], query: { status: "todo" } }, [
        { status: "todo", tags: "blue", count: 2 }, { status: "todo", tags: "red", count: 1 }, { status: "todo", tags: null, count: 1 },
      ]],
    ]));

  test("platform fields group too (created_by_id with a secret key)", async () => {
    const [row] = await rowsOf({ groupBy: "created_by_id" });
    assert.deepEqual(Object.keys(row!), ["created_by_id", "count"]);
    assert.match(String(row!.created_by_id), /^key_/);
    assert.equal(row!.count, 5);
  });
});

describe("date buckets, in UTC", () => {
  test("a date field by day, week (Mondays, across the new year), month and year", () =>
    check([
      [{ dateBucket: { field: "due_date", unit: "day" } }, [
        { due_date: "2025-12-29", count: 1 }, { due_date: "2026-01-04", count: 1 }, { due_date: "2026-01-05", count: 1 },
        { due_date: "2026-03-15", count: 1 }, { due_date: null, count: 1 },
      ]],
      // 2026-01-04 is a Sunday: its week began on Monday 2025-12-29. 2026-03-15 is a Sunday too.
      [{ dateBucket: { field: "due_date", unit: "week" } }, [
        { due_date: "2025-12-29", count: 2 }, { due_date: "2026-01-05", count: 1 }, { due_date: "2026-03-09", count: 1 }, { due_date: null, count: 1 },
      ]],
      [{ dateBucket: { field: "due_date", unit: "month" } }, [
        { due_date: "2025-12", count: 1 }, { due_date: "2026-01", count: 2 }, { due_date: "2026-03", count: 1 }, { due_date: null, count: 1 },
      ]],
      [{ dateBucket: { field: "due_date", unit: "year" } }, [{ due_date: "2025", count: 1 }, { due_date: "2026", count: 3 }, { due_date: null, count: 1 }]],
    ]));

  test("a date-time field buckets by its UTC instant, whatever offset it was written with", () =>
    check([
      // r2's 2026-01-01T00:30:00+02:00 is 2025-12-31T22:30Z.
      [{ dateBucket: { field: "start_at", unit: "day" } }, [
        { start_at: "2025-12-31", count: 2 }, { start_at: "2026-02-10", count: 1 }, { start_at: "2027-01-01", count: 1 }, { start_at: null, count: 1 },
      ]],
      // Friday 2027-01-01 is in the week of Monday 2026-12-28.
      [{ dateBucket: { field: "start_at", unit: "week" } }, [
        { start_at: "2025-12-29", count: 2 }, { start_at: "2026-02-09", count: 1 }, { start_at: "2026-12-28", count: 1 }, { start_at: null, count: 1 },
      ]],
      [{ dateBucket: { field: "start_at", unit: "month" }, sum: "priority" }, [
        { start_at: "2025-12", count: 2, sum_priority: 4 }, { start_at: "2026-02", count: 1, sum_priority: 5 },
        { start_at: "2027-01", count: 1, sum_priority: 10 }, { start_at: null, count: 1, sum_priority: 0 },
      ]],
      [{ dateBucket: { field: "start_at", unit: "year" } }, [{ start_at: "2025", count: 2 }, { start_at: "2026", count: 1 }, { start_at: "2027", count: 1 }, { start_at: null, count: 1 }]],
    ]));

  test("created_date buckets by every unit, and a bucket comes before the groupBy fields", async () => {
    const day = createdDate.slice(0, 10);
    await check([
      [{ dateBucket: { field: "created_date", unit: "day" } }, [{ created_date: day, count: 5 }]],
      [{ dateBucket: { field: "created_date", unit: "month" } }, [{ created_date: createdDate.slice(0, 7), count: 5 }]],
      [{ dateBucket: { field: "updated_date", unit: "year" } }, [{ updated_date: createdDate.slice(0, 4), count: 5 }]],
      [{ groupBy: "status", dateBucket: { field: "created_date", unit: "day" }, sort: "-count" }, [
        { created_date: day, status: "todo", count: 3 }, { created_date: day, status: "doing", count: 1 }, { created_date: day, status: "done", count: 1 },
      ]],
    ]);
    const [week] = await rowsOf({ dateBucket: { field: "created_date", unit: "week" } });
    const monday = new Date(week!.created_date as string);
    assert.equal(monday.getUTCDay(), 1);
    assert.ok(Date.parse(day) - monday.getTime() < 7 * 86_400_000);
  });
});

describe("having, sort and limit", () => {
  test("having filters the rows by their columns, with the operators of filters", () =>
    check([
      [{ groupBy: "status", having: { count: { $gt: 1 } } }, [{ status: "todo", count: 3 }]],
      [{ groupBy: "status", having: { count: 1 } }, [{ status: "doing", count: 1 }, { status: "done", count: 1 }]],
      [{ groupBy: "status", having: { status: { $in: ["doing", "done"] }, count: { $lte: 1 } } }, [{ status: "doing", count: 1 }, { status: "done", count: 1 }]],
      [{ groupBy: "status", having: { status: { $nin: ["todo"] }, count: { $ne: 1 } } }, []],
      [{ groupBy: "status", avg: "estimate", having: { avg_estimate: null } }, [{ status: "done", count: 1, avg_estimate: null }]],
      [{ groupBy: "status", avg: "estimate", having: { avg_estimate: { $ne: null } } }, [{ status: "doing", count: 1, avg_estimate: 10 }, { status: "todo", count: 3, avg_estimate: 1.25 }]],
      [{ groupBy: "status", avg: "estimate", having: { avg_estimate: { $lt: 5 } } }, [{ status: "todo", count: 3, avg_estimate: 1.25 }]],
      [{ groupBy: "status", min: "due_date", having: { min_due_date: { $lt: "2026-01-01" } } }, [{ status: "todo", count: 3, min_due_date: "2025-12-29" }]],
      [{ groupBy: "done", having: { done: { $in: [null, true] } } }, [{ done: true, count: 2 }, { done: null, count: 1 }]],
      [{ dateBucket: { field: "due_date", unit: "month" }, having: { due_date: { $gte: "2026-01" } } }, [{ due_date: "2026-01", count: 2 }, { due_date: "2026-03", count: 1 }]],
    ]));

  test("sort by a computed or group column, ascending or with - descending; ties by the group columns", () =>
    check([
      [{ groupBy: "status", sort: "-count" }, [{ status: "todo", count: 3 }, { status: "doing", count: 1 }, { status: "done", count: 1 }]],
      [{ groupBy: "status", sort: "count" }, [{ status: "doing", count: 1 }, { status: "done", count: 1 }, { status: "todo", count: 3 }]],
      [{ groupBy: "status", sort: "+count" }, [{ status: "doing", count: 1 }, { status: "done", count: 1 }, { status: "todo", count: 3 }]],
      [{ groupBy: "status", sort: "-status" }, [{ status: "todo", count: 3 }, { status: "done", count: 1 }, { status: "doing", count: 1 }]],
      [{ groupBy: "status", sum: "priority", sort: "-sum_priority" }, [
        { status: "done", count: 1, sum_priority: 10 }, { status: "doing", count: 1, sum_priority: 5 }, { status: "todo", count: 3, sum_priority: 4 },
      ]],
      // No value sorts last ascending and first descending (docs/aggregates.md).
      [{ groupBy: "status", avg: "estimate", sort: "avg_estimate" }, [
        { status: "todo", count: 3, avg_estimate: 1.25 }, { status: "doing", count: 1, avg_estimate: 10 }, { status: "done", count: 1, avg_estimate: null },
      ]],
      [{ groupBy: "status", avg: "estimate", sort: "-avg_estimate" }, [
        { status: "done", count: 1, avg_estimate: null }, { status: "doing", count: 1, avg_estimate: 10 }, { status: "todo", count: 3, avg_estimate: 1.25 },
      ]],
      [{ groupBy: "done", sort: "-done" }, [{ done: null, count: 1 }, { done: true, count: 2 }, { done: false, count: 2 }]],
      [{ groupBy: "status", max: "due_date", sort: "-max_due_date" }, [
        { status: "done", count: 1, max_due_date: "2026-03-15" }, { status: "doing", count: 1, max_due_date: "2026-01-05" }, { status: "todo", count: 3, max_due_date: "2026-01-04" },
      ]],
    ]));

  test("limit keeps the first rows, and truncated tells whether more passed having", async () => {
    const cases: Array<[spec: Record<string, unknown>, statuses: string[], truncated: boolean]> = [
      [{ groupBy: "status", limit: 2 }, ["doing", "done"], true],
      [{ groupBy: "status", sort: "-count", limit: 1 }, ["todo"], true],
      [{ groupBy: "status", limit: 3 }, ["doing", "done", "todo"], false],
      [{ groupBy: "status", limit: 1000 }, ["doing", "done", "todo"], false],
      [{ groupBy: "status", having: { count: { $gt: 1 } }, limit: 1 }, ["todo"], false],
    ];
    for (const [spec, statuses, truncated] of cases) {
      const answer = await aggregate(spec);
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual([answer.body.rows.map((row: { status: string }) => row.status), answer.body.truncated], [statuses, truncated], JSON.stringify(spec));
    }
  });
});

describe("publishable keys (docs/aggregates.md)", () => {
  test("may aggregate, and never see created_by_id", async () => {
    const answer = await aggregate({ groupBy: "status", countDistinct: "tags" }, PUBLISHABLE);
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.body.rows.length, 3);
    assert.ok(!answer.text.includes("created_by_id") && !answer.text.includes("key_"));
  });

  test("may not group by, measure, filter on, have or sort by created_by_id: 403", async () => {
    const specs = [
      { groupBy: "created_by_id" }, { groupBy: ["status", "created_by_id"] }, { countDistinct: "created_by_id" }, { min: "created_by_id" },
      { max: ["title", "created_by_id"] }, { query: { created_by_id: "key_x" } }, { sort: "created_by_id" }, { groupBy: "status", sort: "-created_by_id" },
      { groupBy: "status", having: { created_by_id: "key_x" } }, { dateBucket: { field: "created_by_id", unit: "day" } },
    ];
    for (const spec of specs) assertError(await aggregate(spec, PUBLISHABLE), 403, "forbidden");
  });
});

describe("bad specs", () => {
  test("each is refused with its code, naming the member at fault", async () => {
    const cases: Array<[spec: unknown, code: string, details?: Record<string, unknown>]> = [
      [[{ groupBy: "status" }], "invalid_json"],
      ["status", "invalid_json"],
      [{ group: "status" }, "invalid_json", { parameter: "group" }],
      [{ groupBy: 3 }, "invalid_json", { parameter: "groupBy" }],
      [{ groupBy: ["status", 3] }, "invalid_json", { parameter: "groupBy" }],
      [{ groupBy: "" }, "invalid_json", { parameter: "groupBy" }],
      [{ groupBy: ["status", "done", "priority", "due_date", "title"] }, "invalid_parameter", { parameter: "groupBy" }],
      [{ groupBy: "nope" }, "unknown_field", { field: "nope" }],
      [{ groupBy: "meta.owner" }, "unknown_field", { field: "meta.owner" }],
      [{ groupBy: "meta" }, "invalid_parameter", { parameter: "groupBy", field: "meta" }],
      [{ groupBy: ["status", "status"] }, "invalid_parameter", { parameter: "groupBy" }],
      [{ groupBy: "due_date", dateBucket: { field: "due_date", unit: "day" } }, "invalid_parameter", { parameter: "groupBy" }],
      [{ dateBucket: "due_date" }, "invalid_json", { parameter: "dateBucket" }],
      [{ dateBucket: { field: "due_date" } }, "invalid_json", { parameter: "dateBucket" }],
      [{ dateBucket: { field: "due_date", unit: "day", tz: "Europe/Paris" } }, "invalid_json", { parameter: "dateBucket" }],
      [{ dateBucket: { field: "due_date", unit: "hour" } }, "invalid_parameter", { parameter: "dateBucket" }],
      [{ dateBucket: { field: "title", unit: "day" } }, "invalid_parameter", { parameter: "dateBucket", field: "title" }],
      [{ dateBucket: { field: "nope", unit: "day" } }, "unknown_field", { field: "nope" }],
      [{ count: "yes" }, "invalid_json", { parameter: "count" }],
      [{ sum: "title" }, "invalid_parameter", { parameter: "sum", field: "title" }],
      [{ sum: "tags" }, "invalid_parameter", { parameter: "sum", field: "tags" }],
      [{ sum: "due_date" }, "invalid_parameter", { parameter: "sum", field: "due_date" }],
      [{ avg: "done" }, "invalid_parameter", { parameter: "avg", field: "done" }],
      [{ avg: ["priority", "nope"] }, "unknown_field", { field: "nope" }],
      [{ sum: [1] }, "invalid_json", { parameter: "sum" }],
      [{ min: "done" }, "invalid_parameter", { parameter: "min", field: "done" }],
      [{ max: "meta" }, "invalid_parameter", { parameter: "max", field: "meta" }],
      [{ max: "tags" }, "invalid_parameter", { parameter: "max", field: "tags" }],
      [{ sum: ["priority", "priority"] }, "invalid_parameter", { parameter: "sum" }],
      [{ countDistinct: ["tags", "status"] }, "invalid_json", { parameter: "countDistinct" }],
      [{ countDistinct: "meta" }, "invalid_parameter", { parameter: "countDistinct", field: "meta" }],
      [{ having: [] }, "invalid_json", { parameter: "having" }],
      [{ groupBy: "status", having: { nope: 1 } }, "unknown_field", { parameter: "having", field: "nope", fields: ["status", "count"] }],
      [{ groupBy: "status", having: { priority: 1 } }, "unknown_field", { parameter: "having", field: "priority" }],
      [{ having: { count: "3" } }, "invalid_filter", { parameter: "having", field: "count" }],
      [{ having: { count: { $gt: null } } }, "invalid_filter", { field: "count", operator: "$gt" }],
      [{ having: { count: { $contains: "3" } } }, "invalid_filter", { operator: "$contains" }],
      [{ having: { count: { $in: 3 } } }, "invalid_filter", { operator: "$in" }],
      [{ having: { count: { $gt: 1, x: 2 } } }, "invalid_filter", { field: "count" }],
      [{ having: { $or: [{ count: 1 }] } }, "invalid_filter", { operator: "$or" }],
      [{ groupBy: "status", having: { status: { $gt: 1 } } }, "invalid_filter", { field: "status" }],
      [{ min: "due_date", having: { min_due_date: { $gt: "soon" } } }, "invalid_filter", { field: "min_due_date" }],
      [{ sort: "nope" }, "invalid_parameter", { parameter: "sort", fields: ["count"] }],
      [{ sort: "-priority" }, "invalid_parameter", { parameter: "sort" }],
      [{ sort: 1 }, "invalid_json", { parameter: "sort" }],
      [{ limit: 0 }, "invalid_parameter", { parameter: "limit" }],
      [{ limit: 1001 }, "invalid_parameter", { parameter: "limit" }],
      [{ limit: 2.5 }, "invalid_parameter", { parameter: "limit" }],
      [{ limit: "10" }, "invalid_parameter", { parameter: "limit" }],
      [{ query: "status" }, "invalid_json", { parameter: "query" }],
      [{ query: { nope: 1 } }, "unknown_field", { field: "nope" }],
      [{ query: { priority: { $gt: "3" } } }, "invalid_filter"],
      [{ query: { status: "later" } }, "invalid_filter"],
    ];
    for (const [spec, code, details] of cases) assertError(await aggregate(spec), 400, code, details);
  });

  test("a body that is not JSON is invalid_json; another method is 405; an unknown entity 404", async () => {
    const answer = await server.call("POST", `${PATH}/aggregate`, { body: "{groupBy:", headers: { "Content-Type": "application/json" } });
    assertError(answer, 400, "invalid_json");
    const get = await server.call("GET", `${PATH}/aggregate`);
    assertError(get, 405, "method_not_allowed");
    assert.equal(get.headers.get("allow"), "POST");
    assertError(await server.call("POST", "/api/entities/Nope/aggregate", { body: {} }), 404, "entity_not_found");
  });
});

// Issue 39 item 8: sums hung on the order a store reads rows in (1e308, 1e308, −1e308 gave null
// one way and 1e308 the other; decimals differed in their last digit between stores).
describe("sums and means are exact, whatever the order of the rows", () => {
  let scores: TestServer;
  before(async () => {
    scores = await startTestServer({ schema: { Score: { properties: { score: { type: "number" }, batch: { type: "string" } } } } });
    const batches: Record<string, number[]> = {
      up: [1e308, 1e308, -1e308],
      down: [1e308, -1e308, 1e308],
      decimals: [0.1, 12.3456789, 0.2, 1e-7, 333.33, 0.7],
      shuffled: [0.7, 1e-7, 333.33, 0.2, 12.3456789, 0.1],
      over: [1e308, 1e308],
    };
    for (const [batch, values] of Object.entries(batches)) {
      for (const score of values) assert.equal((await scores.call("POST", "/api/entities/Score", { body: { score, batch } })).status, 201);
    }
  });
  after(() => scores.close());

  const measure = async (batch: string, spec: Record<string, unknown>) => {
    const answer = await scores.call("POST", "/api/entities/Score/aggregate", { body: { query: { batch }, ...spec } });
    assert.equal(answer.status, 200, answer.text);
    return answer.body.rows[0];
  };

  test("1e308 + 1e308 − 1e308 is 1e308 in either order, and its mean a third of it", async () => {
    for (const batch of ["up", "down"]) {
      assert.deepEqual(await measure(batch, { sum: "score", avg: "score" }), { count: 3, sum_score: 1e308, avg_score: 1e308 / 3 }, batch);
    }
  });

  test("decimals sum to the exact sum rounded once, the same in any order", async () => {
    // 0.1 + 12.3456789 + 0.2 + 1e-7 + 333.33 + 0.7 summed exactly (as decimals of the doubles), rounded once.
    const exact = 346.675679; // plain addition in the first order gives 346.67567899999995
    for (const batch of ["decimals", "shuffled"]) {
      assert.deepEqual(await measure(batch, { sum: "score", avg: "score" }), { count: 6, sum_score: exact, avg_score: exact / 6 }, batch);
    }
  });

  test("a sum past what a JSON number holds is 400 invalid_parameter, naming the field; its mean is still answered", async () => {
    const refused = await scores.call("POST", "/api/entities/Score/aggregate", { body: { query: { batch: "over" }, sum: "score" } });
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.body.error.code, "invalid_parameter");
    assert.deepEqual(refused.body.error.details, { parameter: "sum", field: "score", group: {} });
    assert.match(refused.body.error.message, /The sum of score is over 1\.8e308/);
    assert.deepEqual(await measure("over", { avg: "score" }), { count: 2, avg_score: 1e308 });
  });
});
