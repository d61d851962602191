// ETags and conditional requests over HTTP (docs/api.md, issue 5): a strong ETag on
// every single-record answer that changes on every write, If-None-Match on reads, If-Match on
// update and delete, and racing conditional updates.

import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import { PUBLISHABLE, startTestServer, type Answer, type TestServer } from "../support/server.ts";

let server: TestServer;
before(async () => (server = await startTestServer()));
beforeEach(() => server.reset());
after(() => server.close());

const T = "/api/entities/Task";

function etagOf(answer: Answer): string {
  const etag = answer.headers.get("etag");
  assert.ok(etag, `no ETag on a ${answer.status} answer`);
  assert.match(etag, /^"[^"]+"$/, "a strong, quoted ETag");
  return etag;
}

async function createTask(body: object = { title: "t" }): Promise<{ id: string; etag: string }> {
  const created = await server.call("POST", T, { body });
  assert.equal(created.status, 201);
  return { id: created.body.id, etag: etagOf(created) };
}

async function read(id: string, headers: Record<string, string> = {}): Promise<Answer> {
  return server.call("GET", `${T}/${id}`, { headers });
}

test("create, read, update and restore answer with the record's current ETag", async () => {
  const created = await server.call("POST", T, { body: { title: "t" } });
  const etag = etagOf(created);
  const readBack = await read(created.body.id);
  assert.equal(etagOf(readBack), etag);
  assert.equal(etagOf(await read(created.body.id, {})), etag, "reading does not change the ETag");
  const readPublic = await server.call("GET", `${T}/${created.body.id}`, { apiKey: PUBLISHABLE });
  assert.equal(etagOf(readPublic), etag, "the ETag is the record's, whichever key reads it");

  const updated = await server.call("PATCH", `${T}/${created.body.id}`, { body: { priority: 1 } });
  assert.equal(updated.status, 200);
  assert.equal(etagOf(await read(created.body.id)), etagOf(updated));

  assert.equal((await server.call("DELETE", `${T}/${created.body.id}`)).status, 200);
  const restored = await server.call("PUT", `${T}/${created.body.id}/restore`);
  assert.equal(restored.status, 200);
  assert.equal(restored.body.restored, true);
  assert.equal(etagOf(await read(created.body.id)), etagOf(restored));
});

test("the ETag changes on every write of the record: update, PUT, delete and restore", async () => {
  const { id, etag } = await createTask();
  const seen = [etag];
  const expectNew = (tag: string) => {
    assert.equal(seen.includes(tag), false, `ETag ${tag} was already used`);
    seen.push(tag);
  };
  const patched = await server.call("PATCH", `${T}/${id}`, { body: { priority: 1 } });
  expectNew(etagOf(patched));
  const put = await server.call("PUT", `${T}/${id}`, { body: { status: "done" } });
  expectNew(etagOf(put));
  const same = await server.call("PATCH", `${T}/${id}`, { body: { status: "done" } });
  expectNew(etagOf(same)); // a write with the same values is still a write
  const deleted = await server.call("DELETE", `${T}/${id}`);
  assert.equal(deleted.status, 200);
  assert.deepEqual(deleted.body, { id, deleted: true });
  expectNew(etagOf(deleted));
  const restored = await server.call("PUT", `${T}/${id}/restore`);
  expectNew(etagOf(restored));
  expectNew(etagOf(await server.call("PATCH", `${T}/${id}`, { body: { priority: 2 } })));
});

test("restoring a live record writes nothing and keeps its ETag", async () => {
  const { id, etag } = await createTask();
  const restored = await server.call("PUT", `${T}/${id}/restore`);
  assert.equal(restored.status, 200);
  assert.equal(restored.body.restored, false);
  assert.equal(etagOf(restored), etag);
  assert.equal(etagOf(await read(id)), etag);
});

test("ETags of different records differ", async () => {
  const a = await createTask({ title: "a" });
  const b = await createTask({ title: "a" });
  assert.notEqual(a.etag, b.etag);
});

test("If-None-Match with the current ETag answers 304 with no body", async () => {
  const { id, etag } = await createTask();
  const cases: string[] = [etag, `"nope", ${etag}`, `${etag},"other"`, `  ${etag}  `, "*", `W/${etag}`];
  for (const header of cases) {
    const notModified = await read(id, { "If-None-Match": header });
    assert.equal(notModified.status, 304, `If-None-Match: ${header}`);
    assert.equal(notModified.text, "", "a 304 has no body");
    assert.equal(notModified.headers.get("etag"), etag);
  }
});

test("If-None-Match with another ETag answers 200 with the record", async () => {
  const { id, etag } = await createTask();
  const updated = await server.call("PATCH", `${T}/${id}`, { body: { priority: 3 } });
  const fresh = etagOf(updated);
  for (const header of [etag, `"nope"`, `"nope", ${etag}`, `W/${etag}`]) {
    const changed = await read(id, { "If-None-Match": header });
    assert.equal(changed.status, 200, `If-None-Match: ${header}`);
    assert.equal(changed.body.priority, 3);
    assert.equal(etagOf(changed), fresh);
  }
  assert.equal((await read(id, { "If-None-Match": fresh })).status, 304);
});

test("If-None-Match on a deleted record answers 404", async () => {
  const { id, etag } = await createTask();
  await server.call("DELETE", `${T}/${id}`);
  for (const header of [etag, "*"]) {
    const gone = await read(id, { "If-None-Match": header });
    assert.equal(gone.status, 404);
    assert.equal(gone.body.error.code, "record_not_found");
  }
});

test("If-Match on an update: the current ETag or * succeeds, a stale one is 412 and changes nothing", async () => {
  const { id, etag } = await createTask();
  const first = await server.call("PATCH", `${T}/${id}`, { body: { priority: 1 }, headers: { "If-Match": etag } });
  assert.equal(first.status, 200);
  const current = etagOf(first);

  for (const header of [etag, `W/${current}`, `"nope"`, `"nope", ${etag}`]) {
    const stale = await server.call("PATCH", `${T}/${id}`, { body: { priority: 99 }, headers: { "If-Match": header } });
    assert.equal(stale.status, 412, `If-Match: ${header}`);
    assert.equal(stale.body.error.code, "precondition_failed");
    assert.equal(stale.body.error.details.etag, current);
    assert.equal(stale.headers.get("etag"), null, "a refusal carries no record ETag");
  }
  const unchanged = await read(id);
  assert.equal(unchanged.body.priority, 1);
  assert.equal(etagOf(unchanged), current);

  const put = await server.call("PUT", `${T}/${id}`, { body: { priority: 2 }, headers: { "If-Match": `"nope", ${current}` } });
  assert.equal(put.status, 200, "one tag of a list matching is enough");
  const star = await server.call("PATCH", `${T}/${id}`, { body: { priority: 3 }, headers: { "If-Match": "*" } });
  assert.equal(star.status, 200);
  assert.equal((await read(id)).body.priority, 3);
});

test("If-Match on a delete: a stale ETag is 412 and the record stays; the current one deletes", async () => {
  const { id, etag } = await createTask();
  const current = etagOf(await server.call("PATCH", `${T}/${id}`, { body: { priority: 1 } }));
  const stale = await server.call("DELETE", `${T}/${id}`, { headers: { "If-Match": etag } });
  assert.equal(stale.status, 412);
  assert.equal(stale.body.error.code, "precondition_failed");
  assert.equal((await read(id)).status, 200);
  const deleted = await server.call("DELETE", `${T}/${id}`, { headers: { "If-Match": current } });
  assert.equal(deleted.status, 200);
  assert.equal((await read(id)).status, 404);
});

test("If-Match: * deletes any live record", async () => {
  const { id } = await createTask();
  const deleted = await server.call("DELETE", `${T}/${id}`, { headers: { "If-Match": "*" } });
  assert.equal(deleted.status, 200);
  assert.equal((await read(id)).status, 404);
});

test("If-Match on a deleted record answers 404, whatever the tag", async () => {
  const { id, etag } = await createTask();
  const deleted = await server.call("DELETE", `${T}/${id}`);
  const last = etagOf(deleted);
  for (const header of ["*", etag, last]) {
    const update = await server.call("PATCH", `${T}/${id}`, { body: { priority: 1 }, headers: { "If-Match": header } });
    assert.equal(update.status, 404, `PATCH If-Match: ${header}`);
    assert.equal(update.body.error.code, "record_not_found");
    const remove = await server.call("DELETE", `${T}/${id}`, { headers: { "If-Match": header } });
    assert.equal(remove.status, 404, `DELETE If-Match: ${header}`);
  }
  assert.equal((await server.call("GET", `${T}?deleted=only`)).body[0].priority, undefined);
});

test("If-Match on an unknown record answers 404", async () => {
  const update = await server.call("PATCH", `${T}/ffffffffffffffffffffffff`, { body: { priority: 1 }, headers: { "If-Match": "*" } });
  assert.equal(update.status, 404);
});

test("50 concurrent PATCHes carrying the same ETag: exactly one succeeds, 49 are 412", async () => {
  const { id, etag } = await createTask();
  const answers = await Promise.all(
    Array.from({ length: 50 }, (_, i) => server.call("PATCH", `${T}/${id}`, { body: { priority: i }, headers: { "If-Match": etag } })),
  );
  const statuses = answers.map((answer) => answer.status);
  assert.equal(statuses.filter((s) => s === 200).length, 1, `statuses: ${statuses.join(",")}`);
  assert.equal(statuses.filter((s) => s === 412).length, 49);
  for (const answer of answers) if (answer.status === 412) assert.equal(answer.body.error.code, "precondition_failed");
  const winner = answers.find((answer) => answer.status === 200)!;
  const final = await read(id);
  assert.equal(final.body.priority, winner.body.priority, "the record holds the one successful change");
  assert.equal(etagOf(final), etagOf(winner));
});

test("concurrent conditional DELETEs: exactly one succeeds", async () => {
  const { id, etag } = await createTask();
  const answers = await Promise.all(Array.from({ length: 20 }, () => server.call("DELETE", `${T}/${id}`, { headers: { "If-Match": etag } })));
  const statuses = answers.map((answer) => answer.status);
  assert.equal(statuses.filter((s) => s === 200).length, 1, `statuses: ${statuses.join(",")}`);
  assert.ok(statuses.every((s) => s === 200 || s === 404 || s === 412), `statuses: ${statuses.join(",")}`);
});
