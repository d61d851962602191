// Refusals a person can act on at once (issue 40 item 7): a refused record lists every bad field
// in details.errors (the first also in the message), on every write path and in batches with the
// record's index; json-server's ?field=value on a list is answered with the q it meant; an array
// sent to create points to /bulk.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startTestServer, type Answer, type TestServer } from "../support/server.ts";

const T = "/api/entities/Task";
let server: TestServer;
before(async () => (server = await startTestServer()));
after(() => server.close());

/** A body with three mistakes: an unknown field, a wrong type and a bad enum value. */
const THREE_WRONG = { colour: "red", priority: "high", status: "later" };
const THREE_ERRORS = [
  { field: "colour", code: "unknown_field" },
  { field: "priority", code: "invalid_field" },
  { field: "status", code: "invalid_field" },
];

function assertEvery(answer: Answer, expected: Array<{ field: string; code: string }>, label: string): void {
  assert.equal(answer.status, 400, `${label}: ${answer.text}`);
  const { code, message, details } = answer.body.error;
  assert.equal(code, expected[0]!.code, label);
  const errors = details.errors as Array<{ field: string; code: string; message: string }>;
  assert.deepEqual(errors.map(({ field, code }) => ({ field, code })), expected, label);
  for (const error of errors) assert.match(error.message, new RegExp(`"${error.field}"`), `${label}: each message names its field`);
  assert.ok(message.replace(/^Record \d+ of the batch: /, "").startsWith(errors[0]!.message), `${label}: the message begins with the first problem: ${message}`);
  if (expected.length > 1) assert.match(message, /details\.errors lists each/, label);
}

async function count(): Promise<number> {
  return (await server.call("GET", `${T}/count`)).body.count;
}

describe("every bad field of a record at once", () => {
  test("create: each mistake in body order, then missing required fields", async () => {
    const answer = await server.call("POST", T, { body: THREE_WRONG });
    assertEvery(answer, [...THREE_ERRORS, { field: "title", code: "invalid_field" }], "create");
    assert.equal(answer.body.error.details.fields.includes("title"), true, "unknown_field's details stay: the real fields");
    assert.equal(await count(), 0);
  });

  test("one mistake: details.errors holds it alone, and the message is the one it always was", async () => {
    const answer = await server.call("POST", T, { body: { title: "x", priority: 1.5 } });
    assertEvery(answer, [{ field: "priority", code: "invalid_field" }], "one");
    assert.equal(answer.body.error.message, 'Field "priority" must be a whole number (got 1.5).');
    assert.equal(answer.body.error.details.field, "priority");
  });

  test("update, bulk create, bulk update, upsert and update-many list them all, batches with the record's index", async () => {
    const created = await server.call("POST", T, { body: { title: "kept" } });
    const id = created.body.id as string;
    assertEvery(await server.call("PATCH", `${T}/${id}`, { body: THREE_WRONG }), THREE_ERRORS, "update");
    const bulk = await server.call("POST", `${T}/bulk`, { body: [{ title: "fine" }, { title: "t", ...THREE_WRONG }] });
    assertEvery(bulk, THREE_ERRORS, "bulk create");
    assert.equal(bulk.body.error.details.index, 1);
    const bulkUpdate = await server.call("PUT", `${T}/bulk`, { body: [{ id, ...THREE_WRONG }] });
    assertEvery(bulkUpdate, THREE_ERRORS, "bulk update");
    assert.equal(bulkUpdate.body.error.details.index, 0);
    const upsert = await server.call("POST", `${T}/upsert`, { body: { match: ["title"], records: [{ title: "new", ...THREE_WRONG }] } });
    assertEvery(upsert, THREE_ERRORS, "upsert");
    const many = await server.call("PATCH", `${T}/update-many`, { body: { q: { title: "kept" }, set: { priority: "high", status: "later" } } });
    assertEvery(many, THREE_ERRORS.slice(1), "update-many");
    assert.deepEqual((await server.call("GET", `${T}/${id}`)).body.title, "kept");
    assert.equal(await count(), 1, "nothing of any of them was stored");
  });
});

describe("pointing to what was meant", () => {
  test("?status=todo on a list answers 400 with the q it meant, typed by the field", async () => {
    const cases: Array<[query: string, q: string]> = [
      ["status=todo", '{"status":"todo"}'],
      ["priority=3", '{"priority":3}'],
      ["done=true", '{"done":true}'],
      ["title=42", '{"title":"42"}'],
    ];
    for (const [query, q] of cases) {
      const answer = await server.call("GET", `${T}?${query}`);
      assert.equal(answer.status, 400, answer.text);
      assert.equal(answer.body.error.code, "invalid_parameter");
      assert.ok(answer.body.error.message.includes(`q=${q}`), `${query}: ${answer.body.error.message}`);
      assert.ok(answer.body.error.message.includes(`q=${encodeURIComponent(q)}`), query);
      assert.equal((await server.call("GET", `${T}?q=${encodeURIComponent(q)}`)).status, 200, `${query}: the q shown works`);
    }
    const unrelated = await server.call("GET", `${T}?colour=red`);
    assert.equal(unrelated.status, 400);
    assert.doesNotMatch(unrelated.body.error.message, /q=/);
  });

  test("an array sent to create points to /bulk, and nothing is stored", async () => {
    const before = await count();
    const answer = await server.call("POST", T, { body: [{ title: "a" }, { title: "b" }] });
    assert.equal(answer.status, 400, answer.text);
    assert.equal(answer.body.error.code, "invalid_json");
    assert.match(answer.body.error.message, /POST the array to …\/Task\/bulk/);
    assert.equal(await count(), before);
  });
});
