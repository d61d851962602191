// Users for tests of rules and sign-in (docs/users.md): signed up, verified with the code the server
// printed, given a role by the secret key, and signed in; each from its own address, so that the
// sign-in limits of one never slow another.

import assert from "node:assert/strict";
import type { TestServer } from "./server.ts";

const PASSWORD = "correct horse battery";

/**
 * A user's access token. `printed` collects the server's printed lines (its printCode option), where
 * the verification code is read; the server needs trustProxy, as each user comes from its own address.
 */
export async function signUp(server: TestServer, printed: readonly string[], email: string, role = "user"): Promise<string> {
  const headers = { "X-Forwarded-For": email };
  const registered = await server.call("POST", "/api/auth/register", { apiKey: null, body: { email, password: PASSWORD }, headers });
  assert.equal(registered.status, 200, registered.text);
  const line = [...printed].reverse().find((text) => text.includes(` for ${email}:`));
  assert.ok(line, `no code was printed for ${email}`);
  const verified = await server.call("POST", "/api/auth/verify-otp", { apiKey: null, body: { email, otp_code: /code (\d{6})/.exec(line)![1] }, headers });
  assert.equal(verified.status, 200, verified.text);
  if (role !== "user") {
    const set = await server.call("PATCH", `/api/users/${verified.body.user.id}`, { body: { role } });
    assert.equal(set.status, 200, set.text);
  }
  const login = await server.call("POST", "/api/auth/login", { apiKey: null, body: { email, password: PASSWORD }, headers });
  assert.equal(login.status, 200, login.text);
  return login.body.access_token;
}
