// Idempotency keys over HTTP (docs/api.md, issue 5): replay of the first answer on every
// write endpoint, scoping to the API key, reuse and in-flight refusals, errors not stored, expiry
// after 24 hours, and survival across a restart of the file store.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, mock, test } from "node:test";
import { IDEMPOTENCY_TTL_MS, idempotentRequest } from "../../src/http/idempotency.ts";
import { FileStore } from "../../src/store/file/file-store.ts";
import { MemoryStore } from "../../src/store/memory/memory-store.ts";
import type { IdempotentAnswer } from "../../src/store/store.ts";
import { PUBLISHABLE, q, SECRET, startTestServer, TASK, type Answer, type TestServer } from "../support/server.ts";

const OTHER_SECRET = "sk_test_other_secret";
const NOTE = { name: "Note", type: "object", properties: { title: { type: "string" } } };

let server: TestServer;
before(async () => {
  server = await startTestServer({ schema: { Task: TASK, Note: NOTE }, keys: [{ id: "key_other", kind: "secret", key: OTHER_SECRET }] });
});
beforeEach(() => server.reset());
after(() => server.close());

const T = "/api/entities/Task";
let keyCounter = 0;
const newKey = () => `key-${process.pid}-${++keyCounter}`;

/** Headers that belong to the connection or the moment, not to the stored answer. */
const TRANSPORT_HEADERS = new Set(["date", "connection", "keep-alive", "idempotent-replayed"]);

function assertReplayOf(replay: Answer, first: Answer): void {
  assert.equal(replay.headers.get("idempotent-replayed"), "true");
  assert.equal(replay.status, first.status);
  assert.equal(replay.text, first.text, "the replayed body is the first body, byte for byte");
  for (const [name, value] of first.headers) {
    if (!TRANSPORT_HEADERS.has(name)) assert.equal(replay.headers.get(name), value, `header ${name}`);
  }
}

/** Every stored record (live and deleted), each live record's ETag, and the live count. */
async function state(): Promise<string> {
  const all = await server.call("GET", `${T}?deleted=include&sort_by=id&limit=5000`);
  assert.equal(all.status, 200);
  const etags: string[] = [];
  for (const record of all.body) {
    const read = await server.call("GET", `${T}/${record.id}`);
    etags.push(read.status === 200 ? read.headers.get("etag")! : "deleted");
  }
  const count = await server.call("GET", `${T}/count`);
  return JSON.stringify({ records: all.body, etags, count: count.body.count });
}

async function createTasks(...records: object[]): Promise<any[]> {
  const created = await server.call("POST", `${T}/bulk`, { body: records });
  assert.equal(created.status, 201);
  return created.body;
}

interface Write {
  readonly method: string;
  readonly path: string;
  readonly body?: unknown;
}

/** Each write endpoint, with the state it needs; redoing any of them would change the stored state or the answer. */
const WRITES: Array<[string, () => Promise<Write>]> = [
  ["create", async () => ({ method: "POST", path: T, body: { title: "once" } })],
  [
    "update",
    async () => {
      const [a] = await createTasks({ title: "a" });
      return { method: "PATCH", path: `${T}/${a.id}`, body: { priority: 5 } };
    },
  ],
  [
    "delete",
    async () => {
      const [a] = await createTasks({ title: "a" });
      return { method: "DELETE", path: `${T}/${a.id}` };
    },
  ],
  [
    "restore",
    async () => {
      const [a] = await createTasks({ title: "a" });
      await server.call("DELETE", `${T}/${a.id}`);
      return { method: "PUT", path: `${T}/${a.id}/restore` };
    },
  ],
  ["bulk create", async () => ({ method: "POST", path: `${T}/bulk`, body: [{ title: "a" }, { title: "b" }] })],
  [
    "bulk update",
    async () => {
      const [a, b] = await createTasks({ title: "a" }, { title: "b" });
      return { method: "PUT", path: `${T}/bulk`, body: [{ id: a.id, priority: 1 }, { id: b.id, priority: 2 }] };
    },
  ],
  [
    "upsert",
    async () => {
      await createTasks({ title: "a", email: "a@example.com" });
      return { method: "POST", path: `${T}/upsert`, body: { match: ["email"], records: [{ email: "a@example.com", priority: 3 }, { title: "new", email: "new@example.com" }] } };
    },
  ],
  [
    "update-many",
    async () => {
      await createTasks({ title: "a" }, { title: "b" });
      return { method: "PATCH", path: `${T}/update-many`, body: { q: { status: "todo" }, set: { status: "doing" } } };
    },
  ],
  [
    "delete-many",
    async () => {
      await createTasks({ title: "a" }, { title: "b" }, { title: "c", status: "done" });
      return { method: "DELETE", path: `${T}?q=${q({ status: "todo" })}` };
    },
  ],
];

for (const [name, prepare] of WRITES) {
  test(`${name}: a retry with the same key replays status, body and headers without redoing the work`, async () => {
    const write = await prepare();
    const idempotencyKey = newKey();
    const send = () => server.call(write.method, write.path, { body: write.body, headers: { "Idempotency-Key": idempotencyKey } });
    const first = await send();
    assert.ok(first.status >= 200 && first.status < 300, `${first.status} ${first.text}`);
    assert.equal(first.headers.get("idempotent-replayed"), null, "the first answer is not a replay");
    const stored = await state();
    for (let retry = 0; retry < 2; retry++) {
      assertReplayOf(await send(), first);
      assert.equal(await state(), stored, "a replay does not redo the work");
    }
  });

  test(`${name}: the same key with another body is 422 idempotency_key_reused`, async () => {
    const write = await prepare();
    const idempotencyKey = newKey();
    const headers = { "Idempotency-Key": idempotencyKey };
    const first = await server.call(write.method, write.path, { body: write.body, headers });
    assert.ok(first.status >= 200 && first.status < 300, first.text);
    const stored = await state();
    const otherBody = write.body === undefined ? {} : { other: write.body };
    const reused = await server.call(write.method, write.path, { body: otherBody, headers });
    assert.equal(reused.status, 422, reused.text);
    assert.equal(reused.body.error.code, "idempotency_key_reused");
    assert.equal(reused.headers.get("idempotent-replayed"), null);
    assert.equal(await state(), stored);
    assertReplayOf(await server.call(write.method, write.path, { body: write.body, headers }), first);
  });
}

test("the same key with another method, path or query is 422 idempotency_key_reused", async () => {
  const headers = { "Idempotency-Key": newKey() };
  const first = await server.call("POST", T, { body: { title: "a" }, headers });
  assert.equal(first.status, 201);
  const stored = await state();
  const attempts: Array<[string, string, unknown]> = [
    ["PATCH", `${T}/${first.body.id}`, { title: "a" }],
    ["PUT", `${T}/${first.body.id}`, { title: "a" }],
    ["POST", "/api/entities/Note", { title: "a" }],
    ["POST", `${T}/bulk`, [{ title: "a" }]],
    ["POST", `${T}?x=1`, { title: "a" }],
    ["POST", T, { title: "b" }],
    ["POST", T, { title: "a", priority: 1 }],
  ];
  for (const [method, path, body] of attempts) {
    const reused = await server.call(method, path, { body, headers });
    assert.equal(reused.status, 422, `${method} ${path}: ${reused.text}`);
    assert.equal(reused.body.error.code, "idempotency_key_reused");
  }
  assert.equal(await state(), stored);
  assert.equal((await server.call("GET", "/api/entities/Note/count")).body.count, 0);
  assertReplayOf(await server.call("POST", T, { body: { title: "a" }, headers }), first);
});

test("delete-many with the same key and another filter is 422", async () => {
  await createTasks({ title: "a" }, { title: "b" });
  const headers = { "Idempotency-Key": newKey() };
  const first = await server.call("DELETE", `${T}?q=${q({ title: "a" })}`, { headers });
  assert.equal(first.body.count, 1);
  const reused = await server.call("DELETE", `${T}?q=${q({ title: "b" })}`, { headers });
  assert.equal(reused.status, 422);
  assert.equal((await server.call("GET", `${T}/count`)).body.count, 1, "b is still there");
});

test("keys are scoped to the API key: the same key under another API key is independent", async () => {
  const idempotencyKey = newKey();
  const headers = { "Idempotency-Key": idempotencyKey };
  const bySecret = await server.call("POST", T, { body: { title: "same" }, headers });
  const byOther = await server.call("POST", T, { body: { title: "same" }, headers, apiKey: OTHER_SECRET });
  const byPublishable = await server.call("POST", T, { body: { title: "same" }, headers, apiKey: PUBLISHABLE });
  for (const answer of [bySecret, byOther, byPublishable]) {
    assert.equal(answer.status, 201);
    assert.equal(answer.headers.get("idempotent-replayed"), null);
  }
  assert.equal(new Set([bySecret.body.id, byOther.body.id, byPublishable.body.id]).size, 3);
  // Another API key may even send another body under the same key.
  const otherBody = await server.call("POST", T, { body: { title: "different" }, headers, apiKey: OTHER_SECRET });
  assert.equal(otherBody.status, 422, "but within one API key the key stays bound to its first request");
  assertReplayOf(await server.call("POST", T, { body: { title: "same" }, headers }), bySecret);
  assertReplayOf(await server.call("POST", T, { body: { title: "same" }, headers, apiKey: OTHER_SECRET }), byOther);
  assertReplayOf(await server.call("POST", T, { body: { title: "same" }, headers, apiKey: PUBLISHABLE }), byPublishable);
  assert.equal((await server.call("GET", `${T}/count`)).body.count, 3);
});

test("a publishable key's replay has no created_by_id", async () => {
  const headers = { "Idempotency-Key": newKey() };
  const first = await server.call("POST", T, { body: { title: "public" }, headers, apiKey: PUBLISHABLE });
  assert.equal(first.status, 201);
  assert.equal("created_by_id" in first.body, false);
  const replay = await server.call("POST", T, { body: { title: "public" }, headers, apiKey: PUBLISHABLE });
  assertReplayOf(replay, first);
  assert.equal("created_by_id" in replay.body, false);
  assert.equal(replay.text.includes("created_by_id"), false);

  const bulkHeaders = { "Idempotency-Key": newKey() };
  const bulk = await server.call("POST", `${T}/bulk`, { body: [{ title: "x" }], headers: bulkHeaders, apiKey: PUBLISHABLE });
  const bulkReplay = await server.call("POST", `${T}/bulk`, { body: [{ title: "x" }], headers: bulkHeaders, apiKey: PUBLISHABLE });
  assertReplayOf(bulkReplay, bulk);
  assert.equal(bulkReplay.text.includes("created_by_id"), false);
});

test("20 parallel retries of one create with one key create exactly one record", async () => {
  const headers = { "Idempotency-Key": newKey() };
  const answers = await Promise.all(Array.from({ length: 20 }, () => server.call("POST", T, { body: { title: "racing" }, headers })));
  assertOneCreated(answers);
  assert.equal((await server.call("GET", `${T}/count`)).body.count, 1);
});

/** Exactly one answer did the work; every other one replays it or says the key is in use. */
function assertOneCreated(answers: Answer[]): Answer {
  const fresh = answers.filter((answer) => answer.status === 201 && answer.headers.get("idempotent-replayed") === null);
  assert.equal(fresh.length, 1, `statuses: ${answers.map((a) => `${a.status}${a.headers.get("idempotent-replayed") ? "r" : ""}`).join(",")}`);
  const first = fresh[0]!;
  for (const answer of answers) {
    if (answer === first) continue;
    if (answer.status === 409) assert.equal(answer.body.error.code, "idempotency_key_in_use");
    else assertReplayOf(answer, first);
  }
  return first;
}

test("errors are not stored: a refused request retried with a fixed body and the same key succeeds", async () => {
  const headers = { "Idempotency-Key": newKey() };
  const refused = await server.call("POST", T, { body: { priority: 1 }, headers });
  assert.equal(refused.status, 400);
  assert.equal(refused.body.error.code, "invalid_field");
  const again = await server.call("POST", T, { body: { priority: 1 }, headers });
  assert.equal(again.status, 400, "a refusal is not replayed: the request is simply tried again");
  assert.equal(again.headers.get("idempotent-replayed"), null);
  const fixed = await server.call("POST", T, { body: { title: "fixed", priority: 1 }, headers });
  assert.equal(fixed.status, 201);
  assert.equal(fixed.headers.get("idempotent-replayed"), null);
  assertReplayOf(await server.call("POST", T, { body: { title: "fixed", priority: 1 }, headers }), fixed);
  assert.equal((await server.call("GET", `${T}/count`)).body.count, 1);
});

test("errors are not stored: a 412 or 404 retried once the condition holds succeeds", async () => {
  const [a] = await createTasks({ title: "a" });
  const headers = { "Idempotency-Key": newKey() };
  const stale = await server.call("PATCH", `${T}/${a.id}`, { body: { priority: 1 }, headers: { ...headers, "If-Match": `"stale"` } });
  assert.equal(stale.status, 412);
  const current = (await server.call("GET", `${T}/${a.id}`)).headers.get("etag")!;
  const updated = await server.call("PATCH", `${T}/${a.id}`, { body: { priority: 1 }, headers: { ...headers, "If-Match": current } });
  assert.equal(updated.status, 200);
  assert.equal(updated.headers.get("idempotent-replayed"), null);

  await server.call("DELETE", `${T}/${a.id}`);
  const restoreHeaders = { "Idempotency-Key": newKey() };
  const early = await server.call("PUT", `${T}/ffffffffffffffffffffffff/restore`, { headers: restoreHeaders });
  assert.equal(early.status, 404);
  const restored = await server.call("PUT", `${T}/${a.id}/restore`, { headers: restoreHeaders });
  assert.equal(restored.status, 200, "a 404 under the key left it free for another request");
  assert.equal(restored.body.restored, true);
});

test("a forbidden request is not stored", async () => {
  const headers = { "Idempotency-Key": newKey() };
  await createTasks({ title: "a" });
  const forbidden = await server.call("PATCH", `${T}/update-many`, { body: { q: { title: "a" }, set: { done: true } }, headers, apiKey: PUBLISHABLE });
  assert.equal(forbidden.status, 403);
  const again = await server.call("PATCH", `${T}/update-many`, { body: { q: { title: "a" }, set: { done: true } }, headers, apiKey: PUBLISHABLE });
  assert.equal(again.status, 403);
  assert.equal(again.headers.get("idempotent-replayed"), null);
});

test("an Idempotency-Key longer than 255 characters is invalid_parameter", async () => {
  const refused = await server.call("POST", T, { body: { title: "a" }, headers: { "Idempotency-Key": "k".repeat(256) } });
  assert.equal(refused.status, 400);
  assert.equal(refused.body.error.code, "invalid_parameter");
  assert.equal(refused.body.error.details.parameter, "Idempotency-Key");
  assert.equal((await server.call("GET", `${T}/count`)).body.count, 0);
  const longest = await server.call("POST", T, { body: { title: "a" }, headers: { "Idempotency-Key": "k".repeat(255) } });
  assert.equal(longest.status, 201);
});

test("an Idempotency-Key on a read is ignored", async () => {
  const [a] = await createTasks({ title: "a" });
  const headers = { "Idempotency-Key": newKey() };
  for (let i = 0; i < 2; i++) {
    const read = await server.call("GET", `${T}/${a.id}`, { headers });
    assert.equal(read.status, 200);
    assert.equal(read.headers.get("idempotent-replayed"), null);
  }
});

test("answers expire after 24 hours: a retry then does the work again", async (t) => {
  const start = Date.now();
  let now = start;
  t.mock.method(Date, "now", () => now);
  const headers = { "Idempotency-Key": newKey() };
  const first = await server.call("POST", T, { body: { title: "daily" }, headers });
  assert.equal(first.status, 201);
  now = start + IDEMPOTENCY_TTL_MS - 1;
  assertReplayOf(await server.call("POST", T, { body: { title: "daily" }, headers }), first);
  now = start + IDEMPOTENCY_TTL_MS + 1;
  const later = await server.call("POST", T, { body: { title: "daily" }, headers });
  assert.equal(later.status, 201);
  assert.equal(later.headers.get("idempotent-replayed"), null);
  assert.notEqual(later.body.id, first.body.id);
  assertReplayOf(await server.call("POST", T, { body: { title: "daily" }, headers }), later);
  // Once expired, the key may also be bound to another request.
  now = start + 2 * IDEMPOTENCY_TTL_MS + 2;
  const other = await server.call("POST", T, { body: { title: "another" }, headers });
  assert.equal(other.status, 201);
  assert.equal((await server.call("GET", `${T}/count`)).body.count, 3);
});

// --- the store's side ---

function answer(scope: string, expiresAt: number): IdempotentAnswer {
  return { scope, fingerprint: "POST /api/entities/Task x", status: 201, headers: {}, body: "{}", expiresAt };
}

test("the store finds an answer for 24 hours and not a millisecond longer", async () => {
  const store = new MemoryStore(new Map());
  const now = Date.now();
  await store.commit({ puts: [], answer: answer("key_a\nk1", now + IDEMPOTENCY_TTL_MS) });
  assert.equal(store.findAnswer("key_a\nk1", now)?.status, 201);
  assert.equal(store.findAnswer("key_a\nk1", now + IDEMPOTENCY_TTL_MS - 1)?.status, 201);
  assert.equal(store.findAnswer("key_a\nk1", now + IDEMPOTENCY_TTL_MS + 1), undefined);
  assert.equal(store.findAnswer("key_b\nk1", now), undefined, "another API key's scope holds nothing");
});

test("expired answers are dropped from memory", async () => {
  const start = Date.now();
  let now = start;
  const clock = mock.method(Date, "now", () => now);
  try {
    const store = new MemoryStore(new Map());
    await store.commit({ puts: [], answer: answer("s\nold", start + IDEMPOTENCY_TTL_MS) });
    now = start + 1000;
    await store.commit({ puts: [], answer: answer("s\nnewer", now + IDEMPOTENCY_TTL_MS) });
    now = start + IDEMPOTENCY_TTL_MS + 1;
    await store.commit({ puts: [] });
    // Asked as of an earlier time, a kept answer would still be found: only a dropped one is not.
    assert.equal(store.findAnswer("s\nold", start), undefined, "the expired answer is gone from memory");
    assert.equal(store.findAnswer("s\nnewer", start)?.status, 201, "an answer not yet expired is kept");
    now = start + 1000 + IDEMPOTENCY_TTL_MS + 1;
    await store.commit({ puts: [] });
    assert.equal(store.findAnswer("s\nnewer", start), undefined);
  } finally {
    clock.mock.restore();
  }
});

// --- the file store ---

test("a stored answer survives a restart of the file store, and parallel retries create one record", async () => {
  const dir = await mkdtemp(join(tmpdir(), "tabula-idempotency-"));
  const options = { memory: false, data: dir, warn: () => {} };
  try {
    let fileServer = await startTestServer(options);
    const headers = { "Idempotency-Key": newKey() };
    const first = await fileServer.call("POST", T, { body: { title: "durable" }, headers });
    assert.equal(first.status, 201);
    const racingHeaders = { "Idempotency-Key": newKey() };
    const racing = await Promise.all(Array.from({ length: 20 }, () => fileServer.call("POST", T, { body: { title: "racing" }, headers: racingHeaders })));
    const racingFirst = assertOneCreated(racing);
    await fileServer.close();

    fileServer = await startTestServer(options);
    try {
      assertReplayOf(await fileServer.call("POST", T, { body: { title: "durable" }, headers }), first);
      assertReplayOf(await fileServer.call("POST", T, { body: { title: "racing" }, headers: racingHeaders }), racingFirst);
      const reused = await fileServer.call("POST", T, { body: { title: "other" }, headers });
      assert.equal(reused.status, 422);
      assert.equal((await fileServer.call("GET", `${T}/count`)).body.count, 2);
    } finally {
      await fileServer.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});


test("an answer stored with its own Content-Type (as earlier builds stored them) is replayed with one", async () => {
  const dir = await mkdtemp(join(tmpdir(), "tabula-idempotency-"));
  const options = { memory: false, data: dir, warn: () => {} };
  try {
    const first = await startTestServer(options);
    const caller = first.keys.authenticate(SECRET);
    await first.close();
    const body = JSON.stringify({ title: "stored earlier" });
    // The body's hash as earlier builds took it: stored answers hold it, so it must not change.
    const request = idempotentRequest(caller, "legacy-key", "POST", T, createHash("sha256").update(body).digest("base64url"));
    const store = await FileStore.open({ dir, valueIndexed: new Map(), warn: () => {} });
    const headers = { "Content-Type": "application/json; charset=utf-8", ETag: '"7"', Location: `${T}/legacy` };
    await store.commit({ puts: [], answer: { ...request, status: 201, headers, body: '{"id":"legacy"}', expiresAt: Date.now() + IDEMPOTENCY_TTL_MS } });
    await store.close();

    const server = await startTestServer(options);
    try {
      const replay = await server.call("POST", T, { body, headers: { "Idempotency-Key": "legacy-key" } });
      assert.equal(replay.status, 201);
      assert.equal(replay.headers.get("idempotent-replayed"), "true");
      assert.equal(replay.headers.get("content-type"), "application/json; charset=utf-8", "named once, not twice");
      assert.equal(replay.headers.get("etag"), '"7"');
      assert.equal(replay.text, '{"id":"legacy"}');
    } finally {
      await server.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
