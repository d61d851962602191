// The rules' mechanics through HTTP (docs/rules.md): an owner rule on reads and writes, a field
// kept from non-admins, a user's own fields in templates, and malformed rules refused at start-up.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { PUBLISHABLE, SECRET, startTestServer, type TestServer } from "../support/server.ts";
import { createServer } from "../../src/server.ts";

const NOTE = {
  type: "object",
  properties: {
    title: { type: "string" },
    owner_email: { type: "string" },
    department: { type: "string" },
    salary: { type: "integer", rls: { read: { user_condition: { role: "admin" } }, write: { user_condition: { role: "admin" } } } },
  },
  rls: {
    create: { owner_email: "{{user.email}}" },
    read: { $or: [{ owner_email: "{{user.email}}" }, { department: "{{user.data.department}}" }, { user_condition: { role: "admin" } }] },
    update: { $or: [{ owner_email: "{{user.email}}" }, { user_condition: { role: "admin" } }] },
    delete: { user_condition: { role: "admin" } },
  },
};
const USER = { type: "object", properties: { department: { type: "string" } } };

const printed: string[] = [];
let server: TestServer;

before(async () => {
  server = await startTestServer({ schema: { Note: NOTE, User: USER }, printCode: (line) => printed.push(line), trustProxy: true });
});
after(() => server.close());

async function signUp(email: string, role = "user", department?: string): Promise<string> {
  const registered = await server.call("POST", "/api/auth/register", { apiKey: null, body: { email, password: "correct horse battery" }, headers: { "X-Forwarded-For": email } });
  assert.equal(registered.status, 200, registered.text);
  const line = [...printed].reverse().find((text) => text.includes(` for ${email}:`))!;
  const verified = await server.call("POST", "/api/auth/verify-otp", { apiKey: null, body: { email, otp_code: /code (\d{6})/.exec(line)![1] }, headers: { "X-Forwarded-For": email } });
  assert.equal(verified.status, 200, verified.text);
  if (role !== "user") {
    const set = await server.call("PATCH", `/api/users/${verified.body.user.id}`, { body: { role } });
    assert.equal(set.status, 200, set.text);
  }
  if (department !== undefined) {
    const set = await server.call("PATCH", `/api/entities/User/${verified.body.user.id}`, { body: { department } });
    assert.equal(set.status, 200, set.text);
  }
  const login = await server.call("POST", "/api/auth/login", { apiKey: null, body: { email, password: "correct horse battery" }, headers: { "X-Forwarded-For": email } });
  return login.body.access_token;
}

function as(token: string | null, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  return server.call(method, path, { apiKey: token === null ? PUBLISHABLE : null, headers: token === null ? headers : { Authorization: `Bearer ${token}`, ...headers }, body });
}

test("an owner rule narrows every read and guards every write; a field rule hides salary from non-admins", async () => {
  const ada = await signUp("ada@example.com", "user", "lab");
  const bob = await signUp("bob@example.com", "user", "sales");
  const boss = await signUp("boss@example.com", "admin");
  const N = "/api/entities/Note";

  const mine = await as(ada, "POST", N, { title: "ada's", owner_email: "ada@example.com", department: "lab" });
  assert.equal(mine.status, 201, mine.text);
  assert.equal((await as(ada, "POST", N, { title: "forged", owner_email: "bob@example.com" })).status, 403);
  assert.equal((await as(ada, "POST", N, { title: "paid", owner_email: "ada@example.com", salary: 5 })).status, 403, "salary is written by admins only");
  const secret = await server.call("POST", N, { body: { title: "bob's", owner_email: "bob@example.com", department: "sales", salary: 100 } });
  assert.equal(secret.status, 201);
  const bobs = secret.body.id;

  // Ada reads hers; Bob's is absent to her everywhere.
  assert.equal((await as(ada, "GET", `${N}/${bobs}`)).status, 404);
  assert.equal((await as(ada, "GET", `${N}/${bobs}`, undefined, { "If-None-Match": secret.headers.get("etag")! })).status, 404);
  const list = await as(ada, "GET", N);
  assert.deepEqual(list.body.map((note: any) => note.title), ["ada's"]);
  assert.equal((await as(ada, "GET", `${N}/count`)).body.count, 1);
  assert.equal((await as(ada, "GET", `${N}/count?q=${encodeURIComponent('{"title":"bob\'s"}')}`)).body.count, 0);
  const distinct = await as(ada, "GET", `${N}/distinct/owner_email`);
  assert.deepEqual(distinct.body, ["ada@example.com"]);
  const sums = await as(ada, "POST", `${N}/aggregate`, { groupBy: ["owner_email"], count: true });
  assert.equal(sums.status, 200, sums.text);
  assert.doesNotMatch(sums.text, /bob@example\.com/);
  const exported = await as(ada, "GET", `${N}/export`);
  assert.doesNotMatch(exported.text, /bob/);
  assert.equal((await as(null, "GET", N)).body.length, 0, "a key alone is nobody: no condition holds");

  // Writes on Bob's record: absent to Ada; Bob may change his own but not move it away, nor delete it.
  assert.equal((await as(ada, "PATCH", `${N}/${bobs}`, { title: "mine now" })).status, 404);
  assert.equal((await as(ada, "DELETE", `${N}/${bobs}`)).status, 404);
  assert.equal((await as(bob, "PATCH", `${N}/${bobs}`, { title: "renamed" })).status, 200);
  assert.equal((await as(bob, "PATCH", `${N}/${bobs}`, { owner_email: "ada@example.com" })).status, 403, "no update moves a record out of reach");
  assert.equal((await as(bob, "DELETE", `${N}/${bobs}`)).status, 403);
  const bulk = await as(ada, "PUT", `${N}/bulk`, [{ id: mine.body.id, title: "ok" }, { id: bobs, title: "x" }]);
  assert.equal(bulk.status, 404, bulk.text);
  // Absent before anything is said of the changes: a wrong value is no probe of existence.
  assert.equal((await as(ada, "PUT", `${N}/bulk`, [{ id: bobs, title: 12345 }])).status, 404);
  assert.equal((await as(ada, "PATCH", `${N}/${bobs}`, { title: 12345 })).status, 404);
  assert.equal((await server.call("GET", `${N}/${bobs}`)).body.title, "renamed");

  // Salary: hidden from users, naming it is 403, admins see it.
  const bobsView = await as(bob, "GET", `${N}/${bobs}`);
  assert.equal(bobsView.body.salary, undefined);
  for (const path of [`${N}?q=${encodeURIComponent('{"salary":{"$gt":50}}')}`, `${N}?sort_by=salary`, `${N}?fields=salary`, `${N}/distinct/salary`]) {
    const refused = await as(bob, "GET", path);
    assert.equal(refused.status, 403, path);
    assert.match(refused.text, /salary/);
  }
  assert.equal((await as(bob, "POST", `${N}/aggregate`, { groupBy: ["owner_email"], sum: ["salary"] })).status, 403);
  assert.equal((await as(boss, "GET", `${N}/${bobs}`)).body.salary, 100);
  assert.equal((await as(boss, "GET", N)).body.length, 2);
  assert.equal((await as(boss, "DELETE", `${N}/${bobs}`)).status, 200);
});

test("{{user.data.<field>}} reads the user's own field: the same department's records", async () => {
  const eve = await signUp("eve@example.com", "user", "lab");
  const N = "/api/entities/Note";
  await server.call("POST", N, { body: { title: "lab notes", owner_email: "someone@example.com", department: "lab" } });
  await server.call("POST", N, { body: { title: "sales notes", owner_email: "someone@example.com", department: "sales" } });
  const titles = (await as(eve, "GET", `${N}?sort_by=title`)).body.map((note: any) => note.title);
  assert.ok(titles.includes("lab notes"));
  assert.ok(!titles.includes("sales notes"));
});

test("a malformed rule stops the start-up, naming the entity, the operation and what is wrong", async () => {
  const bad = (rls: unknown) => createServer({ schema: { Note: { ...NOTE, rls } }, memory: true, port: 0, log: "off" } as never);
  await assert.rejects(bad({ read: { owner: "{{user.email}}" } }), /entity "Note", "rls"\."read": .*"owner"/);
  await assert.rejects(bad({ read: { owner_email: "{{user.nickname}}" } }), /"rls"\."read": .*nickname/);
  await assert.rejects(bad({ list: true }), /"rls" names "list"/);
  await assert.rejects(bad({ update: { $or: [] } }), /"rls"\."update": \$or takes a non-empty array/);
  await assert.rejects(bad({ read: { owner_email: { $gt: 1 } } }), /"rls"\."read"/);
});

test("adding, changing or dropping a rule is a schema change the start-up names, with nothing to check", async () => {
  const { mkdtempSync, rmSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const dir = mkdtempSync(join(tmpdir(), "tabula-rules-banner-"));
  const start = async (schema: Record<string, unknown>) => createServer({ schema, data: dir, port: 0, secretKey: SECRET, log: "off" } as never);
  try {
    const open = { ...NOTE, rls: undefined, properties: { ...NOTE.properties, salary: { type: "integer" } } };
    await (await start({ Note: open })).close();
    const ruled = await start({ Note: NOTE, User: USER });
    const lines = ruled.schemaLines.join("\n");
    await ruled.close();
    assert.match(lines, /Note: rule "read" open → \{"\$or":/);
    assert.match(lines, /Note: rule "delete" open → \{"user_condition":\{"role":"admin"\}\}/);
    assert.match(lines, /Note\.salary: rule "read" open → /);
    const loosened = await start({ Note: { ...NOTE, rls: { ...NOTE.rls, delete: true } }, User: USER });
    assert.match(loosened.schemaLines.join("\n"), /Note: rule "delete" \{"user_condition":\{"role":"admin"\}\} → true/);
    await loosened.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("update-many and delete-many, open to users where the entity rules them, touch only what the caller may change", async () => {
  const ann = await signUp("ann@example.com", "user", "ops");
  const N = "/api/entities/Note";
  const own = await as(ann, "POST", N, { title: "ann 1", owner_email: "ann@example.com", department: "ops" });
  const other = await server.call("POST", N, { body: { title: "ops other", owner_email: "zed@example.com", department: "ops" } });
  assert.equal(own.status, 201);
  // Ann may read both (same department), change only her own.
  const q = { department: "ops" };
  const updated = await as(ann, "PATCH", `${N}/update-many`, { q, set: { title: "changed" } });
  assert.equal(updated.status, 200, updated.text);
  assert.deepEqual(updated.body.ids, [own.body.id]);
  assert.equal((await server.call("GET", `${N}/${other.body.id}`)).body.title, "ops other");
  // Deleting is for admins: nothing of Ann's filter is hers to delete.
  const deleted = await as(ann, "DELETE", `${N}?q=${encodeURIComponent(JSON.stringify(q))}`);
  assert.equal(deleted.status, 200, deleted.text);
  assert.equal(deleted.body.count, 0);
  assert.equal((await server.call("GET", `${N}/count?q=${encodeURIComponent(JSON.stringify(q))}`)).body.count, 2);
  // An update-many may not move records out of reach either: all or nothing.
  const moved = await as(ann, "PATCH", `${N}/update-many`, { q, set: { owner_email: "zed@example.com" } });
  assert.equal(moved.status, 403, moved.text);
  assert.equal((await server.call("GET", `${N}/${own.body.id}`)).body.owner_email, "ann@example.com");
});
