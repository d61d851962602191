// The SDK's prefix over plain HTTP (docs/base44-sdk.md, issue 17): /api/apps/<appId>/entities/<E> serves
// every native route with @base44/sdk's request and reply shapes. test/sdk/ drives the real SDK;
// this file pins the wire shapes, limits and refusals the SDK hides.

import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { PUBLISHABLE, q, startTestServer, type TestServer } from "../support/server.ts";

let server: TestServer;
before(async () => (server = await startTestServer()));
beforeEach(() => server.reset());
after(() => server.close());

const A = "/api/apps/app1/entities/Task";
const N = "/api/entities/Task";

async function createTasks(records: object[]): Promise<any[]> {
  const created = await server.call("POST", `${N}/bulk`, { body: records });
  assert.equal(created.status, 201, created.text);
  return created.body;
}

async function everything(): Promise<string> {
  return (await server.call("GET", `${N}?deleted=include&sort_by=id&limit=5000`)).text;
}

describe("the prefix serves the native routes", () => {
  test("create answers 201 with Location on the prefix it was asked on, and the record reads back on both", async () => {
    const created = await server.call("POST", A, { body: { title: "a" } });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.headers.get("location"), `${A}/${created.body.id}`);
    assert.equal((await server.call("GET", `${A}/${created.body.id}`)).body.title, "a");
    assert.equal((await server.call("GET", `${N}/${created.body.id}`)).body.title, "a");
  });

  test("delete adds success: true; the native delete does not", async () => {
    const [one, two] = await createTasks([{ title: "a" }, { title: "b" }]);
    const sdk = await server.call("DELETE", `${A}/${one.id}`);
    assert.deepEqual(sdk.body, { id: one.id, deleted: true, success: true });
    const native = await server.call("DELETE", `${N}/${two.id}`);
    assert.deepEqual(native.body, { id: two.id, deleted: true });
  });

  test("count, bulk update and restore answer as natively", async () => {
    const [one] = await createTasks([{ title: "a", priority: 1 }, { title: "b", priority: 2 }]);
    assert.deepEqual((await server.call("GET", `${A}/count?q=${q({ priority: 2 })}`)).body, { count: 1 });
    const updated = await server.call("PUT", `${A}/bulk`, { body: [{ id: one.id, priority: 5 }] });
    assert.equal(updated.body[0].priority, 5);
    await server.call("DELETE", `${A}/${one.id}`);
    const restored = await server.call("PUT", `${A}/${one.id}/restore`);
    assert.equal(restored.body.restored, true);
  });

  test("a path the SDK calls that tabula does not serve is a JSON 404", async () => {
    // (analytics/track/batch is served, for POST: test/http/analytics.test.ts.)
    for (const path of ["/api/apps/app1/auth/me", "/api/apps/app1/functions/hello"]) {
      const answer = await server.call("GET", path);
      assert.equal(answer.status, 404, path);
      assert.ok(["not_found", "entity_not_found"].includes(answer.body.error.code), answer.text);
    }
    // auth.me(), which createClient calls at start, is served: with a key and no one signed in, 401 (docs/users.md).
    const me = await server.call("GET", "/api/apps/app1/entities/User/me");
    assert.equal(me.status, 401);
    assert.equal(me.body.error.code, "unauthorized");
  });
});

describe("--app-id", () => {
  test("with an app id, another id is 404 app_not_found and the given one works", async () => {
    const pinned = await startTestServer({ appId: "shop" });
    try {
      const wrong = await pinned.call("GET", "/api/apps/other/entities/Task");
      assert.equal(wrong.status, 404);
      assert.equal(wrong.body.error.code, "app_not_found");
      assert.match(wrong.body.error.message, /"shop"/);
      assert.equal((await pinned.call("GET", "/api/apps/shop/entities/Task")).status, 200);
      // A write to another app stores nothing.
      assert.equal((await pinned.call("POST", "/api/apps/other/entities/Task", { body: { title: "x" } })).status, 404);
      assert.deepEqual((await pinned.call("GET", "/api/entities/Task/count")).body, { count: 0 });
    } finally {
      await pinned.close();
    }
  });

  test("without one, any app id is served", async () => {
    assert.equal((await server.call("GET", "/api/apps/anything-at-all/entities/Task")).status, 200);
  });
});

describe("the array list", () => {
  test("takes sort (and +field), defaults to every record up to 5,000, and refuses a larger limit", async () => {
    await createTasks(Array.from({ length: 120 }, (_, i) => ({ title: `t${String(i).padStart(3, "0")}`, priority: i % 7 })));
    const all = await server.call("GET", `${A}?sort=%2Btitle`);
    assert.equal(all.status, 200, all.text);
    assert.equal(all.body.length, 120); // the native default is 100
    assert.equal(all.body[0].title, "t000");
    const descending = await server.call("GET", `${A}?sort=-title&limit=2`);
    assert.deepEqual(descending.body.map((r: any) => r.title), ["t119", "t118"]);
    assert.equal((await server.call("GET", `${A}?sort_by=title&limit=1`)).body[0].title, "t000");
    const both = await server.call("GET", `${A}?sort=title&sort_by=title`);
    assert.equal(both.status, 400);
    assert.equal(both.body.error.code, "invalid_parameter");
    const over = await server.call("GET", `${A}?limit=5001`);
    assert.equal(over.status, 400, over.text);
    assert.equal(over.body.error.code, "invalid_parameter");
    assert.equal(over.body.error.details.parameter, "limit");
    assert.equal((await server.call("GET", `${A}?limit=5000`)).body.length, 120);
  });

  // Issue 39 item 5: the SDK prefix capped it, answering 500 records to a client that asked for 501.
  test("a publishable key's limit over 500 is refused on both prefixes; sent no limit, it gets 500", async () => {
    await createTasks(Array.from({ length: 510 }, (_, i) => ({ title: `t${i}` })));
    for (const path of [`${A}?limit=501`, `${N}?limit=501`, `${A}/v2/list?limit=501`]) {
      const refused = await server.call("GET", path, { apiKey: PUBLISHABLE });
      assert.equal(refused.status, 400, `${path}: ${refused.text}`);
      assert.equal(refused.body.error.code, "invalid_parameter", path);
      assert.equal(refused.body.error.details.parameter, "limit", path);
      assert.match(refused.body.error.message, /at most 500 records per page \(got 501\)/, path);
    }
    assert.equal((await server.call("GET", `${A}?limit=500`, { apiKey: PUBLISHABLE })).body.length, 500);
    assert.equal((await server.call("GET", A, { apiKey: PUBLISHABLE })).body.length, 500);
  });

  test("sort names its parameter in errors", async () => {
    const bad = await server.call("GET", `${A}?sort=colour`);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.details.parameter, "sort");
  });
});

describe("/v2/list", () => {
  test("pages {items, next_cursor, has_more} by cursor for any sort, without repeats or gaps, across writes", async () => {
    const created = await createTasks(Array.from({ length: 25 }, (_, i) => ({ title: `t${i}`, priority: i % 4 })));
    const seen: string[] = [];
    let page = await server.call("GET", `${A}/v2/list?sort=-priority&limit=7`);
    let pages = 0;
    for (;;) {
      assert.equal(page.status, 200, page.text);
      assert.deepEqual(Object.keys(page.body), ["items", "next_cursor", "has_more"]);
      seen.push(...page.body.items.map((r: any) => r.id));
      pages++;
      if (pages === 1) {
        // A record deleted and one created between pages neither shift nor repeat the walk.
        await server.call("DELETE", `${N}/${page.body.items[0].id}`);
        await server.call("POST", N, { body: { title: "late", priority: 3 } });
      }
      assert.equal(page.body.has_more, page.body.next_cursor !== null);
      if (!page.body.has_more) break;
      page = await server.call("GET", `${A}/v2/list?cursor=${encodeURIComponent(page.body.next_cursor)}&limit=7`);
    }
    assert.equal(new Set(seen).size, seen.length, "no record twice");
    assert.equal(seen.length, 25);
    assert.deepEqual(new Set(seen), new Set(created.map((r) => r.id)));
    // Priority descending, then id: each page continues where the last stopped.
    const byId = new Map(created.map((r) => [r.id, r.priority]));
    const priorities = seen.map((id) => byId.get(id)!);
    assert.deepEqual(priorities, [...priorities].sort((a, b) => b - a));
  });

  test("filters, selects fields and defaults to 100 items", async () => {
    await createTasks(Array.from({ length: 130 }, (_, i) => ({ title: `t${i}`, priority: i % 2 })));
    const page = await server.call("GET", `${A}/v2/list?q=${q({ priority: 1 })}&fields=title`);
    assert.equal(page.body.items.length, 65);
    assert.equal(page.body.has_more, false);
    assert.equal(page.body.next_cursor, null);
    assert.deepEqual(Object.keys(page.body.items[0]), ["id", "title"]);
    assert.equal((await server.call("GET", `${A}/v2/list`)).body.items.length, 100);
  });

  test("a cursor with another sort or filter is invalid_cursor", async () => {
    await createTasks(Array.from({ length: 5 }, (_, i) => ({ title: `t${i}` })));
    const first = await server.call("GET", `${A}/v2/list?sort=title&limit=2`);
    const cursor = encodeURIComponent(first.body.next_cursor);
    const other = await server.call("GET", `${A}/v2/list?cursor=${cursor}&sort=-title`);
    assert.equal(other.status, 400);
    assert.equal(other.body.error.code, "invalid_cursor");
    assert.equal((await server.call("GET", `${A}/v2/list?cursor=${cursor}&sort=%2Btitle`)).status, 200, "+title is the same walk as title");
  });
});

describe("delete-many with a JSON body", () => {
  test("deletes the matches and answers {success, deleted}", async () => {
    await createTasks([{ title: "a", status: "done" }, { title: "b", status: "done" }, { title: "c" }]);
    const deleted = await server.call("DELETE", A, { body: { status: "done" } });
    assert.deepEqual(deleted.body, { success: true, deleted: 2 });
    assert.deepEqual((await server.call("GET", `${N}/count`)).body, { count: 1 });
  });

  test("no body or {} is filter_required; a publishable key is 403; nothing is deleted", async () => {
    await createTasks([{ title: "a" }]);
    const before = await everything();
    for (const body of [undefined, {}]) {
      const refused = await server.call("DELETE", A, { body });
      assert.equal(refused.status, 400);
      assert.equal(refused.body.error.code, "filter_required");
    }
    assert.equal((await server.call("DELETE", A, { body: { title: "a" }, apiKey: PUBLISHABLE })).status, 403);
    assert.equal(await everything(), before);
  });
});

describe("update-many with $set, $inc and $unset", () => {
  test("applies all three, $inc on a missing field sets it, and answers {success, updated, has_more}", async () => {
    const [a, b] = await createTasks([
      { title: "a", status: "todo", priority: 2, estimate: 1.5, email: "a@example.com" },
      { title: "b", status: "todo", email: "b@example.com" },
      { title: "c", status: "done", priority: 9 },
    ]);
    const answer = await server.call("PATCH", `${A}/update-many`, {
      body: { query: { status: "todo" }, data: { $set: { status: "doing" }, $inc: { priority: 3, estimate: -0.5 }, $unset: { email: "" } } },
    });
    assert.deepEqual(answer.body, { success: true, updated: 2, has_more: false });
    const readA = (await server.call("GET", `${N}/${a.id}`)).body;
    const readB = (await server.call("GET", `${N}/${b.id}`)).body;
    assert.deepEqual([readA.status, readA.priority, readA.estimate, "email" in readA], ["doing", 5, 1, false]);
    assert.deepEqual([readB.status, readB.priority, readB.estimate, "email" in readB], ["doing", 3, -0.5, false]);
  });

  test("refuses what it cannot apply, and stores nothing", async () => {
    await createTasks([{ title: "a", priority: 2147483647 }]);
    const before = await everything();
    const cases: Array<[unknown, string, RegExp]> = [
      [{ query: { title: "a" }, data: { $push: { tags: "x" } } }, "invalid_json", /\$push.*not supported/],
      [{ query: { title: "a" }, data: { $set: { priority: 1 }, $inc: { priority: 1 } } }, "invalid_json", /both "\$set" and "\$inc"/],
      [{ query: { title: "a" }, data: { $inc: { title: 1 } } }, "invalid_field", /adds to number and integer fields only/],
      [{ query: { title: "a" }, data: { $inc: { priority: "1" } } }, "invalid_field", /takes a number/],
      [{ query: { title: "a" }, data: { $inc: { priority: 0.5 } } }, "invalid_field", /whole number/],
      [{ query: { title: "a" }, data: { $unset: { title: "" } } }, "invalid_field", /required/],
      [{ query: { title: "a" }, data: { $unset: { created_date: "" } } }, "read_only_field", /set by the server/],
      [{ query: { title: "a" }, data: { $inc: { colour: 1 } } }, "unknown_field", /colour/],
      [{ query: { title: "a" }, data: {} }, "invalid_json", /at least one field/],
      [{ query: { title: "a" }, data: "x" }, "invalid_json", /"data" must be an object/],
      [{ query: {}, data: { $set: { priority: 1 } } }, "filter_required", /filter/],
      [{ data: { $set: { priority: 1 } } }, "filter_required", /filter/],
    ];
    for (const [body, code, message] of cases) {
      const refused = await server.call("PATCH", `${A}/update-many`, { body });
      assert.equal(refused.status, 400, JSON.stringify(body));
      assert.equal(refused.body.error.code, code, refused.text);
      assert.match(refused.body.error.message, message);
    }
    assert.equal(await everything(), before);
  });

  test("an $inc whose sum breaks a bound names the record", async () => {
    const bounded = await startTestServer({ schema: { Counter: { properties: { n: { type: "integer", maximum: 10 } } } } });
    try {
      const created = await bounded.call("POST", "/api/entities/Counter", { body: { n: 9 } });
      const refused = await bounded.call("PATCH", "/api/apps/x/entities/Counter/update-many", { body: { query: { n: 9 }, data: { $inc: { n: 2 } } } });
      assert.equal(refused.status, 400);
      assert.equal(refused.body.error.code, "invalid_field");
      assert.equal(refused.body.error.details.id, created.body.id);
      assert.equal((await bounded.call("GET", `/api/entities/Counter/${created.body.id}`)).body.n, 9);
    } finally {
      await bounded.close();
    }
  });

  test("the native body takes inc and unset beside set", async () => {
    const [a] = await createTasks([{ title: "a", priority: 1, email: "a@example.com" }]);
    const answer = await server.call("PATCH", `${N}/update-many`, { body: { q: { title: "a" }, inc: { priority: 2 }, unset: ["email"], set: { status: "done" } } });
    assert.deepEqual(answer.body, { count: 1, ids: [a.id] });
    const read = (await server.call("GET", `${N}/${a.id}`)).body;
    assert.deepEqual([read.priority, read.status, "email" in read], [3, "done", false]);
    const unknown = await server.call("PATCH", `${N}/update-many`, { body: { q: { title: "a" }, $set: { status: "todo" } } });
    assert.equal(unknown.status, 400);
    assert.match(unknown.body.error.message, /takes q, set, inc and unset/);
  });
});

describe("upsert by key", () => {
  test("answers {created, updated, records}, each record once as it now is", async () => {
    const [existing] = await createTasks([{ title: "a", email: "a@example.com", priority: 1 }]);
    const answer = await server.call("POST", `${A}/upsert`, {
      body: { key: "email", records: [{ email: "a@example.com", priority: 2 }, { email: "n@example.com", title: "n" }, { email: "n@example.com", priority: 7 }] },
    });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.body.created, 1);
    assert.equal(answer.body.updated, 1);
    assert.equal(answer.body.records.length, 2);
    assert.equal(answer.body.records[0].id, existing.id);
    assert.equal(answer.body.records[0].priority, 2);
    assert.deepEqual([answer.body.records[1].title, answer.body.records[1].priority], ["n", 7]);
  });

  test("takes a compound key, and refuses a bad one", async () => {
    await createTasks([{ title: "a", email: "a@example.com" }]);
    const compound = await server.call("POST", `${A}/upsert`, { body: { key: ["title", "email"], records: [{ title: "a", email: "a@example.com", priority: 4 }] } });
    assert.deepEqual([compound.body.created, compound.body.updated], [0, 1]);
    for (const key of [undefined, [], ["title", "email", "status", "priority"], 3]) {
      const refused = await server.call("POST", `${A}/upsert`, { body: { key, records: [{ title: "b" }] } });
      assert.equal(refused.status, 400, JSON.stringify(key));
      assert.equal(refused.body.error.code, "invalid_json");
      assert.match(refused.body.error.message, /"key"/);
    }
  });
});

test("the preflight of a browser running the SDK allows the headers it sends", async () => {
  const answer = await fetch(`${server.url}${A}`, {
    method: "OPTIONS",
    headers: { Origin: "http://localhost:5173", "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization,x-app-id,x-origin-url,content-type" },
  });
  assert.equal(answer.status, 204);
  const allowed = answer.headers.get("access-control-allow-headers")!.toLowerCase().split(/,\s*/);
  for (const header of ["authorization", "x-app-id", "x-origin-url", "content-type"]) assert.ok(allowed.includes(header), header);
});

describe("/v2/list?distinct= and aggregate on the prefix", () => {
  test("distinct values come as pages of {items, next_cursor, has_more}, filtered, to the end", async () => {
    await createTasks(Array.from({ length: 30 }, (_, i) => ({ title: `t${i % 12}`, priority: i % 5, tags: [`a${i % 3}`, "z"] })));
    const values: string[] = [];
    let page = await server.call("GET", `${A}/v2/list?distinct=title&limit=5`);
    for (;;) {
      assert.equal(page.status, 200, page.text);
      values.push(...page.body.items);
      if (!page.body.has_more) break;
      page = await server.call("GET", `${A}/v2/list?distinct=title&limit=5&cursor=${encodeURIComponent(page.body.next_cursor)}`);
    }
    assert.deepEqual(values, Array.from({ length: 12 }, (_, i) => `t${i}`).sort());
    assert.deepEqual((await server.call("GET", `${A}/v2/list?distinct=tags`)).body.items, ["a0", "a1", "a2", "z"]);
    assert.deepEqual((await server.call("GET", `${A}/v2/list?distinct=priority&q=${q({ priority: { $lt: 2 } })}`)).body, { items: [0, 1], next_cursor: null, has_more: false });
    const bad = await server.call("GET", `${A}/v2/list?distinct=title&sort=title`);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, "invalid_parameter");
  });

  test("aggregate is served on the prefix", async () => {
    await createTasks([{ title: "a", status: "done", priority: 2 }, { title: "b", status: "done", priority: 3 }, { title: "c", priority: 9 }]);
    const answer = await server.call("POST", `${A}/aggregate`, { body: { groupBy: "status", sum: "priority", sort: "-count" } });
    assert.deepEqual(answer.body, { rows: [{ status: "done", count: 2, sum_priority: 5 }, { status: "todo", count: 1, sum_priority: 9 }], truncated: false });
  });
});
