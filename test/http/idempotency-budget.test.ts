// Idempotent answers kept within a budget of bytes (--idempotency-memory, docs/api.md#idempotency-keys)
// on the memory and file stores: past it the oldest answers go first, a key whose answer went is a
// new key again, the answers still kept replay as before, and a restart of the file store (log
// replay and snapshot alike) keeps the same answers. PostgreSQL keeps its answers in a table, so
// these tests name their store.

import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { IDEMPOTENCY_TTL_MS } from "../../src/http/idempotency.ts";
import { FileStore } from "../../src/store/file/file-store.ts";
import { answerBytes } from "../../src/store/memory/idempotent-answers.ts";
import type { IdempotentAnswer } from "../../src/store/store.ts";
import { startTestServer, type Answer, type TestServer } from "../support/server.ts";

const T = "/api/entities/Task";
/** A title of 1,000 characters makes each create's answer about 1.5 kB. */
const TITLE = "t".repeat(1000);
/** Room for two such answers, not three. */
const BUDGET = 4000;

function send(server: TestServer, index: number): Promise<Answer> {
  return server.call("POST", T, { body: { title: TITLE, priority: index }, headers: { "Idempotency-Key": `budget-${index}` } });
}

/** Creates records 0..count-1, each with a key of its own. */
async function createAll(server: TestServer, count: number): Promise<Answer[]> {
  const answers: Answer[] = [];
  for (let index = 0; index < count; index++) {
    const answer = await send(server, index);
    assert.equal(answer.status, 201, answer.text);
    answers.push(answer);
  }
  return answers;
}

function assertReplayOf(replay: Answer, first: Answer): void {
  assert.equal(replay.status, first.status);
  assert.equal(replay.headers.get("idempotent-replayed"), "true");
  assert.equal(replay.text, first.text, "the replayed body is the first body, byte for byte");
  for (const name of ["etag", "location", "content-type"]) assert.equal(replay.headers.get(name), first.headers.get(name), name);
}

/** The oldest key is new again (its answer went); the newest is replayed. */
async function assertOldestGoneNewestKept(server: TestServer, answers: Answer[]): Promise<void> {
  const count = (await server.call("GET", `${T}/count`)).body.count;
  assertReplayOf(await send(server, answers.length - 1), answers.at(-1)!);
  const again = await send(server, 0);
  assert.equal(again.status, 201, again.text);
  assert.equal(again.headers.get("idempotent-replayed"), null, "an answer past the budget is not replayed");
  assert.notEqual(again.body.id, answers[0]!.body.id, "the key is a new key: the work is done again");
  assert.equal((await server.call("GET", `${T}/count`)).body.count, count + 1);
  assertReplayOf(await send(server, 0), again);
}

for (const store of ["memory", "file"] as const) {
  test(`${store} store: past idempotencyMemoryBytes the oldest answers go first and the newest are replayed`, async () => {
    const dir = await mkdtemp(join(tmpdir(), "tabula-idempotency-budget-"));
    const server = await startTestServer(store === "memory" ? { memory: true, idempotencyMemoryBytes: BUDGET } : { memory: false, data: dir, idempotencyMemoryBytes: BUDGET, warn: () => {} });
    try {
      const answers = await createAll(server, 6);
      await assertOldestGoneNewestKept(server, answers);
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
}

test("the default budget keeps every answer of a few hundred writes", async () => {
  const server = await startTestServer({ memory: true });
  try {
    const answers = await createAll(server, 300);
    assertReplayOf(await send(server, 0), answers[0]!);
    assertReplayOf(await send(server, 299), answers[299]!);
  } finally {
    await server.close();
  }
});

test("file store: after a restart with the same budget, the same answers are kept and the same gone", async () => {
  const dir = await mkdtemp(join(tmpdir(), "tabula-idempotency-budget-"));
  const options = { memory: false, data: dir, idempotencyMemoryBytes: BUDGET, warn: () => {} };
  try {
    const first = await startTestServer(options);
    const answers = await createAll(first, 6);
    await first.close();
    const second = await startTestServer(options);
    try {
      await assertOldestGoneNewestKept(second, answers);
    } finally {
      await second.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

// --- the store's side: a snapshot and the log after it keep what memory kept ---

function answer(index: number, expiresAt: number): IdempotentAnswer {
  return { scope: `key_a\nk${index}`, fingerprint: `POST ${T} hash${index}`, status: 201, headers: { ETag: `"${index}"` }, body: JSON.stringify({ id: index, title: TITLE }), expiresAt };
}

test("file store: a compaction and the log after it keep, after a restart, exactly the answers kept before", async () => {
  const dir = await mkdtemp(join(tmpdir(), "tabula-idempotency-budget-"));
  const expiresAt = Date.now() + IDEMPOTENCY_TTL_MS;
  const budget = 3 * answerBytes(answer(0, expiresAt));
  const kept = (store: FileStore, indexes: number[]) => indexes.filter((index) => store.findAnswer(`key_a\nk${index}`, Date.now()) !== undefined);
  const all = Array.from({ length: 8 }, (_, index) => index);
  try {
    let store = await FileStore.open({ dir, valueIndexed: new Map(), idempotencyMemoryBytes: budget, warn: () => {} });
    for (const index of all.slice(0, 5)) await store.commit({ puts: [], answer: answer(index, expiresAt) });
    await store.compact();
    for (const index of all.slice(5)) await store.commit({ puts: [], answer: answer(index, expiresAt) });
    const before = kept(store, all);
    assert.deepEqual(before, [5, 6, 7], "three answers fit the budget: the newest three");
    await store.close();

    store = await FileStore.open({ dir, valueIndexed: new Map(), idempotencyMemoryBytes: budget, warn: () => {} });
    try {
      assert.deepEqual(kept(store, all), before);
      assert.equal(store.findAnswer("key_a\nk7", Date.now())?.body, answer(7, expiresAt).body);
      await store.compact();
    } finally {
      await store.close();
    }
    store = await FileStore.open({ dir, valueIndexed: new Map(), idempotencyMemoryBytes: budget, warn: () => {} });
    try {
      assert.deepEqual(kept(store, all), before, "and the snapshot of that start, alone, keeps them too");
    } finally {
      await store.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("an answer larger than the whole budget is not kept, and the answers before it stay", async () => {
  const server = await startTestServer({ memory: true, idempotencyMemoryBytes: BUDGET });
  try {
    const [small] = await createAll(server, 1);
    const headers = { "Idempotency-Key": "too-big" };
    const big = await server.call("POST", T, { body: { title: "b".repeat(10_000) }, headers });
    assert.equal(big.status, 201);
    const again = await server.call("POST", T, { body: { title: "b".repeat(10_000) }, headers });
    assert.equal(again.status, 201);
    assert.equal(again.headers.get("idempotent-replayed"), null);
    assert.notEqual(again.body.id, big.body.id);
    assertReplayOf(await send(server, 0), small!);
  } finally {
    await server.close();
  }
});
