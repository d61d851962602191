// tabula keys (docs/operating.md, "Managing keys"), the built command: on a data folder beside a
// running server (which notices within a second), through --url, and on PostgreSQL, where a key
// revoked through one process is refused by another within a second.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { BUILT_CLI, killSpawned, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";
import { describeWithPostgres, dropPgSchema, freshPgSchema } from "../support/postgres.ts";

const SECRET_KEY = "sk_keys_command_secret";
const TASK = { name: "Task", type: "object", properties: { title: { type: "string" } }, required: ["title"] };
const skip = !existsSync(BUILT_CLI) && "npm run build first";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let root: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "tabula-keys-command-"));
  await writeFile(join(root, "Task.json"), JSON.stringify(TASK));
});
after(async () => {
  killSpawned();
  await rm(root, { recursive: true, force: true });
});

function keys(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BUILT_CLI, "keys", ...args], { env: { ...process.env, TABULA_SECRET_KEY: "" } }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

async function statusOf(server: SpawnedServer, apiKey: string): Promise<number> {
  return (await fetch(`${server.url}/api/entities/Task`, { headers: { "X-Api-Key": apiKey } })).status;
}

/** Waits until `apiKey` gets `expected` from `server`; the ms it took. */
async function statusWithin(server: SpawnedServer, apiKey: string, expected: number, ms: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    const status = await statusOf(server, apiKey);
    if (status === expected) return Date.now() - started;
    if (Date.now() - started > ms) assert.fail(`still ${status} after ${ms} ms, expected ${expected}`);
    await sleep(20);
  }
}

describe("keys on a data folder beside a running server", { skip }, () => {
  test("create, list, roll and revoke: the server notices each within a second", async () => {
    const data = join(root, "beside");
    const server = await startSpawnedServer(BUILT_CLI, ["--schema", root, "--data", data, "--port", "0", "--secret-key", SECRET_KEY], 30_000);
    try {
      const created = await keys(["create", "--kind", "publishable", "--name", "web app", "--data", data]);
      assert.equal(created.code, 0, created.stderr);
      const key = created.stdout.trim();
      assert.match(key, /^pk_[A-Za-z0-9_-]{32}$/);
      assert.ok((await statusWithin(server, key, 200, 1000)) < 1000);

      const listed = await keys(["list", "--json", "--data", data]);
      assert.equal(listed.code, 0, listed.stderr);
      assert.equal(listed.stdout.includes(key), false, "list never prints a key");
      const made = (JSON.parse(listed.stdout) as Array<{ id: string; name: string; prefix: string }>).find((entry) => entry.name === "web app")!;
      assert.equal(made.prefix, key.slice(0, 8));
      const table = await keys(["list", "--data", data]);
      assert.match(table.stdout, new RegExp(`${made.id}\\s+publishable\\s+web app`));

      const rolled = await keys(["roll", made.id, "--expires-in", "0", "--data", data]);
      assert.equal(rolled.code, 0, rolled.stderr);
      const successor = rolled.stdout.trim();
      assert.ok((await statusWithin(server, successor, 200, 1000)) < 1000, "the successor works");
      assert.ok((await statusWithin(server, key, 401, 1000)) < 1000, "the rolled key, with no time to live, is refused");

      const list = JSON.parse((await keys(["list", "--json", "--data", data])).stdout) as Array<{ id: string; prefix: string }>;
      const successorId = list.find((entry) => entry.prefix === successor.slice(0, 8))!.id;
      const revoked = await keys(["revoke", successorId, "--data", data]);
      assert.equal(revoked.code, 0, revoked.stderr);
      assert.ok((await statusWithin(server, successor, 401, 1000)) < 1000, "a revoke beside the server counts within a second");

      const text = readFileSync(join(data, "keys.json"), "utf8");
      assert.equal(text.includes(key) || text.includes(successor), false, "keys.json holds no key in full");
      const unknown = await keys(["revoke", "key_000000000000", "--data", data]);
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr, /No key has the id "key_000000000000"/);
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });

  test("list --data says in its header that the last-used column may be up to a minute late (a server writes it once a minute)", async () => {
    const data = join(root, "last-used");
    await mkdir(data);
    const created = await keys(["create", "--kind", "secret", "--name", "ops", "--data", data]);
    assert.equal(created.code, 0, created.stderr);
    const table = await keys(["list", "--data", data]);
    assert.equal(table.code, 0, table.stderr);
    const header = table.stdout.split("\n")[0]!;
    assert.match(header, /^id\s+kind\s+name\s+prefix\s+created\s+last used \(≤1 min late\)\s+expires\s+source$/, header);
  });

  test("through --url: the same, by the API, and a flag key is not revoked", async () => {
    const server = await startSpawnedServer(BUILT_CLI, ["--schema", root, "--memory", "--port", "0", "--secret-key", SECRET_KEY], 30_000);
    try {
      const created = await keys(["create", "--kind", "secret", "--name", "ops", "--url", server.url, "--key", SECRET_KEY]);
      assert.equal(created.code, 0, created.stderr);
      const key = created.stdout.trim();
      assert.equal(await statusOf(server, key), 200);
      const list = JSON.parse((await keys(["list", "--json", "--url", server.url, "--key", key])).stdout) as Array<{ id: string; source: string; name: string }>;
      const flag = list.find((entry) => entry.source === "flag")!;
      const refused = await keys(["revoke", flag.id, "--url", server.url, "--key", key]);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /409 Key .* was given by --secret-key/);
      const ops = list.find((entry) => entry.name === "ops")!;
      assert.equal((await keys(["revoke", ops.id, "--url", server.url, "--key", SECRET_KEY])).code, 0);
      assert.equal(await statusOf(server, key), 401);
      const bad = await keys(["create", "--kind", "admin", "--name", "x", "--url", server.url, "--key", SECRET_KEY]);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /Field "kind" must be "secret" or "publishable"/);
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });
});

describeWithPostgres("keys on PostgreSQL, shared by two processes", (url) => {
  const pgSchema = freshPgSchema();
  let a: SpawnedServer;
  let b: SpawnedServer;
  before(async () => {
    const args = ["--schema", root, "--store", url, "--pg-schema", pgSchema, "--port", "0", "--secret-key", SECRET_KEY];
    [a, b] = await Promise.all([startSpawnedServer(BUILT_CLI, args, 30_000), startSpawnedServer(BUILT_CLI, args, 30_000)]);
  });
  after(async () => {
    for (const server of [a, b]) server?.child.kill("SIGTERM");
    await Promise.all([a?.exited, b?.exited]);
    await dropPgSchema(url, pgSchema);
  });

  test("a key created through one process works on the other; revoked through it, it is 401 on the other within a second, and on an open stream", async () => {
    const created = await fetch(`${a.url}/api/keys`, { method: "POST", headers: { "X-Api-Key": SECRET_KEY, "Content-Type": "application/json" }, body: JSON.stringify({ kind: "secret", name: "shared" }) });
    const made = (await created.json()) as { id: string; key: string };
    // The command sees no flag key of the servers: another stored secret key lets this one go.
    assert.equal((await keys(["create", "--kind", "secret", "--name", "spare", "--store", url, "--pg-schema", pgSchema])).code, 0);
    assert.ok((await statusWithin(b, made.key, 200, 1000)) < 1000);
    const stream = await fetch(`${b.url}/api/entities/Task/changes?key=${made.key}`, { headers: { Accept: "text/event-stream" } });
    assert.equal(stream.status, 200);
    const streamEnded = (async () => {
      for await (const _chunk of stream.body!) void _chunk;
      return Date.now();
    })();
    const revoked = await keys(["revoke", made.id, "--store", url, "--pg-schema", pgSchema]);
    assert.equal(revoked.code, 0, revoked.stderr);
    // Counted from the revoke's end, as the statuses are: the command's own start (a node process
    // loading the postgres driver) is no part of what the servers promise, and on a loaded machine
    // it alone may take over a second.
    const revokedAt = Date.now();
    assert.ok((await statusWithin(b, made.key, 401, 1000)) < 1000, "refused by the other process within a second");
    assert.ok((await statusWithin(a, made.key, 401, 1000)) < 1000);
    assert.ok((await streamEnded) - revokedAt < 1500, "the other process's open stream of the key was closed");
  });
});
