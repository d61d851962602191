// POST /api/entities/<E>/import (issue 21): bulk create keeping ids and timestamps, so that what an
// export wrote comes back as the same records. Secret keys only; all or nothing. Every store.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { PUBLISHABLE, startTestServer, type TestServer } from "../support/server.ts";

describe("POST /api/entities/<E>/import", () => {
  let source: TestServer;
  let target: TestServer;
  before(async () => {
    [source, target] = await Promise.all([startTestServer(), startTestServer()]);
  });
  after(() => Promise.all([source.close(), target.close()]));

  async function count(server: TestServer): Promise<number> {
    return (await server.call("GET", "/api/entities/Task/count")).body.count;
  }

  test("what an export wrote, imported, exports the same bytes", async () => {
    const created = await source.call("POST", "/api/entities/Task/bulk", {
      body: [{ title: "one", tags: ["x"], meta: { deep: { er: [1, 2] } } }, { title: "two", priority: 3 }, { title: "three", start_at: "2026-05-06T07:08:09.123Z" }],
    });
    assert.equal(created.status, 201);
    await new Promise((resolve) => setTimeout(resolve, 5)); // an update, so that updated_date differs from created_date
    assert.equal((await source.call("PATCH", `/api/entities/Task/${created.body[1].id}`, { body: { status: "done" } })).status, 200);
    const exported = (await source.call("GET", "/api/entities/Task/export")).text;
    const records = exported.trim().split("\n").map((line) => JSON.parse(line));
    const imported = await target.call("POST", "/api/entities/Task/import", { body: records });
    assert.equal(imported.status, 201);
    assert.deepEqual(imported.body, records);
    assert.equal((await target.call("GET", "/api/entities/Task/export")).text, exported);
    const read = await target.call("GET", `/api/entities/Task/${records[1].id}`);
    assert.deepEqual(read.body, records[1]);
    assert.notEqual(read.body.created_date, read.body.updated_date);
  });

  test("a record without an id gets a new one, its creator the caller's key", async () => {
    const answer = await target.call("POST", "/api/entities/Task/import", { body: [{ title: "fresh" }] });
    assert.equal(answer.status, 201);
    assert.match(answer.body[0].id, /^[0-9a-f]{24}$/);
    assert.equal(answer.body[0].created_date, answer.body[0].updated_date);
    assert.match(answer.body[0].created_by_id, /^key_/);
  });

  test("a created_date alone is also the updated_date; timestamps are stored in one form", async () => {
    const answer = await target.call("POST", "/api/entities/Task/import", { body: [{ id: "legacy-1", title: "old", created_date: "2020-01-02T03:04:05Z" }] });
    assert.equal(answer.status, 201);
    assert.equal(answer.body[0].created_date, "2020-01-02T03:04:05.000Z");
    assert.equal(answer.body[0].updated_date, "2020-01-02T03:04:05.000Z");
    assert.equal((await target.call("GET", "/api/entities/Task/legacy-1")).status, 200);
  });

  test("all or nothing: one bad record refuses the batch and names it", async () => {
    const before = await count(target);
    const cases: Array<[unknown[], number, string, string | undefined]> = [
      [[{ title: "ok" }, { id: "has/slash", title: "x" }], 400, "invalid_field", "id"],
      [[{ title: "ok" }, { title: "x", created_date: "yesterday" }], 400, "invalid_field", "created_date"],
      [[{ title: "ok" }, { title: "x", created_by_id: 7 }], 400, "invalid_field", "created_by_id"],
      [[{ title: "ok" }, { priority: 1 }], 400, "invalid_field", "title"],
      [[{ id: "twice", title: "a" }, { id: "twice", title: "b" }], 409, "unique_violation", undefined],
      [[{ title: "ok" }, { id: "legacy-1", title: "taken" }], 409, "unique_violation", undefined],
    ];
    for (const [body, status, code, field] of cases) {
      const answer = await target.call("POST", "/api/entities/Task/import", { body });
      assert.equal(answer.status, status, JSON.stringify(answer.body));
      assert.equal(answer.body.error.code, code);
      assert.equal(answer.body.error.details.index, 1);
      if (field) assert.equal(answer.body.error.details.field, field);
    }
    assert.equal(await count(target), before, "nothing of a refused batch is stored");
  });

  test("a deleted record's id is taken too", async () => {
    const made = await target.call("POST", "/api/entities/Task/import", { body: [{ id: "gone-1", title: "soon gone" }] });
    assert.equal(made.status, 201);
    assert.equal((await target.call("DELETE", "/api/entities/Task/gone-1")).status, 200);
    const again = await target.call("POST", "/api/entities/Task/import", { body: [{ id: "gone-1", title: "back?" }] });
    assert.equal(again.status, 409);
    assert.equal(again.body.error.details.existing_id, "gone-1");
    assert.match(again.body.error.message, /already stored \(live or deleted\)/);
  });

  test("a publishable key may not import", async () => {
    const answer = await target.call("POST", "/api/entities/Task/import", { body: [{ title: "x" }], apiKey: PUBLISHABLE });
    assert.equal(answer.status, 403);
    assert.equal(answer.body.error.code, "forbidden");
  });
});
