// Batch writes over HTTP (docs/api.md, issue 4): bulk create and update, upsert,
// update-many and delete-many. Every refused batch is followed by a check that nothing was stored.

import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import { PUBLISHABLE, q, startTestServer, type TestServer } from "../support/server.ts";

let server: TestServer;
before(async () => (server = await startTestServer()));
beforeEach(() => server.reset());
after(() => server.close());

const T = "/api/entities/Task";

/** Every stored record, live and deleted, as text: equal snapshots mean nothing was written. */
async function snapshot(): Promise<string> {
  const all = await server.call("GET", `${T}?deleted=include&sort_by=id&limit=5000`);
  assert.equal(all.status, 200);
  return all.text;
}

async function liveCount(): Promise<number> {
  const counted = await server.call("GET", `${T}/count`);
  assert.equal(counted.status, 200);
  return counted.body.count;
}

async function createTasks(...records: object[]): Promise<any[]> {
  const created = await server.call("POST", `${T}/bulk`, { body: records });
  assert.equal(created.status, 201, created.text);
  return created.body;
}

/** Sends a write that must be refused, and checks the refusal and that the stored state is unchanged. */
async function assertRefused(method: string, path: string, body: unknown, status: number, code: string, details: Record<string, unknown> = {}) {
  const stored = await snapshot();
  const refused = await server.call(method, path, { body });
  assert.equal(refused.status, status, refused.text);
  assert.equal(refused.body.error.code, code, refused.text);
  for (const [name, value] of Object.entries(details)) assert.deepEqual(refused.body.error.details[name], value, refused.text);
  assert.equal(await snapshot(), stored, "a refused batch must store nothing");
  return refused.body.error;
}

// --- POST /bulk ---

test("bulk create answers 201 with the created records in request order", async () => {
  const titles = ["one", "two", "three", "four", "five"];
  const created = await server.call("POST", `${T}/bulk`, { body: titles.map((title, i) => ({ title, priority: i })) });
  assert.equal(created.status, 201);
  assert.deepEqual(created.body.map((r: any) => r.title), titles);
  assert.deepEqual(created.body.map((r: any) => r.priority), [0, 1, 2, 3, 4]);
  for (const record of created.body) {
    assert.match(record.id, /^[0-9a-f]{24}$/);
    assert.equal(record.status, "todo", "defaults apply to each record");
    assert.equal(typeof record.created_by_id, "string");
    const read = await server.call("GET", `${T}/${record.id}`);
    assert.deepEqual(read.body, record);
  }
  const ids = created.body.map((r: any) => r.id);
  assert.deepEqual([...ids].sort(), ids, "ids are time-ordered in request order");
  assert.equal(new Set(ids).size, 5);
  assert.equal(await liveCount(), 5);
});

test("bulk create, bulk update and upsert with a publishable key answer without created_by_id", async () => {
  const created = await server.call("POST", `${T}/bulk`, { body: [{ title: "a" }, { title: "b" }], apiKey: PUBLISHABLE });
  assert.equal(created.status, 201);
  const updated = await server.call("PUT", `${T}/bulk`, { body: [{ id: created.body[0].id, priority: 1 }], apiKey: PUBLISHABLE });
  assert.equal(updated.status, 200);
  const upserted = await server.call("POST", `${T}/upsert`, { body: { match: ["title"], records: [{ title: "b", priority: 2 }, { title: "c" }] }, apiKey: PUBLISHABLE });
  assert.equal(upserted.status, 200);
  for (const answer of [created, updated, upserted]) assert.equal(answer.text.includes("created_by_id"), false, answer.text);
  const bySecret = await server.call("GET", `${T}/${created.body[0].id}`);
  assert.equal(typeof bySecret.body.created_by_id, "string", "the field is stored, only hidden");
});

test("bulk create of an empty array stores nothing", async () => {
  const created = await server.call("POST", `${T}/bulk`, { body: [] });
  assert.equal(created.status, 201);
  assert.deepEqual(created.body, []);
  assert.equal(await liveCount(), 0);
});

test("one invalid record refuses the whole bulk create, naming its index, and nothing is stored", async () => {
  await createTasks({ title: "already here" });
  const cases: Array<[unknown[], string, Record<string, unknown>]> = [
    [[{ title: "a" }, { title: "b" }, { title: "c", priority: "high" }], "invalid_field", { index: 2, field: "priority" }],
    [[{ title: "a" }, { priority: 1 }], "invalid_field", { index: 1, field: "title" }],
    [[{ title: "a", status: "nope" }, { title: "b" }], "invalid_field", { index: 0, field: "status" }],
    [[{ title: "a" }, { title: "b", colour: "red" }], "unknown_field", { index: 1, field: "colour" }],
    [[{ title: "a" }, { title: "b" }, { title: "c" }, { title: "d", id: "x" }], "read_only_field", { index: 3, field: "id" }],
    [[{ title: "a" }, { title: "b", created_by_id: "me" }], "read_only_field", { index: 1 }],
    [[{ title: "a" }, 7], "invalid_json", { index: 1 }],
    [[{ title: "a" }, null], "invalid_json", { index: 1 }],
  ];
  for (const [body, code, details] of cases) await assertRefused("POST", `${T}/bulk`, body, 400, code, details);
  assert.equal(await liveCount(), 1);
});

test("a bulk create body that is not an array is invalid_json", async () => {
  for (const body of [{ title: "a" }, "text", 3, null, { records: [{ title: "a" }] }]) {
    await assertRefused("POST", `${T}/bulk`, body, 400, "invalid_json");
  }
  await assertRefused("POST", `${T}/bulk`, "[{", 400, "invalid_json");
});

// --- PUT /bulk ---

test("bulk update answers 200 with the updated records in request order, merging each change", async () => {
  const [a, b, c] = await createTasks({ title: "a", priority: 1 }, { title: "b", priority: 2 }, { title: "c", priority: 3 });
  const updated = await server.call("PUT", `${T}/bulk`, {
    body: [
      { id: c.id, status: "done" },
      { id: a.id, priority: 10 },
      { id: b.id, title: "B", priority: null },
    ],
  });
  assert.equal(updated.status, 200, updated.text);
  assert.deepEqual(updated.body.map((r: any) => r.id), [c.id, a.id, b.id]);
  assert.deepEqual(
    updated.body.map((r: any) => [r.title, r.priority, r.status]),
    [
      ["c", 3, "done"],
      ["a", 10, "todo"],
      ["B", undefined, "todo"],
    ],
  );
  for (const record of updated.body) {
    const read = await server.call("GET", `${T}/${record.id}`);
    assert.deepEqual(read.body, record);
    assert.equal(record.created_date, [a, b, c].find((r) => r.id === record.id).created_date);
  }
});

test("bulk update naming one id twice applies both changes in order", async () => {
  const [a] = await createTasks({ title: "a", priority: 1 });
  const updated = await server.call("PUT", `${T}/bulk`, { body: [{ id: a.id, priority: 2, status: "doing" }, { id: a.id, priority: 3 }] });
  assert.equal(updated.status, 200);
  assert.deepEqual(updated.body.map((r: any) => [r.priority, r.status]), [[2, "doing"], [3, "doing"]]);
  const read = await server.call("GET", `${T}/${a.id}`);
  assert.equal(read.body.priority, 3);
  assert.equal(read.body.status, "doing");
});

test("bulk update is all or nothing: an unknown id, a deleted record or an invalid change refuses the batch", async () => {
  const [a, b, gone] = await createTasks({ title: "a" }, { title: "b" }, { title: "gone" });
  assert.equal((await server.call("DELETE", `${T}/${gone.id}`)).status, 200);
  const cases: Array<[unknown, number, string, Record<string, unknown>]> = [
    [[{ id: a.id, title: "A" }, { id: "ffffffffffffffffffffffff", title: "x" }], 404, "record_not_found", { index: 1 }],
    [[{ id: a.id, title: "A" }, { id: b.id, title: "B" }, { id: gone.id, title: "back" }], 404, "record_not_found", { index: 2 }],
    [[{ id: a.id, title: "A" }, { id: b.id, priority: 1.5 }], 400, "invalid_field", { index: 1, field: "priority" }],
    [[{ id: a.id, title: "A" }, { id: b.id, title: null }], 400, "invalid_field", { index: 1, field: "title" }],
    [[{ id: a.id, title: "A" }, { id: b.id, colour: "red" }], 400, "unknown_field", { index: 1 }],
    [[{ id: a.id, title: "A" }, { id: b.id, updated_date: "2020-01-01T00:00:00.000Z" }], 400, "read_only_field", { index: 1 }],
    [[{ id: a.id, title: "A" }, { title: "no id" }], 400, "invalid_json", { index: 1 }],
    [[{ id: a.id, title: "A" }, { id: 12, title: "number id" }], 400, "invalid_json", { index: 1 }],
    [[{ id: a.id, title: "A" }, "text"], 400, "invalid_json", { index: 1 }],
    [{ id: a.id, title: "A" }, 400, "invalid_json", {}],
  ];
  for (const [body, status, code, details] of cases) await assertRefused("PUT", `${T}/bulk`, body, status, code, details);
  assert.equal((await server.call("GET", `${T}/${a.id}`)).body.title, "a");
  assert.equal((await server.call("GET", `${T}/${gone.id}`)).status, 404, "a refused batch does not bring a deleted record back");
});

// --- POST /upsert ---

test("upsert creates unmatched records and merges into matched ones, marking each with created", async () => {
  const [existing] = await createTasks({ title: "keep", email: "ada@example.com", priority: 1, status: "doing" });
  const upserted = await server.call("POST", `${T}/upsert`, {
    body: {
      match: ["email"],
      records: [
        { title: "new one", email: "grace@example.com" },
        { email: "ada@example.com", priority: 5 },
      ],
    },
  });
  assert.equal(upserted.status, 200, upserted.text);
  const [created, updated] = upserted.body;
  assert.equal(created.created, true);
  assert.equal(created.title, "new one");
  assert.equal(created.status, "todo");
  assert.equal(updated.created, false);
  assert.equal(updated.id, existing.id);
  assert.deepEqual([updated.title, updated.priority, updated.status], ["keep", 5, "doing"], "an update merges");
  const readCreated = await server.call("GET", `${T}/${created.id}`);
  assert.equal(readCreated.status, 200);
  assert.equal("created" in readCreated.body, false, "created is part of the upsert answer, not of the record");
  assert.equal((await server.call("GET", `${T}/${existing.id}`)).body.priority, 5);
  assert.equal(await liveCount(), 2);
});

test("upsert matches on up to three fields together", async () => {
  await createTasks({ title: "x", priority: 1, status: "todo" }, { title: "x", priority: 2, status: "todo" });
  const upserted = await server.call("POST", `${T}/upsert`, {
    body: {
      match: ["title", "priority", "status"],
      records: [
        { title: "x", priority: 2, status: "todo", estimate: 1.5 },
        { title: "x", priority: 3, status: "todo" },
      ],
    },
  });
  assert.equal(upserted.status, 200, upserted.text);
  assert.deepEqual(upserted.body.map((r: any) => r.created), [false, true]);
  assert.equal(upserted.body[0].estimate, 1.5);
  assert.equal(await liveCount(), 3);
});

test("upsert compares match values as stored: a timestamp matches in any time zone", async () => {
  const [existing] = await createTasks({ title: "meeting", start_at: "2026-03-01T10:00:00.000Z" });
  const upserted = await server.call("POST", `${T}/upsert`, { body: { match: ["start_at"], records: [{ start_at: "2026-03-01T12:00:00+02:00", priority: 4 }] } });
  assert.equal(upserted.status, 200, upserted.text);
  assert.equal(upserted.body[0].created, false);
  assert.equal(upserted.body[0].id, existing.id);
  assert.equal(await liveCount(), 1);
});

test("upsert ignores deleted records when matching", async () => {
  const [gone] = await createTasks({ title: "gone", email: "a@example.com" });
  await server.call("DELETE", `${T}/${gone.id}`);
  const upserted = await server.call("POST", `${T}/upsert`, { body: { match: ["email"], records: [{ title: "fresh", email: "a@example.com" }] } });
  assert.equal(upserted.status, 200);
  assert.equal(upserted.body[0].created, true);
  assert.notEqual(upserted.body[0].id, gone.id);
});

test("two upsert records with the same match values act in order: the second updates what the first created", async () => {
  const upserted = await server.call("POST", `${T}/upsert`, {
    body: {
      match: ["email"],
      records: [
        { title: "first", email: "same@example.com", priority: 1 },
        { email: "same@example.com", priority: 2 },
      ],
    },
  });
  assert.equal(upserted.status, 200, upserted.text);
  const [first, second] = upserted.body;
  assert.equal(first.created, true);
  assert.equal(second.created, false);
  assert.equal(second.id, first.id);
  assert.deepEqual([second.title, second.priority], ["first", 2]);
  assert.equal(await liveCount(), 1);
  assert.equal((await server.call("GET", `${T}/${first.id}`)).body.priority, 2);
});

test("an ambiguous upsert match answers 409 ambiguous_match and nothing in the batch is written", async () => {
  const [twinA, twinB] = await createTasks({ title: "twin", priority: 1 }, { title: "twin", priority: 2 }, { title: "solo" });
  const error = await assertRefused(
    "POST",
    `${T}/upsert`,
    {
      match: ["title"],
      records: [
        { title: "brand new" },
        { title: "solo", priority: 9 },
        { title: "twin", priority: 3 },
      ],
    },
    409,
    "ambiguous_match",
    { index: 2 },
  );
  assert.deepEqual([...(error.details.ids as string[])].sort(), [twinA.id, twinB.id].sort());
  assert.equal(await liveCount(), 3);
});

test("upsert refuses a bad match with 400 and stores nothing", async () => {
  await createTasks({ title: "a", email: "a@example.com" });
  const records = [{ title: "b", email: "b@example.com" }];
  const cases: Array<[unknown, string, Record<string, unknown>]> = [
    [{ match: [], records }, "invalid_json", {}],
    [{ match: ["title", "email", "priority", "status"], records }, "invalid_json", {}],
    [{ records }, "invalid_json", {}],
    [{ match: "email", records }, "invalid_json", {}],
    [{ match: [1], records }, "invalid_json", {}],
    [{ match: ["colour"], records }, "unknown_field", { field: "colour" }],
    [{ match: ["email", "colour"], records }, "unknown_field", { field: "colour" }],
    [{ match: ["created_by_id"], records }, "unknown_field", {}],
    [{ match: ["tags"], records }, "invalid_field", { field: "tags" }],
  ];
  for (const [body, code, details] of cases) await assertRefused("POST", `${T}/upsert`, body, 400, code, details);
});

test("an upsert record missing a match field refuses the batch, naming its index", async () => {
  await createTasks({ title: "a", email: "a@example.com" });
  await assertRefused(
    "POST",
    `${T}/upsert`,
    { match: ["email"], records: [{ title: "b", email: "b@example.com" }, { title: "no email" }] },
    400,
    "invalid_field",
    { index: 1, field: "email" },
  );
  await assertRefused(
    "POST",
    `${T}/upsert`,
    { match: ["title", "email"], records: [{ title: "c", email: "c@example.com" }, { title: "d", email: null }] },
    400,
    "invalid_field",
    { index: 1, field: "email" },
  );
});

test("an invalid upsert record refuses the batch, naming its index", async () => {
  await createTasks({ title: "a", email: "a@example.com" });
  const cases: Array<[unknown[], string, Record<string, unknown>]> = [
    [[{ title: "b", email: "b@example.com" }, { email: "a@example.com", priority: "x" }], "invalid_field", { index: 1, field: "priority" }],
    [[{ title: "b", email: "b@example.com" }, { email: "new@example.com" }], "invalid_field", { index: 1, field: "title" }],
    [[{ email: "not an email", title: "x" }], "invalid_field", { index: 0, field: "email" }],
    [[{ title: "b", email: "b@example.com" }, { email: "a@example.com", colour: 1 }], "unknown_field", { index: 1 }],
    [[{ title: "b", email: "b@example.com" }, { email: "a@example.com", id: "x" }], "read_only_field", { index: 1 }],
    [[{ title: "b", email: "b@example.com" }, 5], "invalid_json", { index: 1 }],
  ];
  for (const [records, code, details] of cases) await assertRefused("POST", `${T}/upsert`, { match: ["email"], records }, 400, code, details);
});

test("an upsert body of the wrong shape is invalid_json", async () => {
  for (const body of [[{ title: "a" }], { match: ["title"] }, { match: ["title"], records: { title: "a" } }, "x", null]) {
    await assertRefused("POST", `${T}/upsert`, body, 400, "invalid_json");
  }
});

// --- PATCH /update-many ---

test("update-many applies one change to every live match and answers {count, ids}", async () => {
  const [a, b, c, d] = await createTasks({ title: "a", status: "todo" }, { title: "b", status: "todo" }, { title: "c", status: "doing" }, { title: "d", status: "todo" });
  await server.call("DELETE", `${T}/${d.id}`);
  const updated = await server.call("PATCH", `${T}/update-many`, { body: { q: { status: "todo" }, set: { status: "done", priority: 7 } } });
  assert.equal(updated.status, 200, updated.text);
  assert.equal(updated.body.count, 2);
  assert.deepEqual([...updated.body.ids].sort(), [a.id, b.id].sort());
  assert.deepEqual(Object.keys(updated.body).sort(), ["count", "ids"]);
  for (const id of [a.id, b.id]) {
    const read = await server.call("GET", `${T}/${id}`);
    assert.deepEqual([read.body.status, read.body.priority], ["done", 7]);
  }
  assert.equal((await server.call("GET", `${T}/${c.id}`)).body.status, "doing");
  const deleted = await server.call("GET", `${T}?deleted=only`);
  assert.equal(deleted.body[0].status, "todo", "deleted records are not touched");
});

test("update-many with no match answers count 0", async () => {
  await createTasks({ title: "a" });
  const stored = await snapshot();
  const updated = await server.call("PATCH", `${T}/update-many`, { body: { q: { title: "nobody" }, set: { status: "done" } } });
  assert.equal(updated.status, 200);
  assert.deepEqual(updated.body, { count: 0, ids: [] });
  assert.equal(await snapshot(), stored);
});

test("update-many validates its change like an update and applies it to all or none", async () => {
  await createTasks({ title: "a" }, { title: "b" });
  const cases: Array<[unknown, string, Record<string, unknown>]> = [
    [{ q: { status: "todo" }, set: { status: "finished" } }, "invalid_field", { field: "status" }],
    [{ q: { status: "todo" }, set: { priority: "high" } }, "invalid_field", { field: "priority" }],
    [{ q: { status: "todo" }, set: { title: null } }, "invalid_field", { field: "title" }],
    [{ q: { status: "todo" }, set: { colour: "red" } }, "unknown_field", { field: "colour" }],
    [{ q: { status: "todo" }, set: { id: "x" } }, "read_only_field", {}],
    [{ q: { status: "todo" }, set: { created_date: "2020-01-01T00:00:00.000Z" } }, "read_only_field", {}],
    [{ q: { status: "todo" } }, "invalid_json", {}],
    [{ q: { status: "todo" }, set: {} }, "invalid_json", {}],
    [{ q: { status: "todo" }, set: [1] }, "invalid_json", {}],
    [{ q: { colour: "red" }, set: { status: "done" } }, "unknown_field", {}],
    [{ q: { priority: { $gt: "3" } }, set: { status: "done" } }, "invalid_filter", {}],
    [{ q: "status", set: { status: "done" } }, "invalid_json", {}],
    [[{ q: { status: "todo" }, set: { status: "done" } }], "invalid_json", {}],
  ];
  for (const [body, code, details] of cases) await assertRefused("PATCH", `${T}/update-many`, body, 400, code, details);
});

test("update-many without a filter is filter_required", async () => {
  await createTasks({ title: "a" });
  await assertRefused("PATCH", `${T}/update-many`, { set: { status: "done" } }, 400, "filter_required");
  await assertRefused("PATCH", `${T}/update-many`, { q: {}, set: { status: "done" } }, 400, "filter_required");
});

test("update-many is refused to a publishable key", async () => {
  await createTasks({ title: "a" });
  const stored = await snapshot();
  const refused = await server.call("PATCH", `${T}/update-many`, { body: { q: { title: "a" }, set: { status: "done" } }, apiKey: PUBLISHABLE });
  assert.equal(refused.status, 403);
  assert.equal(refused.body.error.code, "forbidden");
  assert.equal(await snapshot(), stored);
});

// --- DELETE ?q= ---

test("delete-many soft-deletes every live match and answers {count, ids}", async () => {
  const [a, b, c] = await createTasks({ title: "a", priority: 1 }, { title: "b", priority: 5 }, { title: "c", priority: 9 });
  const deleted = await server.call("DELETE", `${T}?q=${q({ priority: { $gte: 5 } })}`);
  assert.equal(deleted.status, 200, deleted.text);
  assert.equal(deleted.body.count, 2);
  assert.deepEqual([...deleted.body.ids].sort(), [b.id, c.id].sort());
  assert.deepEqual(Object.keys(deleted.body).sort(), ["count", "ids"]);
  assert.equal(await liveCount(), 1);
  assert.equal((await server.call("GET", `${T}/${a.id}`)).status, 200);
  for (const id of [b.id, c.id]) assert.equal((await server.call("GET", `${T}/${id}`)).status, 404);
  const only = await server.call("GET", `${T}?deleted=only`);
  assert.deepEqual(only.body.map((r: any) => r.id).sort(), [b.id, c.id].sort(), "soft delete: the records are kept");
  const again = await server.call("DELETE", `${T}?q=${q({ priority: { $gte: 5 } })}`);
  assert.deepEqual(again.body, { count: 0, ids: [] }, "deleted records are no longer matched");
});

test("delete-many without a filter is filter_required", async () => {
  await createTasks({ title: "a" });
  for (const query of ["", "?q=", `?q=${q({})}`]) await assertRefused("DELETE", `${T}${query}`, undefined, 400, "filter_required");
});

test("delete-many refuses a bad filter and stores nothing", async () => {
  await createTasks({ title: "a" });
  await assertRefused("DELETE", `${T}?q=${encodeURIComponent("{title")}`, undefined, 400, "invalid_json");
  await assertRefused("DELETE", `${T}?q=${q(["a"])}`, undefined, 400, "invalid_json");
  await assertRefused("DELETE", `${T}?q=${q({ colour: "red" })}`, undefined, 400, "unknown_field");
  await assertRefused("DELETE", `${T}?q=${q({ title: { $near: 1 } })}`, undefined, 400, "invalid_filter");
});

test("delete-many is refused to a publishable key", async () => {
  await createTasks({ title: "a" });
  const stored = await snapshot();
  const refused = await server.call("DELETE", `${T}?q=${q({ title: "a" })}`, { apiKey: PUBLISHABLE });
  assert.equal(refused.status, 403);
  assert.equal(refused.body.error.code, "forbidden");
  assert.equal(await snapshot(), stored);
});

// --- limits ---

test("a batch over 5,000 records is batch_too_large and stores nothing; 5,000 is accepted", async () => {
  const [a] = await createTasks({ title: "a" });
  const tooMany = Array.from({ length: 5001 }, (_, i) => ({ title: `t${i}` }));
  await assertRefused("POST", `${T}/bulk`, tooMany, 400, "batch_too_large", { size: 5001, max: 5000 });
  await assertRefused("PUT", `${T}/bulk`, tooMany.map((r) => ({ id: a.id, ...r })), 400, "batch_too_large");
  await assertRefused("POST", `${T}/upsert`, { match: ["title"], records: tooMany }, 400, "batch_too_large");
  const most = await server.call("POST", `${T}/bulk`, { body: tooMany.slice(0, 5000) });
  assert.equal(most.status, 201);
  assert.equal(most.body.length, 5000);
  assert.equal(await liveCount(), 5001);
});

// --- ETags ---

test("records touched by a batch get a new ETag", async () => {
  const [a, b] = await createTasks({ title: "a", email: "a@example.com" }, { title: "b" });
  const etagOf = async (id: string) => (await server.call("GET", `${T}/${id}`)).headers.get("etag");
  const seen = new Set<string | null>([await etagOf(a.id), await etagOf(b.id)]);
  const expectNew = async (id: string) => {
    const etag = await etagOf(id);
    assert.ok(etag);
    assert.equal(seen.has(etag), false, `ETag ${etag} was seen before`);
    seen.add(etag);
  };
  assert.equal((await server.call("PUT", `${T}/bulk`, { body: [{ id: a.id, priority: 1 }] })).status, 200);
  await expectNew(a.id);
  assert.equal((await server.call("POST", `${T}/upsert`, { body: { match: ["email"], records: [{ email: "a@example.com", priority: 2 }] } })).status, 200);
  await expectNew(a.id);
  assert.equal((await server.call("PATCH", `${T}/update-many`, { body: { q: { title: { $in: ["a", "b"] } }, set: { done: true } } })).status, 200);
  await expectNew(a.id);
  await expectNew(b.id);
  const stale = (await server.call("GET", `${T}/${b.id}`)).headers.get("etag")!;
  assert.equal((await server.call("DELETE", `${T}?q=${q({ title: "b" })}`)).status, 200);
  const restored = await server.call("PUT", `${T}/${b.id}/restore`);
  assert.equal(restored.status, 200);
  assert.notEqual(restored.headers.get("etag"), stale);
  // The old ETag no longer matches: the delete-many and the restore each wrote the record.
  const conditional = await server.call("PATCH", `${T}/${b.id}`, { body: { priority: 1 }, headers: { "If-Match": stale } });
  assert.equal(conditional.status, 412);
});

// --- atomicity ---

test("no reader sees half a batch", async () => {
  const records = Array.from({ length: 3000 }, (_, i) => ({ title: `t${i}`, priority: i }));
  const reads = Array.from({ length: 20 }, () => server.call("GET", `${T}/count`));
  const [created, ...counts] = await Promise.all([server.call("POST", `${T}/bulk`, { body: records }), ...reads]);
  assert.equal(created.status, 201);
  for (const counted of counts) assert.ok([0, 3000].includes(counted.body.count), `a reader counted ${counted.body.count}`);
  const changes = [server.call("PATCH", `${T}/update-many`, { body: { q: { priority: { $gte: 0 } }, set: { status: "done" } } })];
  const doneCounts = Array.from({ length: 20 }, () => server.call("GET", `${T}/count?q=${q({ status: "done" })}`));
  const [updated, ...seen] = await Promise.all([...changes, ...doneCounts]);
  assert.equal(updated!.body.count, 3000);
  for (const counted of seen) assert.ok([0, 3000].includes(counted.body.count), `a reader counted ${counted.body.count} done`);
});
