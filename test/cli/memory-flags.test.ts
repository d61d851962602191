// The command line's memory flags and its stop (docs/operating.md, "Memory" and "Stopping"), spawned
// as users run it: --max-memory and --idempotency-memory (and their variables) parsed, refused when
// malformed, and in force; and SIGTERM under load (a change feed stream nobody reads, an idle
// keep-alive connection, a body that never ends, writes in flight) ends the process with 0, every
// write it answered there after a restart.

import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { request, Agent } from "node:http";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { TASK } from "../support/server.ts";
import { childEnv, cliWithSchema, killSpawned, spawnCli, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";

const START_TIMEOUT_MS = 10_000;
/**
 * A server told to stop is waited for this long before the test fails: a deadline, not a
 * measurement. tabula stops within 2 s (STOP_DEADLINE_MS); before it did, a stream nobody read held
 * a stop for 10 s.
 */
const STOP_WAIT_MS = 6000;
const SECRET = "sk_memory_flags_01";
const T = "/api/entities/Task";

let root: string;
let schemaDir: string;
let CLI: string;
before(async () => {
  ({ root, cli: CLI, schemaDir } = await cliWithSchema("tabula-memory-flags-", [TASK]));
});
after(async () => {
  killSpawned();
  await rm(root, { recursive: true, force: true });
});

function start(args: string[], env: Record<string, string> = {}): Promise<SpawnedServer> {
  return startSpawnedServer(CLI, ["--schema", schemaDir, "--port", "0", "--secret-key", SECRET, "--log", "off", ...args], START_TIMEOUT_MS, { env: childEnv(env) });
}

/** Runs the CLI to its end; for arguments that must not let it listen. */
function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stderr: string }> {
  const child = spawnCli(CLI, ["--schema", schemaDir, "--memory", "--port", "0", ...args], { env: childEnv(env) });
  let stderr = "";
  child.stderr!.on("data", (text) => (stderr += text));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stderr })));
}

/** Waits for the process to end, STOP_WAIT_MS at most. */
function exitOf(server: SpawnedServer): Promise<number | null | "still running"> {
  return Promise.race([server.exited, new Promise<"still running">((resolve) => setTimeout(() => resolve("still running"), STOP_WAIT_MS).unref())]);
}

async function call(server: SpawnedServer, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; body: any }> {
  const response = await fetch(server.url + path, {
    method,
    headers: { "X-Api-Key": SECRET, ...(body === undefined ? {} : { "Content-Type": "application/json" }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

describe("--max-memory and --idempotency-memory", () => {
  const BAD: Array<[string[], Record<string, string>, RegExp]> = [
    [["--max-memory", "lots"], {}, /--max-memory must be a size such as .*\(got "lots"\)/],
    [["--max-memory", "0"], {}, /--max-memory must be a size/],
    [["--idempotency-memory", "-1mb"], {}, /--idempotency-memory needs a value|--idempotency-memory must be a size/],
    [["--idempotency-memory", "1tb"], {}, /--idempotency-memory must be a size such as .*\(got "1tb"\)/],
    [[], { TABULA_MAX_MEMORY: "half" }, /TABULA_MAX_MEMORY must be a size such as .*\(got "half"\)/],
    [[], { TABULA_IDEMPOTENCY_MEMORY: "0kb" }, /TABULA_IDEMPOTENCY_MEMORY must be a size/],
  ];
  for (const [args, env, message] of BAD) {
    test(`${[...Object.entries(env).map(([name, value]) => `${name}=${value}`), ...args].join(" ")} exits 1 before listening, naming the fault`, async () => {
      const { code, stderr } = await run(args, env);
      assert.equal(code, 1, stderr);
      assert.match(stderr, message);
      assert.doesNotMatch(stderr, /listening on/);
    });
  }

  test("--max-memory 1mb: a bulk write is refused 503 server_busy naming --max-memory, while /health, reads by id and small writes are answered", async () => {
    const server = await start(["--memory", "--max-memory", "1mb"]);
    try {
      const created = await call(server, "POST", T, { title: "light" });
      assert.equal(created.status, 201);
      const refused = await call(server, "POST", `${T}/bulk`, [{ title: "heavy" }]);
      assert.equal(refused.status, 503);
      assert.equal(refused.body.error.code, "server_busy");
      assert.match(refused.body.error.message, /--max-memory/);
      assert.doesNotMatch(refused.body.error.message, /maxMemoryBytes option/);
      assert.ok(Number(refused.headers.get("retry-after")) >= 1);
      assert.equal((await fetch(`${server.url}/health`)).status, 200);
      assert.equal((await call(server, "GET", `${T}/${created.body.id}`)).status, 200);
      assert.equal((await call(server, "GET", `${T}/count`)).body.count, 1);
    } finally {
      server.child.kill("SIGTERM");
      assert.equal(await exitOf(server), 0);
    }
  });

  test("TABULA_MAX_MEMORY=2gb and --idempotency-memory 3kb: bulk writes go on, and past 3 kB of answers the oldest key is new again", async () => {
    const server = await start(["--memory", "--idempotency-memory", "3kb"], { TABULA_MAX_MEMORY: "2gb" });
    try {
      assert.equal((await call(server, "POST", `${T}/bulk`, [{ title: "a" }])).status, 201);
      const title = "t".repeat(1000);
      const first = await call(server, "POST", T, { title }, { "Idempotency-Key": "k0" });
      for (let i = 1; i < 4; i++) assert.equal((await call(server, "POST", T, { title, priority: i }, { "Idempotency-Key": `k${i}` })).status, 201);
      const newest = await call(server, "POST", T, { title, priority: 3 }, { "Idempotency-Key": "k3" });
      assert.equal(newest.headers.get("idempotent-replayed"), "true");
      const oldest = await call(server, "POST", T, { title }, { "Idempotency-Key": "k0" });
      assert.equal(oldest.status, 201);
      assert.equal(oldest.headers.get("idempotent-replayed"), null);
      assert.notEqual(oldest.body.id, first.body.id);
    } finally {
      server.child.kill("SIGTERM");
      assert.equal(await exitOf(server), 0);
    }
  });
});

describe("a heap full of records", () => {
  test("under node --max-old-space-size=64, creates of objects with keys no other record has are refused 503 server_busy once the heap is full, and the server stays up, every answered record kept", async () => {
    // Each record is about 48 kB of JSON and several times that in V8's heap (an object's keys no
    // other record shares cost V8 a hidden class each): before writes were refused, such creates
    // ended the process ("JavaScript heap out of memory") after about a hundred.
    const server = await startSpawnedServer(CLI, ["--schema", schemaDir, "--port", "0", "--secret-key", SECRET, "--log", "off", "--data", join(root, "full-heap")], START_TIMEOUT_MS, { env: childEnv(), nodeArgs: ["--max-old-space-size=64"] });
    try {
      const metaOf = (i: number) => Object.fromEntries(Array.from({ length: 38 }, (_, o) => [`o${o}`, Object.fromEntries(Array.from({ length: 100 }, (_, k) => [`r${i}o${o}k${k}`, 1]))]));
      let stored = 0;
      let refused: Awaited<ReturnType<typeof call>> | undefined;
      let sent = 0;
      for (; sent < 2000 && refused === undefined; sent++) {
        const answer = await call(server, "POST", T, { title: `full ${sent}`, meta: metaOf(sent) });
        if (answer.status === 201) stored++;
        else refused = answer;
      }
      assert.ok(refused, `a write was refused before 2,000 were stored (${stored} were)`);
      assert.equal(refused.status, 503);
      assert.equal(refused.body.error.code, "server_busy");
      assert.equal(refused.body.error.details.resource, "heap");
      assert.match(refused.body.error.message, /--max-old-space-size/);
      assert.ok(Number(refused.headers.get("retry-after")) > 0);
      // Pressed on, it stays up: a write is taken only while a collection finds room for it.
      for (const end = sent + 60; sent < end; sent++) {
        const answer = await call(server, "POST", T, { title: `full ${sent}`, meta: metaOf(sent) });
        assert.ok(answer.status === 201 || answer.status === 503, `answered ${answer.status}`);
        if (answer.status === 201) stored++;
      }
      // Up, reading, and holding every record it answered 201.
      assert.equal((await call(server, "GET", "/health")).status, 200);
      assert.equal((await call(server, "GET", `${T}/count`)).body.count, stored);
      const listed = await call(server, "GET", `${T}?sort_by=created_date&limit=1&fields=title`);
      assert.equal(listed.status, 200, JSON.stringify(listed.body));
      assert.equal(listed.body[0].title, "full 0");
      // The operator hears of it, once: not a line per refused write.
      const warnings = server.output().split("\n").filter((line) => line.includes("heap is full"));
      assert.equal(warnings.length, 1, server.output().slice(-2000));
      assert.match(warnings[0]!, /^warning: .*--max-old-space-size/);
    } finally {
      server.child.kill("SIGTERM");
      assert.equal(await exitOf(server), 0, server.output().slice(-3000));
    }
  });
});

describe("SIGTERM under load", () => {
  test("exits 0 with a stream nobody reads, an idle keep-alive connection, a body that never ends and writes in flight; every answered write is there after a restart", async () => {
    const data = join(root, "stop-data");
    const server = await start(["--data", data]);
    const url = new URL(server.url);
    const open: Array<{ destroy(): void }> = [];
    // A change feed stream whose client never reads: its socket fills, and the end event cannot go.
    const stream = request({ host: url.hostname, port: url.port, path: `${T}/changes`, headers: { "X-Api-Key": SECRET, Accept: "text/event-stream" } });
    stream.on("response", (res) => res.pause());
    stream.on("error", () => {});
    stream.end();
    open.push(stream);
    // An idle keep-alive connection.
    const agent = new Agent({ keepAlive: true });
    await new Promise<void>((resolve, reject) => {
      const health = request({ host: url.hostname, port: url.port, path: "/health", agent }, (res) => res.resume().on("end", resolve));
      health.on("error", reject);
      health.end();
    });
    open.push(agent);
    // A write whose body never ends.
    const stalled = request({ host: url.hostname, port: url.port, path: T, method: "POST", headers: { "X-Api-Key": SECRET, "Content-Type": "application/json", "Content-Length": "100000" } });
    stalled.on("error", () => {});
    stalled.write('{"title":"');
    open.push(stalled);
    // Writes in flight: those answered 201 must be there after the restart.
    const answered: string[] = [];
    const writes = Array.from({ length: 40 }, (_, i) =>
      call(server, "POST", T, { title: `in flight ${i}` }).then(
        (created) => void (created.status === 201 && answered.push(created.body.id)),
        () => {},
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    server.child.kill("SIGTERM");
    try {
      assert.equal(await exitOf(server), 0, server.output());
    } finally {
      for (const held of open) held.destroy();
    }
    await Promise.all(writes);
    assert.match(server.output(), /SIGTERM: finishing requests in flight/);

    const again = await start(["--data", data]);
    try {
      for (const id of answered) assert.equal((await call(again, "GET", `${T}/${id}`)).status, 200, `answered write ${id}`);
    } finally {
      again.child.kill("SIGTERM");
      assert.equal(await exitOf(again), 0);
    }
  });
});
