// Schema changes between runs (issue 6): an added field works at once; a removed field stays on
// disk, is neither returned nor writable, is reported, and survives updates of the record.

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

test("a removed field is kept on disk but hidden and unwritable; an added field works at once", async () => {
  const dir = await mkdtemp(join(tmpdir(), "tabula-schema-"));
  try {
    const first = await start(dir, { title: { type: "string" }, colour: { type: "string" } });
    const created = await first.call("POST", "/api/entities/Task", { title: "a", colour: "red" });
    assert.equal(created.body.colour, "red");
    await first.server.close();

    const second = await start(dir, { title: { type: "string" }, size: { type: "integer" } });
    assert.deepEqual(second.server.undeclaredFields, ["Task.colour"]);
    const read = await second.call("GET", `/api/entities/Task/${created.body.id}`);
    assert.equal(read.status, 200);
    assert.equal("colour" in read.body, false);
    const refused = await second.call("PATCH", `/api/entities/Task/${created.body.id}`, { colour: "blue" });
    assert.equal(refused.body.error.code, "unknown_field");
    const updated = await second.call("PATCH", `/api/entities/Task/${created.body.id}`, { size: 3 });
    assert.equal(updated.status, 200);
    assert.equal(updated.body.size, 3);
    await second.server.close();

    // Back to the first declaration: the value written before was kept through the update.
    const third = await start(dir, { title: { type: "string" }, colour: { type: "string" } });
    assert.deepEqual(third.server.undeclaredFields, ["Task.size"]);
    const again = await third.call("GET", `/api/entities/Task/${created.body.id}`);
    assert.equal(again.body.colour, "red");
    await third.server.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
