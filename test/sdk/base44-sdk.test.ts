// The real @base44/sdk against a real tabula (docs/base44-sdk.md, issue 17): createClient pointed at a
// server on port 0, every entities call but subscribe() and importEntities(), as a user writes them.

import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { createClient } from "@base44/sdk";
import { PUBLISHABLE, SECRET, startTestServer, type TestServer } from "../support/server.ts";
import { refusal } from "../support/sdk.ts";

// The SDK logs every error it throws to the console unless it runs in production.
process.env.NODE_ENV = "production";

let server: TestServer;
let Task: any;
let PublicTask: any;
before(async () => {
  server = await startTestServer({ appId: "app1" });
  Task = createClient({ serverUrl: server.url, appId: "app1", token: SECRET }).entities.Task;
  PublicTask = createClient({ serverUrl: server.url, appId: "app1", token: PUBLISHABLE }).entities.Task;
});
beforeEach(() => server.reset());
after(() => server.close());

describe("records, one at a time", () => {
  test("create, get, update and delete", async () => {
    const created = await Task.create({ title: "Write the SDK test", priority: 2 });
    assert.match(created.id, /^[0-9a-f]{24}$/);
    assert.equal(created.status, "todo");
    assert.equal((await Task.get(created.id)).title, "Write the SDK test");
    const updated = await Task.update(created.id, { status: "done" });
    assert.deepEqual([updated.status, updated.priority], ["done", 2]);
    assert.deepEqual(await Task.delete(created.id), { id: created.id, deleted: true, success: true });
    const gone = await refusal(Task.get(created.id));
    assert.deepEqual([gone.status, gone.code], [404, "record_not_found"]);
  });

  test("bulkCreate and bulkUpdate answer the records in request order", async () => {
    const created = await Task.bulkCreate([{ title: "a" }, { title: "b" }, { title: "c" }]);
    assert.deepEqual(created.map((r: any) => r.title), ["a", "b", "c"]);
    const updated = await Task.bulkUpdate([{ id: created[2].id, priority: 3 }, { id: created[0].id, priority: 1 }]);
    assert.deepEqual(updated.map((r: any) => [r.title, r.priority]), [["c", 3], ["a", 1]]);
  });
});

// Issue 39 item 5: a publishable key's list with limit 501 resolved to 500 records.
test("a publishable key's list(sort, 501) is refused 400 invalid_parameter; list() with no limit gets 500", async () => {
  await Task.bulkCreate(Array.from({ length: 501 }, (_, i) => ({ title: `t${i}` })));
  const refused = await refusal(PublicTask.list("-created_date", 501));
  assert.deepEqual([refused.status, refused.code], [400, "invalid_parameter"]);
  assert.equal((await PublicTask.list("-created_date")).length, 500);
  assert.equal((await PublicTask.list("-created_date", 500)).length, 500);
});

describe("reading many", () => {
  beforeEach(async () => {
    await Task.bulkCreate(Array.from({ length: 12 }, (_, i) => ({ title: `t${String(i).padStart(2, "0")}`, priority: i % 3, tags: i % 2 ? ["odd"] : ["even"] })));
  });

  test("list(sort, limit, skip, fields)", async () => {
    assert.equal((await Task.list()).length, 12);
    const page = await Task.list("-title", 3, 2, ["title"]);
    assert.deepEqual(page.map((r: any) => r.title), ["t09", "t08", "t07"]);
    assert.deepEqual(Object.keys(page[0]), ["id", "title"]);
    assert.equal((await Task.list("+title", 1))[0].title, "t00");
  });

  test("filter(query, sort, limit) with operators, $or, $nor, $regex and the array shorthand", async () => {
    const high = await Task.filter({ priority: { $gte: 2 } }, "title");
    assert.deepEqual(high.map((r: any) => r.title), ["t02", "t05", "t08", "t11"]);
    const either = await Task.filter({ $or: [{ title: "t00" }, { title: "t01" }] }, "title");
    assert.deepEqual(either.map((r: any) => r.title), ["t00", "t01"]);
    assert.equal((await Task.filter({ tags: "odd" })).length, 6);
    const listed = await Task.filter({ title: ["t03", "t07", "nope"] }, "-title");
    assert.deepEqual(listed.map((r: any) => r.title), ["t07", "t03"]);
    const regex = await Task.filter({ title: { $regex: "^T0[12]$", $options: "i" }, $nor: [{ priority: 2 }] }, "title");
    assert.deepEqual(regex.map((r: any) => r.title), ["t01"]);
  });

  test("list(options) and filter(query, options) walk cursor pages to the end", async () => {
    const seen: string[] = [];
    let page = await Task.list({ sort: "priority", limit: 5 });
    for (;;) {
      seen.push(...page.items.map((r: any) => r.title));
      if (!page.has_more) break;
      page = await Task.list({ cursor: page.next_cursor, limit: 5 });
    }
    assert.equal(seen.length, 12);
    assert.equal(new Set(seen).size, 12);
    const filtered = await Task.filter({ priority: 0 }, { sort: "-title", limit: 10, fields: ["title"] });
    assert.deepEqual(filtered.items.map((r: any) => r.title), ["t09", "t06", "t03", "t00"]);
    assert.deepEqual([filtered.has_more, filtered.next_cursor], [false, null]);
  });

  test("list({ distinct }) and filter(query, { distinct }) page a field's values", async () => {
    const all = await Task.list({ distinct: "priority" });
    assert.deepEqual(all, { items: [0, 1, 2], next_cursor: null, has_more: false });
    const first = await Task.filter({ priority: { $gte: 1 } }, { distinct: "title", limit: 5 });
    assert.deepEqual(first.items, ["t01", "t02", "t04", "t05", "t07"]);
    assert.equal(first.has_more, true);
    const rest = await Task.filter({ priority: { $gte: 1 } }, { distinct: "title", limit: 5, cursor: first.next_cursor });
    assert.deepEqual(rest.items, ["t08", "t10", "t11"]);
    assert.equal(rest.has_more, false);
    assert.deepEqual((await Task.list({ distinct: "tags" })).items, ["even", "odd"]);
  });

  test("aggregate(spec)", async () => {
    const { rows, truncated } = await Task.aggregate({ groupBy: "priority", count: true, max: "title", sort: "-priority" });
    assert.equal(truncated, false);
    assert.deepEqual(rows, [
      { priority: 2, count: 4, max_title: "t11" },
      { priority: 1, count: 4, max_title: "t10" },
      { priority: 0, count: 4, max_title: "t09" },
    ]);
    const duplicated = await Task.aggregate({ groupBy: "tags", having: { count: { $gt: 5 } } });
    assert.deepEqual(duplicated.rows, [{ tags: "even", count: 6 }, { tags: "odd", count: 6 }]);
  });

  test("count(query)", async () => {
    assert.equal(await Task.count(), 12);
    assert.equal(await Task.count({ priority: 1 }), 4);
  });
});

describe("writing many", () => {
  test("updateMany with $set and $inc, and deleteMany", async () => {
    await Task.bulkCreate([{ title: "a", priority: 1 }, { title: "b", priority: 1 }, { title: "c", priority: 5 }]);
    assert.deepEqual(await Task.updateMany({ priority: 1 }, { $set: { status: "doing" }, $inc: { priority: 10 } }), { success: true, updated: 2, has_more: false });
    assert.deepEqual((await Task.filter({ status: "doing" }, "title")).map((r: any) => r.priority), [11, 11]);
    assert.deepEqual(await Task.deleteMany({ status: "doing" }), { success: true, deleted: 2 });
    assert.deepEqual((await Task.list()).map((r: any) => r.title), ["c"]);
  });

  test("upsert(records, { key })", async () => {
    const [existing] = await Task.bulkCreate([{ title: "a", email: "a@example.com" }]);
    const result = await Task.upsert([{ email: "a@example.com", priority: 4 }, { email: "b@example.com", title: "b" }], { key: "email" });
    assert.deepEqual([result.created, result.updated], [1, 1]);
    assert.equal(result.records[0].id, existing.id);
    assert.equal(result.records[0].priority, 4);
    assert.equal(result.records[1].title, "b");
  });
});

describe("errors surface as Base44Error with tabula's code and message", () => {
  test("a bad filter, a bad record, a publishable key's refusal, another app", async () => {
    const filter = await refusal(Task.filter({ colour: "red" }));
    assert.deepEqual([filter.status, filter.code], [400, "unknown_field"]);
    assert.match(filter.message, /Unknown field "colour"/);
    const invalid = await refusal(Task.create({ priority: 1 }));
    assert.deepEqual([invalid.status, invalid.code], [400, "invalid_field"]);
    assert.match(invalid.message, /"title" is required/);
    const forbidden = await refusal(PublicTask.deleteMany({ title: "a" }));
    assert.deepEqual([forbidden.status, forbidden.code], [403, "forbidden"]);
    const empty = await refusal(Task.deleteMany({}));
    assert.equal(empty.code, "filter_required");
    const other = createClient({ serverUrl: server.url, appId: "app2", token: SECRET }).entities.Task;
    const wrongApp = await refusal(other.list());
    assert.deepEqual([wrongApp.status, wrongApp.code], [404, "app_not_found"]);
    const noKey = createClient({ serverUrl: server.url, appId: "app1" }).entities.Task;
    assert.equal((await refusal(noKey.list())).code, "unauthorized");
  });

  test("a publishable key never sees created_by_id", async () => {
    const created = await PublicTask.create({ title: "p" });
    assert.equal("created_by_id" in created, false);
    assert.equal("created_by_id" in (await PublicTask.list())[0], false);
    assert.equal(typeof (await Task.get(created.id)).created_by_id, "string");
  });
});
