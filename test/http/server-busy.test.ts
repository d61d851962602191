// --max-memory (docs/operating.md, "Memory"; docs/errors.md, server_busy): while the server's memory
// is near the budget, heavy requests are refused 503 server_busy with Retry-After, and light ones
// (/health, a read by id, a small write, a short list, a count) are answered as ever. A budget of a
// few bytes puts any server over it.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { PUBLISHABLE, q, startTestServer, type TestServer } from "../support/server.ts";

const T = "/api/entities/Task";

describe("memory over maxMemoryBytes", () => {
  let server: TestServer;
  let id: string;
  before(async () => {
    server = await startTestServer({ maxMemoryBytes: 1024 });
    const created = await server.call("POST", T, { body: { title: "light", status: "todo" } });
    assert.equal(created.status, 201, "a small write is light");
    id = created.body.id;
  });
  after(() => server.close());

  const HEAVY: Array<[string, string, string, unknown?]> = [
    ["bulk create", "POST", `${T}/bulk`, [{ title: "a" }]],
    ["bulk update", "PUT", `${T}/bulk`, []],
    ["upsert", "POST", `${T}/upsert`, { match: ["title"], records: [{ title: "a" }] }],
    ["update-many", "PATCH", `${T}/update-many`, { q: { status: "todo" }, set: { status: "done" } }],
    ["delete-many", "DELETE", `${T}?q=${q({ status: "todo" })}`],
    ["import", "POST", `${T}/import`, [{ title: "a" }]],
    ["aggregate", "POST", `${T}/aggregate`, { groupBy: "status" }],
    ["distinct", "GET", `${T}/distinct/status`],
    ["export", "GET", `${T}/export`],
    ["a list of over 1,000 records", "GET", `${T}?limit=1001`],
    ["a create whose body is over 64 KiB", "POST", T, { title: "x".repeat(70_000) }],
  ];
  for (const [name, method, path, body] of HEAVY) {
    test(`${name} is refused 503 server_busy with Retry-After, and nothing is written`, async () => {
      const refused = await server.call(method, path, { body });
      assert.equal(refused.status, 503, refused.text);
      assert.equal(refused.body.error.code, "server_busy");
      assert.match(refused.body.error.message, /maxMemoryBytes|--max-memory|heap/);
      assert.ok(Number(refused.headers.get("retry-after")) >= 1);
      assert.equal(refused.headers.get("idempotent-replayed"), null);
      assert.equal((await server.call("GET", `${T}/count`)).body.count, 1);
      const read = await server.call("GET", `${T}/${id}`);
      assert.equal(read.body.status, "todo", "the record is as it was");
    });
  }

  test("an upload is refused 503 server_busy before its body is read, and no file is kept", async () => {
    const refused = await fetch(`${server.url}/api/files?name=a.bin`, { method: "POST", headers: { "X-Api-Key": PUBLISHABLE, "Content-Type": "application/octet-stream" }, body: new Uint8Array(1000).fill(7) });
    assert.equal(refused.status, 503);
    assert.equal(((await refused.json()) as any).error.code, "server_busy");
    assert.equal((await server.call("GET", "/api/files")).headers.get("x-total-count"), "0");
  });

  test("light requests are answered: /health, a read by id, a short list, a count, a small write", async () => {
    const health = await fetch(`${server.url}/health`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: "ok" });
    const read = await server.call("GET", `${T}/${id}`);
    assert.equal(read.status, 200);
    assert.equal(read.body.id, id);
    const list = await server.call("GET", `${T}?limit=1000`);
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.map((record: { id: string }) => record.id), [id]);
    assert.equal((await server.call("GET", `${T}/count`)).status, 200);
    const patched = await server.call("PATCH", `${T}/${id}`, { body: { priority: 2 } });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.priority, 2);
  });
});

test("with the default budget the same heavy requests are answered", async () => {
  const server = await startTestServer();
  try {
    const bulk = await server.call("POST", `${T}/bulk`, { body: [{ title: "a" }, { title: "b" }] });
    assert.equal(bulk.status, 201, bulk.text);
    assert.equal((await server.call("GET", `${T}?limit=1001`)).status, 200);
    assert.equal((await server.call("POST", `${T}/aggregate`, { body: { groupBy: "status" } })).status, 200);
    const big = await server.call("POST", T, { body: { title: "x".repeat(70_000) } });
    assert.equal(big.status, 201, big.text);
  } finally {
    await server.close();
  }
});

test("maxMemoryBytes and idempotencyMemoryBytes that are not whole numbers of at least 1 stop the start-up, naming the option", async () => {
  await assert.rejects(startTestServer({ maxMemoryBytes: 0 }), /maxMemoryBytes option.*at least 1/);
  await assert.rejects(startTestServer({ idempotencyMemoryBytes: 1.5 }), /idempotencyMemoryBytes option.*at least 1/);
});
