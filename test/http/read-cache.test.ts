// Reads by id answer from views cached by id (records/read-cache.ts), which the memory and file
// stores drop whenever the record changes. Every kind of write is read back twice with each kind
// of key (the second read of each is the cached view on those stores) and must show the write:
// a view left behind after a write would answer the version before it.

import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import { PUBLISHABLE, SECRET, startTestServer, type Answer, type TestServer } from "../support/server.ts";

let server: TestServer;
before(async () => (server = await startTestServer()));
beforeEach(() => server.reset());
after(() => server.close());

const T = "/api/entities/Task";
const SDK = "/api/apps/app1/entities/Task";

/** The record as each kind of key reads it, read twice each and through both prefixes: all must agree. */
async function readBack(id: string): Promise<{ status: number; secret: any; publishable: any; etag: string | null }> {
  const answers: Array<{ apiKey: string; answer: Answer }> = [];
  for (const apiKey of [SECRET, PUBLISHABLE]) {
    for (const prefix of [T, SDK, T]) answers.push({ apiKey, answer: await server.call("GET", `${prefix}/${id}`, { apiKey }) });
  }
  const [first] = answers;
  for (const { apiKey, answer } of answers) {
    assert.equal(answer.status, first!.answer.status, `${apiKey}: ${answer.text}`);
    assert.equal(answer.headers.get("etag"), first!.answer.headers.get("etag"));
    assert.equal(answer.headers.get("content-length"), String(Buffer.byteLength(answer.text)));
  }
  for (const kind of [SECRET, PUBLISHABLE]) {
    const texts = answers.filter(({ apiKey }) => apiKey === kind).map(({ answer }) => answer.text);
    assert.deepEqual(new Set(texts).size, 1, `${kind} read different texts: ${texts.join(" / ")}`);
  }
  const secret = answers[0]!.answer;
  const publishable = answers[3]!.answer;
  return { status: secret.status, secret: secret.body, publishable: publishable.body, etag: secret.headers.get("etag") };
}

test("a record read by id shows every write to it at once, to both kinds of key, through both prefixes", async () => {
  const created = await server.call("POST", T, { body: { title: "first", priority: 1 } });
  assert.equal(created.status, 201);
  const id = created.body.id;
  let seen = await readBack(id);
  assert.equal(seen.status, 200);
  assert.deepEqual(seen.secret, created.body);
  assert.equal(seen.etag, created.headers.get("etag"));
  assert.equal(typeof seen.secret.created_by_id, "string", "a secret key sees created_by_id");
  assert.equal("created_by_id" in seen.publishable, false, "a publishable key does not");

  /** Each write, then what a read must show after it. */
  const writes: Array<[string, () => Promise<unknown>, (record: any) => void]> = [
    ["PATCH", () => server.call("PATCH", `${T}/${id}`, { body: { priority: 2 } }), (r) => assert.equal(r.priority, 2)],
    ["PUT", () => server.call("PUT", `${T}/${id}`, { body: { title: "put" } }), (r) => assert.equal(r.title, "put")],
    ["PUT /bulk", () => server.call("PUT", `${T}/bulk`, { body: [{ id, priority: 3 }] }), (r) => assert.equal(r.priority, 3)],
    ["update-many", () => server.call("PATCH", `${T}/update-many`, { body: { q: { title: "put" }, set: { priority: 4 } } }), (r) => assert.equal(r.priority, 4)],
    ["upsert", () => server.call("POST", `${T}/upsert`, { body: { match: ["title"], records: [{ title: "put", priority: 5 }] } }), (r) => assert.equal(r.priority, 5)],
    ["SDK PUT", () => server.call("PUT", `${SDK}/${id}`, { body: { priority: 6 } }), (r) => assert.equal(r.priority, 6)],
  ];
  for (const [name, write, check] of writes) {
    const before = seen.etag;
    const answer = (await write()) as { status: number; text: string };
    assert.equal(answer.status, 200, `${name}: ${answer.text}`);
    seen = await readBack(id);
    assert.equal(seen.status, 200, name);
    check(seen.secret);
    check(seen.publishable);
    assert.notEqual(seen.etag, before, `${name} changed the ETag`);
  }

  assert.equal((await server.call("DELETE", `${T}/${id}`)).status, 200);
  assert.equal((await readBack(id)).status, 404, "deleted");
  const restored = await server.call("PUT", `${T}/${id}/restore`);
  assert.equal(restored.status, 200);
  seen = await readBack(id);
  assert.equal(seen.status, 200, "restored");
  assert.equal(seen.secret.priority, 6);
  assert.equal(seen.etag, restored.headers.get("etag"));
  assert.equal((await server.call("DELETE", `${T}?q=${encodeURIComponent(JSON.stringify({ title: "put" }))}`)).status, 200);
  assert.equal((await readBack(id)).status, 404, "deleted by delete-many");
});

test("If-None-Match on a cached read answers 304 until the record changes", async () => {
  const created = await server.call("POST", T, { body: { title: "t" } });
  const etag = created.headers.get("etag")!;
  for (let i = 0; i < 3; i++) {
    const unchanged = await server.call("GET", `${T}/${created.body.id}`, { headers: { "If-None-Match": etag } });
    assert.equal(unchanged.status, 304);
    assert.equal(unchanged.headers.get("etag"), etag);
  }
  await server.call("PATCH", `${T}/${created.body.id}`, { body: { priority: 1 } });
  const changed = await server.call("GET", `${T}/${created.body.id}`, { headers: { "If-None-Match": etag } });
  assert.equal(changed.status, 200);
  assert.equal(changed.body.priority, 1);
  assert.notEqual(changed.headers.get("etag"), etag);
});

test("a record read before a reset is not found after it, and a new record under a reused id is not confused with it", async () => {
  const created = await server.call("POST", `${T}/import`, { body: [{ id: "fixed-id", title: "before", created_date: "2026-01-01T00:00:00.000Z" }] });
  assert.equal(created.status, 201, created.text);
  assert.equal((await readBack("fixed-id")).secret.title, "before");
  await server.reset();
  assert.equal((await readBack("fixed-id")).status, 404);
  await server.call("POST", `${T}/import`, { body: [{ id: "fixed-id", title: "after", created_date: "2026-01-01T00:00:00.000Z" }] });
  const seen = await readBack("fixed-id");
  assert.equal(seen.status, 200);
  assert.equal(seen.secret.title, "after");
});

test("thousands of records read twice each answer their own JSON and byte length, as the cache grows past its first slots", async () => {
  const records = Array.from({ length: 1500 }, (_, i) => ({ title: i % 3 === 0 ? `ΟΔΟΣ ${i}` : `road ${i}`, priority: i }));
  const created = await server.call("POST", `${T}/bulk`, { body: records });
  assert.equal(created.status, 201, created.text);
  const ids: string[] = created.body.map((record: { id: string }) => record.id);
  for (const round of ["uncached", "cached"]) {
    for (let at = 0; at < ids.length; at += 100) {
      const answers = await Promise.all(ids.slice(at, at + 100).map((id) => server.call("GET", `${T}/${id}`)));
      answers.forEach((answer, i) => {
        const n = at + i;
        assert.equal(answer.status, 200, `${round} read of record ${n}: ${answer.text}`);
        assert.equal(answer.body.id, ids[n]);
        assert.equal(answer.body.priority, n, `${round} read of record ${n} answered another record`);
        assert.equal(answer.body.title, records[n]!.title);
        assert.equal(answer.headers.get("content-length"), String(Buffer.byteLength(answer.text)), `${round}: bytes, not characters`);
      });
    }
  }
});
