// One file (the README's first paragraph): dist/tabula.mjs copied alone into an empty folder is the
// whole program. --demo with the data browser, init, a start on a data folder that delivers a
// webhook (its sending thread runs the same file), keys, export and migrate all run from it; and
// importing it, as the API does, runs no command.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { childEnv, cliInTempFolder, killSpawned, spawnCli, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";

const runFile = promisify(execFile);
const START_TIMEOUT_MS = 30_000;
const DELIVERY_TIMEOUT_MS = 10_000;

/** A new folder holding a copy of dist/tabula.mjs, and the copy. */
let folder: string;
let cli: string;
before(async () => ({ root: folder, cli } = await cliInTempFolder("tabula-one-file-")));
after(() => {
  killSpawned();
  rmSync(folder, { recursive: true, force: true });
});

/** No TABULA_* of this process, and no NODE_PATH: the file finds nothing it did not bring. */
const ENV = () => ({ ...childEnv(), NODE_PATH: "" });

function run(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnCli(cli, args, { cwd: folder, env: ENV() });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (text: string) => (stdout += text));
  child.stderr!.on("data", (text: string) => (stderr += text));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

function serve(args: readonly string[]): Promise<SpawnedServer> {
  return startSpawnedServer(cli, args, START_TIMEOUT_MS, { cwd: folder, env: ENV() });
}

async function stop(server: SpawnedServer): Promise<void> {
  server.child.kill("SIGTERM");
  assert.equal(await server.exited, 0, server.output());
}

/** The key printed on a banner line such as "secret key       sk_…  id key_…". */
function printedKey(output: string): string {
  const match = /^secret key +(\S+)  id /m.exec(output);
  assert.ok(match, output);
  return match[1]!;
}

/** A receiver on 127.0.0.1 that answers 204 and keeps each request's headers and body. */
async function startReceiver() {
  const received: Array<{ headers: IncomingHttpHeaders; body: any }> = [];
  let onReceived = () => {};
  const server = createServer((req, res) => {
    let text = "";
    req.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
    req.on("end", () => {
      received.push({ headers: req.headers, body: JSON.parse(text) });
      res.writeHead(204).end();
      onReceived();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const arrived = (count: number) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${received.length} of ${count} webhook requests arrived in ${DELIVERY_TIMEOUT_MS} ms`)), DELIVERY_TIMEOUT_MS);
      onReceived = () => received.length >= count && (clearTimeout(timer), resolve());
      onReceived();
    });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received, arrived, close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

test("the folder holds the one file, and importing it (as the API does) runs no command", async () => {
  assert.deepEqual(readdirSync(folder), ["tabula.mjs"]);
  // In a folder without entities/: run as a program, the file would print the first-run message.
  const script = 'const m = await import("./tabula.mjs"); console.log(typeof m.startServer, typeof m.PortInUseError)';
  const imported = await runFile(process.execPath, ["--input-type=module", "-e", script], { cwd: folder, env: ENV() });
  assert.deepEqual(imported, { stdout: "function function\n", stderr: "" });
});

test("copied alone: --demo with its data browser, init, a data folder that delivers a webhook, then keys, export and migrate", async () => {
  const demo = await serve(["--demo", "--port", "0"]);
  try {
    assert.equal((await fetch(`${demo.url}/health`)).status, 200);
    const page = await fetch(`${demo.url}/`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<title>/);
  } finally {
    await stop(demo);
  }

  const init = await run(["init"]);
  assert.equal(init.code, 0, init.stderr);
  assert.deepEqual(readdirSync(join(folder, "entities")), ["Task.json"]);

  const receiver = await startReceiver();
  const server = await serve(["--port", "0", "--data", "./data", "--webhooks-allow-private"]);
  let id: string;
  try {
    const headers = { "X-Api-Key": printedKey(server.output()), "Content-Type": "application/json" };
    const endpoint = await fetch(`${server.url}/api/webhooks`, { method: "POST", headers, body: JSON.stringify({ url: receiver.url, entities: ["Task"] }) });
    assert.equal(endpoint.status, 201, await endpoint.clone().text());
    const created = await fetch(`${server.url}/api/entities/Task`, { method: "POST", headers, body: JSON.stringify({ title: "from one file" }) });
    assert.equal(created.status, 201);
    ({ id } = (await created.json()) as { id: string });
    await receiver.arrived(1);
    const [delivered] = receiver.received;
    assert.match(String(delivered!.headers["webhook-signature"]), /^v1,/);
    assert.equal(JSON.stringify(delivered!.body).includes("from one file"), true, JSON.stringify(delivered!.body));
  } finally {
    receiver.close();
    await stop(server);
  }

  const keys = await run(["keys", "list", "--data", "./data"]);
  assert.equal(keys.code, 0, keys.stderr);
  assert.match(keys.stdout, /secret/);
  const made = await run(["keys", "create", "--kind", "publishable", "--name", "web app", "--data", "./data"]);
  assert.equal(made.code, 0, made.stderr);
  assert.match(made.stdout, /pk_/);

  mkdirSync(join(folder, "migrations"));
  writeFileSync(join(folder, "migrations", "0001-rename-the-task.json"), JSON.stringify({ steps: [{ set: "Task.title", value: "migrated", q: { title: "from one file" } }] }));
  const migrate = await run(["migrate", "--data", "./data"]);
  assert.equal(migrate.code, 0, migrate.stdout + migrate.stderr);

  const exported = await run(["export", "--data", "./data", "--entity", "Task"]);
  assert.equal(exported.code, 0, exported.stderr);
  const records = exported.stdout.trim().split("\n").map((line) => JSON.parse(line) as { id: string; title: string });
  assert.deepEqual(records.map(({ id, title }) => ({ id, title })), [{ id: id!, title: "migrated" }]);

  // Nothing appeared beside the file but what the commands wrote.
  assert.deepEqual(readdirSync(folder).sort(), ["data", "entities", "migrations", "tabula.mjs"]);
});
