// Schema changes between runs (docs/schema-changes.md), on the file store alone: an added field works
// at once; a removed field that records still hold stops the start-up. Every kind of change, on
// every store: test/http/schema-changes.test.ts.

import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createServer } from "../../src/server.ts";

const SECRET = "sk_schema_change";

async function start(dir: string, properties: Record<string, unknown>) {
  const server = await createServer({ schema: { Task: { type: "object", properties } }, data: dir, port: 0, secretKey: SECRET });
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(server.url + path, {
      method,
      headers: { "X-Api-Key": SECRET, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as any };
  };
  return { server, call };
}

test("a removed field still held by a record stops the start-up and writes nothing; an added field works at once", async () => {
  const dir = await mkdtemp(join(tmpdir(), "tabula-schema-"));
  try {
    const first = await start(dir, { title: { type: "string" }, colour: { type: "string" } });
    const created = await first.call("POST", "/api/entities/Task", { title: "a", colour: "red" });
    assert.equal(created.body.colour, "red");
    await first.server.close();

    await assert.rejects(start(dir, { title: { type: "string" }, size: { type: "integer" } }), (error: Error) => {
      assert.match(error.message, new RegExp(`Task: − colour: 1 record holds a value for it \\(${created.body.id}\\)\\. Step: \\{"unset":"Task\\.colour"\\}`));
      return true;
    });

    // Nothing was written: the value is there, and a field added beside it works at once.
    const second = await start(dir, { title: { type: "string" }, colour: { type: "string" }, size: { type: "integer" } });
    assert.deepEqual(second.server.schemaLines, ["Task: + size (integer, optional)"]);
    const updated = await second.call("PATCH", `/api/entities/Task/${created.body.id}`, { size: 3 });
    assert.equal(updated.status, 200);
    assert.deepEqual([updated.body.colour, updated.body.size], ["red", 3]);
    await second.server.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
