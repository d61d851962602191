// Who a user is and what it may do (its User record's email, role and disabled) is written by the
// secret key and admins alone, through every route (docs/users.md), even where the app lets users
// update their own User record: otherwise one signs up, makes itself an admin, or takes an email it
// never proved. On every store.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startTestServer, type TestServer } from "../support/server.ts";

const APP = "app1";
const SELF = { id: "{{user.id}}" };
/** An app that lets each user read and update its own User record, and upsert it by email. */
const USER = {
  name: "User",
  type: "object",
  properties: { nickname: { type: "string" }, role: { type: "string", enum: ["user", "editor", "admin"], default: "user" } },
  access: { publishable: ["read", "create", "update"] },
  rls: { read: SELF, create: true, update: SELF },
};

const printed: string[] = [];
let server: TestServer;

before(async () => {
  server = await startTestServer({ schema: { User: USER }, appId: APP, printCode: (line) => printed.push(line) });
});
after(() => server.close());

async function signUp(email: string): Promise<{ token: string; id: string }> {
  const password = "correct horse battery";
  assert.equal((await server.call("POST", "/api/auth/register", { apiKey: null, body: { email, password } })).status, 200);
  const line = [...printed].reverse().find((text) => text.includes(` for ${email}:`));
  const code = /code (\d{6})/.exec(line ?? "")?.[1];
  assert.ok(code, `a code was printed for ${email}: ${JSON.stringify(printed)}`);
  const verified = await server.call("POST", "/api/auth/verify-otp", { apiKey: null, body: { email, otp_code: code } });
  assert.equal(verified.status, 200, verified.text);
  return { token: verified.body.access_token, id: verified.body.user.id };
}

function as(token: string, method: string, path: string, body?: unknown) {
  return server.call(method, path, { apiKey: null, headers: { Authorization: `Bearer ${token}` }, body });
}

test("a user may update its own record, but not its email, role or disabled, by any route", async () => {
  const eve = await signUp("eve@example.com");
  const changed = await as(eve.token, "PATCH", `/api/entities/User/${eve.id}`, { nickname: "e" });
  assert.equal(changed.status, 200, changed.text);
  assert.equal(changed.body.nickname, "e");

  const attempts: Array<[string, string, unknown]> = [
    ["PATCH", `/api/entities/User/${eve.id}`, { role: "admin" }],
    ["PATCH", `/api/entities/User/${eve.id}`, { email: "boss@example.com" }],
    ["PATCH", `/api/entities/User/${eve.id}`, { disabled: true }],
    ["PUT", `/api/entities/User/${eve.id}`, { role: "editor", nickname: "f" }],
    ["PUT", `/api/apps/${APP}/entities/User/${eve.id}`, { role: "admin" }],
    ["PUT", "/api/entities/User/bulk", [{ id: eve.id, role: "admin" }]],
    ["PATCH", "/api/entities/User/update-many", { q: { id: eve.id }, set: { role: "admin" } }],
    ["POST", "/api/entities/User/upsert", { match: ["email"], records: [{ email: "eve@example.com", role: "admin" }] }],
    // A record of its own making, as an admin, or with an email it has not proven.
    ["POST", "/api/entities/User", { email: "root@example.com", role: "admin" }],
    ["POST", "/api/entities/User/bulk", [{ email: "ceo@example.com" }]],
  ];
  for (const [method, path, body] of attempts) {
    const answer = await as(eve.token, method, path, body);
    assert.equal(answer.status, 403, `${method} ${path} ${JSON.stringify(body)}: ${answer.text}`);
    assert.equal(answer.body.error.code, "forbidden");
  }
  const after = await server.call("GET", `/api/entities/User/${eve.id}`);
  assert.deepEqual([after.body.email, after.body.role, after.body.disabled, after.body.nickname], ["eve@example.com", "user", false, "e"]);
  const users = await server.call("GET", "/api/entities/User");
  assert.deepEqual(users.body.map((user: { email: string }) => user.email), ["eve@example.com"], "no User record was made");
  const me = await as(eve.token, "GET", "/api/entities/User/me");
  assert.equal(me.body.role, "user");
});

test("the secret key and an admin write them", async () => {
  const ada = await signUp("ada@example.com");
  const bob = await signUp("bob@example.com");
  const promoted = await server.call("PATCH", `/api/entities/User/${ada.id}`, { body: { role: "admin" } });
  assert.equal(promoted.status, 200, promoted.text);
  // Ada, an admin now, may update Bob's record where the app's rule lets her reach it: here, none
  // does (each user reaches its own), so her own record shows what an admin may write.
  const renamed = await as(ada.token, "PATCH", `/api/entities/User/${ada.id}`, { email: "ada.lovelace@example.com", nickname: "countess" });
  assert.equal(renamed.status, 200, renamed.text);
  assert.equal(renamed.body.email, "ada.lovelace@example.com");
  const demoted = await server.call("PATCH", `/api/entities/User/${bob.id}`, { body: { role: "editor", disabled: true } });
  assert.equal(demoted.status, 200, demoted.text);
  assert.deepEqual([demoted.body.role, demoted.body.disabled], ["editor", true]);
});
