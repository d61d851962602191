// Webhooks survive a crash (docs/webhooks.md, "Delivery"): kill -9 the built CLI in the middle of
// deliveries, under writes, again and again; every create it answered reaches each receiver, in
// commit order, duplicates only as the same webhook-id again. And on PostgreSQL, two processes
// share the deliveries: one delivers, and when it is killed the other takes over from where it
// stopped.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { describeWithPostgres, dropPgSchema, freshPgSchema } from "../support/postgres.ts";
import { BUILT_CLI, copyCli, killSpawned, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";
import { isBefore, WebhookReceiver, type Received } from "../support/webhook-receiver.ts";

const SECRET_KEY = "sk_test_webhook_crash";
/** 20 kills, as the crash test of records does; each cycle writes for a few hundred ms. */
const CYCLES = 20;
const WRITERS = 4;
const START_TIMEOUT_MS = 30_000;
const TASK = { name: "Task", type: "object", properties: { title: { type: "string" }, n: { type: "integer" } }, required: ["title"] };

let root: string;
let cli: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "tabula-webhook-crash-"));
  await writeFile(join(root, "Task.json"), JSON.stringify(TASK));
  if (existsSync(BUILT_CLI)) cli = copyCli(root);
});
after(async () => {
  killSpawned();
  await rm(root, { recursive: true, force: true });
});

async function call(server: SpawnedServer, method: string, path: string, body?: unknown) {
  const response = await fetch(server.url + path, { method, headers: { "X-Api-Key": SECRET_KEY, "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  return { status: response.status, body: text && response.headers.get("content-type")?.includes("json") ? JSON.parse(text) : undefined, text };
}

async function kill(server: SpawnedServer): Promise<void> {
  assert.equal(server.child.exitCode, null, `the server exited on its own:\n${server.output()}`);
  server.child.kill("SIGKILL");
  await server.exited;
}

/** Writers creating tasks until `stop()`; each create answered 201 is kept. */
function startWriters(server: SpawnedServer, answered: string[]): { stop(): Promise<void> } {
  let isStopped = false;
  const writer = async () => {
    while (!isStopped) {
      try {
        const made = await call(server, "POST", "/api/entities/Task", { title: `t${answered.length}`, n: answered.length });
        if (made.status === 201) answered.push(made.body.id);
      } catch {
        // The server was killed under this request: it may or may not be stored, and is not counted.
        return;
      }
    }
  };
  const running = Array.from({ length: WRITERS }, writer);
  return {
    async stop() {
      isStopped = true;
      await Promise.all(running);
    },
  };
}

/** Every create answered arrived; the first arrivals of each webhook-id are in commit order; a duplicate carries the same event. */
function checkReceiver(receiver: WebhookReceiver, answered: readonly string[], what: string): void {
  const delivered = new Set(receiver.delivered.map((request) => request.event.data?.id));
  const missing = answered.filter((id) => !delivered.has(id));
  assert.deepEqual(missing, [], `${what}: ${missing.length} of ${answered.length} creates never arrived`);
  const seen = new Map<string, string>();
  const firsts: Received[] = [];
  for (const request of receiver.received) {
    const body = JSON.stringify(request.event);
    if (seen.has(request.id)) assert.equal(seen.get(request.id), body, `${what}: ${request.id} sent twice with two bodies`);
    else firsts.push(request);
    seen.set(request.id, body);
  }
  for (let i = 1; i < firsts.length; i++) assert.ok(isBefore(firsts[i - 1]!.id, firsts[i]!.id), `${what}: ${firsts[i - 1]!.id} arrived before ${firsts[i]!.id}`);
  assert.deepEqual(receiver.refused, [], `${what}: signatures that did not verify`);
}

test(`kill -9 during deliveries, ${CYCLES} times under writes: every answered create reaches both endpoints, in order`, { skip: existsSync(BUILT_CLI) ? false : "no dist/tabula.mjs: run node build.mjs" }, async () => {
  const dataDir = join(root, "data");
  const args = ["--schema", root, "--data", dataDir, "--port", "0", "--secret-key", SECRET_KEY, "--webhooks-allow-private", "--log", "off"];
  const receivers = [await WebhookReceiver.start(), await WebhookReceiver.start()];
  const answered: string[] = [];
  try {
    let server = await startSpawnedServer(cli, args, START_TIMEOUT_MS);
    for (const [index, receiver] of receivers.entries()) {
      const made = await call(server, "POST", "/api/webhooks", { url: receiver.url, entities: ["Task"], ...(index === 1 ? { events: ["create"] } : {}) });
      assert.equal(made.status, 201, made.text);
      receiver.secret = made.body.secret;
    }
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      if (cycle > 0) server = await startSpawnedServer(cli, args, START_TIMEOUT_MS);
      const writers = startWriters(server, answered);
      await new Promise((resolve) => setTimeout(resolve, 150 + Math.random() * 250));
      await kill(server);
      await writers.stop();
    }
    server = await startSpawnedServer(cli, args, START_TIMEOUT_MS);
    for (const receiver of receivers) {
      await receiver.until((r) => {
        const delivered = new Set(r.delivered.map((request) => request.event.data?.id));
        return answered.every((id) => delivered.has(id));
      }, 60_000, "every create delivered");
    }
    receivers.forEach((receiver, index) => checkReceiver(receiver, answered, `endpoint ${index}`));
    const duplicates = receivers[0]!.received.length - new Set(receivers[0]!.received.map((request) => request.id)).size;
    console.log(`# ${answered.length} creates answered over ${CYCLES} kills; endpoint 0 got ${receivers[0]!.received.length} requests (${duplicates} sent again after a kill)`);
    await kill(server);
  } finally {
    for (const receiver of receivers) await receiver.close();
  }
});

describeWithPostgres("webhooks of two processes on one PostgreSQL database", (url) => {
  const pgSchema = freshPgSchema();
  after(() => dropPgSchema(url, pgSchema));

  test("one process delivers; when it is killed, the other delivers from where it stopped, within seconds", { skip: existsSync(BUILT_CLI) ? false : "no dist/tabula.mjs" }, async () => {
    // The bundle in the repository, beside node_modules/postgres (a copy elsewhere finds no driver).
    const args = ["--schema", root, "--store", url, "--pg-schema", pgSchema, "--port", "0", "--secret-key", SECRET_KEY, "--webhooks-allow-private", "--log", "off"];
    const receiver = await WebhookReceiver.start();
    try {
      const a = await startSpawnedServer(BUILT_CLI, args, START_TIMEOUT_MS);
      const made = await call(a, "POST", "/api/webhooks", { url: receiver.url });
      receiver.secret = made.body.secret;
      const b = await startSpawnedServer(BUILT_CLI, args, START_TIMEOUT_MS);
      const answered: string[] = [];
      const create = async (server: SpawnedServer, n: number) => {
        for (let i = 0; i < n; i++) answered.push((await call(server, "POST", "/api/entities/Task", { title: `t${answered.length}` })).body.id);
      };
      await create(a, 10);
      await create(b, 10);
      await receiver.until((r) => r.delivered.length >= 20, 10_000, "20 deliveries");
      // The one that delivers shows the endpoint's lag; the other only its (zero) counts.
      const metrics = await Promise.all([a, b].map(async (server) => (await call(server, "GET", "/metrics")).text));
      const delivering = metrics.map((text) => /tabula_webhook_lag_seconds\{/.test(text));
      assert.equal(delivering.filter(Boolean).length, 1, "exactly one process delivers");
      const [leader, other] = delivering[0] ? [a, b] : [b, a];
      assert.match(metrics[delivering[0] ? 1 : 0]!, new RegExp(`tabula_webhook_deliveries_total\\{endpoint="${made.body.id}",result="delivered"\\} 0\\n`));
      const writing = (async () => {
        await kill(leader);
        const killedAt = Date.now();
        await create(other, 10);
        return killedAt;
      })();
      const killedAt = await writing;
      await receiver.until((r) => answered.every((id) => r.delivered.some((request) => request.event.data?.id === id)), 20_000, "every create after the kill");
      const tookMs = Date.now() - killedAt;
      assert.ok(tookMs < 10_000, `the other process took ${tookMs} ms to take over`);
      checkReceiver(receiver, answered, "after the takeover");
      console.log(`# the other process delivered ${tookMs} ms after the kill`);
      await kill(other);
    } finally {
      await receiver.close();
    }
  });
});
