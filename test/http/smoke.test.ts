import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, before, test } from "node:test";
import { PUBLISHABLE, startTestServer, TEST_STORE, type TestServer } from "../support/server.ts";

let server: TestServer;
before(async () => (server = await startTestServer()));
after(() => server.close());

test("a created record reads back, and a publishable key never sees created_by_id", async () => {
  const created = await server.call("POST", "/api/entities/Task", { body: { title: "Write tests", priority: 2 } });
  assert.equal(created.status, 201);
  assert.match(created.body.id, /^[0-9a-f]{24}$/);
  assert.equal(created.body.status, "todo");
  const read = await server.call("GET", `/api/entities/Task/${created.body.id}`, { apiKey: PUBLISHABLE });
  assert.equal(read.status, 200);
  assert.equal(read.body.title, "Write tests");
  assert.equal("created_by_id" in read.body, false);
  assert.equal(read.headers.get("etag"), created.headers.get("etag"));
});

test(`the test server runs on the store TABULA_TEST_STORE names (here ${TEST_STORE}); one that asks for memory gets it`, async () => {
  const onStore = await startTestServer();
  const dataDir = onStore.dataDir;
  await onStore.close();
  if (TEST_STORE === "file") {
    assert.ok(dataDir, "a data folder of its own");
    assert.equal(existsSync(dataDir), false, "close() removes it");
  } else {
    // memory keeps nothing on disk; postgres keeps a schema of its own in the database.
    assert.equal(dataDir, null);
  }
  const inMemory = await startTestServer({ memory: true });
  assert.equal(inMemory.dataDir, null);
  await inMemory.close();
});
