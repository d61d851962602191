// Users and sign-in through HTTP (docs/users.md), on every store: sign-up with a code, sign-in,
// sessions that end, answers that do not tell who is registered, limits on guessing, and no secret
// of a user in any answer.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHmac, randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { PUBLISHABLE, SECRET, startTestServer, type TestServer } from "../support/server.ts";
import { SseClient } from "../support/sse.ts";
import { RawSocket } from "../support/socket-io.ts";

/** The codes the server printed (no webhook endpoint asks for them), newest last. */
const printed: string[] = [];
let server: TestServer;

before(async () => {
  // Behind a proxy, as far as the server knows: each test's failed tries come from an address of
  // its own (X-Forwarded-For), and do not count against the next test's.
  server = await startTestServer({ printCode: (line) => printed.push(line), trustProxy: true });
});
after(() => server.close());

/** Headers saying the request comes from its own client address. */
function from(address: string): Record<string, string> {
  return { "X-Forwarded-For": address };
}

function codeFor(email: string): { code: string; resetToken: string | undefined } {
  const line = [...printed].reverse().find((text) => text.includes(` for ${email}:`));
  assert.ok(line, `no code was printed for ${email}: ${JSON.stringify(printed)}`);
  return { code: /code (\d{6})/.exec(line)![1]!, resetToken: /reset_token (\S+)\)/.exec(line)?.[1] };
}

/** A call as a signed-in user: its token, no key. */
function asUser(token: string, method: string, path: string, body?: unknown) {
  return server.call(method, path, { apiKey: null, headers: { Authorization: `Bearer ${token}` }, body });
}

/** Registers and verifies `email`, answering its first token and user. */
async function signUp(email: string, password = "correct horse battery"): Promise<{ token: string; user: any }> {
  const registered = await server.call("POST", "/api/auth/register", { apiKey: null, body: { email, password, full_name: "Ada" } });
  assert.equal(registered.status, 200, registered.text);
  const { code } = codeFor(email.toLowerCase());
  const verified = await server.call("POST", "/api/auth/verify-otp", { apiKey: null, body: { email, otp_code: code } });
  assert.equal(verified.status, 200, verified.text);
  return { token: verified.body.access_token, user: verified.body.user };
}

test("sign up with a code, sign in, act as the user, sign out", async () => {
  const registered = await server.call("POST", "/api/auth/register", { apiKey: null, body: { email: "Ada@Example.com", password: "correct horse battery" } });
  assert.equal(registered.status, 200);
  assert.equal(registered.body.email, "ada@example.com");
  assert.doesNotMatch(registered.text, /\d{6}/, "the answer holds no code");
  // Not yet proven: no sign-in.
  const early = await server.call("POST", "/api/auth/login", { apiKey: null, body: { email: "ada@example.com", password: "correct horse battery" } });
  assert.equal(early.status, 403);
  assert.equal(early.body.error.code, "email_not_verified");
  const { code } = codeFor("ada@example.com");
  const verified = await server.call("POST", "/api/auth/verify-otp", { apiKey: null, body: { email: "ada@example.com", otp_code: code } });
  assert.equal(verified.status, 200, verified.text);
  assert.equal(verified.body.user.email, "ada@example.com");
  assert.equal(verified.body.user.role, "user");
  assert.equal(verified.body.user.is_verified, true);
  // The code is used up.
  const again = await server.call("POST", "/api/auth/verify-otp", { apiKey: null, body: { email: "ada@example.com", otp_code: code } });
  assert.equal(again.status, 400);
  assert.equal(again.body.error.code, "invalid_code");

  const login = await server.call("POST", "/api/auth/login", { apiKey: null, body: { email: "ADA@example.com", password: "correct horse battery" } });
  assert.equal(login.status, 200, login.text);
  const token: string = login.body.access_token;
  const [, payload] = token.split(".");
  const claims = JSON.parse(Buffer.from(payload!, "base64url").toString());
  assert.equal(claims.sub, login.body.user.id);
  assert.equal(claims.email, "ada@example.com");
  assert.equal(claims.role, "user");
  assert.equal(typeof claims.sid, "string");
  assert.ok(claims.exp - claims.iat === 7 * 86_400, "a session lasts 7 days by default");

  const me = await asUser(token, "GET", "/api/entities/User/me");
  assert.equal(me.status, 200);
  assert.equal(me.body.id, login.body.user.id);
  const renamed = await asUser(token, "PUT", "/api/entities/User/me", { full_name: "Ada Lovelace" });
  assert.equal(renamed.status, 200, renamed.text);
  assert.equal(renamed.body.full_name, "Ada Lovelace");
  for (const field of ["role", "email", "disabled"]) {
    const refused = await asUser(token, "PUT", "/api/entities/User/me", { [field]: field === "disabled" ? false : "admin@example.com" });
    assert.equal(refused.status, 403, `${field}: ${refused.text}`);
  }
  // The SDK's prefix answers the same.
  const sdkMe = await asUser(token, "GET", "/api/apps/any-app/entities/User/me");
  assert.equal(sdkMe.body.full_name, "Ada Lovelace");

  // A record it creates is its own.
  const created = await asUser(token, "POST", "/api/entities/Task", { title: "mine" });
  assert.equal(created.status, 201, created.text);
  assert.equal(created.body.created_by, "ada@example.com");
  assert.equal(created.body.created_by_id, undefined, "a user acts with a publishable key's limits");
  const bySecret = await server.call("GET", `/api/entities/Task/${created.body.id}`);
  assert.equal(bySecret.body.created_by_id, login.body.user.id);
  assert.equal(bySecret.body.created_by, "ada@example.com");
  const filtered = await server.call("GET", `/api/entities/Task?q=${encodeURIComponent(JSON.stringify({ created_by: "ada@example.com" }))}`, { apiKey: PUBLISHABLE });
  assert.deepEqual(filtered.body.map((task: any) => task.id), [created.body.id]);

  // A user may not list the users.
  assert.equal((await asUser(token, "GET", "/api/entities/User")).status, 403);
  assert.equal((await asUser(token, "GET", "/api/users")).status, 403);

  const out = await asUser(token, "POST", "/api/auth/logout");
  assert.equal(out.status, 200);
  const after = await asUser(token, "GET", "/api/entities/User/me");
  assert.equal(after.status, 401);
  assert.equal(after.body.error.code, "unauthorized");
  assert.equal((await asUser(token, "GET", "/api/entities/Task")).status, 401);
});

test("register, resend and reset request answer alike for known and unknown emails; sign-in too", async () => {
  await signUp("known@example.com");
  const answers = async (email: string) => {
    const out: string[] = [];
    for (const [path, body] of [
      ["/api/auth/register", { email, password: "another password" }],
      ["/api/auth/resend-otp", { email }],
      ["/api/auth/reset-password-request", { email }],
    ] as const) {
      const answer = await server.call("POST", path, { apiKey: null, body, headers: from("10.0.2.1") });
      out.push(`${answer.status} ${answer.text.replace(email, "<email>")}`);
    }
    return out;
  };
  assert.deepEqual(await answers("known@example.com"), await answers("nobody@example.com"));
  const wrongPassword = await server.call("POST", "/api/auth/login", { apiKey: null, body: { email: "known@example.com", password: "not the password" }, headers: from("10.0.2.2") });
  const unknown = await server.call("POST", "/api/auth/login", { apiKey: null, body: { email: "nobody@example.com", password: "not the password" }, headers: from("10.0.2.2") });
  assert.equal(wrongPassword.status, 401);
  assert.equal(wrongPassword.text, unknown.text);
  assert.equal(wrongPassword.body.error.code, "invalid_credentials");
  // The known user's password was not changed by a second register.
  const login = await server.call("POST", "/api/auth/login", { apiKey: null, body: { email: "known@example.com", password: "correct horse battery" } });
  assert.equal(login.status, 200);
});

test("a code takes five tries; then even the right one is refused", async () => {
  await server.call("POST", "/api/auth/register", { apiKey: null, body: { email: "tries@example.com", password: "correct horse battery" } });
  const { code } = codeFor("tries@example.com");
  const wrong = code === "000000" ? "111111" : "000000";
  for (let i = 0; i < 5; i++) {
    const answer = await server.call("POST", "/api/auth/verify-otp", { apiKey: null, body: { email: "tries@example.com", otp_code: wrong }, headers: from("10.0.3.1") });
    assert.equal(answer.status, 400);
  }
  const right = await server.call("POST", "/api/auth/verify-otp", { apiKey: null, body: { email: "tries@example.com", otp_code: code }, headers: from("10.0.3.2") });
  assert.equal(right.status, 400, "the code was used up by five wrong tries");
});

test("tokens: changed, signed with another secret, alg none, or beside a secret key are refused", async () => {
  const { token } = await signUp("tokens@example.com");
  const [header, payload, signature] = token.split(".");
  const claims = JSON.parse(Buffer.from(payload!, "base64url").toString());
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const changed = `${header}.${encode({ ...claims, role: "admin" })}.${signature}`;
  const other = `${header}.${payload}.${createHmac("sha256", randomBytes(32)).update(`${header}.${payload}`).digest("base64url")}`;
  const none = `${encode({ alg: "none", typ: "JWT" })}.${payload}.`;
  const expired = `${header}.${encode({ ...claims, exp: 1 })}.${signature}`;
  for (const bad of [changed, other, none, expired]) {
    const answer = await asUser(bad, "GET", "/api/entities/User/me");
    assert.equal(answer.status, 401, bad);
  }
  const withSecret = await server.call("GET", "/api/entities/User/me", { apiKey: SECRET, headers: { Authorization: `Bearer ${token}` } });
  assert.equal(withSecret.status, 400);
  assert.match(withSecret.body.error.message, /secret key/);
  const withPublishable = await server.call("GET", "/api/entities/User/me", { apiKey: PUBLISHABLE, headers: { Authorization: `Bearer ${token}` } });
  assert.equal(withPublishable.status, 200);
  assert.equal(withPublishable.body.email, "tokens@example.com");
  // The route for signed-in users refuses a key alone.
  assert.equal((await server.call("GET", "/api/entities/User/me", { apiKey: PUBLISHABLE })).status, 401);
});

test("a password reset ends every session; a change ends the others", async () => {
  const { token: first } = await signUp("reset@example.com");
  const second = (await server.call("POST", "/api/auth/login", { apiKey: null, body: { email: "reset@example.com", password: "correct horse battery" } })).body.access_token;
  const changed = await asUser(second, "POST", "/api/auth/change-password", { current_password: "correct horse battery", new_password: "a new password" });
  assert.equal(changed.status, 200, changed.text);
  assert.equal((await asUser(first, "GET", "/api/entities/User/me")).status, 401, "the other session ended");
  assert.equal((await asUser(second, "GET", "/api/entities/User/me")).status, 200, "the changing session goes on");

  await server.call("POST", "/api/auth/reset-password-request", { apiKey: null, body: { email: "reset@example.com" } });
  const { resetToken } = codeFor("reset@example.com");
  assert.ok(resetToken);
  const reset = await server.call("POST", "/api/auth/reset-password", { apiKey: null, body: { reset_token: resetToken, new_password: "the newest password" } });
  assert.equal(reset.status, 200, reset.text);
  assert.equal((await asUser(second, "GET", "/api/entities/User/me")).status, 401, "every session ended");
  const reused = await server.call("POST", "/api/auth/reset-password", { apiKey: null, body: { reset_token: resetToken, new_password: "yet another one" }, headers: from("10.0.5.1") });
  assert.equal(reused.status, 400, "a reset token is used once");
  const login = await server.call("POST", "/api/auth/login", { apiKey: null, body: { email: "reset@example.com", password: "the newest password" } });
  assert.equal(login.status, 200);
});

test("ten failed sign-ins for an email: 429 with Retry-After", async () => {
  await signUp("flood@example.com");
  for (let i = 0; i < 10; i++) {
    const answer = await server.call("POST", "/api/auth/login", { apiKey: null, body: { email: "flood@example.com", password: `wrong ${i}` }, headers: from(`10.0.6.${i}`) });
    assert.equal(answer.status, 401);
  }
  // Ten addresses, one email: the email's limit holds.
  const limited = await server.call("POST", "/api/auth/login", { apiKey: null, body: { email: "flood@example.com", password: "correct horse battery" }, headers: from("10.0.6.99") });
  assert.equal(limited.status, 429);
  assert.equal(limited.body.error.code, "rate_limited");
  const retryAfter = Number(limited.headers.get("retry-after"));
  assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
  // And one address trying many emails is held too.
  for (let i = 0; i < 10; i++) {
    await server.call("POST", "/api/auth/login", { apiKey: null, body: { email: `guess${i}@example.com`, password: "wrong" }, headers: from("10.0.7.1") });
  }
  const byAddress = await server.call("POST", "/api/auth/login", { apiKey: null, body: { email: "known@example.com", password: "correct horse battery" }, headers: from("10.0.7.1") });
  assert.equal(byAddress.status, 429);
});

test("the secret key and admins manage users; disabling ends the sessions", async () => {
  const { token: adminToken, user: adminUser } = await signUp("admin@example.com");
  const { token: userToken, user } = await signUp("member@example.com");
  assert.equal((await asUser(adminToken, "GET", "/api/users")).status, 403, "not an admin yet");
  const promoted = await server.call("PATCH", `/api/users/${adminUser.id}`, { body: { role: "admin" } });
  assert.equal(promoted.status, 200, promoted.text);
  assert.equal(promoted.body.role, "admin");
  const listed = await asUser(adminToken, "GET", "/api/users");
  assert.equal(listed.status, 200, listed.text);
  assert.ok(listed.body.some((entry: any) => entry.email === "member@example.com"));
  const invited = await asUser(adminToken, "POST", "/api/users/invite-user", { user_email: "guest@example.com", role: "editor" });
  assert.equal(invited.status, 200, invited.text);
  assert.doesNotMatch(invited.text, /\d{6}/);
  assert.match(codeFor("guest@example.com").code, /^\d{6}$/);

  const disabled = await asUser(adminToken, "PATCH", `/api/users/${user.id}`, { disabled: true });
  assert.equal(disabled.status, 200, disabled.text);
  assert.equal((await asUser(userToken, "GET", "/api/entities/User/me")).status, 401);
  const login = await server.call("POST", "/api/auth/login", { apiKey: null, body: { email: "member@example.com", password: "correct horse battery" } });
  assert.equal(login.status, 403);
  assert.equal(login.body.error.code, "user_disabled");

  const ended = await server.call("DELETE", `/api/users/${adminUser.id}/sessions`);
  assert.equal(ended.status, 200);
  assert.equal(ended.body.sessions_ended, 1);
  assert.equal((await asUser(adminToken, "GET", "/api/users")).status, 401);
});

test("a User's email written by the secret key is kept lowercased: one user per email, whatever its case", async () => {
  const created = await server.call("POST", "/api/entities/User", { body: { email: "Grace@Example.COM", full_name: "Grace" } });
  assert.equal(created.status, 201, created.text);
  assert.equal(created.body.email, "grace@example.com");
  const again = await server.call("POST", "/api/entities/User", { body: { email: "GRACE@example.com" } });
  assert.equal(again.status, 409, again.text);
  assert.equal(again.body.error.code, "unique_violation");
  // Her sign-up finds the record the secret key made rather than making a second one.
  const { token, user } = await signUp("grace@example.com");
  assert.equal(user.id, created.body.id);
  const graces = await server.call("GET", `/api/entities/User?q=${encodeURIComponent(JSON.stringify({ email: "grace@example.com" }))}`);
  assert.deepEqual(graces.body.map((record: any) => record.id), [created.body.id]);
  const changed = await server.call("PATCH", `/api/entities/User/${created.body.id}`, { body: { email: "Grace.Hopper@Example.com" } });
  assert.equal(changed.status, 200, changed.text);
  assert.equal(changed.body.email, "grace.hopper@example.com");
  const me = await asUser(token, "GET", "/api/entities/User/me");
  assert.equal(me.body.email, "grace.hopper@example.com");
  const bulk = await server.call("POST", "/api/entities/User/bulk", { body: [{ email: "Alan@Example.com" }] });
  assert.equal(bulk.status, 201, bulk.text);
  assert.equal(bulk.body[0].email, "alan@example.com");
});

test("a password chosen by someone else's sign-up of your email is not kept when you prove it", async () => {
  // Each person has a client address of their own (X-Forwarded-For, trusted here).
  const addresses = new Map<string, string>();
  const at = (who: string) => from(addresses.get(who) ?? addresses.set(who, `10.7.${addresses.size}.1`).get(who)!);
  const password = (who: string) => `${who}'s long password`;
  const call = (who: string, path: string, body: unknown) => server.call("POST", `/api/auth/${path}`, { apiKey: null, headers: at(who), body });
  const register = (email: string, who: string) => call(who, "register", { email, password: password(who) });
  const verify = (email: string, who: string, code = codeFor(email).code) => call(who, "verify-otp", { email, otp_code: code });
  const login = (email: string, who: string) => call(who, "login", { email, password: password(who) });

  // Victor signs up; before he proves his email, Mallory signs it up with her password. The newest
  // code goes to Victor's mailbox; proving it keeps neither password.
  assert.equal((await register("victor@example.com", "victor")).status, 200);
  assert.equal((await register("victor@example.com", "mallory")).status, 200);
  const proven = await verify("victor@example.com", "victor");
  assert.equal(proven.status, 200, proven.text);
  assert.ok(proven.body.access_token, "the prover is signed in by the answer");
  assert.equal((await login("victor@example.com", "mallory")).status, 401, "Mallory's password does not open Victor's account");
  assert.equal((await login("victor@example.com", "victor")).status, 401);
  assert.equal((await call("victor", "reset-password-request", { email: "victor@example.com" })).status, 200);
  const reset = await call("victor", "reset-password", { reset_token: codeFor("victor@example.com").resetToken, new_password: password("victor") });
  assert.equal(reset.status, 200, reset.text);
  assert.equal((await login("victor@example.com", "victor")).status, 200);

  // Mallory alone signs Xena's email up. Xena, told at sign-in that her email is not proven, asks
  // for the code again and proves it: the password was not chosen from where she proves it.
  assert.equal((await register("xena@example.com", "mallory")).status, 200);
  assert.equal((await login("xena@example.com", "xena")).body.error.code, "invalid_credentials");
  assert.equal((await call("xena", "resend-otp", { email: "xena@example.com" })).status, 200);
  assert.equal((await verify("xena@example.com", "xena")).status, 200);
  assert.equal((await login("xena@example.com", "mallory")).status, 401);

  // An invitation: Mallory signs the invited email up; the invitee proves it with the invitation's code.
  assert.equal((await server.call("POST", "/api/users/invite-user", { body: { user_email: "ivy@example.com", role: "editor" } })).status, 200);
  const invitation = codeFor("ivy@example.com").code;
  assert.equal((await register("ivy@example.com", "mallory")).status, 200);
  const invited = await verify("ivy@example.com", "ivy", invitation);
  assert.equal(invited.status, 200, invited.text);
  assert.equal(invited.body.user.role, "editor");
  assert.equal((await login("ivy@example.com", "mallory")).status, 401);

  // An admin the secret key made (no password yet) is not Mallory's to claim by signing its email up,
  // even from where the admin proves it.
  const boss = await server.call("POST", "/api/entities/User", { body: { email: "boss@example.com", role: "admin" } });
  assert.equal(boss.status, 201, boss.text);
  assert.equal((await register("boss@example.com", "mallory")).status, 200);
  const bossProven = await verify("boss@example.com", "mallory");
  assert.equal(bossProven.status, 200, bossProven.text);
  assert.equal((await login("boss@example.com", "mallory")).status, 401);

  // Honest people keep their password: signing up twice with one, asking for the code again, or
  // proving an invitation with its own code, from where they signed up.
  assert.equal((await register("wendy@example.com", "wendy")).status, 200);
  assert.equal((await register("wendy@example.com", "wendy")).status, 200);
  assert.equal((await verify("wendy@example.com", "wendy")).status, 200);
  assert.equal((await login("wendy@example.com", "wendy")).status, 200);
  assert.equal((await register("yuri@example.com", "yuri")).status, 200);
  assert.equal((await call("yuri", "resend-otp", { email: "yuri@example.com" })).status, 200);
  assert.equal((await verify("yuri@example.com", "yuri")).status, 200);
  assert.equal((await login("yuri@example.com", "yuri")).status, 200);
  assert.equal((await server.call("POST", "/api/users/invite-user", { body: { user_email: "zoe@example.com", role: "editor" } })).status, 200);
  const zoeInvitation = codeFor("zoe@example.com").code;
  assert.equal((await register("zoe@example.com", "zoe")).status, 200);
  assert.equal((await verify("zoe@example.com", "zoe", zoeInvitation)).status, 200);
  assert.equal((await login("zoe@example.com", "zoe")).status, 200);
});

test("a user's Idempotency-Key replays only its own answers", async () => {
  const { token: first } = await signUp("idem1@example.com");
  const { token: second } = await signUp("idem2@example.com");
  const headers = (token: string) => ({ Authorization: `Bearer ${token}`, "Idempotency-Key": "same-key" });
  const one = await server.call("POST", "/api/entities/Task", { apiKey: PUBLISHABLE, headers: headers(first), body: { title: "same" } });
  const two = await server.call("POST", "/api/entities/Task", { apiKey: PUBLISHABLE, headers: headers(second), body: { title: "same" } });
  assert.equal(one.status, 201);
  assert.equal(two.status, 201);
  assert.notEqual(one.body.id, two.body.id);
  assert.equal(two.body.created_by, "idem2@example.com");
});

test("a change feed stream with a user's token ends within a second of its sign-out", async () => {
  const { token } = await signUp("stream@example.com");
  const stream = new SseClient(`${server.url}/api/entities/Task/changes?key=${encodeURIComponent(token)}`);
  await stream.opened;
  assert.equal(stream.status, 200);
  const at = Date.now();
  await asUser(token, "POST", "/api/auth/logout");
  await stream.waitForEnd(3000);
  assert.ok(Date.now() - at < 2000, `ended after ${Date.now() - at} ms`);
  assert.ok(stream.events.some((event) => event.event === "unauthorized"), JSON.stringify(stream.events.map((event) => event.event)));
});

test("a realtime socket with a user's token closes within a second of its sessions' end", async () => {
  const { token, user } = await signUp("socket@example.com");
  const socket = await RawSocket.connect(server.url, token);
  assert.deepEqual(await socket.join("entities:app1:Task"), { ok: true });
  const at = Date.now();
  await server.call("DELETE", `/api/users/${user.id}/sessions`);
  const closed = await socket.closed;
  assert.equal(closed.code, 1008);
  assert.match(closed.reason, /session/);
  assert.ok(Date.now() - at < 2000, `closed after ${Date.now() - at} ms`);
});

test("no password, hash or code in any answer, export or feed event", async () => {
  const password = "a very particular password";
  const { token, user } = await signUp("secrets@example.com", password);
  const { code } = codeFor("secrets@example.com");
  const texts = [
    (await server.call("GET", "/api/entities/User")).text,
    (await server.call("GET", `/api/entities/User/${user.id}`)).text,
    (await server.call("GET", "/api/users")).text,
    (await asUser(token, "GET", "/api/entities/User/me")).text,
    (await server.call("GET", "/api/entities/User/export?format=ndjson")).text,
    (await server.call("GET", "/api/entities/User/changes?since=0&wait=0")).text,
  ];
  for (const text of texts) {
    assert.ok(text.includes("secrets@example.com"), text.slice(0, 200));
    assert.ok(!text.includes(password), text.slice(0, 200));
    assert.ok(!text.includes("scrypt$"), text.slice(0, 200));
    assert.ok(!text.includes(code), text.slice(0, 200));
  }
});

test("--signup invite: only invited emails get a code; off: no sign-up", async () => {
  const lines: string[] = [];
  const invite = await startTestServer({ signup: "invite", printCode: (line) => lines.push(line) });
  try {
    const stranger = await invite.call("POST", "/api/auth/register", { apiKey: null, body: { email: "stranger@example.com", password: "correct horse battery" } });
    assert.equal(stranger.status, 200);
    assert.equal(lines.filter((line) => line.includes("stranger@example.com")).length, 0);
    await invite.call("POST", "/api/users/invite-user", { body: { user_email: "friend@example.com", role: "editor" } });
    const friend = await invite.call("POST", "/api/auth/register", { apiKey: null, body: { email: "friend@example.com", password: "correct horse battery" } });
    assert.equal(friend.status, 200);
    const code = /code (\d{6})/.exec(lines.filter((line) => line.includes("user.verification_requested for friend@example.com")).at(-1)!)![1];
    const verified = await invite.call("POST", "/api/auth/verify-otp", { apiKey: null, body: { email: "friend@example.com", otp_code: code } });
    assert.equal(verified.status, 200, verified.text);
    assert.equal(verified.body.user.role, "editor");
  } finally {
    await invite.close();
  }
  const off = await startTestServer({ signup: "off", printCode: () => {} });
  try {
    const refused = await off.call("POST", "/api/auth/register", { apiKey: null, body: { email: "x@example.com", password: "correct horse battery" } });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error.code, "signup_closed");
  } finally {
    await off.close();
  }
});

test("a session ended is refused on a second look within a second (the shared store's cache)", async () => {
  const { token, user } = await signUp("cache@example.com");
  assert.equal((await asUser(token, "GET", "/api/entities/User/me")).status, 200);
  await server.call("DELETE", `/api/users/${user.id}/sessions`);
  await sleep(1000);
  assert.equal((await asUser(token, "GET", "/api/entities/User/me")).status, 401);
});
