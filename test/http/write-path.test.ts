// The write path serializes each new record version once (issue 7): the answer to a write and its
// log line share one JSON text. Checked end to end: every write's answer must be byte for byte the
// answer a read gives after a restart, when the record comes back from the log and is serialized
// field by field; publishable keys never see created_by_id.

import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { PUBLISHABLE, SECRET, startTestServer, type TestServer } from "../support/server.ts";

const T = "/api/entities/Task";
let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "tabula-write-path-"));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A record as one key saw it when it was written. */
interface Written {
  readonly id: string;
  readonly apiKey: string;
  readonly text: string;
}

/** The records of a write's answer, each as its own JSON text (answers are compact JSON). */
function recordsOf(answer: { body: any }, apiKey: string, extra?: string): Written[] {
  const list: any[] = Array.isArray(answer.body) ? answer.body : [answer.body];
  return list.map((record) => {
    const copy = { ...record };
    if (extra) delete copy[extra];
    return { id: record.id, apiKey, text: JSON.stringify(copy) };
  });
}

async function writeEverything(server: TestServer): Promise<Written[]> {
  const written: Written[] = [];
  for (const apiKey of [SECRET, PUBLISHABLE]) {
    const created = await server.call("POST", T, { apiKey, body: { tags: ["a"], title: 'one "é" 😀', due_date: "2026-02-28", meta: { created_by_id: "x" } } });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.text, JSON.stringify(created.body), "answers are compact JSON");
    const bulk = await server.call("POST", `${T}/bulk`, { apiKey, body: [{ title: "two", priority: 2 }, { done: true, title: `three ${apiKey}`, start_at: "2026-11-22T14:00:00+02:00" }] });
    assert.equal(bulk.status, 201, bulk.text);
    // The file store has dropped the data JSON once logged: these reads serialize field by field.
    for (const record of [...recordsOf(created, apiKey), ...recordsOf(bulk, apiKey)]) {
      assert.equal((await server.call("GET", `${T}/${record.id}`, { apiKey })).text, record.text);
    }
    const patched = await server.call("PATCH", `${T}/${created.body.id}`, { apiKey, body: { estimate: 1.5, tags: null } });
    assert.equal(patched.status, 200, patched.text);
    const bulkUpdated = await server.call("PUT", `${T}/bulk`, { apiKey, body: [{ id: bulk.body[0].id, email: "a@b.co" }] });
    assert.equal(bulkUpdated.status, 200, bulkUpdated.text);
    const upserted = await server.call("POST", `${T}/upsert`, { apiKey, body: { match: ["title"], records: [{ title: `three ${apiKey}`, priority: 9 }, { title: `four ${apiKey}` }] } });
    assert.equal(upserted.status, 200, upserted.text);
    const latest = [...recordsOf(patched, apiKey), ...recordsOf(bulkUpdated, apiKey), ...recordsOf(upserted, apiKey, "created")];
    for (const record of [...recordsOf(created, apiKey), ...recordsOf(bulk, apiKey), ...latest]) {
      assert.equal("created_by_id" in JSON.parse(record.text), apiKey === SECRET, record.text);
    }
    written.push(...latest);
  }
  const deleted = await server.call("DELETE", `${T}/${written[0]!.id}`);
  assert.equal(deleted.status, 200);
  const restored = await server.call("PUT", `${T}/${written[0]!.id}/restore`);
  assert.equal(restored.status, 200, restored.text);
  written.push(...recordsOf(restored, SECRET, "restored"));
  return written;
}

test("every write answers, byte for byte, what a read answers after a restart", async () => {
  const options = { memory: false, data: dir, warn: () => {} };
  const first = await startTestServer(options);
  let written: Written[];
  try {
    written = await writeEverything(first);
  } finally {
    await first.close();
  }
  const second = await startTestServer(options);
  try {
    // Only the latest answer per record and key counts: later writes change a record.
    const latest = new Map(written.map((record) => [`${record.id} ${record.apiKey}`, record]));
    for (const record of latest.values()) {
      const read = await second.call("GET", `${T}/${record.id}`, { apiKey: record.apiKey });
      assert.equal(read.status, 200, read.text);
      assert.equal(read.text, record.text);
    }
  } finally {
    await second.close();
  }
});

test("log lines hold each version's data in record order, and never a memo", async () => {
  const text = (await Promise.all((await readdir(dir)).filter((name) => name.startsWith("log-")).map((name) => readFile(join(dir, name), "utf8")))).join("");
  const puts = text.split("\n").filter(Boolean).flatMap((line) => JSON.parse(line).puts ?? []);
  assert.ok(puts.length > 10);
  for (const { row } of puts) {
    assert.deepEqual(Object.keys(row), ["id", "rev", "deleted", "data"]);
    const keys = Object.keys(row.data);
    assert.equal(keys[0], "id");
    assert.deepEqual(keys.slice(-3), ["created_date", "updated_date", "created_by_id"]);
  }
});
