// Anonymous visitors (docs/base44-sdk.md): where the server lets them in, a request with neither key
// nor token acts as a publishable key with no user: "access" and the rules hold, every condition
// naming the user is false, the secret key's routes stay shut, and a wrong key is still refused.
// Without the setting such a request is 401.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createClient } from "@base44/sdk";
import { startTestServer, TASK, type TestServer } from "../support/server.ts";
import { RawSocket } from "../support/socket-io.ts";

const NOTE = {
  name: "Note",
  type: "object",
  properties: { text: { type: "string" }, owner: { type: "string" } },
  access: { publishable: ["read"] },
};
/** Each user reads their own; nobody without a user reads any. */
const DIARY = {
  name: "Diary",
  type: "object",
  properties: { text: { type: "string" } },
  rls: { read: { created_by_id: "{{user.id}}" }, create: { user_condition: { role: "user" } } },
};

describe("anonymous visitors let in", () => {
  let server: TestServer;
  before(async () => (server = await startTestServer({ schema: { Task: TASK, Note: NOTE, Diary: DIARY }, anonymous: true })));
  after(() => server.close());

  test("list, create, update and delete with no key at all, as a public Base44 app does", async () => {
    const created = await server.call("POST", "/api/entities/Task", { body: { title: "from a visitor" }, apiKey: null });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.created_by_id ?? null, null);
    const list = await server.call("GET", "/api/entities/Task", { apiKey: null });
    assert.equal(list.status, 200);
    assert.ok(list.body.some((task: { id: string }) => task.id === created.body.id));
    const updated = await server.call("PATCH", `/api/entities/Task/${created.body.id}`, { body: { status: "done" }, apiKey: null });
    assert.equal(updated.body.status, "done");
    const deleted = await server.call("DELETE", `/api/entities/Task/${created.body.id}`, { apiKey: null });
    assert.equal(deleted.status, 200, deleted.text);
  });

  test("the entity's access holds: a read-only entity refuses a visitor's write", async () => {
    const refused = await server.call("POST", "/api/entities/Note", { body: { text: "x" }, apiKey: null });
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.error.code, "forbidden");
    assert.equal((await server.call("GET", "/api/entities/Note", { apiKey: null })).status, 200);
  });

  test("rules naming the user are false for a visitor: nothing to read, no create", async () => {
    const own = await server.call("POST", "/api/entities/Diary", { body: { text: "the service's" } });
    assert.equal(own.status, 201, own.text);
    const list = await server.call("GET", "/api/entities/Diary", { apiKey: null });
    assert.deepEqual(list.body, []);
    assert.equal((await server.call("GET", `/api/entities/Diary/${own.body.id}`, { apiKey: null })).status, 404);
    const create = await server.call("POST", "/api/entities/Diary", { body: { text: "mine" }, apiKey: null });
    assert.equal(create.status, 403, create.text);
  });

  test("the secret key's routes stay shut", async () => {
    for (const [method, path] of [["GET", "/api/keys"], ["GET", "/api/webhooks"], ["GET", "/metrics"], ["GET", "/api/users"]] as const) {
      const answer = await server.call(method, path, { apiKey: null });
      assert.ok(answer.status === 401 || answer.status === 403, `${method} ${path}: ${answer.status} ${answer.text}`);
    }
  });

  test("a wrong key is still refused, not taken for a visitor", async () => {
    const answer = await server.call("GET", "/api/entities/Task", { apiKey: "pk_not_a_key_of_this_server" });
    assert.equal(answer.status, 401);
  });

  test("the change feed and its stream take a visitor too", async () => {
    const changes = await server.call("GET", "/api/entities/Task/changes", { apiKey: null });
    assert.equal(changes.status, 200, changes.text);
    assert.ok(Array.isArray(changes.body.changes));
  });

  test("a realtime socket with no key joins a readable entity's room and hears its changes, not a ruled one's", async () => {
    const { socket } = await RawSocket.open(server.url);
    try {
      socket.send("40");
      assert.match(await socket.next(), /^40\{"sid":"[\w-]+"\}$/);
      assert.deepEqual(await socket.join("entities:any-app:Task", 1), { ok: true });
      const created = await server.call("POST", "/api/entities/Task", { body: { title: "heard" } });
      const { event } = await socket.nextUpdate();
      assert.equal(event.id, created.body.id);
      assert.equal(event.data.title, "heard");
    } finally {
      await socket.close();
    }
  });

  test("the Base44 SDK with no token lists and creates", async () => {
    const base44 = createClient({ serverUrl: server.url, appId: "any-app", requiresAuth: false });
    const task = await base44.entities.Task.create({ title: "by the SDK, anonymously" });
    assert.equal(task.title, "by the SDK, anonymously");
    const found = await base44.entities.Task.filter({ title: "by the SDK, anonymously" });
    assert.deepEqual(found.map((t) => (t as { id: string }).id), [task.id]);
  });
});

describe("anonymous visitors not let in (the default)", () => {
  let server: TestServer;
  before(async () => (server = await startTestServer()));
  after(() => server.close());

  test("a request with no key is 401, saying how to let visitors in", async () => {
    const answer = await server.call("GET", "/api/entities/Task", { apiKey: null });
    assert.equal(answer.status, 401);
    assert.equal(answer.body.error.code, "unauthorized");
    assert.match(answer.body.error.message, /--anonymous/);
  });
});
