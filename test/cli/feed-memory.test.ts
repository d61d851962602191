// A change feed consumer that stops reading costs the server a bounded amount of memory (issue 19):
// twenty streams that never read while 80 MB of events are written must not make the server hold
// those events twenty times over. They are cut off with event: overflow instead. Each stream asks
// with its own q, so that no two share the bytes they are sent: unbounded, the server would hold
// 1.6 GB.

import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { BUILT_CLI, copyCli, killSpawned, startSpawnedServer } from "../support/spawned-server.ts";

const SECRET_KEY = "sk_test_key_padd";
const STREAMS = 20;
const TASK = { name: "Task", type: "object", properties: { title: { type: "string" }, blob: { type: "string" } }, required: ["title"] };

let root: string;
let cli: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "tabula-feed-memory-"));
  await writeFile(join(root, "Task.json"), JSON.stringify(TASK));
  if (existsSync(BUILT_CLI)) cli = copyCli(root);
});
after(async () => {
  killSpawned();
  await rm(root, { recursive: true, force: true });
});

function rssOf(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024;
}

test("streams that never read are cut off with event: overflow, and the server's memory stays bounded", { skip: !existsSync(BUILT_CLI) && "npm run build first" }, async () => {
  // --changes-keep 0: the window holds no versions, so what grows is what the streams buffer.
  const server = await startSpawnedServer(cli, ["--schema", root, "--memory", "--port", "0", "--secret-key", SECRET_KEY, "--changes-keep", "0"], 30_000);
  const port = Number(new URL(server.url).port);
  const sockets: net.Socket[] = [];
  for (let i = 0; i < STREAMS; i++) {
    const socket = net.connect(port, "127.0.0.1");
    // Reads the answer's head, then stops reading for good.
    await new Promise<void>((resolve) => {
      socket.once("data", () => {
        socket.pause();
        resolve();
      });
      const q = encodeURIComponent(JSON.stringify({ title: { $ne: `none of ${i}` } }));
      socket.write(`GET /api/entities/Task/changes?q=${q} HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${SECRET_KEY}\r\nAccept: text/event-stream\r\n\r\n`);
    });
    sockets.push(socket);
  }
  const before = rssOf(server.child.pid!);
  const blob = "b".repeat(10_000);
  // 80 MB of events (40 MB created, 40 MB deleted), written and then deleted, so that the store itself keeps nothing of them.
  for (let round = 0; round < 40; round++) {
    const body = JSON.stringify(Array.from({ length: 100 }, (_, i) => ({ title: `${round}-${i}`, blob })));
    const created = await fetch(`${server.url}/api/entities/Task/bulk`, { method: "POST", headers: { "X-Api-Key": SECRET_KEY, "Content-Type": "application/json" }, body });
    assert.equal(created.status, 201);
    const ids = ((await created.json()) as Array<{ id: string }>).map((record) => record.id);
    const deleted = await fetch(`${server.url}/api/entities/Task?q=${encodeURIComponent(JSON.stringify({ id: { $in: ids } }))}`, { method: "DELETE", headers: { "X-Api-Key": SECRET_KEY } });
    assert.equal(deleted.status, 200);
  }
  const grown = rssOf(server.child.pid!) - before;
  // Unbounded, the streams would hold 20 × 80 MB; bounded, each holds about 1 MiB.
  assert.ok(grown < 300 * 1024 * 1024, `the server grew by ${(grown / 1048576).toFixed(0)} MiB`);
  // Each stream, read now, ends with event: overflow.
  const endings = await Promise.all(
    sockets.map(
      (socket) =>
        new Promise<string>((resolve) => {
          let tail = "";
          socket.on("data", (chunk) => (tail = (tail + chunk.toString("latin1")).slice(-2000)));
          socket.on("close", () => resolve(tail));
          socket.resume();
        }),
    ),
  );
  for (const tail of endings) assert.match(tail, /event: overflow\ndata: \{"type":"overflow"/);
  server.child.kill("SIGKILL");
  await server.exited;
});
