// The real @base44/sdk's auth module against a real tabula (docs/users.md), on every store: register,
// the code (from a webhook receiver, and from the output when no endpoint asks), verifyOtp,
// loginViaEmailPassword, me, updateMe, a record of one's own, sign-out, password reset and change.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createClient } from "@base44/sdk";
import { PUBLISHABLE, startTestServer, type TestServer } from "../support/server.ts";
import { refusal } from "../support/sdk.ts";
import { WebhookReceiver } from "../support/webhook-receiver.ts";

/** The event of `type` the receiver got last, once it came. */
async function eventOf(receiver: WebhookReceiver, type: string): Promise<Record<string, any>> {
  const find = () => [...receiver.received].reverse().find((request) => request.event.type === type);
  await receiver.until(() => find() !== undefined, 10_000, `a ${type} event`);
  return find()!.event;
}

process.env.NODE_ENV = "production";

const printed: string[] = [];
let server: TestServer;
before(async () => {
  server = await startTestServer({ appId: "app1", printCode: (line) => printed.push(line), webhooksAllowPrivate: true });
});
after(() => server.close());

function printedCode(email: string): string {
  const line = [...printed].reverse().find((text) => text.includes(` for ${email}:`));
  assert.ok(line, `no code printed for ${email}`);
  return /code (\d{6})/.exec(line)![1]!;
}

/** An app's client: its publishable key until someone signs in. */
function appClient() {
  return createClient({ serverUrl: server.url, appId: "app1", token: PUBLISHABLE });
}

test("register → code on the output → verifyOtp → loginViaEmailPassword → me → updateMe → a record → sign-out", async () => {
  const base44 = appClient();
  await base44.auth.register({ email: "grace@example.com", password: "correct horse battery" });
  const code = printedCode("grace@example.com");
  await base44.auth.verifyOtp({ email: "grace@example.com", otpCode: code });
  const { access_token, user } = await base44.auth.loginViaEmailPassword("grace@example.com", "correct horse battery");
  assert.equal(user.email, "grace@example.com");
  assert.equal(typeof access_token, "string");
  assert.equal(await base44.auth.isAuthenticated(), true);
  const me = await base44.auth.me();
  assert.equal(me.id, user.id);
  assert.equal(me.role, "user");
  const updated = await base44.auth.updateMe({ full_name: "Grace Hopper" });
  assert.equal(updated.full_name, "Grace Hopper");
  const task = await base44.entities.Task.create({ title: "Find the bug" });
  assert.equal(task.created_by, "grace@example.com");
  assert.equal((await base44.entities.Task.get(task.id)).title, "Find the bug");

  // The SDK forgets the token on logout; the server ends the session on POST auth/logout.
  const ended = await fetch(`${server.url}/api/apps/app1/auth/logout`, { method: "POST", headers: { Authorization: `Bearer ${access_token}` } });
  assert.equal(ended.status, 200);
  const after = createClient({ serverUrl: server.url, appId: "app1", token: access_token });
  const refused = await refusal(after.auth.me());
  assert.equal(refused.status, 401);
  assert.equal(await after.auth.isAuthenticated(), false);
});

test("codes reach a webhook endpoint that asks for them; a reset ends the sessions, a change the others", async () => {
  const receiver = await WebhookReceiver.start();
  let endpointId: string | undefined;
  try {
    const endpoint = await server.call("POST", "/api/webhooks", { body: { url: receiver.url, events: ["user.verification_requested", "user.password_reset_requested"] } });
    assert.equal(endpoint.status, 201, endpoint.text);
    receiver.secret = endpoint.body.secret;
    endpointId = endpoint.body.id;
    const before = printed.length;
    const base44 = appClient();
    await base44.auth.register({ email: "alan@example.com", password: "correct horse battery" });
    const verification = await eventOf(receiver, "user.verification_requested");
    assert.equal(verification.data.email, "alan@example.com");
    assert.match(verification.data.code, /^\d{6}$/);
    assert.equal(printed.slice(before).filter((line) => line.includes("alan@example.com")).length, 0, "not printed when an endpoint asks");
    await base44.auth.verifyOtp({ email: "alan@example.com", otpCode: verification.data.code });
    const first = await base44.auth.loginViaEmailPassword("alan@example.com", "correct horse battery");
    const other = createClient({ serverUrl: server.url, appId: "app1", token: PUBLISHABLE });
    const second = await other.auth.loginViaEmailPassword("alan@example.com", "correct horse battery");

    await other.auth.changePassword({ userId: second.user.id, currentPassword: "correct horse battery", newPassword: "a brand new password" });
    assert.equal((await refusal(base44.auth.me())).status, 401, "the other session ended");
    assert.equal((await other.auth.me()).email, "alan@example.com");

    await appClient().auth.resetPasswordRequest("alan@example.com");
    const reset = await eventOf(receiver, "user.password_reset_requested");
    await appClient().auth.resetPassword({ resetToken: reset.data.reset_token, newPassword: "the final password" });
    assert.equal((await refusal(other.auth.me())).status, 401, "every session ended");
    const again = await appClient().auth.loginViaEmailPassword("alan@example.com", "the final password");
    assert.equal(again.user.email, "alan@example.com");
    assert.ok(first.access_token !== again.access_token);
  } finally {
    // Codes are printed again once no endpoint asks for them.
    if (endpointId !== undefined) await server.call("DELETE", `/api/webhooks/${endpointId}`);
    await receiver.close();
  }
});

test("inviteUser by an admin; a wrong password is a 401 the SDK reports", async () => {
  const admin = appClient();
  await admin.auth.register({ email: "root@example.com", password: "correct horse battery" });
  await admin.auth.verifyOtp({ email: "root@example.com", otpCode: printedCode("root@example.com") });
  const { user } = await admin.auth.loginViaEmailPassword("root@example.com", "correct horse battery");
  await server.call("PATCH", `/api/users/${user.id}`, { body: { role: "admin" } });
  await admin.auth.inviteUser("new@example.com", "editor");
  assert.match(printedCode("new@example.com"), /^\d{6}$/);
  const wrong = await refusal(appClient().auth.loginViaEmailPassword("root@example.com", "not it"));
  assert.equal(wrong.status, 401);
});
