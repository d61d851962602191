// The memory store's long walks run in slices (src/turns/time-slices.ts): other work runs
// between them, and each walk answers as of its start whatever is written meanwhile.

import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryStore } from "../../src/store/memory/memory-store.ts";
import type { FilterNode, SortSpec } from "../../src/query/filter-tree.ts";
import type { Row } from "../../src/store/store.ts";

const ENTITY = "Task";
/** Enough rows that a scan with a $regex takes many slices on any host (about 100 ms on a fast one). */
const ROWS = 300_000;
const BY_ID: SortSpec = { field: "id", kind: "string", descending: false };
const EVEN: FilterNode = { type: "compare", field: "title", path: ["title"], kind: "string", isArray: false, op: "$regex", value: { pattern: "[02468]$", options: "" } };

function rowOf(n: number, rev: number, deleted = false, title = `task ${n}`): Row {
  const id = n.toString(16).padStart(24, "0");
  return { id, rev, deleted, data: { id, title, created_date: "2026-01-01T00:00:00.000Z", updated_date: "2026-01-01T00:00:00.000Z" } };
}

async function filledStore(): Promise<MemoryStore> {
  const store = new MemoryStore(new Map());
  const puts = [];
  for (let n = 0; n < ROWS; n++) puts.push({ entity: ENTITY, row: rowOf(n, n + 1) });
  await store.commit({ puts });
  return store;
}

/**
 * Deletes the first 1,000 even rows (read before the walk's first pause) and the last 1,000 (read
 * after it), renames 1,000 odd ones to even titles, and adds 1,000 new even ones: as of the walks'
 * start, nothing of it happened.
 */
async function writeMeanwhile(store: MemoryStore): Promise<void> {
  const puts = [];
  for (let n = 0; n < 2000; n += 2) puts.push({ entity: ENTITY, row: rowOf(n, ROWS + n + 1, true) });
  for (let n = ROWS - 2000; n < ROWS; n += 2) puts.push({ entity: ENTITY, row: rowOf(n, 2 * ROWS + n + 1, true) });
  for (let n = ROWS - 1999; n < ROWS; n += 2) puts.push({ entity: ENTITY, row: rowOf(n, 2 * ROWS + n + 1, false, `renamed ${n + 1}`) });
  for (let n = ROWS; n < ROWS + 2000; n += 2) puts.push({ entity: ENTITY, row: rowOf(n, ROWS + n + 1, false, `new ${n}`) });
  await store.commit({ puts });
}

test("a long count, list and visit let other work run between their slices and answer as of their start", async () => {
  const store = await filledStore();
  const evenIds = new Set<string>();
  for (let n = 0; n < ROWS; n += 2) evenIds.add(rowOf(n, 0).id);

  let turnsBetween = 0;
  // unref: a failed assertion must end the test, not leave a timer holding the process.
  const ticker = setInterval(() => turnsBetween++, 0).unref();
  const counting = store.count(ENTITY, EVEN, "exclude");
  const listing = store.list(ENTITY, { filter: EVEN, sort: BY_ID, after: null, skip: 0, limit: ROWS, deleted: "exclude" });
  const visited: string[] = [];
  const visiting = store.forEachLive(ENTITY, EVEN, (row) => visited.push(row.id));
  assert.ok(counting instanceof Promise && listing instanceof Promise && visiting instanceof Promise, "each walk went on in slices");
  await writeMeanwhile(store);

  assert.equal(await counting, ROWS / 2);
  const { rows, hasMore } = await listing;
  assert.equal(hasMore, false);
  assert.deepEqual(rows.map((row) => row.id), [...evenIds]);
  await visiting;
  clearInterval(ticker);
  assert.deepEqual(new Set(visited), evenIds);
  assert.equal(visited.length, evenIds.size, "no row visited twice");
  assert.ok(turnsBetween > 3, `timers ran between the slices (${turnsBetween} times)`);

  // Asked again, after the writes: the deleted rows are gone and the new ones found.
  assert.equal(await store.count(ENTITY, EVEN, "exclude"), ROWS / 2);
  const after = await store.list(ENTITY, { filter: EVEN, sort: BY_ID, after: null, skip: 0, limit: 3, deleted: "exclude" });
  assert.deepEqual(after.rows.map((row) => row.id), [2000, 2002, 2004].map((n) => rowOf(n, 0).id));
});

test("an export's pages are filled in slices from the rows as they were when it opened", async () => {
  const store = await filledStore();
  const pages = store.openExport(ENTITY, EVEN);
  await writeMeanwhile(store);
  const seen: string[] = [];
  for (let page = await pages.next(); page.length > 0; page = await pages.next()) for (const row of page) seen.push(row.id);
  assert.equal(seen.length, ROWS / 2);
  assert.equal(seen[0], rowOf(0, 0).id, "a row deleted after the export opened is still in it");
  assert.ok(!seen.includes(rowOf(ROWS, 0).id), "a row created after the export opened is not");
});
