// A user's values in a rule's templates are values (docs/rules.md): where a user may edit its own
// User record, a field it sets to an object ({"$ne": null}) must not become operators in the rules
// that name it, or the user meets them on every record. On every store.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startTestServer, type TestServer } from "../support/server.ts";
import { signUp } from "../support/users.ts";

/** Users keep their own preferences, an object, and may edit them. */
const USER = {
  properties: { prefs: { type: "object" } },
  access: { publishable: ["read", "update"] },
  rls: { read: { id: "{{user.id}}" }, update: { id: "{{user.id}}" } },
};
/** A note is read by its owner, and (as an app might write it) by users whose prefs are its team. */
const NOTE = {
  properties: { text: { type: "string" }, owner: { type: "string" }, team: { type: "object" } },
  access: { publishable: ["read"] },
  rls: { read: { $or: [{ owner: "{{user.email}}" }, { team: "{{user.data.prefs}}" }] } },
};

const printed: string[] = [];
let server: TestServer;

before(async () => {
  server = await startTestServer({ schema: { User: USER, Note: NOTE }, printCode: (line) => printed.push(line), trustProxy: true });
  for (const name of ["a", "b"]) {
    assert.equal((await server.call("POST", "/api/entities/Note", { body: { text: `team ${name}'s note`, owner: `owner-${name}@example.com`, team: { name } } })).status, 201);
  }
  assert.equal((await server.call("POST", "/api/entities/Note", { body: { text: "alice's note", owner: "alice@example.com" } })).status, 201);
});
after(() => server.close());

function as(token: string, method: string, path: string, body?: unknown) {
  return server.call(method, path, { apiKey: null, headers: { Authorization: `Bearer ${token}` }, body });
}

test("an object a user gives itself is a value: operators in it meet no record", async () => {
  const token = await signUp(server, printed, "alice@example.com");
  const own = await as(token, "GET", "/api/entities/Note");
  assert.equal(own.status, 200, own.text);
  assert.deepEqual(own.body.map((note: any) => note.text), ["alice's note"]);
  for (const injected of [{ $ne: null }, { $exists: true }, { $regex: "" }, { $nin: [] }, { $in: [{ name: "a" }, { name: "b" }] }, { name: "a" }]) {
    const set = await as(token, "PUT", "/api/entities/User/me", { prefs: injected });
    assert.equal(set.status, 200, set.text);
    const notes = await as(token, "GET", "/api/entities/Note");
    assert.equal(notes.status, 200, notes.text);
    assert.deepEqual(notes.body.map((note: any) => note.text), ["alice's note"], `prefs ${JSON.stringify(injected)} reads only her own`);
    const count = await as(token, "GET", "/api/entities/Note/count");
    assert.equal(count.body.count, 1, `prefs ${JSON.stringify(injected)} counts only her own`);
  }
});
