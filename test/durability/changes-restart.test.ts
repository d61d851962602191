// The change feed across SIGKILL and restart (docs/change-feed.md, issue 19): a stream cut by the kill
// resumes from its last id on the restarted server and gets every acknowledged write it had not
// seen, once; the kept window is the same after the restart, also once compaction has moved it
// from the log into a snapshot. SIGTERM ends open streams cleanly, and the process exits at once.

import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { BUILT_CLI, copyCli, killSpawned, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";
import { SseClient } from "../support/sse.ts";

const SECRET_KEY = "sk_test_key_padd";
const START_TIMEOUT_MS = 30_000;
const TASK = { name: "Task", type: "object", properties: { title: { type: "string" }, step: { type: "integer" }, blob: { type: "string" } }, required: ["title"] };

let root: string;
let cli: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "tabula-changes-restart-"));
  await writeFile(join(root, "Task.json"), JSON.stringify(TASK));
  if (existsSync(BUILT_CLI)) cli = copyCli(root);
});
after(async () => {
  killSpawned();
  await rm(root, { recursive: true, force: true });
});

function start(dataDir: string, keep: number): Promise<SpawnedServer> {
  return startSpawnedServer(cli, ["--schema", root, "--data", dataDir, "--port", "0", "--secret-key", SECRET_KEY, "--changes-keep", String(keep)], START_TIMEOUT_MS);
}

async function call(server: SpawnedServer, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(server.url + path, { method, headers: { "X-Api-Key": SECRET_KEY, "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  assert.ok(response.status < 300, `${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text);
}

async function kill(server: SpawnedServer): Promise<void> {
  server.child.kill("SIGKILL");
  await server.exited;
}

test("a stream cut by SIGKILL resumes on the restarted server: every acknowledged write once, nothing twice", { skip: !existsSync(BUILT_CLI) && "npm run build first" }, async () => {
  const dataDir = join(root, "kill");
  let server = await start(dataDir, 100_000);
  const stream = new SseClient(`${server.url}/api/entities/Task/changes`, { "X-Api-Key": SECRET_KEY });
  await stream.opened;
  const acknowledged: string[] = [];
  let stop = false;
  const writers = Array.from({ length: 8 }, async (_, w) => {
    for (let i = 0; !stop; i++) {
      try {
        const record = await call(server, "POST", "/api/entities/Task", { title: `w${w}-${i}` });
        const updated = await call(server, "PATCH", `/api/entities/Task/${record.id}`, { step: i });
        acknowledged.push(`create ${record.id}`, `update ${updated.id} ${updated.step}`);
      } catch {
        return; // the kill
      }
    }
  });
  await stream.waitFor(40);
  await kill(server);
  stop = true;
  await Promise.all(writers);
  await stream.waitForEnd();
  const beforeKill = stream.events.length;
  assert.ok(beforeKill >= 40);

  server = await start(dataDir, 100_000);
  const resumed = new SseClient(`${server.url}/api/entities/Task/changes`, { "X-Api-Key": SECRET_KEY, "Last-Event-ID": stream.lastId! });
  await resumed.opened;
  assert.equal(resumed.status, 200);
  const marker = await call(server, "POST", "/api/entities/Task", { title: "after the restart" });
  await resumed.until(() => resumed.events.some((event) => event.json.id === marker.id), "the write after the restart");
  const all = [...stream.events, ...resumed.events];
  const ids = all.map((event) => event.id!);
  assert.equal(new Set(ids).size, ids.length, "no event twice");
  const seen = new Set(all.map((event) => (event.event === "create" ? `create ${event.json.id}` : `update ${event.json.id} ${event.json.data.step}`)));
  for (const write of acknowledged) assert.ok(seen.has(write), `${write} was acknowledged but never sent`);
  resumed.close();
  await kill(server);
});

test("the kept window is the same after a restart, once compaction has moved it into a snapshot", { skip: !existsSync(BUILT_CLI) && "npm run build first" }, async () => {
  const dataDir = join(root, "compacted");
  let server = await start(dataDir, 50);
  const blob = "b".repeat(8000);
  // Over 8 MiB of log: the server compacts on its own.
  for (let round = 0; round < 12; round++) {
    await call(server, "POST", "/api/entities/Task/bulk", Array.from({ length: 100 }, (_, i) => ({ title: `${round}-${i}`, blob })));
  }
  const first = await call(server, "GET", "/api/entities/Task?limit=1&sort_by=created_date");
  for (let step = 0; step < 30; step++) await call(server, "PATCH", `/api/entities/Task/${first[0].id}`, { step });
  const deadline = Date.now() + 30_000;
  while (!readdirSync(dataDir).some((name) => name.startsWith("snapshot-") && !name.endsWith(".tmp"))) {
    assert.ok(Date.now() < deadline, "the server compacted within 30 s");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // The window lets its oldest events go a turn of the event loop after a write is durable, so
  // that the streams told of the write read it first (change-window.ts); a request that comes in
  // before that turn sees one more (the feed keeps "at least" --changes-keep). Ask until two
  // answers agree: with no write since, the window then holds exactly --changes-keep events.
  let head = await call(server, "GET", `/api/changes`);
  for (let again = await call(server, "GET", `/api/changes`); again.oldest !== head.oldest; again = await call(server, "GET", `/api/changes`)) head = again;
  const beforeKill = await call(server, "GET", `/api/changes?since=${head.oldest}&limit=1000`);
  assert.equal(beforeKill.changes.length, 49, "the window holds --changes-keep events: the oldest and 49 after it");
  await kill(server);

  server = await start(dataDir, 50);
  const afterRestart = await call(server, "GET", `/api/changes?since=${head.oldest}&limit=1000`);
  assert.deepEqual(afterRestart, beforeKill);
  // A point before the window catches up: the latest version of each record written since.
  const synced: any[] = [];
  for (let since = "0"; ; ) {
    const page = await call(server, "GET", `/api/changes?since=${since}&limit=1000`);
    if (page.changes.length === 0) break;
    synced.push(...page.changes);
    since = page.next;
  }
  assert.ok(synced.every((change) => change.type === "sync"));
  assert.equal(new Set(synced.map((change) => change.id)).size, 1200);
  assert.equal(synced.length, 1200);
  assert.equal(synced.find((change) => change.id === first[0].id).data.step, 29);
  await kill(server);
});

test("SIGTERM ends every open stream cleanly (a stream's last chunk, not a reset) and the process exits 0", { skip: !existsSync(BUILT_CLI) && "npm run build first" }, async () => {
  const server = await start(join(root, "sigterm"), 100);
  const streams = [new SseClient(`${server.url}/api/entities/Task/changes`, { "X-Api-Key": SECRET_KEY }), new SseClient(`${server.url}/api/changes?since=0`, { "X-Api-Key": SECRET_KEY })];
  await Promise.all(streams.map((stream) => stream.opened));
  await call(server, "POST", "/api/entities/Task", { title: "before SIGTERM" });
  await Promise.all(streams.map((stream) => stream.waitFor(1)));
  server.child.kill("SIGTERM");
  // Were the streams left open, the graceful close would cut them after 10 s: not a clean end.
  assert.equal(await server.exited, 0);
  for (const stream of streams) {
    await stream.waitForEnd();
    assert.equal(stream.endedCleanly, true, "the stream was cut, not ended");
    assert.deepEqual(stream.events.map((event) => event.json.data.title), ["before SIGTERM"]);
  }
});
