// Single-record endpoints through a listening server (issue 2): health, keys, create, read,
// update (merge), soft delete, restore, validation, body limits and errors, the plain list.

import assert from "node:assert/strict";
import { request } from "node:http";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { PUBLISHABLE, SECRET, startTestServer, TASK, type Answer, type TestServer } from "../support/server.ts";

const BOOKMARK = {
  name: "Bookmark",
  type: "object",
  properties: { url: { type: "string", format: "uri" }, label: { type: "string" } },
  required: ["url"],
};
const TASK_FIELDS = Object.keys(TASK.properties);
const ID_RE = /^[0-9a-f]{24}$/;
const TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const PLATFORM_FIELDS = ["id", "created_date", "updated_date", "created_by_id"];

let server: TestServer;
let secretKeyId: string;
let publishableKeyId: string;
before(async () => {
  server = await startTestServer({ schema: { Task: TASK, Bookmark: BOOKMARK } });
  secretKeyId = server.keys.first("secret").id;
  publishableKeyId = server.keys.first("publishable").id;
});
after(() => server.close());

async function create(body: unknown, apiKey: string = SECRET): Promise<Answer> {
  const answer = await server.call("POST", "/api/entities/Task", { body, apiKey });
  assert.equal(answer.status, 201, answer.text);
  return answer;
}

async function readBack(id: string): Promise<Answer> {
  const answer = await server.call("GET", `/api/entities/Task/${id}`);
  assert.equal(answer.status, 200, answer.text);
  return answer;
}

async function taskCount(): Promise<number> {
  const list = await server.call("GET", "/api/entities/Task?limit=5000");
  assert.equal(list.status, 200);
  return list.body.length;
}

function assertError(answer: Answer, status: number, code: string): void {
  assert.equal(answer.status, status, answer.text);
  assert.match(answer.headers.get("content-type") ?? "", /^application\/json/);
  assert.equal(answer.body.error.code, code, answer.text);
  assert.equal(typeof answer.body.error.message, "string");
  assert.ok(answer.body.error.message.length > 0);
}

describe("health and keys", () => {
  test("GET /health answers 200 {status: ok} without a key, and with a wrong one", async () => {
    for (const apiKey of [null, "sk_nonsense_key_"]) {
      const answer = await server.call("GET", "/health", { apiKey });
      assert.equal(answer.status, 200);
      assert.deepEqual(answer.body, { status: "ok" });
    }
  });

  test("a write to /health answers 405 with Allow: GET, HEAD", async () => {
    const answer = await server.call("POST", "/health", { apiKey: null, body: {} });
    assertError(answer, 405, "method_not_allowed");
    assert.deepEqual((answer.headers.get("allow") ?? "").split(",").map((m) => m.trim()).sort(), ["GET", "HEAD"]);
  });

  const unauthorizedCases: Array<[string, string, string, string | null]> = [
    ["a list without a key", "GET", "/api/entities/Task", null],
    ["a list with an unknown key", "GET", "/api/entities/Task", "sk_not_a_key_key"],
    ["a create without a key", "POST", "/api/entities/Task", null],
    ["a create with an unknown key", "POST", "/api/entities/Task", "pk_not_a_key_key"],
    ["a read with an empty key", "GET", "/api/entities/Task/0123456789abcdef01234567", ""],
    ["an unknown path without a key", "GET", "/api/nothing-here", null],
  ];
  for (const [name, method, path, apiKey] of unauthorizedCases) {
    test(`${name} is refused with 401 unauthorized`, async () => {
      const before = await taskCount();
      const body = method === "POST" ? { title: "sneaky" } : undefined;
      const headers: Record<string, string> = apiKey === "" ? { "X-Api-Key": "" } : {};
      const answer = await server.call(method, path, { apiKey: apiKey === "" ? null : apiKey, body, headers });
      assertError(answer, 401, "unauthorized");
      assert.equal(answer.text.includes(SECRET), false, "the error never reveals a key");
      assert.equal(await taskCount(), before, "nothing was created");
    });
  }
});

describe("create", () => {
  test("answers 201 with the record, Location and ETag; defaults are filled and unset fields omitted", async () => {
    const answer = await create({ title: "Write tests", priority: 2 });
    const record = answer.body;
    assert.match(record.id, ID_RE);
    assert.equal(answer.headers.get("location"), `/api/entities/Task/${record.id}`);
    assert.match(answer.headers.get("etag") ?? "", /^"[^"]+"$/);
    assert.equal(record.title, "Write tests");
    assert.equal(record.priority, 2);
    assert.equal(record.status, "todo", "the declared default fills an omitted field");
    for (const unset of ["estimate", "done", "due_date", "start_at", "email", "tags", "meta"]) {
      assert.equal(unset in record, false, `${unset} was never set and is omitted`);
    }
    const read = await readBack(record.id);
    assert.deepEqual(read.body, record);
    assert.equal(read.headers.get("etag"), answer.headers.get("etag"));
  });

  test("an explicit value beats the default, and every declared type round-trips", async () => {
    const body = {
      title: "Everything",
      status: "doing",
      priority: -3,
      estimate: 1.5,
      done: false,
      due_date: "2026-02-28",
      start_at: "2026-11-22T12:00:00.000Z",
      email: "ada@example.com",
      tags: ["a", "b"],
      meta: { nested: { deep: [1, 2] } },
    };
    const record = (await create(body)).body;
    for (const [field, value] of Object.entries(body)) assert.deepEqual(record[field], value, field);
    assert.deepEqual(Object.keys(record), ["id", ...TASK_FIELDS, "created_date", "updated_date", "created_by_id"]);
  });

  test("created_date and updated_date are equal UTC ISO timestamps with milliseconds", async () => {
    const start = Date.now();
    const record = (await create({ title: "Timestamps" })).body;
    assert.match(record.created_date, TIMESTAMP_RE);
    assert.equal(record.updated_date, record.created_date);
    assert.equal(new Date(record.created_date).toISOString(), record.created_date);
    const ms = Date.parse(record.created_date);
    assert.ok(ms >= start - 5 && ms <= Date.now() + 5, "the timestamp is the time of the write");
  });

  test("ids are 24 lowercase hex characters and later records have larger ids", async () => {
    const ids: string[] = [];
    const dates: string[] = [];
    for (let i = 0; i < 20; i++) {
      const record = (await create({ title: `ordered ${i}` })).body;
      ids.push(record.id);
      dates.push(record.created_date);
      if (i % 5 === 4) await sleep(2);
    }
    for (const id of ids) assert.match(id, ID_RE);
    assert.deepEqual([...ids].sort(), ids, "ids grow in creation order");
    assert.equal(new Set(ids).size, ids.length);
    assert.deepEqual([...dates].sort(), dates, "created_date grows with the id");
  });

  test("created_by_id is the id of the secret key that created the record", async () => {
    const record = (await create({ title: "by secret" })).body;
    assert.equal(record.created_by_id, secretKeyId);
    assert.equal((await readBack(record.id)).body.created_by_id, secretKeyId);
  });

  test("a publishable key never sees created_by_id, though the record keeps it", async () => {
    const created = await create({ title: "by publishable" }, PUBLISHABLE);
    const id = created.body.id;
    assert.equal("created_by_id" in created.body, false, "create");
    const read = await server.call("GET", `/api/entities/Task/${id}`, { apiKey: PUBLISHABLE });
    assert.equal(read.status, 200);
    assert.equal("created_by_id" in read.body, false, "read");
    const updated = await server.call("PATCH", `/api/entities/Task/${id}`, { apiKey: PUBLISHABLE, body: { priority: 1 } });
    assert.equal(updated.status, 200);
    assert.equal("created_by_id" in updated.body, false, "update");
    const list = await server.call("GET", "/api/entities/Task?limit=500", { apiKey: PUBLISHABLE });
    assert.equal(list.status, 200);
    assert.ok(list.body.length > 0);
    for (const record of list.body) assert.equal("created_by_id" in record, false, "list");
    assert.equal(list.text.includes("created_by_id"), false);
    assert.equal((await readBack(id)).body.created_by_id, publishableKeyId, "a secret key sees the publishable key's id");
  });
});

describe("read", () => {
  test("an unknown id and a malformed id answer 404 record_not_found", async () => {
    for (const id of ["0123456789abcdef01234567", "not-an-id"]) {
      const answer = await server.call("GET", `/api/entities/Task/${id}`);
      assertError(answer, 404, "record_not_found");
      assert.equal(answer.headers.get("etag"), null);
    }
  });

  test("a deleted record answers 404 record_not_found", async () => {
    const { id } = (await create({ title: "soon gone" })).body;
    assert.equal((await server.call("DELETE", `/api/entities/Task/${id}`)).status, 200);
    assertError(await server.call("GET", `/api/entities/Task/${id}`), 404, "record_not_found");
  });

  test("Content-Length counts UTF-8 bytes on every read: first, cached, by either key, after an update", async () => {
    const title = "héllo ✓ 😀 \u2028 ΟΔΟΣ";
    const { id } = (await create({ title })).body;
    const rawRead = (apiKey: string) =>
      new Promise<{ length: string | undefined; body: Buffer }>((resolve, reject) => {
        const url = new URL(`/api/entities/Task/${id}`, server.url);
        request(url, { headers: { "X-Api-Key": apiKey } }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("end", () => resolve({ length: res.headers["content-length"], body: Buffer.concat(chunks) }));
        }).on("error", reject).end();
      });
    const check = async (apiKey: string, expectedTitle: string) => {
      const { length, body } = await rawRead(apiKey);
      assert.equal(Number(length), body.length, `Content-Length ${length} for a body of ${body.length} bytes`);
      assert.equal(JSON.parse(body.toString("utf8")).title, expectedTitle);
    };
    for (let i = 0; i < 3; i++) await check(SECRET, title);
    for (let i = 0; i < 3; i++) await check(PUBLISHABLE, title);
    const changed = `${title} ß`;
    assert.equal((await server.call("PATCH", `/api/entities/Task/${id}`, { body: { title: changed } })).status, 200);
    for (let i = 0; i < 3; i++) await check(SECRET, changed);
    for (let i = 0; i < 3; i++) await check(PUBLISHABLE, changed);
  });

  const unknownEntities: Array<[string, string, string]> = [
    ["an undeclared entity", "GET", "/api/entities/Project"],
    ["a lower-case spelling (names are case-sensitive)", "GET", "/api/entities/task"],
    ["an upper-case spelling", "POST", "/api/entities/TASK"],
    ["a record of an undeclared entity", "GET", "/api/entities/task/0123456789abcdef01234567"],
  ];
  for (const [name, method, path] of unknownEntities) {
    test(`${name} answers 404 entity_not_found`, async () => {
      const before = await taskCount();
      const answer = await server.call(method, path, method === "POST" ? { body: { title: "x" } } : {});
      assertError(answer, 404, "entity_not_found");
      assert.match(answer.body.error.message, /Task/, "the message lists the real entities");
      assert.equal(await taskCount(), before);
    });
  }
});

describe("update", () => {
  for (const method of ["PUT", "PATCH"]) {
    test(`${method} merges: omitted fields keep their value and null clears an optional field`, async () => {
      const created = await create({ title: "merge me", priority: 1, email: "a@example.com", tags: ["x"], meta: { a: 1 } });
      const before = created.body;
      await sleep(3);
      const answer = await server.call(method, `/api/entities/Task/${before.id}`, { body: { priority: 2, email: null, meta: { b: 2 } } });
      assert.equal(answer.status, 200, answer.text);
      const after = answer.body;
      assert.equal(after.id, before.id);
      assert.equal(after.title, "merge me");
      assert.equal(after.status, "todo");
      assert.deepEqual(after.tags, ["x"]);
      assert.equal(after.priority, 2);
      assert.deepEqual(after.meta, { b: 2 }, "an object field is replaced, not deep-merged");
      assert.equal("email" in after, false, "null cleared the field");
      assert.equal(after.created_date, before.created_date);
      assert.equal(after.created_by_id, before.created_by_id);
      assert.match(after.updated_date, TIMESTAMP_RE);
      assert.ok(after.updated_date > before.updated_date, "updated_date moved forward");
      assert.notEqual(answer.headers.get("etag"), created.headers.get("etag"));
      const read = await readBack(before.id);
      assert.deepEqual(read.body, after);
      assert.equal(read.headers.get("etag"), answer.headers.get("etag"));
    });

    test(`${method} refuses null on a required field and leaves the record unchanged`, async () => {
      const created = await create({ title: "keep my title" });
      const answer = await server.call(method, `/api/entities/Task/${created.body.id}`, { body: { title: null } });
      assertError(answer, 400, "invalid_field");
      assert.equal(answer.body.error.details.field, "title");
      const read = await readBack(created.body.id);
      assert.deepEqual(read.body, created.body);
      assert.equal(read.headers.get("etag"), created.headers.get("etag"));
    });
  }

  test("an empty change is accepted and keeps every field", async () => {
    const created = (await create({ title: "untouched", priority: 4 })).body;
    const answer = await server.call("PATCH", `/api/entities/Task/${created.id}`, { body: {} });
    assert.equal(answer.status, 200);
    assert.equal(answer.body.title, "untouched");
    assert.equal(answer.body.priority, 4);
  });

  test("updating an unknown id answers 404 record_not_found", async () => {
    const answer = await server.call("PATCH", "/api/entities/Task/0123456789abcdef01234567", { body: { priority: 1 } });
    assertError(answer, 404, "record_not_found");
  });
});

describe("delete and restore", () => {
  test("delete answers 200 {id, deleted: true}; then read, update and delete answer 404", async () => {
    const { id } = (await create({ title: "to delete" })).body;
    const answer = await server.call("DELETE", `/api/entities/Task/${id}`);
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body, { id, deleted: true });
    const afterwards: Array<[string, unknown]> = [["GET", undefined], ["PUT", { priority: 1 }], ["PATCH", { priority: 1 }], ["DELETE", undefined]];
    for (const [method, body] of afterwards) {
      assertError(await server.call(method, `/api/entities/Task/${id}`, { body }), 404, "record_not_found");
    }
    const list = await server.call("GET", "/api/entities/Task?limit=5000");
    assert.equal(list.body.some((record: { id: string }) => record.id === id), false, "the list hides it");
  });

  test("a publishable key may delete but not restore (403 forbidden), and the record stays deleted", async () => {
    const { id } = (await create({ title: "pk delete" }, PUBLISHABLE)).body;
    const deleted = await server.call("DELETE", `/api/entities/Task/${id}`, { apiKey: PUBLISHABLE });
    assert.equal(deleted.status, 200);
    assert.deepEqual(deleted.body, { id, deleted: true });
    const restore = await server.call("PUT", `/api/entities/Task/${id}/restore`, { apiKey: PUBLISHABLE });
    assertError(restore, 403, "forbidden");
    assert.equal("created_by_id" in restore.body, false);
    assertError(await server.call("GET", `/api/entities/Task/${id}`), 404, "record_not_found");
  });

  test("a secret key restores a deleted record: restored true, then it reads back as it was", async () => {
    const created = (await create({ title: "come back", priority: 7, tags: ["t"] })).body;
    await server.call("DELETE", `/api/entities/Task/${created.id}`);
    const answer = await server.call("PUT", `/api/entities/Task/${created.id}/restore`);
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.body.restored, true);
    assert.match(answer.headers.get("etag") ?? "", /^"[^"]+"$/);
    const { restored, ...record } = answer.body;
    assert.equal(restored, true);
    const read = await readBack(created.id);
    assert.deepEqual(read.body, record);
    for (const field of ["id", "title", "priority", "tags", "status", "created_date", "created_by_id"]) {
      assert.deepEqual(read.body[field], created[field], field);
    }
    assert.equal("restored" in read.body, false);
    assert.equal(read.headers.get("etag"), answer.headers.get("etag"));
  });

  test("restoring a live record answers 200 with restored false and changes nothing", async () => {
    const created = await create({ title: "alive" });
    const answer = await server.call("PUT", `/api/entities/Task/${created.body.id}/restore`);
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body, { ...created.body, restored: false });
    const read = await readBack(created.body.id);
    assert.deepEqual(read.body, created.body);
    assert.equal(read.headers.get("etag"), created.headers.get("etag"));
  });

  test("restoring an unknown id answers 404 record_not_found", async () => {
    assertError(await server.call("PUT", "/api/entities/Task/0123456789abcdef01234567/restore"), 404, "record_not_found");
  });
});

describe("validation", () => {
  for (const field of PLATFORM_FIELDS) {
    for (const method of ["POST", "PATCH"]) {
      test(`${method} setting ${field} is refused with read_only_field`, async () => {
        const existing = await create({ title: "platform fields" });
        const path = method === "POST" ? "/api/entities/Task" : `/api/entities/Task/${existing.body.id}`;
        const before = await taskCount();
        const answer = await server.call(method, path, { body: { title: "changed", [field]: "0123456789abcdef01234567" } });
        assertError(answer, 400, "read_only_field");
        assert.equal(answer.body.error.details.field, field);
        assert.equal(await taskCount(), before, "nothing was created");
        assert.deepEqual((await readBack(existing.body.id)).body, existing.body, "nothing was changed");
      });
    }
  }

  for (const method of ["POST", "PUT"]) {
    test(`${method} with an undeclared field is refused with unknown_field listing the real fields`, async () => {
      const existing = await create({ title: "unknown fields" });
      const path = method === "POST" ? "/api/entities/Task" : `/api/entities/Task/${existing.body.id}`;
      const before = await taskCount();
      const answer = await server.call(method, path, { body: { title: "changed", colour: "red" } });
      assertError(answer, 400, "unknown_field");
      assert.deepEqual(answer.body.error.details.fields, TASK_FIELDS);
      assert.match(answer.body.error.message, /colour/);
      for (const field of TASK_FIELDS) assert.ok(answer.body.error.message.includes(field), `the message lists ${field}`);
      assert.equal(await taskCount(), before);
      assert.deepEqual((await readBack(existing.body.id)).body, existing.body);
    });
  }

  // Names that are not declared fields, however close: each is unknown_field.
  const undeclaredNames = ["Title", "title ", "title.sub", "__proto__", "constructor", ""];
  for (const name of undeclaredNames) {
    test(`a write naming ${JSON.stringify(name)} is refused with unknown_field`, async () => {
      const before = await taskCount();
      const answer = await server.call("POST", "/api/entities/Task", { body: `{"title":"x",${JSON.stringify(name)}:"y"}` });
      assertError(answer, 400, "unknown_field");
      assert.deepEqual(answer.body.error.details.fields, TASK_FIELDS);
      assert.equal(await taskCount(), before);
    });
  }

  // [what, field, value]: each is refused with invalid_field naming the field.
  const invalidValues: Array<[string, string, unknown]> = [
    ["a number for a string", "title", 5],
    ["an empty object for a string", "title", {}],
    ["a string for an integer", "priority", "3"],
    ["a fraction for an integer", "priority", 1.5],
    ["a boolean for a number", "estimate", true],
    ["a string for a number", "estimate", "1.5"],
    ["a string for a boolean", "done", "yes"],
    ["a number for a boolean", "done", 1],
    ["a value outside the enum", "status", "later"],
    ["an enum value in the wrong case", "status", "TODO"],
    ["a non-existent day", "due_date", "2026-02-30"],
    ["a non-existent month", "due_date", "2026-13-01"],
    ["words for a date", "due_date", "tomorrow"],
    ["a timestamp for a date", "due_date", "2026-01-01T00:00:00Z"],
    ["a date for a date-time", "start_at", "2026-01-01"],
    ["an hour 25 date-time", "start_at", "2026-01-01T25:00:00Z"],
    ["a date-time without a time zone", "start_at", "2026-01-01T10:00:00"],
    ["words for a date-time", "start_at", "now"],
    ["an email without @", "email", "ada.example.com"],
    ["an email without a domain dot", "email", "ada@example"],
    ["an email with spaces", "email", "ada lovelace@example.com"],
    ["a string for an array", "tags", "a,b"],
    ["a number in a string array", "tags", ["a", 2]],
    ["a null item in a string array", "tags", [null]],
    ["an array for an object", "meta", [1]],
    ["a string for an object", "meta", "{}"],
  ];
  for (const [what, field, value] of invalidValues) {
    test(`create with ${what} (${field}) is refused with invalid_field and nothing is stored`, async () => {
      const before = await taskCount();
      const answer = await server.call("POST", "/api/entities/Task", { body: { title: "valid title", [field]: value } });
      assertError(answer, 400, "invalid_field");
      assert.equal(answer.body.error.details.field, field);
      assert.match(answer.body.error.message, new RegExp(field));
      assert.equal(await taskCount(), before);
    });
  }

  test("update with each invalid value is refused and the record reads back unchanged", async () => {
    const existing = await create({ title: "stable", priority: 1, status: "doing", tags: ["keep"] });
    for (const [what, field, value] of invalidValues) {
      const answer = await server.call("PATCH", `/api/entities/Task/${existing.body.id}`, { body: { priority: 99, [field]: value } });
      assertError(answer, 400, "invalid_field");
      assert.equal(answer.body.error.details.field, field, what);
    }
    const read = await readBack(existing.body.id);
    assert.deepEqual(read.body, existing.body, "not even the valid priority was written");
    assert.equal(read.headers.get("etag"), existing.headers.get("etag"));
  });

  const invalidUris: unknown[] = ["example.com/page", "not a uri", "", 42];
  for (const value of invalidUris) {
    test(`a uri field refuses ${JSON.stringify(value)} with invalid_field`, async () => {
      const answer = await server.call("POST", "/api/entities/Bookmark", { body: { url: value } });
      assertError(answer, 400, "invalid_field");
      assert.equal(answer.body.error.details.field, "url");
    });
  }

  test("a uri field accepts absolute URIs", async () => {
    for (const url of ["https://example.com/page?x=1#top", "mailto:ada@example.com", "urn:isbn:0451450523"]) {
      const answer = await server.call("POST", "/api/entities/Bookmark", { body: { url } });
      assert.equal(answer.status, 201, answer.text);
      assert.equal(answer.body.url, url);
    }
  });

  test("valid date, date-time and email forms are accepted", async () => {
    const cases: Array<[string, string]> = [
      ["due_date", "2024-02-29"],
      ["start_at", "2026-11-22T12:00:00Z"],
      ["start_at", "2026-11-22T14:00:00.5+02:00"],
      ["email", "first.last+tag@sub.example.org"],
    ];
    for (const [field, value] of cases) {
      const answer = await server.call("POST", "/api/entities/Task", { body: { title: "formats", [field]: value } });
      assert.equal(answer.status, 201, `${field}=${value}: ${answer.text}`);
      if (field === "start_at") assert.equal(Date.parse(answer.body[field]), Date.parse(value), "the same instant");
      else assert.equal(answer.body[field], value);
    }
  });

  test("a date before the year 100 is kept and compares as written, not as 19xx", async () => {
    const early = (await create({ title: "ancient", due_date: "0050-06-15" })).body;
    assert.equal(early.due_date, "0050-06-15");
    const filter = encodeURIComponent(JSON.stringify({ due_date: { $lt: "0100-01-01" } }));
    const answer = await server.call("GET", `/api/entities/Task?q=${filter}`);
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.body.map((r: { id: string }) => r.id), [early.id]);
  });

  const missingRequired: Array<[string, unknown]> = [
    ["an empty body object", {}],
    ["only optional fields", { priority: 1, status: "done" }],
    ["a null required field", { title: null }],
  ];
  for (const [what, body] of missingRequired) {
    test(`create with ${what} is refused with invalid_field naming the required field`, async () => {
      const before = await taskCount();
      const answer = await server.call("POST", "/api/entities/Task", { body });
      assertError(answer, 400, "invalid_field");
      assert.equal(answer.body.error.details.field, "title");
      assert.equal(await taskCount(), before);
    });
  }

  test("null on an optional field at create stores no value, not even the default", async () => {
    const record = (await create({ title: "nulls", priority: null, status: null })).body;
    assert.equal("priority" in record, false);
    // docs/entities.md: a default fills an omitted field; an explicit null is "no value", not omitted.
    assert.equal("status" in record, false);
  });
});

describe("request bodies", () => {
  let small: TestServer;
  const MAX = 256;
  before(async () => (small = await startTestServer({ maxBodyBytes: MAX })));
  after(() => small.close());

  /** A raw request that sends `chunks` one by one; `end` false leaves the body unfinished. */
  function rawPost(chunks: string[], headers: Record<string, string | number>, end = true): Promise<{ status: number; headers: Record<string, unknown>; body: any }> {
    return new Promise((resolve, reject) => {
      const url = new URL("/api/entities/Task", small.url);
      const req = request(url, { method: "POST", headers: { "X-Api-Key": SECRET, "Content-Type": "application/json", ...headers } }, (res) => {
        let text = "";
        res.setEncoding("utf8").on("data", (chunk) => (text += chunk));
        res.on("end", () => {
          req.destroy();
          resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(text) });
        });
      });
      req.on("error", (error) => ((error as NodeJS.ErrnoException).code === "ECONNRESET" || (error as NodeJS.ErrnoException).code === "EPIPE" ? undefined : reject(error)));
      req.flushHeaders(); // with no chunk written, the headers would otherwise wait in a buffer
      for (const chunk of chunks) req.write(chunk);
      if (end) req.end();
    });
  }

  async function smallCount(): Promise<number> {
    return (await small.call("GET", "/api/entities/Task")).body.length;
  }

  test("a body within --max-body is accepted", async () => {
    const body = JSON.stringify({ title: "x".repeat(MAX - 20) });
    assert.ok(Buffer.byteLength(body) <= MAX);
    const answer = await small.call("POST", "/api/entities/Task", { body });
    assert.equal(answer.status, 201, answer.text);
  });

  test("a body over --max-body with Content-Length is refused with 413 payload_too_large", async () => {
    const before = await smallCount();
    const answer = await small.call("POST", "/api/entities/Task", { body: { title: "x".repeat(MAX) } });
    assertError(answer, 413, "payload_too_large");
    assert.equal(await smallCount(), before);
  });

  test("a declared Content-Length over the cap is refused before any of the body arrives", async () => {
    const answer = await rawPost([], { "Content-Length": MAX * 100 }, false);
    assert.equal(answer.status, 413);
    assert.equal(answer.body.error.code, "payload_too_large");
  });

  test("a chunked body over --max-body is refused with 413 without waiting for its end", async () => {
    const before = await smallCount();
    const chunk = `{"title":"${"y".repeat(MAX)}`;
    // The body is never finished: a server that buffered to the end would never answer.
    const answer = await rawPost([chunk], { "Transfer-Encoding": "chunked" }, false);
    assert.equal(answer.status, 413);
    assert.equal(answer.body.error.code, "payload_too_large");
    assert.equal(await smallCount(), before);
  });

  test("a chunked body within the cap is accepted", async () => {
    const answer = await rawPost(['{"title":', '"chunked"}'], { "Transfer-Encoding": "chunked" });
    assert.equal(answer.status, 201);
    assert.equal(answer.body.title, "chunked");
  });

  const mediaTypes = ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx"];
  for (const contentType of mediaTypes) {
    test(`a body sent as ${contentType} is refused with 415 unsupported_media_type`, async () => {
      const before = await taskCount();
      const answer = await server.call("POST", "/api/entities/Task", { body: { title: "typed" }, headers: { "Content-Type": contentType } });
      assertError(answer, 415, "unsupported_media_type");
      assert.equal(await taskCount(), before);
    });
  }

  test("application/json with a charset is accepted", async () => {
    const answer = await server.call("POST", "/api/entities/Task", { body: { title: "charset" }, headers: { "Content-Type": "application/json; charset=utf-8" } });
    assert.equal(answer.status, 201, answer.text);
  });

  const badBodies: Array<[string, string]> = [
    ["broken JSON", '{"title": "x"'],
    ["a trailing comma", '{"title": "x",}'],
    ["an array", '[{"title": "x"}]'],
    ["a string", '"title"'],
    ["a number", "42"],
    ["null", "null"],
    ["an empty body", ""],
  ];
  for (const [what, text] of badBodies) {
    test(`create with ${what} is refused with invalid_json`, async () => {
      const before = await taskCount();
      const headers = { "Content-Type": "application/json" };
      const answer = await server.call("POST", "/api/entities/Task", { body: text === "" ? undefined : text, headers });
      assertError(answer, 400, "invalid_json");
      assert.equal(await taskCount(), before);
    });
  }

  test("update with a body that is not a JSON object is refused and changes nothing", async () => {
    const existing = await create({ title: "json shape" });
    for (const text of ['{"priority":', "[1]", '"x"']) {
      const answer = await server.call("PATCH", `/api/entities/Task/${existing.body.id}`, { body: text });
      assertError(answer, 400, "invalid_json");
    }
    assert.deepEqual((await readBack(existing.body.id)).body, existing.body);
  });
});

describe("routing", () => {
  // [method, path (ID is replaced by a live record's id), the methods Allow must list]
  const notAllowed: Array<[string, string, string[]]> = [
    ["POST", "/api/entities/Task/ID", ["GET", "PUT", "PATCH", "DELETE"]],
    ["PATCH", "/api/entities/Task", ["GET", "POST"]],
    ["GET", "/api/entities/Task/ID/restore", ["PUT"]],
    ["DELETE", "/api/entities/Task/ID/restore", ["PUT"]],
  ];
  for (const [method, pattern, allowed] of notAllowed) {
    test(`${method} ${pattern} answers 405 with an Allow header listing ${allowed.join(", ")}`, async () => {
      const existing = await create({ title: "405" });
      const answer = await server.call(method, pattern.replace("ID", existing.body.id), method === "GET" ? {} : { body: { title: "no" } });
      assertError(answer, 405, "method_not_allowed");
      const allow = (answer.headers.get("allow") ?? "").split(",").map((m) => m.trim());
      for (const m of allowed) assert.ok(allow.includes(m), `Allow lists ${m}: ${allow.join(", ")}`);
      assert.equal(allow.includes(method), false);
      assert.deepEqual((await readBack(existing.body.id)).body, existing.body);
    });
  }

  const unknownPaths = ["/api/nothing", "/api/entities/Task/0123456789abcdef01234567/extra/more", "/api/entitie/Task", "/api/"];
  for (const path of unknownPaths) {
    test(`GET ${path} answers 404 not_found`, async () => {
      assertError(await server.call("GET", path), 404, "not_found");
    });
  }

  test("a path outside /api/ answers 404 not_found without a key", async () => {
    assertError(await server.call("GET", "/nothing", { apiKey: null }), 404, "not_found");
  });
});

describe("plain list", () => {
  let fresh: TestServer;
  before(async () => (fresh = await startTestServer()));
  after(() => fresh.close());

  test("an empty entity lists as an empty array", async () => {
    const answer = await fresh.call("GET", "/api/entities/Task");
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body, []);
  });

  test("lists live records newest first, limit cuts the page, deleted records are hidden", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const answer = await fresh.call("POST", "/api/entities/Task", { body: { title: `item ${i}`, priority: i } });
      ids.push(answer.body.id);
    }
    assert.equal((await fresh.call("DELETE", `/api/entities/Task/${ids[2]}`)).status, 200);
    const live = ids.filter((_, i) => i !== 2).reverse();

    const all = await fresh.call("GET", "/api/entities/Task");
    assert.equal(all.status, 200);
    assert.ok(Array.isArray(all.body), "a bare JSON array");
    assert.deepEqual(all.body.map((r: { id: string }) => r.id), live);
    assert.equal(all.body[0].title, "item 5");
    assert.equal(all.body[0].created_by_id, fresh.keys.first("secret").id);

    const page = await fresh.call("GET", "/api/entities/Task?limit=2");
    assert.equal(page.status, 200);
    assert.deepEqual(page.body.map((r: { id: string }) => r.id), live.slice(0, 2));

    const publishable = await fresh.call("GET", "/api/entities/Task?limit=3", { apiKey: PUBLISHABLE });
    assert.deepEqual(publishable.body.map((r: { id: string }) => r.id), live.slice(0, 3));
    for (const record of publishable.body) assert.equal("created_by_id" in record, false);
  });

  const badLimits = ["abc", "-1", "0", "1.5", "5001"];
  for (const limit of badLimits) {
    test(`limit=${limit} is refused with invalid_parameter naming limit`, async () => {
      const answer = await fresh.call("GET", `/api/entities/Task?limit=${limit}`);
      assertError(answer, 400, "invalid_parameter");
      assert.equal(answer.body.error.details.parameter, "limit");
    });
  }

  test("a publishable key may not ask for more than 500 records", async () => {
    const answer = await fresh.call("GET", "/api/entities/Task?limit=501", { apiKey: PUBLISHABLE });
    assertError(answer, 400, "invalid_parameter");
    assert.equal((await fresh.call("GET", "/api/entities/Task?limit=500", { apiKey: PUBLISHABLE })).status, 200);
  });
});
