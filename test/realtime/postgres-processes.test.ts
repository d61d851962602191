// Two tabula processes on one PostgreSQL database (docs/postgresql.md#several-processes): an
// @base44/sdk subscriber on one gets the writes made through the other, in order, through the change
// feed's own path across processes; and a key revoked through one closes its sockets on the other.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createClient } from "@base44/sdk";
import { BUILT_CLI, killSpawned, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";
import { describeWithPostgres, dropPgSchema, freshPgSchema } from "../support/postgres.ts";
import { RawSocket } from "../support/socket-io.ts";
import { join } from "node:path";

process.env.NODE_ENV = "production";

const EXAMPLES = join(import.meta.dirname, "../../examples/entities");
const SECRET = "sk_processes_secret_key";
const PUBLISHABLE = "pk_processes_publishable";
const WAIT_MS = 10_000;

describeWithPostgres("realtime across two tabula processes on one PostgreSQL database", (url) => {
  const pgSchema = freshPgSchema();
  let a: SpawnedServer;
  let b: SpawnedServer;
  const clients: Array<ReturnType<typeof createClient>> = [];

  before(async () => {
    const args = ["--schema", EXAMPLES, "--store", url, "--pg-schema", pgSchema, "--port", "0", "--secret-key", SECRET, "--publishable-key", PUBLISHABLE, "--app-id", "app1"];
    a = await startSpawnedServer(BUILT_CLI, args, 30_000);
    b = await startSpawnedServer(BUILT_CLI, args, 30_000);
  });
  after(async () => {
    for (const client of clients) client.cleanup();
    killSpawned();
    await dropPgSchema(url, pgSchema);
  });

  function clientOf(server: SpawnedServer, token: string) {
    const client = createClient({ serverUrl: server.url, appId: "app1", token });
    clients.push(client);
    return client;
  }

  async function roomsOn(server: SpawnedServer, expected: number): Promise<void> {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const text = await (await fetch(`${server.url}/metrics`, { headers: { "X-Api-Key": SECRET } })).text();
      if (Number(/^tabula_realtime_rooms (\d+)$/m.exec(text)?.[1]) === expected) return;
      if (Date.now() > deadline) assert.fail(`tabula_realtime_rooms is not ${expected}:\n${text}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  test("a subscriber on process A gets the create, update and delete made through process B, in order", async () => {
    const events: any[] = [];
    const unsubscribe = clientOf(a, PUBLISHABLE).entities.Task.subscribe((event: unknown) => events.push(event));
    await roomsOn(a, 1);
    const Task = clientOf(b, SECRET).entities.Task;
    const created = await Task.create({ title: "written through B" });
    await Task.update(created.id, { status: "done" });
    await Task.delete(created.id);
    const deadline = Date.now() + WAIT_MS;
    while (events.length < 3) {
      if (Date.now() > deadline) assert.fail(`${events.length} events on A: ${JSON.stringify(events)}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.deepEqual(events.map((event) => [event.type, event.id, event.data.status]), [["create", created.id, "todo"], ["update", created.id, "done"], ["delete", created.id, "done"]]);
    assert.equal(events.some((event) => "created_by_id" in event.data), false, "shaped for the publishable key");
    unsubscribe();
    await roomsOn(a, 0);
  });

  test("a key revoked through process B closes its sockets on process A", async () => {
    const made = await (await fetch(`${b.url}/api/keys`, { method: "POST", headers: { "X-Api-Key": SECRET, "Content-Type": "application/json" }, body: JSON.stringify({ kind: "publishable", name: "revoked on B" }) })).json() as { id: string; key: string };
    // A key made through B reaches A when A next reads the keys (docs/postgresql.md#several-processes).
    const deadline = Date.now() + WAIT_MS;
    while ((await fetch(`${a.url}/api/entities/Task/count`, { headers: { "X-Api-Key": made.key } })).status !== 200) {
      if (Date.now() > deadline) assert.fail("the key made through B never worked on A");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const socket = await RawSocket.connect(a.url, made.key);
    assert.deepEqual(await socket.join("entities:app1:Task"), { ok: true });
    assert.equal((await fetch(`${b.url}/api/keys/${made.id}`, { method: "DELETE", headers: { "X-Api-Key": SECRET } })).status, 200);
    assert.match(await socket.next(), /^42\["error",\{"code":"unauthorized"/);
    assert.equal(await socket.next(), "41");
    assert.equal((await socket.closed).code, 1008);
  });
});
