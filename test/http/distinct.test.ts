// GET /api/entities/<E>/distinct/<field> over HTTP (docs/aggregates.md): each field kind's values in
// its ascending order, array elements, records lacking the field, deleted records, the filter,
// paging with cursors to the end, cursors bound to their walk, publishable keys, and refusals.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { PUBLISHABLE, q, startTestServer, type Answer, type TestServer } from "../support/server.ts";

const PATH = "/api/entities/Task";

// Titles whose code point order differs from JavaScript's UTF-16 order: U+FF3A comes before
// U+1F600 by code point, after its surrogates by code unit.
const RECORDS = [
  { title: "beta", status: "todo", priority: 10, estimate: 2.5, done: true, due_date: "2026-01-15", start_at: "2026-01-01T12:00:00+02:00", tags: ["red", "blue"] },
  { title: "Zeta", status: "todo", priority: 9, estimate: 0.25, done: false, due_date: "2025-12-31", start_at: "2026-01-01T09:00:00Z", tags: ["blue"], email: "z@example.com" },
  { title: "\u{1f600} smile", status: "doing", priority: -1, done: true, due_date: "2026-01-02", tags: ["green", "red"] },
  { title: "\uff3a wide", status: "doing", priority: 9, estimate: 10 },
  { title: "alpha", status: "todo", tags: [] },
  { title: "é", status: "todo", priority: 100, email: "a@example.com" },
];
/** Deleted before every test: its values must never show. */
const DELETED = { title: "zz deleted", status: "done", priority: 5000, done: false, due_date: "1999-01-01", tags: ["gone"], email: "gone@example.com" };

let server: TestServer;
let keyId = "";

before(async () => {
  server = await startTestServer();
  for (const record of RECORDS) {
    const answer = await server.call("POST", PATH, { body: record });
    assert.equal(answer.status, 201, answer.text);
    keyId = answer.body.created_by_id;
  }
  const deleted = await server.call("POST", PATH, { body: DELETED });
  // Listed once while it is live, so that the value index exists and must forget it.
  assert.deepEqual((await distinct("status")).body, ["doing", "done", "todo"]);
  assert.equal((await server.call("DELETE", `${PATH}/${deleted.body.id}`)).status, 200);
});
after(() => server.close());

function distinct(field: string, query = "", apiKey?: string): Promise<Answer> {
  return server.call("GET", `${PATH}/distinct/${field}${query ? `?${query}` : ""}`, { apiKey });
}

async function valuesOf(field: string, query = ""): Promise<unknown[]> {
  const answer = await distinct(field, query);
  assert.equal(answer.status, 200, `${field}?${decodeURIComponent(query)}: ${answer.text}`);
  assert.ok(Array.isArray(answer.body));
  return answer.body;
}

function assertError(answer: Answer, status: number, code: string, details: Record<string, unknown> = {}): void {
  assert.equal(answer.status, status, answer.text);
  assert.equal(answer.body?.error?.code, code, answer.text);
  for (const [name, value] of Object.entries(details)) assert.deepEqual(answer.body.error.details?.[name], value, `${answer.text}: details.${name}`);
}

describe("values, ascending by the field's sort order", () => {
  test("each field kind in its order, records lacking the field contributing nothing, deleted records never", async () => {
    const table: Array<[field: string, values: unknown[]]> = [
      ["status", ["doing", "todo"]],
      ["title", ["Zeta", "alpha", "beta", "é", "\uff3a wide", "\u{1f600} smile"]],
      ["priority", [-1, 9, 10, 100]],
      ["estimate", [0.25, 2.5, 10]],
      ["done", [false, true]],
      ["due_date", ["2025-12-31", "2026-01-02", "2026-01-15"]],
      ["start_at", ["2026-01-01T09:00:00.000Z", "2026-01-01T10:00:00.000Z"]],
      ["email", ["a@example.com", "z@example.com"]],
      ["created_by_id", [keyId]],
    ];
    for (const [field, values] of table) assert.deepEqual(await valuesOf(field), values, field);
  });

  test("an array field contributes each element once", async () => {
    assert.deepEqual(await valuesOf("tags"), ["blue", "green", "red"]);
  });

  test("ids are listed in id order; created_date chronologically", async () => {
    const ids = await valuesOf("id");
    assert.equal(ids.length, RECORDS.length);
    assert.deepEqual(ids, [...ids].sort());
    const created = (await valuesOf("created_date")) as string[];
    assert.deepEqual(created, [...created].sort());
  });

  test("q narrows the records first, with the filter language of lists", async () => {
    assert.deepEqual(await valuesOf("status", `q=${q({ done: true })}`), ["doing", "todo"]);
    assert.deepEqual(await valuesOf("status", `q=${q({ priority: { $gte: 10 } })}`), ["todo"]);
    assert.deepEqual(await valuesOf("tags", `q=${q({ status: "doing" })}`), ["green", "red"]);
    assert.deepEqual(await valuesOf("priority", `q=${q({ tags: "blue" })}`), [9, 10]);
    assert.deepEqual(await valuesOf("email", `q=${q({ status: "doing" })}`), []);
    assert.deepEqual(await valuesOf("status", "q="), ["doing", "todo"]);
  });
});

describe("paging", () => {
  /** Walks a distinct to its end with the cursor alone (and limit), and answers every page. */
  async function walk(field: string, first: string): Promise<unknown[][]> {
    const pages: unknown[][] = [];
    for (let query: string | null = first; query !== null; ) {
      const answer = await distinct(field, query);
      assert.equal(answer.status, 200, answer.text);
      pages.push(answer.body);
      const cursor = answer.headers.get("x-next-cursor");
      const link = answer.headers.get("link");
      if (cursor === null) {
        assert.equal(link, null);
        query = null;
        continue;
      }
      const match = /^<([^>]+)>; rel="next"$/.exec(link ?? "");
      assert.ok(match, `Link: ${link}`);
      const url = new URL(match[1]!);
      assert.equal(url.pathname, `${PATH}/distinct/${field}`);
      assert.equal(url.searchParams.get("cursor"), cursor);
      query = url.search.slice(1);
    }
    return pages;
  }

  test("pages follow one another to the end, with no value repeated or skipped", async () => {
    const all = await valuesOf("title");
    for (const limit of [1, 2, 4, 5, 6]) {
      const pages = await walk("title", `limit=${limit}`);
      assert.deepEqual(pages.flat(), all, `limit=${limit}`);
      assert.ok(pages.every((page, i) => page.length === (i < pages.length - 1 ? limit : page.length)), `limit=${limit}: ${JSON.stringify(pages)}`);
      assert.equal(pages.length, Math.ceil(all.length / limit));
    }
    assert.deepEqual(await walk("priority", `limit=1&q=${q({ priority: { $gt: 0 } })}`), [[9], [10], [100]]);
  });

  test("the default limit is 100, and the Link carries the limit given", async () => {
    const first = await distinct("priority", "limit=2");
    assert.deepEqual(first.body, [-1, 9]);
    assert.match(first.headers.get("link")!, /[?&]limit=2(&|>)/);
    const cursor = first.headers.get("x-next-cursor")!;
    const rest = await distinct("priority", `cursor=${encodeURIComponent(cursor)}`);
    assert.deepEqual(rest.body, [10, 100]);
    assert.equal(rest.headers.get("x-next-cursor"), null);
  });

  test("a cursor resumes strictly after its value: values written meanwhile show only after it", async () => {
    const first = await distinct("tags", "limit=1");
    assert.deepEqual(first.body, ["blue"]);
    const before = await server.call("POST", PATH, { body: { title: "later", tags: ["azure", "cyan"] } });
    const rest = await distinct("tags", `cursor=${encodeURIComponent(first.headers.get("x-next-cursor")!)}&limit=10`);
    assert.deepEqual(rest.body, ["cyan", "green", "red"]);
    assert.equal((await server.call("DELETE", `${PATH}/${before.body.id}`)).status, 200);
  });

  test("a cursor carries its q, and another q, field or entity is invalid_cursor", async () => {
    const filter = q({ done: true });
    const first = await distinct("priority", `limit=1&q=${filter}`);
    assert.deepEqual(first.body, [-1]);
    const cursor = encodeURIComponent(first.headers.get("x-next-cursor")!);
    assert.deepEqual((await distinct("priority", `cursor=${cursor}`)).body, [10]);
    assert.deepEqual((await distinct("priority", `cursor=${cursor}&q=${filter}`)).body, [10]);
    assertError(await distinct("priority", `cursor=${cursor}&q=${q({ done: false })}`), 400, "invalid_cursor", { parameter: "cursor" });
    assertError(await distinct("estimate", `cursor=${cursor}`), 400, "invalid_cursor");
    assertError(await distinct("priority", "cursor=not-a-cursor"), 400, "invalid_cursor");
    const listCursor = (await server.call("GET", `${PATH}?limit=1`)).headers.get("x-next-cursor")!;
    assertError(await distinct("priority", `cursor=${encodeURIComponent(listCursor)}`), 400, "invalid_cursor");
    const titleCursor = (await distinct("title", "limit=1")).headers.get("x-next-cursor")!;
    assertError(await distinct("priority", `cursor=${encodeURIComponent(titleCursor)}`), 400, "invalid_cursor");
    // A distinct cursor is no list cursor either.
    assertError(await server.call("GET", `${PATH}?cursor=${cursor}`), 400, "invalid_cursor");
  });
});

describe("keys and refusals", () => {
  test("a publishable key may list distinct values, but not of or by created_by_id (403)", async () => {
    const answer = await distinct("status", "", PUBLISHABLE);
    assert.deepEqual([answer.status, answer.body], [200, ["doing", "todo"]]);
    assertError(await distinct("created_by_id", "", PUBLISHABLE), 403, "forbidden");
    assertError(await distinct("status", `q=${q({ created_by_id: keyId })}`, PUBLISHABLE), 403, "forbidden");
  });

  test("bad fields and parameters are refused with their codes", async () => {
    const cases: Array<[field: string, query: string, status: number, code: string, details?: Record<string, unknown>]> = [
      ["meta", "", 400, "invalid_parameter", { parameter: "field", field: "meta" }],
      ["nope", "", 400, "unknown_field", { field: "nope" }],
      ["meta.owner", "", 400, "unknown_field"],
      ["status", "limit=0", 400, "invalid_parameter", { parameter: "limit" }],
      ["status", "limit=1001", 400, "invalid_parameter", { parameter: "limit" }],
      ["status", "limit=ten", 400, "invalid_parameter", { parameter: "limit" }],
      ["status", "sort_by=title", 400, "invalid_parameter", { parameter: "sort_by" }],
      ["status", "limit=1&limit=2", 400, "invalid_parameter", { parameter: "limit" }],
      ["status", "q=nope", 400, "invalid_json", { parameter: "q" }],
      ["status", `q=${q({ nope: 1 })}`, 400, "unknown_field"],
      ["status", `q=${q({ priority: { $gt: "1" } })}`, 400, "invalid_filter"],
    ];
    for (const [field, query, status, code, details] of cases) assertError(await distinct(field, query), status, code, details);
    assertError(await server.call("GET", "/api/entities/Nope/distinct/status"), 404, "entity_not_found");
    assertError(await server.call("POST", `${PATH}/distinct/status`, { body: {} }), 405, "method_not_allowed");
  });

  test("limit 1000 is accepted", async () => {
    assert.deepEqual(await valuesOf("status", "limit=1000"), ["doing", "todo"]);
  });
});
