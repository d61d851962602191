// No secret of a user in the request log, in a webhook body of a User record's change, or in the
// export (docs/users.md): grepped through the built CLI with --log json, a webhook
// receiver and `tabula-server export`.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { rm } from "node:fs/promises";
import { spawnSync } from "node:child_process";
import { TASK } from "../support/server.ts";
import { childEnv, cliWithSchema, killSpawned, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";
import { WebhookReceiver } from "../support/webhook-receiver.ts";

const SECRET_KEY = "sk_users_secrets_key_01";
const PASSWORD = "a very particular password 7";
let root: string;
let cli: string;
let schemaDir: string;
let server: SpawnedServer;
let receiver: WebhookReceiver;

before(async () => {
  ({ root, cli, schemaDir } = await cliWithSchema("tabula-users-secrets-", [TASK]));
  receiver = await WebhookReceiver.start();
  server = await startSpawnedServer(cli, ["--schema", schemaDir, "--port", "0", "--secret-key", SECRET_KEY, "--log", "json", "--webhooks-allow-private"], 60_000, { env: childEnv(), cwd: root });
});

after(async () => {
  killSpawned();
  await receiver.close();
  await rm(root, { recursive: true, force: true });
});

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(server.url + path, { method, headers: { ...(body === undefined ? {} : { "Content-Type": "application/json" }), ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as any }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

test("the request log, a User change's webhook body and an export hold no password, hash, code or token", async () => {
  const endpoint = await call("POST", "/api/webhooks", { url: receiver.url, entities: ["User"] }, { "X-Api-Key": SECRET_KEY });
  assert.equal(endpoint.status, 201);
  receiver.secret = endpoint.body.secret;
  assert.equal((await call("POST", "/api/auth/register", { email: "log@example.com", password: PASSWORD })).status, 200);
  const code = /for log@example\.com: code (\d{6})/.exec(server.output())?.[1];
  assert.ok(code, "the code is printed, as no endpoint asks for it");
  const verified = await call("POST", "/api/auth/verify-otp", { email: "log@example.com", otp_code: code });
  assert.equal(verified.status, 200);
  const token: string = verified.body.access_token;
  assert.equal((await call("PUT", "/api/entities/User/me", { full_name: "Log" }, { Authorization: `Bearer ${token}` })).status, 200);
  await receiver.until((got) => got.received.length >= 2, 10_000, "the User create and update events");

  // The request log is written in batches, FLUSH_MS after a batch's first line (access-log.ts): the
  // webhook events may arrive before the batch holding the PUT, or even the sign-up, is written.
  const logLinesNow = () => server.output().split("\n").filter((line) => line.startsWith("{"));
  for (const deadline = Date.now() + 5000; !logLinesNow().some((line) => line.includes("/api/entities/User/me")) && Date.now() < deadline; ) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const logLines = logLinesNow();
  assert.ok(logLines.some((line) => line.includes("/api/auth/register")), "the request log has the sign-up");
  const exported = spawnSync(process.execPath, [cli, "export", "--entity", "User", "--url", server.url, "--key", SECRET_KEY], { cwd: root, env: childEnv(), encoding: "utf8" });
  const texts = { log: logLines.join("\n"), webhooks: JSON.stringify(receiver.received.map((request) => request.event)), export: exported.stdout + exported.stderr };
  assert.ok(texts.webhooks.includes("log@example.com"), texts.webhooks);
  assert.ok(exported.stdout.includes("log@example.com"), `the export holds the user: ${texts.export.slice(0, 300)}`);
  for (const [where, text] of Object.entries(texts)) {
    for (const secret of [PASSWORD, "scrypt$", code, token]) assert.ok(!text.includes(secret), `${where} holds ${secret.slice(0, 12)}…`);
  }
});
