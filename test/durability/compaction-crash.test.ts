// A server SIGKILLed while it writes a snapshot (docs/architecture.md, "Start-up after a crash"):
// the next start deletes the half-written .tmp, replays the whole log (its rows kept as text), and
// serves every acknowledged write at its version, with the change feed's kept events as they were;
// the first request after the banner reads and writes correctly. Once that server has compacted
// the replayed rows into a snapshot, a start from it serves the same.

import assert from "node:assert/strict";
import { existsSync, readdirSync, watch } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { BUILT_CLI, copyCli, killSpawned, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";

const SECRET_KEY = "sk_test_key_padd";
const START_TIMEOUT_MS = 30_000;
const KEEP = 300;
const RECORDS = 120;
const WRITERS = 4;
const BLOB = "b".repeat(8000);
/** Tries at killing a server while its snapshot's .tmp is there (a compaction may finish first). */
const KILL_TRIES = 6;
const TASK = { name: "Task", type: "object", properties: { title: { type: "string" }, step: { type: "integer" }, blob: { type: "string" }, note: { type: "string" } }, required: ["title"] };

let root: string;
let cli: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "tabula-compaction-crash-"));
  await writeFile(join(root, "Task.json"), JSON.stringify(TASK));
  if (existsSync(BUILT_CLI)) cli = copyCli(root);
});
after(async () => {
  killSpawned();
  await rm(root, { recursive: true, force: true });
});

function start(dataDir: string): Promise<SpawnedServer> {
  return startSpawnedServer(cli, ["--schema", root, "--data", dataDir, "--port", "0", "--secret-key", SECRET_KEY, "--changes-keep", String(KEEP)], START_TIMEOUT_MS);
}

async function call(server: SpawnedServer, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(server.url + path, { method, headers: { "X-Api-Key": SECRET_KEY, "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  assert.ok(response.status < 300, `${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text);
}

const temporaryFiles = (dataDir: string): string[] => readdirSync(dataDir).filter((name) => name.endsWith(".tmp"));
const snapshots = (dataDir: string): string[] => readdirSync(dataDir).filter((name) => /^snapshot-\d+$/.test(name));

interface Acknowledged {
  /** Per record: the step of its last acknowledged PATCH, and of one sent but not answered. */
  readonly steps: Map<string, { acked: number; sent: number }>;
  /** "id step" of every acknowledged PATCH, in the order the answers came. */
  readonly order: string[];
}

/**
 * PATCHes the records (each writer its own, one at a time, so a record's steps only grow) until
 * the server is killed: SIGKILL as soon as a snapshot's .tmp file appears. Answers whether the
 * kill came while the .tmp was there.
 */
async function writeUntilKilledWhileCompacting(server: SpawnedServer, dataDir: string, ids: string[], acknowledged: Acknowledged): Promise<boolean> {
  let killedWhileCompacting = false;
  let isKilled = false;
  const watcher = watch(dataDir, (_, name) => {
    if (!name?.startsWith("snapshot-") || !name.endsWith(".tmp") || isKilled) return;
    server.child.kill("SIGKILL");
    isKilled = true;
    killedWhileCompacting = temporaryFiles(dataDir).length > 0;
  });
  let step = Math.max(0, ...[...acknowledged.steps.values()].map((s) => s.sent));
  const writers = Array.from({ length: WRITERS }, async (_, w) => {
    const own = ids.filter((_, i) => i % WRITERS === w);
    for (let i = 0; ; i++) {
      const id = own[i % own.length]!;
      const record = acknowledged.steps.get(id)!;
      record.sent = ++step;
      try {
        const updated = await call(server, "PATCH", `/api/entities/Task/${id}`, { step: record.sent, blob: BLOB, note: `é ✓ "${record.sent}"` });
        assert.equal(updated.step, record.sent);
        record.acked = record.sent;
        acknowledged.order.push(`${id} ${record.sent}`);
      } catch (error) {
        if (isKilled) return;
        throw error;
      }
    }
  });
  try {
    await Promise.all(writers);
  } finally {
    watcher.close();
  }
  await server.exited;
  return killedWhileCompacting;
}

/** Every record at its last acknowledged step (or the one in flight at the kill); the kept window of events. */
async function checkServed(server: SpawnedServer, acknowledged: Acknowledged): Promise<void> {
  for (const [id, { acked, sent }] of acknowledged.steps) {
    const record = await call(server, "GET", `/api/entities/Task/${id}`);
    assert.ok(record.step === acked || record.step === sent, `${id}: step ${record.step}, acknowledged ${acked}`);
    if (record.step > 0) assert.equal(record.note, `é ✓ "${record.step}"`);
  }
  const events: any[] = [];
  const head = await call(server, "GET", "/api/changes");
  for (let since = head.oldest; ; ) {
    const page = await call(server, "GET", `/api/changes?since=${since}&limit=1000`);
    events.push(...page.changes);
    if (page.changes.length < 1000) break;
    since = page.next;
  }
  assert.ok(events.length >= KEEP - 1, `the window keeps --changes-keep events (${events.length})`);
  const seen = new Set(events.map((event) => `${event.id} ${event.data.step}`));
  // The newest acknowledged writes are all in the window, each with the version it wrote.
  for (const write of acknowledged.order.slice(-(KEEP - 2 * WRITERS))) assert.ok(seen.has(write), `${write} was acknowledged but is not among the kept events`);
  for (const event of events) if (event.type === "update") assert.equal(event.data.note, `é ✓ "${event.data.step}"`);
}

test("a server killed while compacting restarts with every acknowledged write, the kept events, and reads and writes from its first request", { skip: !existsSync(BUILT_CLI) && "npm run build first" }, async () => {
  const dataDir = join(root, "data");
  let server = await start(dataDir);
  const created = await call(server, "POST", "/api/entities/Task/bulk", Array.from({ length: RECORDS }, (_, i) => ({ title: `task ${i}`, step: 0 })));
  const ids: string[] = created.map((record: { id: string }) => record.id);
  const acknowledged: Acknowledged = { steps: new Map(ids.map((id) => [id, { acked: 0, sent: 0 }])), order: [] };

  let killedWhileCompacting = false;
  let snapshotsAtKill: string[] = [];
  for (let tries = 0; !killedWhileCompacting && tries < KILL_TRIES; tries++) {
    killedWhileCompacting = await writeUntilKilledWhileCompacting(server, dataDir, ids, acknowledged);
    snapshotsAtKill = snapshots(dataDir);
    server = await start(dataDir);
  }
  assert.ok(killedWhileCompacting, `no kill came while a snapshot was being written in ${KILL_TRIES} tries`);
  // The restarted server deleted the half-written snapshot (and may be writing its own by now).
  await checkServed(server, acknowledged);

  // A write and a read of a record replayed from the log, at once.
  const first = ids[0]!;
  const patched = await call(server, "PATCH", `/api/entities/Task/${first}`, { title: "after the restart" });
  const { acked, sent } = acknowledged.steps.get(first)!;
  assert.ok(patched.step === acked || patched.step === sent);
  assert.equal((await call(server, "GET", `/api/entities/Task/${first}`)).title, "after the restart");
  acknowledged.steps.set(first, { acked: patched.step, sent: patched.step });

  // Let it compact the rows it replayed as text, then start from that snapshot.
  const deadline = Date.now() + 30_000;
  while (snapshots(dataDir).some((name) => snapshotsAtKill.includes(name)) || snapshots(dataDir).length !== 1 || temporaryFiles(dataDir).length > 0) {
    assert.ok(Date.now() < deadline, "the restarted server compacted within 30 s");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  server.child.kill("SIGKILL");
  await server.exited;
  server = await start(dataDir);
  await checkServed(server, acknowledged);
  assert.equal((await call(server, "GET", `/api/entities/Task/${first}`)).title, "after the restart");
  server.child.kill("SIGKILL");
  await server.exited;
});
