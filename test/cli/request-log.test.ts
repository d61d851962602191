// --log text|json|off (docs/operating.md, issue 21): one line per request on stdout with its time,
// method, path, route, status, milliseconds and key id; never a key, a query string or a body; a
// client that hung up is logged as 499; every line is out before a SIGTERM'd process exits.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { BUILT_CLI, copyCli, killSpawned, spawnCli, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";

const SECRET_KEY = "sk_log_test_secret";
const TASK = { name: "Task", type: "object", properties: { title: { type: "string" } }, required: ["title"] };
const skip = !existsSync(BUILT_CLI) && "npm run build first";

let root: string;
let cli: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "tabula-request-log-"));
  await writeFile(join(root, "Task.json"), JSON.stringify(TASK));
  if (existsSync(BUILT_CLI)) cli = copyCli(root);
});
after(async () => {
  killSpawned();
  await rm(root, { recursive: true, force: true });
});

function start(logArgs: readonly string[]): Promise<SpawnedServer> {
  return startSpawnedServer(cli, ["--schema", root, "--memory", "--port", "0", "--secret-key", SECRET_KEY, ...logArgs], 30_000);
}

/** The secret key's id, as the banner prints it. */
function keyIdOf(server: SpawnedServer): string {
  return /secret key\s+\S+\s+id (\S+)/.exec(server.output())![1]!;
}

/** Lines after the banner's "listening on" line, once the process has exited. */
async function linesAfterStop(server: SpawnedServer): Promise<string[]> {
  server.child.kill("SIGTERM");
  assert.equal(await server.exited, 0);
  const output = server.output();
  return output
    .slice(output.indexOf("\n", output.indexOf("listening on")) + 1)
    .split("\n")
    .filter((line) => line !== "" && !line.startsWith("SIGTERM"));
}

async function call(server: SpawnedServer, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const response = await fetch(server.url + path, { method, headers: { "X-Api-Key": SECRET_KEY, "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined };
}

test("--log json: a line per request with its route and key id, and no key, query or body", { skip }, async () => {
  const server = await start(["--log", "json"]);
  const keyId = keyIdOf(server);
  await fetch(`${server.url}/health`).then((response) => response.text());
  const created = await call(server, "POST", "/api/entities/Task", { title: "a secret title" });
  assert.equal(created.status, 201);
  assert.equal((await call(server, "GET", `/api/entities/Task/${created.json.id}`)).status, 200);
  assert.equal((await call(server, "GET", `/api/entities/Task?q=${encodeURIComponent('{"title":"a secret title"}')}`)).status, 200);
  // The feed's routes take the key in the URL: it must not reach the log.
  const feed = await fetch(`${server.url}/api/changes?since=0&key=${SECRET_KEY}`);
  assert.equal(feed.status, 200);
  await feed.text();
  const lines = await linesAfterStop(server);
  for (const line of lines) {
    assert.ok(!line.includes(SECRET_KEY), `a key in the log: ${line}`);
    assert.ok(!line.includes("a secret title") && !line.includes("?"), `a body or query in the log: ${line}`);
  }
  const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  for (const entry of entries) {
    assert.match(entry.time as string, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(typeof entry.ms, "number");
    assert.ok((entry.ms as number) >= 0);
  }
  const shape = entries.map(({ method, path, route, status, key_id }) => ({ method, path, route, status, key_id }));
  assert.deepEqual(shape, [
    { method: "GET", path: "/health", route: "/health", status: 200, key_id: null },
    { method: "POST", path: "/api/entities/Task", route: "/api/entities/:entity", status: 201, key_id: keyId },
    { method: "GET", path: `/api/entities/Task/${created.json.id}`, route: "/api/entities/:entity/:id", status: 200, key_id: keyId },
    { method: "GET", path: "/api/entities/Task", route: "/api/entities/:entity", status: 200, key_id: keyId },
    { method: "GET", path: "/api/changes", route: "/api/changes", status: 200, key_id: keyId },
  ]);
});

test("the CLI logs text by default: time, method, path, status, ms, key id; a client that hung up is 499", { skip }, async () => {
  const server = await start([]);
  const keyId = keyIdOf(server);
  assert.equal((await call(server, "GET", "/api/entities/Task/nothing")).status, 404);
  assert.equal((await fetch(`${server.url}/api/entities/Task`, { headers: { "X-Api-Key": "sk_wrong_key_pad" } })).status, 401);
  // A client sends half of a body and hangs up.
  const { port } = new URL(server.url);
  await new Promise<void>((resolve) => {
    const socket = net.connect(Number(port), "127.0.0.1", () => {
      socket.write(`POST /api/entities/Task HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${SECRET_KEY}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"title":`);
      setTimeout(() => socket.destroy(), 100);
    });
    socket.on("close", () => resolve());
  });
  // The server hears of the hang-up a moment later: wait for its line before stopping it.
  for (let tries = 0; !server.output().includes(" 499 "); tries++) {
    assert.ok(tries < 200, `no 499 line:\n${server.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const lines = await linesAfterStop(server);
  const pattern = (method: string, path: string, status: number, key: string) => new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z ${method} ${path} ${status} \\d+(\\.\\d+)?ms ${key}$`);
  assert.equal(lines.length, 3, lines.join("\n"));
  assert.match(lines[0]!, pattern("GET", "/api/entities/Task/nothing", 404, keyId));
  assert.match(lines[1]!, pattern("GET", "/api/entities/Task", 401, "-"));
  assert.match(lines[2]!, pattern("POST", "/api/entities/Task", 499, keyId));
  assert.ok(!server.output().includes("Error"), "a hang-up is no server error");
});

test("--log off writes no request lines; a SIGTERM'd server has written every line before it exits", { skip }, async () => {
  const quiet = await start(["--log", "off"]);
  assert.equal((await call(quiet, "POST", "/api/entities/Task", { title: "x" })).status, 201);
  assert.deepEqual(await linesAfterStop(quiet), []);

  const busy = await start(["--log", "text"]);
  const requests = 300;
  await Promise.all(Array.from({ length: requests }, (_, i) => call(busy, "POST", "/api/entities/Task", { title: `t${i}` })));
  const lines = await linesAfterStop(busy);
  assert.equal(lines.filter((line) => / POST \/api\/entities\/Task 201 /.test(line)).length, requests);
});

test("a bad --log or TABULA_LOG exits 1 naming the formats", { skip }, async () => {
  for (const [args, env, source] of [
    [["--log", "xml"], {}, "--log"],
    [[], { TABULA_LOG: "loud" }, "TABULA_LOG"],
  ] as const) {
    const child = spawnCli(cli, ["--schema", root, "--memory", "--port", "0", ...args], { env: { ...process.env, ...env } });
    let stderr = "";
    child.stderr!.on("data", (text: string) => (stderr += text));
    const code = await new Promise((resolve) => child.on("close", resolve));
    assert.equal(code, 1);
    assert.match(stderr, new RegExp(`${source} must be one of text, json, off`));
  }
});
