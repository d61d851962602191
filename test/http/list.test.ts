// GET /api/entities/<E> and /count over HTTP (docs/api.md, docs/query-language.md): every filter
// operator on every field kind, search, typed sort, fields, limits, counts, skip paging, deleted
// records, publishable keys, and the refusals with their codes and details.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { PUBLISHABLE, q, startTestServer, TASK, type Answer, type TestServer } from "../support/server.ts";

const PATH = "/api/entities/Task";

/** Five records covering every field kind, with gaps: t4 and t5 lack most optional fields. */
const RECORDS = {
  t1: {
    title: "Alpha one", status: "todo", priority: 1, estimate: 0.5, done: false, due_date: "2026-01-01",
    start_at: "2026-01-01T08:00:00Z", email: "ann@example.com", tags: ["red", "blue"],
    meta: { owner: "ann", level: 1, nested: { deep: "x" } },
  },
  t2: {
    title: "beta two", status: "doing", priority: 3, estimate: 2, done: true, due_date: "2026-01-15",
    start_at: "2026-01-15T12:30:00.000Z", email: "bob@example.com", tags: ["blue"], meta: { owner: "bob", level: 2 },
  },
  t3: {
    title: "Gamma three", status: "done", priority: 5, estimate: 10, done: true, due_date: "2026-02-01",
    start_at: "2025-12-31T23:59:59Z", tags: [], meta: { owner: null, level: 3 },
  },
  t4: { title: "delta four", status: "todo", priority: 10, done: false, tags: ["green"] },
  t5: { title: "Épsilon ALPHA", status: "doing", estimate: 1, due_date: "2025-12-31" },
} as const;
type Name = keyof typeof RECORDS;
const NAMES = Object.keys(RECORDS) as Name[];
const ALL: Name[] = [...NAMES];

let server: TestServer;
/** The created records by name, as a secret key sees them. */
const created = {} as Record<Name, Record<string, any>>;

before(async () => {
  server = await startTestServer();
  for (const name of NAMES) {
    const answer = await server.call("POST", PATH, { body: RECORDS[name] });
    assert.equal(answer.status, 201, answer.text);
    created[name] = answer.body;
  }
});
after(() => server.close());

async function get(query: string, apiKey?: string): Promise<Answer> {
  return server.call("GET", `${PATH}?${query}`, { apiKey });
}

/** The names of the records a list answers, in answer order. */
async function namesOf(query: string, apiKey?: string): Promise<string[]> {
  const answer = await get(query, apiKey);
  assert.equal(answer.status, 200, `${decodeURIComponent(query)}: ${answer.text}`);
  assert.ok(Array.isArray(answer.body));
  return answer.body.map((record: { id: string }) => NAMES.find((name) => created[name].id === record.id) ?? record.id);
}

/** Checks a table of [filter, expected names] through both the list and the count endpoints. */
async function checkFilters(table: Array<[unknown, Name[]]>): Promise<void> {
  for (const [filter, expected] of table) {
    const label = JSON.stringify(filter);
    assert.deepEqual((await namesOf(`q=${q(filter)}`)).sort(), [...expected].sort(), label);
    const count = await server.call("GET", `${PATH}/count?q=${q(filter)}`);
    assert.equal(count.status, 200, label);
    assert.deepEqual(count.body, { count: expected.length }, `${label}: count`);
  }
}

function assertError(answer: Answer, status: number, code: string, details: Record<string, unknown> = {}): void {
  assert.equal(answer.status, status, answer.text);
  assert.equal(answer.body?.error?.code, code, answer.text);
  assert.equal(typeof answer.body.error.message, "string");
  for (const [name, value] of Object.entries(details)) assert.deepEqual(answer.body.error.details?.[name], value, `${answer.text}: details.${name}`);
}

describe("filters: every operator on every field kind", () => {
  test("string fields compare exactly and by code point; $contains is case-insensitive", () =>
    checkFilters([
      [{ title: "beta two" }, ["t2"]],
      [{ title: { $eq: "Beta two" } }, []],
      [{ title: { $ne: "beta two" } }, ["t1", "t3", "t4", "t5"]],
      [{ title: { $gt: "beta two" } }, ["t4", "t5"]],
      [{ title: { $gte: "beta two" } }, ["t2", "t4", "t5"]],
      [{ title: { $lt: "beta" } }, ["t1", "t3"]],
      [{ title: { $lte: "Gamma three" } }, ["t1", "t3"]],
      [{ title: { $in: ["Alpha one", "delta four", "nope"] } }, ["t1", "t4"]],
      [{ title: { $in: [] } }, []],
      [{ title: { $nin: ["Alpha one", "delta four"] } }, ["t2", "t3", "t5"]],
      [{ title: { $contains: "ALPHA" } }, ["t1", "t5"]],
      [{ title: { $contains: "a t" } }, ["t2", "t3"]],
      [{ title: { $contains: "épsilon" } }, ["t5"]],
      [{ title: { $exists: true } }, ALL],
      [{ email: { $exists: true } }, ["t1", "t2"]],
      [{ email: { $exists: false } }, ["t3", "t4", "t5"]],
      [{ email: { $contains: "@EXAMPLE" } }, ["t1", "t2"]],
    ]));

  test("$ne and $nin match records lacking the field; null means no value", () =>
    checkFilters([
      [{ email: { $ne: "ann@example.com" } }, ["t2", "t3", "t4", "t5"]],
      [{ email: { $nin: ["ann@example.com", "bob@example.com"] } }, ["t3", "t4", "t5"]],
      [{ email: null }, ["t3", "t4", "t5"]],
      [{ email: { $eq: null } }, ["t3", "t4", "t5"]],
      [{ email: { $ne: null } }, ["t1", "t2"]],
      [{ priority: { $ne: 3 } }, ["t1", "t3", "t4", "t5"]],
      [{ done: { $nin: [true] } }, ["t1", "t4", "t5"]],
    ]));

  test("number fields compare numerically", () =>
    checkFilters([
      [{ priority: 3 }, ["t2"]],
      [{ priority: { $eq: 10 } }, ["t4"]],
      [{ priority: { $gt: 3 } }, ["t3", "t4"]],
      [{ priority: { $gte: 3 } }, ["t2", "t3", "t4"]],
      [{ priority: { $lt: 5 } }, ["t1", "t2"]],
      [{ priority: { $lte: 5 } }, ["t1", "t2", "t3"]],
      [{ priority: { $gt: 2, $lt: 10 } }, ["t2", "t3"]],
      [{ priority: { $in: [1, 10] } }, ["t1", "t4"]],
      [{ priority: { $nin: [1, 10] } }, ["t2", "t3", "t5"]],
      [{ priority: { $exists: false } }, ["t5"]],
      [{ estimate: { $gt: 0.75 } }, ["t2", "t3", "t5"]],
      [{ estimate: { $lte: 1 } }, ["t1", "t5"]],
      [{ estimate: 0.5 }, ["t1"]],
      [{ estimate: { $gte: -1e9 } }, ["t1", "t2", "t3", "t5"]],
    ]));

  test("boolean fields compare as booleans, false before true", () =>
    checkFilters([
      [{ done: true }, ["t2", "t3"]],
      [{ done: false }, ["t1", "t4"]],
      [{ done: { $eq: false } }, ["t1", "t4"]],
      [{ done: { $ne: true } }, ["t1", "t4", "t5"]],
      [{ done: { $in: [true] } }, ["t2", "t3"]],
      [{ done: { $in: [true, false] } }, ["t1", "t2", "t3", "t4"]],
      [{ done: { $exists: false } }, ["t5"]],
      [{ done: { $gt: false } }, ["t2", "t3"]],
      [{ done: { $lt: true } }, ["t1", "t4"]],
    ]));

  test("enum fields take their declared values", () =>
    checkFilters([
      [{ status: "todo" }, ["t1", "t4"]],
      [{ status: { $eq: "doing" } }, ["t2", "t5"]],
      [{ status: { $ne: "todo" } }, ["t2", "t3", "t5"]],
      [{ status: { $in: ["doing", "done"] } }, ["t2", "t3", "t5"]],
      [{ status: { $nin: ["doing", "done"] } }, ["t1", "t4"]],
      [{ status: { $exists: true } }, ALL],
      [{ status: { $gt: "doing" } }, ["t1", "t3", "t4"]],
    ]));

  test("date fields compare chronologically and accept a date or a full timestamp", () =>
    checkFilters([
      [{ due_date: "2026-01-15" }, ["t2"]],
      [{ due_date: "2026-01-15T00:00:00Z" }, ["t2"]],
      [{ due_date: { $eq: "2026-01-15T01:00:00.000+01:00" } }, ["t2"]],
      [{ due_date: { $ne: "2026-01-15" } }, ["t1", "t3", "t4", "t5"]],
      [{ due_date: { $gt: "2026-01-01" } }, ["t2", "t3"]],
      [{ due_date: { $gte: "2026-01-01" } }, ["t1", "t2", "t3"]],
      [{ due_date: { $gt: "2026-01-01T12:00:00Z" } }, ["t2", "t3"]],
      [{ due_date: { $lt: "2026-01-01T00:00:01Z" } }, ["t1", "t5"]],
      // 00:30 at +01:00 is the evening before in UTC: text order would say otherwise.
      [{ due_date: { $lt: "2026-01-01T00:30:00+01:00" } }, ["t5"]],
      [{ due_date: { $lte: "2025-12-31" } }, ["t5"]],
      [{ due_date: { $in: ["2026-01-01", "2026-02-01T00:00:00Z"] } }, ["t1", "t3"]],
      [{ due_date: { $nin: ["2026-01-01"] } }, ["t2", "t3", "t4", "t5"]],
      [{ due_date: { $exists: false } }, ["t4"]],
    ]));

  test("date-time fields compare chronologically whatever the written offset or precision", () =>
    checkFilters([
      [{ start_at: "2026-01-01T08:00:00Z" }, ["t1"]],
      [{ start_at: "2026-01-01T09:00:00+01:00" }, ["t1"]],
      [{ start_at: { $eq: "2026-01-01T08:00:00.000Z" } }, ["t1"]],
      [{ start_at: { $eq: "2026-01-01" } }, []],
      [{ start_at: { $gte: "2026-01-01" } }, ["t1", "t2"]],
      [{ start_at: { $lt: "2026-01-01" } }, ["t3"]],
      [{ start_at: { $gt: "2026-01-01T08:00:00.000Z" } }, ["t2"]],
      [{ start_at: { $lte: "2026-01-01T08:00:00.000Z" } }, ["t1", "t3"]],
      // 08:30 at +01:00 is 07:30 UTC, before t1's 08:00 UTC: text order would say otherwise.
      [{ start_at: { $lt: "2026-01-01T08:30:00+01:00" } }, ["t3"]],
      [{ start_at: { $in: ["2026-01-15T13:30:00+01:00"] } }, ["t2"]],
      [{ start_at: { $ne: "2026-01-01T08:00:00Z" } }, ["t2", "t3", "t4", "t5"]],
      [{ start_at: { $exists: true } }, ["t1", "t2", "t3"]],
    ]));

  test("array fields match when any element does; negations when none does; a plain array is any of its values, $eq compares an array whole", () =>
    checkFilters([
      [{ tags: "blue" }, ["t1", "t2"]],
      [{ tags: { $eq: "red" } }, ["t1"]],
      [{ tags: { $ne: "blue" } }, ["t3", "t4", "t5"]],
      [{ tags: { $in: ["red", "green"] } }, ["t1", "t4"]],
      [{ tags: { $nin: ["blue"] } }, ["t3", "t4", "t5"]],
      [{ tags: { $contains: "BL" } }, ["t1", "t2"]],
      [{ tags: { $gt: "q" } }, ["t1"]],
      [{ tags: { $exists: true } }, ["t1", "t2", "t3", "t4"]],
      [{ tags: { $exists: false } }, ["t5"]],
      [{ tags: ["red", "blue"] }, ["t1", "t2"]],
      [{ tags: { $eq: ["red", "blue"] } }, ["t1"]],
      [{ tags: { $eq: [] } }, ["t3"]],
      [{ tags: { $ne: ["blue"] } }, ["t1", "t3", "t4", "t5"]],
    ]));

  test("dotted names reach into object fields", () =>
    checkFilters([
      [{ "meta.owner": "ann" }, ["t1"]],
      [{ "meta.owner": { $ne: "ann" } }, ["t2", "t3", "t4", "t5"]],
      [{ "meta.owner": { $exists: true } }, ["t1", "t2"]],
      [{ "meta.owner": null }, ["t3", "t4", "t5"]],
      [{ "meta.owner": { $contains: "O" } }, ["t2"]],
      [{ "meta.owner": { $in: ["ann", "bob"] } }, ["t1", "t2"]],
      [{ "meta.level": { $gte: 2 } }, ["t2", "t3"]],
      [{ "meta.level": { $lt: 3 } }, ["t1", "t2"]],
      [{ "meta.level": { $in: [1, 3] } }, ["t1", "t3"]],
      [{ "meta.level": "1" }, []],
      [{ "meta.nested.deep": "x" }, ["t1"]],
      [{ "meta.missing": { $exists: false } }, ALL],
      [{ meta: { $exists: false } }, ["t4", "t5"]],
      [{ meta: { owner: "bob", level: 2 } }, ["t2"]],
      // Only the object's own members: nothing inherited from Object.prototype.
      [{ "meta.constructor": { $exists: true } }, []],
      [{ "meta.__proto__": { $exists: true } }, []],
      [{ "meta.toString": { $exists: false } }, ALL],
      [{ "meta.nested.hasOwnProperty": null }, ALL],
    ]));

  test("platform fields are filterable", () =>
    checkFilters([
      [{ id: created.t3.id }, ["t3"]],
      [{ id: { $gt: created.t3.id } }, ["t4", "t5"]],
      [{ id: { $in: [created.t1.id, created.t5.id] } }, ["t1", "t5"]],
      [{ created_date: { $lte: created.t5.created_date } }, ALL],
      [{ created_date: { $gt: "2020-01-01" } }, ALL],
      [{ created_date: { $lt: "2020-01-01T00:00:00Z" } }, []],
      [{ updated_date: { $exists: true } }, ALL],
      [{ created_by_id: created.t1.created_by_id }, ALL],
      [{ created_by_id: { $ne: created.t1.created_by_id } }, []],
    ]));

  test("several conditions are ANDed, and $and/$or nest", () =>
    checkFilters([
      [{ status: "todo", done: false, priority: { $gt: 1 } }, ["t4"]],
      [{ $or: [{ priority: { $gt: 4 } }, { tags: "red" }] }, ["t1", "t3", "t4"]],
      [{ $and: [{ done: true }, { $or: [{ status: "done" }, { estimate: { $lt: 1 } }] }] }, ["t3"]],
      [{ $or: [{ $and: [{ status: "doing" }, { due_date: { $lt: "2026-01-01" } }] }, { "meta.owner": "bob" }] }, ["t2", "t5"]],
      [{ title: { $contains: "a" }, $or: [{ done: true }, { done: { $exists: false } }] }, ["t2", "t3", "t5"]],
      [{ $or: [{ $or: [{ $and: [{ priority: 1 }] }, { priority: 10 }] }, { title: "nope" }], status: "todo" }, ["t1", "t4"]],
      [{ $and: [{ status: "todo" }], $or: [{ priority: 1 }, { priority: 3 }] }, ["t1"]],
    ]));
});

describe("filter refusals", () => {
  const everyField = [...Object.keys(TASK.properties), "id", "created_date", "updated_date", "created_by_id"];

  test("an unknown field is unknown_field and lists the real fields", async () => {
    for (const filter of [{ nope: 1 }, { "nope.x": 1 }, { $or: [{ title: "a" }, { Title: "a" }] }]) {
      for (const path of [`${PATH}?q=${q(filter)}`, `${PATH}/count?q=${q(filter)}`]) {
        const answer = await server.call("GET", path);
        assertError(answer, 400, "unknown_field", { fields: everyField });
        for (const field of ["title", "priority", "meta"]) assert.match(answer.body.error.message, new RegExp(field));
      }
    }
    const publishable = await get(`q=${q({ nope: 1 })}`, PUBLISHABLE);
    assertError(publishable, 400, "unknown_field", { fields: everyField.filter((name) => name !== "created_by_id") });
    assert.doesNotMatch(publishable.text, /created_by_id/);
  });

  test("unknown operators, wrongly typed operands, $contains on non-text fields and bad enum values are invalid_filter", async () => {
    const table: Array<[unknown, string, string]> = [
      [{ priority: { $gt: "3" } }, "priority", "$gt"],
      [{ priority: "3" }, "priority", "$eq"],
      [{ priority: { $in: [1, "2"] } }, "priority", "$in"],
      [{ priority: { $in: 1 } }, "priority", "$in"],
      [{ done: "yes" }, "done", "$eq"],
      [{ title: 3 }, "title", "$eq"],
      [{ title: { $regex: 3 } }, "title", "$regex"],
      [{ title: { $like: "a" } }, "title", "$like"],
      [{ due_date: "tomorrow" }, "due_date", "$eq"],
      [{ start_at: { $gt: 20260101 } }, "start_at", "$gt"],
      [{ email: { $exists: "yes" } }, "email", "$exists"],
      [{ priority: { $contains: "1" } }, "priority", "$contains"],
      [{ done: { $contains: "t" } }, "done", "$contains"],
      [{ due_date: { $contains: "2026" } }, "due_date", "$contains"],
      [{ status: "finished" }, "status", "$eq"],
      [{ status: { $in: ["todo", "later"] } }, "status", "$in"],
      [{ status: { $nin: ["TODO"] } }, "status", "$nin"],
    ];
    for (const [filter, field, operator] of table) {
      for (const path of [`${PATH}?q=${q(filter)}`, `${PATH}/count?q=${q(filter)}`]) {
        const answer = await server.call("GET", path);
        assertError(answer, 400, "invalid_filter", { field, operator });
        assert.ok(answer.body.error.message.includes(field), answer.text);
        assert.ok(answer.body.error.message.includes(operator) || field === "status", answer.text);
      }
    }
    for (const filter of [{ $or: [] }, { $and: {} }, { $not: { title: "a" } }, { "title.x": "a" }]) {
      assertError(await get(`q=${q(filter)}`), 400, "invalid_filter");
    }
  });

  test("q that is not a JSON object is invalid_json", async () => {
    for (const text of ["{", "{title:1}", "[]", "\"title\"", "nope", "1"]) {
      assertError(await get(`q=${encodeURIComponent(text)}`), 400, "invalid_json");
      assertError(await server.call("GET", `${PATH}/count?q=${encodeURIComponent(text)}`), 400, "invalid_json");
    }
  });

  test("an empty q means no filter", async () => {
    assert.equal((await namesOf(`q=${q({})}`)).length, 5);
    assert.equal((await namesOf("q=")).length, 5);
  });
});

describe("search", () => {
  test("search is a case-insensitive substring over string fields, ANDed with q", async () => {
    const table: Array<[string, Name[]]> = [
      ["search=alpha", ["t1", "t5"]],
      ["search=ALPHA", ["t1", "t5"]],
      ["search=%C3%A9psilon", ["t5"]],
      ["search=example.COM", ["t1", "t2"]],
      ["search=doing", ["t2", "t5"]],
      ["search=a%20t", ["t2", "t3"]],
      ["search=nothing-like-this", []],
      [`search=alpha&q=${q({ status: "todo" })}`, ["t1"]],
      [`search=alpha&q=${q({ $or: [{ status: "doing" }, { priority: 3 }] })}`, ["t5"]],
      [`search=example&q=${q({ done: false })}`, ["t1"]],
    ];
    for (const [query, expected] of table) assert.deepEqual((await namesOf(query)).sort(), expected, query);
  });

  test("search does not look in numbers, booleans, arrays or objects", async () => {
    assert.deepEqual(await namesOf("search=red"), []); // only in tags
    assert.deepEqual(await namesOf("search=bob"), ["t2"]); // in email, not meta.owner alone
    assert.deepEqual(await namesOf("search=true"), []);
  });

  test("count takes search too", async () => {
    const answer = await server.call("GET", `${PATH}/count?search=alpha&q=${q({ status: "doing" })}`);
    assert.deepEqual(answer.body, { count: 1 });
  });
});

describe("sorting", () => {
  test("numbers sort numerically, missing values last ascending and first descending", async () => {
    assert.deepEqual(await namesOf("sort_by=priority"), ["t1", "t2", "t3", "t4", "t5"]);
    assert.deepEqual(await namesOf("sort_by=-priority"), ["t5", "t4", "t3", "t2", "t1"]);
    assert.deepEqual(await namesOf("sort_by=estimate"), ["t1", "t5", "t2", "t3", "t4"]);
    assert.deepEqual(await namesOf("sort_by=-estimate"), ["t4", "t3", "t2", "t5", "t1"]);
  });

  test("strings sort by code point", async () => {
    assert.deepEqual(await namesOf("sort_by=title"), ["t1", "t3", "t2", "t4", "t5"]);
    assert.deepEqual(await namesOf("sort_by=-title"), ["t5", "t4", "t2", "t3", "t1"]);
    assert.deepEqual(await namesOf("sort_by=email"), ["t1", "t2", "t3", "t4", "t5"]);
  });

  test("dates and date-times sort chronologically", async () => {
    assert.deepEqual(await namesOf("sort_by=due_date"), ["t5", "t1", "t2", "t3", "t4"]);
    assert.deepEqual(await namesOf("sort_by=-due_date"), ["t4", "t3", "t2", "t1", "t5"]);
    assert.deepEqual(await namesOf("sort_by=start_at"), ["t3", "t1", "t2", "t4", "t5"]);
    assert.deepEqual(await namesOf("sort_by=-start_at"), ["t5", "t4", "t2", "t1", "t3"]);
  });

  test("booleans sort false before true, and ties break on id", async () => {
    assert.deepEqual(await namesOf("sort_by=done"), ["t1", "t4", "t2", "t3", "t5"]);
    assert.deepEqual(await namesOf("sort_by=-done"), ["t5", "t3", "t2", "t4", "t1"]);
    assert.deepEqual(await namesOf("sort_by=status"), ["t2", "t5", "t3", "t1", "t4"]);
    // Descending is the exact reverse of ascending, ties included.
    assert.deepEqual(await namesOf("sort_by=-status"), ["t4", "t1", "t3", "t5", "t2"]);
  });

  test("platform fields sort; the default (also for an empty sort_by) is -created_date", async () => {
    assert.deepEqual(await namesOf(""), ["t5", "t4", "t3", "t2", "t1"]);
    assert.deepEqual(await namesOf("sort_by="), ["t5", "t4", "t3", "t2", "t1"]);
    assert.deepEqual(await namesOf("sort_by=created_date"), ["t1", "t2", "t3", "t4", "t5"]);
    assert.deepEqual(await namesOf("sort_by=-created_date"), ["t5", "t4", "t3", "t2", "t1"]);
    assert.deepEqual(await namesOf("sort_by=updated_date"), ["t1", "t2", "t3", "t4", "t5"]);
    assert.deepEqual(await namesOf("sort_by=id"), ["t1", "t2", "t3", "t4", "t5"]);
    assert.deepEqual(await namesOf("sort_by=-id"), ["t5", "t4", "t3", "t2", "t1"]);
    assert.deepEqual(await namesOf("sort_by=created_by_id"), ["t1", "t2", "t3", "t4", "t5"]);
  });

  test("sort applies after the filter", async () => {
    assert.deepEqual(await namesOf(`sort_by=-priority&q=${q({ done: { $ne: true } })}`), ["t5", "t4", "t1"]);
  });

  test("an unknown or unsortable sort_by is invalid_parameter", async () => {
    for (const sort of ["nope", "-nope", "tags", "meta", "meta.owner", "--priority", "Priority"]) {
      assertError(await get(`sort_by=${encodeURIComponent(sort)}`), 400, "invalid_parameter", { parameter: "sort_by" });
    }
  });
});

describe("typed sorting over edge values", () => {
  let local: TestServer;
  before(async () => (local = await startTestServer()));
  after(() => local.close());

  test("code point order puts U+FF5E before U+1F600, and numbers compare as numbers", async () => {
    const bodies = [
      { title: "\u{1f600}", priority: 10, estimate: -0.5 },
      { title: "\uff5e", priority: 9, estimate: 1e-3 },
      { title: "Z", priority: -3, estimate: 100 },
      { title: "a", priority: 100, estimate: 2 },
      { title: "", priority: 0 },
    ];
    const made = await local.call("POST", `${PATH}/bulk`, { body: bodies });
    assert.equal(made.status, 201, made.text);
    const titles = async (query: string) => (await local.call("GET", `${PATH}?${query}`)).body.map((r: { title: string }) => r.title);
    assert.deepEqual(await titles("sort_by=title"), ["", "Z", "a", "\uff5e", "\u{1f600}"]);
    assert.deepEqual(await titles("sort_by=-title"), ["\u{1f600}", "\uff5e", "a", "Z", ""]);
    assert.deepEqual(await titles("sort_by=priority"), ["Z", "", "\uff5e", "\u{1f600}", "a"]);
    assert.deepEqual(await titles("sort_by=estimate"), ["\u{1f600}", "\uff5e", "a", "Z", ""]);
    assert.deepEqual(await titles("sort_by=-estimate"), ["", "Z", "a", "\uff5e", "\u{1f600}"]);
  });

  test("records of one bulk share created_date and keep creation order by id", async () => {
    const page = await local.call("GET", `${PATH}?sort_by=created_date`);
    const dates = new Set(page.body.map((r: { created_date: string }) => r.created_date));
    assert.equal(dates.size, 1);
    const ids = page.body.map((r: { id: string }) => r.id);
    assert.deepEqual(ids, [...ids].sort());
  });
});

describe("fields", () => {
  test("fields returns id plus the named fields that are set", async () => {
    const page = await get("fields=title&sort_by=id");
    assert.deepEqual(page.body, NAMES.map((name) => ({ id: created[name].id, title: RECORDS[name].title })));
    const two = await get("fields=title,priority&sort_by=id");
    assert.deepEqual(two.body[4], { id: created.t5.id, title: "Épsilon ALPHA" });
    assert.deepEqual(two.body[0], { id: created.t1.id, title: "Alpha one", priority: 1 });
    const onlyId = await get("fields=id&sort_by=id");
    assert.deepEqual(onlyId.body, NAMES.map((name) => ({ id: created[name].id })));
    const platform = await get(`fields=created_date,status,created_by_id&q=${q({ id: created.t1.id })}`);
    assert.deepEqual(platform.body, [{ id: created.t1.id, status: "todo", created_date: created.t1.created_date, created_by_id: created.t1.created_by_id }]);
  });

  test("an unknown field in fields is unknown_field with the real fields", async () => {
    const answer = await get("fields=title,nope");
    assertError(answer, 400, "unknown_field", { field: "nope" });
    assert.ok(answer.body.error.details.fields.includes("title"));
    assertError(await get("fields=title,,status"), 400, "invalid_parameter", { parameter: "fields" });
  });
});

describe("parameters", () => {
  test("bad limit, skip, count and deleted are invalid_parameter naming the parameter", async () => {
    const table: Array<[string, string]> = [
      ["limit=0", "limit"],
      ["limit=-1", "limit"],
      ["limit=abc", "limit"],
      ["limit=1.5", "limit"],
      ["limit=", "limit"],
      ["limit=5001", "limit"],
      ["skip=-1", "skip"],
      ["skip=x", "skip"],
      ["skip=1e3", "skip"],
      ["count=yes", "count"],
      ["count=1", "count"],
      ["deleted=all", "deleted"],
      ["deleted=", "deleted"],
    ];
    for (const [query, parameter] of table) {
      const answer = await get(query);
      assertError(answer, 400, "invalid_parameter", { parameter });
      assert.ok(answer.body.error.message.includes(parameter), answer.text);
    }
  });

  test("limit up to 5,000 is allowed for a secret key, 500 for a publishable key", async () => {
    assert.equal((await get("limit=5000")).status, 200);
    assert.equal((await get("limit=500", PUBLISHABLE)).status, 200);
    assertError(await get("limit=501", PUBLISHABLE), 400, "invalid_parameter", { parameter: "limit" });
    assertError(await get("limit=5000", PUBLISHABLE), 400, "invalid_parameter", { parameter: "limit" });
    assertError(await get("limit=5001"), 400, "invalid_parameter", { parameter: "limit" });
  });

  test("count=true adds X-Total-Count with the number of matching records, not of the page", async () => {
    const answer = await get(`count=true&limit=2&q=${q({ priority: { $exists: true } })}`);
    assert.equal(answer.status, 200);
    assert.equal(answer.body.length, 2);
    assert.equal(answer.headers.get("x-total-count"), "4");
    assert.equal((await get("count=true&search=alpha")).headers.get("x-total-count"), "2");
    assert.equal((await get("count=true&skip=10")).headers.get("x-total-count"), "5");
    assert.equal((await get("count=false")).headers.get("x-total-count"), null);
    assert.equal((await get("")).headers.get("x-total-count"), null);
  });

  test("GET /count answers {count} for q, and every live record without it", async () => {
    assert.deepEqual((await server.call("GET", `${PATH}/count`)).body, { count: 5 });
    const answer = await server.call("GET", `${PATH}/count?q=${q({ status: "todo" })}`);
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body, { count: 2 });
    assert.deepEqual((await server.call("GET", `${PATH}/count?q=${q({ status: "todo" })}`, { apiKey: PUBLISHABLE })).body, { count: 2 });
  });
});

describe("paging with skip and default limits", () => {
  let local: TestServer;
  before(async () => {
    local = await startTestServer();
    const bodies = Array.from({ length: 130 }, (_, i) => ({ title: `r${String(i).padStart(3, "0")}`, priority: i % 7 }));
    const made = await local.call("POST", `${PATH}/bulk`, { body: bodies });
    assert.equal(made.status, 201, made.text);
  });
  after(() => local.close());

  test("limit defaults to 100", async () => {
    const page = await local.call("GET", PATH);
    assert.equal(page.body.length, 100);
    assert.ok(page.headers.get("link"));
    assert.equal((await local.call("GET", `${PATH}?limit=130`)).headers.get("link"), null);
  });

  test("a sort that allows no cursor pages with skip: Link carries skip, and no X-Next-Cursor", async () => {
    const whole = (await local.call("GET", `${PATH}?sort_by=priority&limit=1000`)).body.map((r: { id: string }) => r.id);
    assert.equal(whole.length, 130);
    const walked: string[] = [];
    let path: string | null = `${PATH}?sort_by=priority&limit=40&q=${q({ priority: { $gte: 0 } })}`;
    let pages = 0;
    while (path) {
      const page = await local.call("GET", path);
      assert.equal(page.status, 200, page.text);
      assert.equal(page.headers.get("x-next-cursor"), null);
      walked.push(...page.body.map((r: { id: string }) => r.id));
      const link = page.headers.get("link");
      pages++;
      if (!link) break;
      const match = /^<([^>]+)>; rel="next"$/.exec(link);
      assert.ok(match, link);
      const next = new URL(match[1]!);
      assert.equal(next.pathname, PATH);
      assert.equal(next.searchParams.get("skip"), String(pages * 40));
      assert.equal(next.searchParams.get("sort_by"), "priority");
      assert.equal(next.searchParams.get("limit"), "40");
      assert.equal(next.searchParams.get("cursor"), null);
      assert.ok(next.searchParams.get("q"));
      path = next.pathname + next.search;
    }
    assert.equal(pages, 4);
    assert.deepEqual(walked, whole);
  });

  test("skip past the end answers an empty page with no Link", async () => {
    const page = await local.call("GET", `${PATH}?sort_by=priority&skip=130`);
    assert.deepEqual(page.body, []);
    assert.equal(page.headers.get("link"), null);
    const last = await local.call("GET", `${PATH}?sort_by=priority&skip=120&limit=10`);
    assert.equal(last.body.length, 10);
    assert.equal(last.headers.get("link"), null);
  });

  test("skip on a cursor sort still pages, and the next link carries a cursor", async () => {
    const whole = (await local.call("GET", `${PATH}?limit=1000`)).body.map((r: { id: string }) => r.id);
    const page = await local.call("GET", `${PATH}?skip=10&limit=5`);
    assert.deepEqual(page.body.map((r: { id: string }) => r.id), whole.slice(10, 15));
    const cursor = page.headers.get("x-next-cursor");
    assert.ok(cursor);
    const next = await local.call("GET", `${PATH}?cursor=${encodeURIComponent(cursor)}&limit=5`);
    assert.deepEqual(next.body.map((r: { id: string }) => r.id), whole.slice(15, 20));
  });
});

describe("deleted records", () => {
  let local: TestServer;
  const ids: string[] = [];
  before(async () => {
    local = await startTestServer();
    const made = await local.call("POST", `${PATH}/bulk`, { body: [{ title: "kept", status: "todo" }, { title: "gone", status: "todo" }, { title: "also kept", status: "done" }] });
    ids.push(...made.body.map((r: { id: string }) => r.id));
    assert.equal((await local.call("DELETE", `${PATH}/${ids[1]}`)).status, 200);
  });
  after(() => local.close());

  const titles = async (query: string) => (await local.call("GET", `${PATH}?${query}`)).body.map((r: { title: string }) => r.title).sort();

  test("deleted records are absent from lists and counts unless a secret key asks", async () => {
    assert.deepEqual(await titles(""), ["also kept", "kept"]);
    assert.deepEqual(await titles(`q=${q({ status: "todo" })}`), ["kept"]);
    assert.deepEqual(await titles("deleted=only"), ["gone"]);
    assert.deepEqual(await titles(`deleted=only&q=${q({ status: "todo" })}`), ["gone"]);
    assert.deepEqual(await titles(`deleted=only&q=${q({ status: "done" })}`), []);
    assert.deepEqual(await titles("deleted=include"), ["also kept", "gone", "kept"]);
    assert.deepEqual(await titles(`deleted=include&q=${q({ status: "todo" })}`), ["gone", "kept"]);
    assert.equal((await local.call("GET", `${PATH}?deleted=include&count=true`)).headers.get("x-total-count"), "3");
    assert.equal((await local.call("GET", `${PATH}?deleted=only&count=true`)).headers.get("x-total-count"), "1");
    assert.deepEqual((await local.call("GET", `${PATH}/count`)).body, { count: 2 });
    assert.deepEqual((await local.call("GET", `${PATH}/count?q=${q({ status: "todo" })}`)).body, { count: 1 });
  });

  test("a publishable key may not use deleted=", async () => {
    for (const value of ["only", "include"]) {
      assertError(await local.call("GET", `${PATH}?deleted=${value}`, { apiKey: PUBLISHABLE }), 403, "forbidden");
    }
  });

  test("a restored record lists again", async () => {
    assert.equal((await local.call("PUT", `${PATH}/${ids[1]}/restore`)).status, 200);
    assert.deepEqual(await titles(`q=${q({ status: "todo" })}`), ["gone", "kept"]);
    assert.deepEqual(await titles("deleted=only"), []);
  });
});

describe("publishable keys", () => {
  test("records listed with a publishable key never carry created_by_id", async () => {
    for (const query of ["", "fields=title,status", "sort_by=title&limit=2", `q=${q({ status: "todo" })}`]) {
      const answer = await get(query, PUBLISHABLE);
      assert.equal(answer.status, 200, answer.text);
      assert.ok(answer.body.length > 0);
      assert.doesNotMatch(answer.text, /created_by_id/);
      for (const record of answer.body) assert.equal("created_by_id" in record, false);
    }
    const secret = await get("");
    for (const record of secret.body) assert.equal(typeof record.created_by_id, "string");
  });

  test("created_by_id in q, sort_by or fields is forbidden for a publishable key", async () => {
    const keyId = created.t1.created_by_id;
    const queries = [
      `q=${q({ created_by_id: keyId })}`,
      `q=${q({ $or: [{ title: "x" }, { created_by_id: { $exists: true } }] })}`,
      "sort_by=created_by_id",
      "sort_by=-created_by_id",
      "fields=title,created_by_id",
    ];
    for (const query of queries) {
      const answer = await get(query, PUBLISHABLE);
      assertError(answer, 403, "forbidden");
      assert.equal((await get(query)).status, 200, query);
    }
    assertError(await server.call("GET", `${PATH}/count?q=${q({ created_by_id: keyId })}`, { apiKey: PUBLISHABLE }), 403, "forbidden");
  });

  test("a publishable key may filter and sort on the other platform fields", async () => {
    assert.deepEqual(await namesOf(`sort_by=id&q=${q({ id: { $gte: created.t4.id } })}`, PUBLISHABLE), ["t4", "t5"]);
    assert.deepEqual(await namesOf(`sort_by=-updated_date&q=${q({ created_date: { $gt: "2020-01-01" } })}`, PUBLISHABLE), ["t5", "t4", "t3", "t2", "t1"]);
  });
});
