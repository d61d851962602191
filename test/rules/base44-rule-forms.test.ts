// Rules as the Base44 CLI writes them (docs/rules.md, "Base44's forms"): an entity's "write" rule
// stands for create, update and delete where they have none of their own; a field's "create" and
// "update" rules split its "write"; null and "" are no rule; "_id" names the id; enumNames labels an
// enum. Each checked through HTTP by signed-in users, and malformed forms refused at start-up.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createServer } from "../../src/server.ts";
import { startTestServer, type TestServer } from "../support/server.ts";
import { signUp } from "../support/users.ts";

/** Anyone reads; the author alone writes (Base44's "write"), but anyone signed in may create. */
const POST = {
  type: "object",
  properties: {
    title: { type: "string" },
    author: { type: "string" },
    status: { type: "string", enum: ["draft", "live"], enumNames: ["Draft", "Live"], rls: { create: true, update: { user_condition: { role: "admin" } }, delete: false } },
  },
  rls: { read: true, write: { author: "{{user.email}}" }, create: { user_condition: { role: "user" } } },
};
/** No rules at all, as null and "" say. */
const OPEN = { type: "object", properties: { text: { type: "string" } }, rls: { read: null, create: "", update: null } };

const printed: string[] = [];
let server: TestServer;
let ada: string;
let bob: string;
let boss: string;

before(async () => {
  server = await startTestServer({ schema: { Post: POST, Open: OPEN }, printCode: (line) => printed.push(line), trustProxy: true, anonymous: true });
  ada = await signUp(server, printed, "ada@example.com");
  bob = await signUp(server, printed, "bob@example.com");
  boss = await signUp(server, printed, "boss@example.com", "admin");
});
after(() => server.close());

function as(token: string, method: string, path: string, body?: unknown) {
  return server.call(method, path, { apiKey: null, headers: { Authorization: `Bearer ${token}` }, body });
}

test('an entity\'s "write" rule guards update and delete; "create" of its own wins over it', async () => {
  // A plain user may create (its own create rule), even a post naming another author: "write" is not asked.
  const mine = await as(ada, "POST", "/api/entities/Post", { title: "ada's", author: "ada@example.com", status: "draft" });
  assert.equal(mine.status, 201, mine.text);
  const forged = await as(ada, "POST", "/api/entities/Post", { title: "bob's?", author: "bob@example.com" });
  assert.equal(forged.status, 201, "create has a rule of its own");
  // The admin is no "user": the create rule refuses it.
  assert.equal((await as(boss, "POST", "/api/entities/Post", { title: "boss's", author: "boss@example.com" })).status, 403);
  // Update and delete fall to "write": the author only.
  assert.equal((await as(ada, "PATCH", `/api/entities/Post/${mine.body.id}`, { title: "ada's, edited" })).status, 200);
  const bobsEdit = await as(bob, "PATCH", `/api/entities/Post/${mine.body.id}`, { title: "bob was here" });
  assert.equal(bobsEdit.status, 403, bobsEdit.text);
  assert.match(bobsEdit.body.error.message, /"rls"\."update"/);
  assert.equal((await as(bob, "DELETE", `/api/entities/Post/${mine.body.id}`)).status, 403);
  assert.equal((await as(bob, "GET", `/api/entities/Post/${mine.body.id}`)).body.title, "ada's, edited", "read: true lets Bob read it");
  assert.equal((await as(ada, "DELETE", `/api/entities/Post/${forged.body.id}`)).status, 403, "Ada is not its author");
  assert.equal((await as(ada, "DELETE", `/api/entities/Post/${mine.body.id}`)).status, 200);
});

test('a field\'s "create" and "update" rules: set at create by anyone, changed later by admins only', async () => {
  const post = await as(ada, "POST", "/api/entities/Post", { title: "status", author: "ada@example.com", status: "draft" });
  assert.equal(post.status, 201, post.text);
  const changed = await as(ada, "PATCH", `/api/entities/Post/${post.body.id}`, { status: "live" });
  assert.equal(changed.status, 403, changed.text);
  assert.match(changed.body.error.message, /Post\.status may not be written .* for an update/);
  assert.equal((await as(ada, "PATCH", `/api/entities/Post/${post.body.id}`, { title: "status, renamed" })).status, 200);
  // The admin passes the field's update rule, but not the record's ("write": the author only).
  assert.equal((await as(boss, "PATCH", `/api/entities/Post/${post.body.id}`, { status: "live" })).status, 403);
  const bySecret = await server.call("PATCH", `/api/entities/Post/${post.body.id}`, { body: { status: "live" } });
  assert.equal(bySecret.body.status, "live");
});

test('null and "" are no rule: anyone, a visitor with no key included, reads and writes', async () => {
  const visitor = await server.call("POST", "/api/entities/Open", { apiKey: null, body: { text: "hello" } });
  assert.equal(visitor.status, 201, visitor.text);
  assert.equal((await server.call("PATCH", `/api/entities/Open/${visitor.body.id}`, { apiKey: null, body: { text: "hi" } })).body.text, "hi");
  assert.equal((await server.call("GET", "/api/entities/Open", { apiKey: null })).body.length, 1);
});

test('"_id" names the id in a condition, and enumNames must label every value', async () => {
  const withId = { type: "object", properties: { text: { type: "string" } }, rls: { read: { $or: [{ _id: "0123456789abcdef01234567" }, { user_condition: { role: "admin" } }] } } };
  const ok = await createServer({ schema: { Pinned: withId }, memory: true, port: 0 });
  await ok.close();
  const badNames = { type: "object", properties: { s: { type: "string", enum: ["a", "b"], enumNames: ["A"] } } };
  await assert.rejects(createServer({ schema: { Bad: badNames }, memory: true, port: 0 }), /"enumNames" labels the values of "enum": an array of as many strings/);
  const badRule = { type: "object", properties: { s: { type: "string" } }, rls: { write: 3 } };
  await assert.rejects(createServer({ schema: { Bad: badRule }, memory: true, port: 0 }), /"rls"\."write" must be true \(anyone\), false \(the secret key only\), a condition object, .* or null \(no rule\)/);
});
