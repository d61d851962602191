// A 409 unique_violation names the record holding the values (details.existing_id, details.id,
// details.values, the message) only to a caller who may read the entity's records: a secret key,
// or a publishable key whose "access" includes read (docs/entities.md, "Unique values"). A
// create-only key (a sign-up form) learns that the values are taken, never who holds them.
// Every write path that can answer unique_violation; runs on every store.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { PUBLISHABLE, startTestServer, type Answer, type TestServer } from "../support/server.ts";

const fields = { email: { type: "string" }, note: { type: "string" } };
/** Publishable keys may sign up here, and change records, but never read them. */
const SIGNUP = { name: "Signup", properties: fields, unique: [["email"]], access: { publishable: ["create", "update"] } };
/** Publishable keys may read here too. */
const CONTACT = { name: "Contact", properties: fields, unique: [["email"]], access: { publishable: ["create", "read", "update"] } };

const EMAIL = "ann@secret.example";

/** A 409 that tells nothing of the holder: no id, no values, in the details or the message. */
function assertUnnamed(answer: Answer, holder: string, label: string): void {
  assert.equal(answer.status, 409, `${label}: ${answer.text}`);
  const { code, message, details } = answer.body.error;
  assert.equal(code, "unique_violation", label);
  assert.deepEqual(details.fields, ["email"], label);
  for (const name of ["existing_id", "id", "values"]) assert.equal(name in details, false, `${label}: details.${name} is absent`);
  assert.ok(!answer.text.includes(holder), `${label}: the holder's id is nowhere in ${answer.text}`);
  assert.ok(!answer.text.includes(EMAIL), `${label}: the value is nowhere in ${answer.text}`);
  assert.match(message, /already holds the value given for email/, label);
}

function assertNamed(answer: Answer, holder: string, label: string): void {
  assert.equal(answer.status, 409, `${label}: ${answer.text}`);
  const { code, message, details } = answer.body.error;
  assert.equal(code, "unique_violation", label);
  assert.equal(details.existing_id, holder, label);
  assert.equal(details.id, holder, label);
  assert.deepEqual(details.values, [EMAIL], label);
  assert.ok(message.includes(holder), `${label}: ${message}`);
}

describe("a unique violation names its holder only to a caller who may read it", () => {
  let server: TestServer;
  const holders: Record<string, string> = {};
  let others: Record<string, string> = {};

  before(async () => {
    server = await startTestServer({ schema: { Signup: SIGNUP, Contact: CONTACT } });
    for (const entity of ["Signup", "Contact"]) {
      const held = await server.call("POST", `/api/entities/${entity}`, { body: { email: EMAIL } });
      assert.equal(held.status, 201, held.text);
      holders[entity] = held.body.id;
    }
    others = {};
    for (const entity of ["Signup", "Contact"]) {
      const other = await server.call("POST", `/api/entities/${entity}`, { body: { email: `other@${entity}.example` } });
      assert.equal(other.status, 201, other.text);
      others[entity] = other.body.id;
    }
  });
  after(() => server.close());

  /** Every path that can answer unique_violation, as [label, method, path, body]; `entity` is where. */
  function writes(entity: string): Array<[string, string, string, unknown]> {
    const path = `/api/entities/${entity}`;
    return [
      ["create", "POST", path, { email: EMAIL, note: "again" }],
      ["bulk create", "POST", `${path}/bulk`, [{ email: "fresh@x.example" }, { email: EMAIL }]],
      ["update", "PATCH", `${path}/${others[entity]}`, { email: EMAIL }],
      ["replace", "PUT", `${path}/${others[entity]}`, { email: EMAIL }],
      ["bulk update", "PUT", `${path}/bulk`, [{ id: others[entity], email: EMAIL }]],
      ["upsert", "POST", `${path}/upsert`, { match: ["note"], records: [{ note: "upserted", email: EMAIL }] }],
    ];
  }

  test("a publishable key without read gets 409 unique_violation without existing_id, id or values, on every write path", async () => {
    for (const [label, method, path, body] of writes("Signup")) {
      assertUnnamed(await server.call(method, path, { body, apiKey: PUBLISHABLE }), holders.Signup!, label);
    }
    // Nothing of the refused writes was stored.
    const stored = await server.call("GET", `/api/entities/Signup?q=${encodeURIComponent(JSON.stringify({ email: EMAIL }))}`);
    assert.deepEqual(stored.body.map((record: { id: string }) => record.id), [holders.Signup]);
  });

  test("a bulk create giving one value twice is refused, naming no record of its own either", async () => {
    const twin = "twin@x.example";
    const answer = await server.call("POST", "/api/entities/Signup/bulk", { body: [{ email: twin }, { email: twin }], apiKey: PUBLISHABLE });
    assert.equal(answer.status, 409, answer.text);
    assert.deepEqual(answer.body.error.details, { entity: "Signup", fields: ["email"] });
    assert.ok(!answer.text.includes(twin), answer.text);
  });

  test("the same key is told the holder on an entity whose access includes read", async () => {
    for (const [label, method, path, body] of writes("Contact")) {
      assertNamed(await server.call(method, path, { body, apiKey: PUBLISHABLE }), holders.Contact!, label);
    }
  });

  test("a secret key is told the holder, whatever the entity's access", async () => {
    for (const [label, method, path, body] of writes("Signup")) {
      assertNamed(await server.call(method, path, { body }), holders.Signup!, label);
    }
  });

  test("an Idempotency-Key changes nothing: the refusal is the same, and is not replayed as another's", async () => {
    const headers = { "Idempotency-Key": "unique-holder-1" };
    const first = await server.call("POST", "/api/entities/Signup", { body: { email: EMAIL }, apiKey: PUBLISHABLE, headers });
    assertUnnamed(first, holders.Signup!, "first");
    const again = await server.call("POST", "/api/entities/Signup", { body: { email: EMAIL }, apiKey: PUBLISHABLE, headers });
    assertUnnamed(again, holders.Signup!, "again");
  });

  test("an import's taken id is named to the secret key that alone may import", async () => {
    const answer = await server.call("POST", "/api/entities/Signup/import", { body: [{ id: holders.Signup, email: "new@x.example" }] });
    assert.equal(answer.status, 409, answer.text);
    assert.equal(answer.body.error.details.existing_id, holders.Signup);
  });
});
