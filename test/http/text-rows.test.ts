// Rows loaded from a snapshot are kept as their data's JSON text and parsed when first read
// (docs/architecture.md, "Rows parsed on first use"): every answer after such a start must be the
// one given before it, whatever reads the rows first (a read by id, a filter, a sort, a count, a
// search, a write), and under declarations changed since the rows were written.

import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { FileStore } from "../../src/store/file/file-store.ts";
import { PUBLISHABLE, q, startTestServer, TASK, type TestServer } from "../support/server.ts";

const T = "/api/entities/Task";
let root: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "tabula-text-rows-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Compacts the folder's log into a snapshot, so that the next start loads rows as text. */
async function compactFolder(dir: string): Promise<void> {
  const store = await FileStore.open({ dir, valueIndexed: new Map(), warn: () => {} });
  await store.compact();
  await store.close();
}

async function seededFolder(name: string): Promise<{ dir: string; ids: string[] }> {
  const dir = join(root, name);
  const server = await startTestServer({ memory: false, data: dir, warn: () => {} });
  try {
    const records = Array.from({ length: 30 }, (_, i) => ({ title: `task ${i} "quoted" \\ é`, status: ["todo", "doing", "done"][i % 3], priority: i % 7, done: i % 2 === 0, tags: i % 4 ? ["a", "b"] : [] }));
    const created = await server.call("POST", `${T}/bulk`, { body: records });
    assert.equal(created.status, 201, created.text);
    const ids = (created.body as Array<{ id: string }>).map((record) => record.id);
    assert.equal((await server.call("PATCH", `${T}/${ids[3]}`, { body: { priority: 99 } })).status, 200);
    assert.equal((await server.call("DELETE", `${T}/${ids[4]}`)).status, 200);
    return { dir, ids };
  } finally {
    await server.close();
  }
}

/** The answers a client can see, as text: reads by id with both kinds of key, pages, counts, searches. */
async function answers(server: TestServer, ids: string[]): Promise<string[]> {
  const out: string[] = [];
  const ok = async (path: string, apiKey?: string): Promise<string> => {
    const answer = await server.call("GET", path, apiKey ? { apiKey } : {});
    // The deleted record's 404 is an answer too.
    assert.ok(answer.status === 200 || (answer.status === 404 && path.endsWith(ids[4]!)), `${path}: ${answer.status} ${answer.text}`);
    return answer.text;
  };
  for (const id of ids) {
    out.push(await ok(`${T}/${id}`));
    out.push(await ok(`${T}/${id}`, PUBLISHABLE));
  }
  out.push(await ok(`${T}?sort_by=-priority&limit=50`));
  out.push(await ok(`${T}?q=${q({ status: "doing" })}&limit=50`));
  out.push(await ok(`${T}/count?q=${q({ done: true })}`));
  out.push(await ok(`${T}?search=quoted&limit=50&fields=title,priority`));
  return out;
}

test("after a start on a snapshot, every answer is the one given before, and writes merge into unparsed rows", async () => {
  const { dir, ids } = await seededFolder("same");
  let before: string[];
  const first = await startTestServer({ memory: false, data: dir, warn: () => {} });
  try {
    before = await answers(first, ids);
  } finally {
    await first.close();
  }
  await compactFolder(dir);
  const snapshot = (await readdir(dir)).find((name) => name.startsWith("snapshot-"))!;
  const rowLines = (await readFile(join(dir, snapshot), "utf8")).split("\n").filter((line) => /^\d/.test(line));
  assert.equal(rowLines.length, 30);
  // Reads by id first (rows sent as their text), then the rest; then a start reading pages first.
  const second = await startTestServer({ memory: false, data: dir, warn: () => {} });
  try {
    assert.deepEqual(await answers(second, ids), before);
    // A PATCH merges into a row no read has parsed.
    const patched = await second.call("PATCH", `${T}/${ids[7]}`, { body: { estimate: 2.5 } });
    assert.equal(patched.status, 200);
    assert.equal(patched.body.estimate, 2.5);
    assert.equal(patched.body.title, `task 7 "quoted" \\ é`);
    assert.equal((await second.call("GET", `${T}/${ids[7]}`)).text, patched.text);
  } finally {
    await second.close();
  }
  // Compaction writes rows it never parsed back as they were read.
  await compactFolder(dir);
  const again = (await readdir(dir)).find((name) => name.startsWith("snapshot-"))!;
  const againLines = (await readFile(join(dir, again), "utf8")).split("\n").filter((line) => /^\d/.test(line));
  for (const line of rowLines) if (!line.includes(ids[7]!)) assert.ok(againLines.includes(line), `row line rewritten: ${line}`);
  const third = await startTestServer({ memory: false, data: dir, warn: () => {} });
  try {
    const pages = await third.call("GET", `${T}?sort_by=priority&limit=50`);
    assert.equal(pages.body.length, 29, pages.text);
    assert.equal(pages.body.find((record: { id: string }) => record.id === ids[7]).estimate, 2.5);
  } finally {
    await third.close();
  }
});

test("rows stored under earlier declarations are answered in the current order", async () => {
  const { dir, ids } = await seededFolder("changed");
  await compactFolder(dir);
  // Declarations reordered: priority first.
  const { priority, ...rest } = TASK.properties;
  const changed = { ...TASK, properties: { priority, ...rest } };
  const server = await startTestServer({ memory: false, data: dir, warn: () => {}, schema: { Task: changed } });
  try {
    assert.deepEqual(server.undeclaredFields, []);
    const read = await server.call("GET", `${T}/${ids[3]}`);
    assert.equal(read.status, 200);
    assert.deepEqual(Object.keys(read.body), ["id", "priority", "title", "status", "done", "tags", "created_date", "updated_date", "created_by_id"]);
    assert.equal(read.body.priority, 99);
    assert.equal((await server.call("GET", `${T}/${ids[4]}`)).status, 404);
  } finally {
    await server.close();
  }
});

test("writes before any walk over the rows, the feed's kept events, and a compaction with rows never read", async () => {
  const { dir, ids } = await seededFolder("writes-first");
  await compactFolder(dir);
  let feedBefore: string;
  const first = await startTestServer({ memory: false, data: dir, warn: () => {} });
  try {
    feedBefore = (await first.call("GET", `${T}/changes?since=0.0&limit=100`)).text;
  } finally {
    await first.close();
  }
  const server = await startTestServer({ memory: false, data: dir, warn: () => {} });
  let created: string;
  try {
    // The kept events, read straight after the start, are the ones read before it.
    assert.equal((await server.call("GET", `${T}/changes?since=0.0&limit=100`)).text, feedBefore);
    // Before anything walks the rows: a create, an update and a delete of rows never read, a
    // restore of the record deleted before the snapshot, and a read of each.
    const made = await server.call("POST", T, { body: { title: "made after the start", priority: 5 } });
    assert.equal(made.status, 201, made.text);
    created = made.body.id;
    const patched = await server.call("PATCH", `${T}/${ids[10]}`, { body: { priority: 42 } });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.title, 'task 10 "quoted" \\ é');
    assert.equal((await server.call("DELETE", `${T}/${ids[11]}`)).status, 200);
    assert.equal((await server.call("PUT", `${T}/${ids[4]}/restore`)).status, 200);
    assert.equal((await server.call("GET", `${T}/${ids[11]}`)).status, 404);
    assert.equal((await server.call("GET", `${T}/${ids[10]}`)).body.priority, 42);
    // Counts before and after the first walk agree.
    assert.equal((await server.call("GET", `${T}/count`)).body.count, 30);
    assert.equal((await server.call("GET", `${T}/count?q=${q({ priority: 42 })}`)).body.count, 1);
    const page = await server.call("GET", `${T}?sort_by=-priority&limit=100`);
    assert.deepEqual(page.body.map((record: { priority: number }) => record.priority).slice(0, 2), [99, 42]);
    assert.equal(page.body.length, 30);
    assert.ok(page.body.some((record: { id: string }) => record.id === created));
  } finally {
    await server.close();
  }
  // A compaction while most rows were never read, then a start from it: the same records.
  const third = await startTestServer({ memory: false, data: dir, warn: () => {} });
  try {
    assert.equal((await third.call("GET", `${T}/${ids[10]}`)).body.priority, 42);
  } finally {
    await third.close();
  }
  await compactFolder(dir);
  const fourth = await startTestServer({ memory: false, data: dir, warn: () => {} });
  try {
    assert.equal((await fourth.call("GET", `${T}/count`)).body.count, 30);
    assert.equal((await fourth.call("GET", `${T}/${created}`)).body.title, "made after the start");
    assert.equal((await fourth.call("GET", `${T}/${ids[11]}`)).status, 404);
    assert.equal((await fourth.call("GET", `${T}/${ids[4]}`)).status, 200);
    assert.equal((await fourth.call("GET", `${T}/${ids[10]}`)).body.priority, 42);
    const all = await fourth.call("GET", `${T}?sort_by=title&limit=100`);
    assert.equal(all.body.length, 30);
  } finally {
    await fourth.close();
  }
});
