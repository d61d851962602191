// A full disk (issue 16, defect 12; docs/errors.md): on a small tmpfs, writes that find no room are
// answered 507 `insufficient_storage` (never a reset), reads go on and show only stored writes,
// writes work again once space is freed, and a kill -9 and restart finds exactly what was answered.
// Mounting needs root: the test skips, saying so, when it is not root or the mount is refused.

import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { after, before, test } from "node:test";
import { copyCli, killSpawned, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";
import { fillDisk, mountTmpfs, unmountTmpfs } from "../support/tmpfs.ts";

const SECRET_KEY = "sk_full_disk_key";
const TMPFS_BYTES = 4 * 1024 * 1024;
/** Room left beside the filler: a few dozen log lines of NOTE_BYTES. */
const ROOM_BYTES = 48 * 1024;
const NOTE_BYTES = 1500;
const WAVE = 12;
const START_TIMEOUT_MS = 15_000;
const TASK = { name: "Task", type: "object", properties: { title: { type: "string" }, note: { type: "string" }, step: { type: "integer" } }, required: ["title"] };

let root: string;
let mountPoint: string;
let isMounted = false;
/** Why the test cannot run here, or undefined. */
let skipReason: string | undefined;
let CLI: string;

before(async () => {
  root = await mkdtemp(join(tmpdir(), "tabula-full-disk-"));
  await writeFile(join(root, "Task.json"), JSON.stringify(TASK));
  CLI = copyCli(root);
  mountPoint = join(root, "disk");
  await mkdir(mountPoint);
  skipReason = mountTmpfs(mountPoint, TMPFS_BYTES);
  isMounted = skipReason === undefined;
});

after(async () => {
  killSpawned();
  if (isMounted) unmountTmpfs(mountPoint);
  await rm(root, { recursive: true, force: true });
});

function startServer(dataDir: string): Promise<SpawnedServer> {
  return startSpawnedServer(CLI, ["--schema", root, "--data", dataDir, "--port", "0", "--secret-key", SECRET_KEY], START_TIMEOUT_MS);
}

interface Answer {
  status: number;
  body: any;
}

/** A request whose answer must be JSON: a reset connection or another body fails the test. */
async function call(server: SpawnedServer, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(server.url + path, {
    method,
    headers: { "X-Api-Key": SECRET_KEY, ...headers, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  assert.match(response.headers.get("content-type") ?? "", /application\/json/, `${method} ${path}: ${response.status} ${text}`);
  return { status: response.status, body: JSON.parse(text) };
}

function assertInsufficientStorage(answer: Answer, what: string): void {
  assert.equal(answer.status, 507, `${what}: ${JSON.stringify(answer.body)}`);
  assert.equal(answer.body.error.code, "insufficient_storage");
}

/** Every record as the server lists it, by id. */
async function listAll(server: SpawnedServer): Promise<Map<string, Record<string, unknown>>> {
  const answer = await call(server, "GET", "/api/entities/Task?limit=5000&sort_by=id");
  assert.equal(answer.status, 200);
  return new Map((answer.body as Array<Record<string, unknown>>).map((record) => [record.id as string, record]));
}

test("a full disk answers 507 to every waiting write, reads go on, writes work again once space is freed, and a restart finds exactly the answered writes (issue 16, defect 12)", { timeout: 120_000 }, async (t) => {
  if (skipReason) return t.skip(skipReason);
  const dataDir = join(mountPoint, "data");
  const note = "n".repeat(NOTE_BYTES);
  /** What the client was last answered for each record. */
  const answered = new Map<string, Record<string, unknown>>();
  let server = await startServer(dataDir);
  try {
    for (let i = 0; i < 5; i++) {
      const created = await call(server, "POST", "/api/entities/Task", { title: `before ${i}`, step: 0 });
      assert.equal(created.status, 201);
      answered.set(created.body.id, created.body);
    }
    const target = [...answered.keys()][0]!;

    // Leave ROOM_BYTES beside a filler file, then write in concurrent waves until the disk is full.
    const filler = join(mountPoint, "filler");
    await fillDisk(mountPoint, filler, ROOM_BYTES);
    let refused = 0;
    let wavesWithRefusals = 0;
    for (let wave = 0; wavesWithRefusals < 3; wave++) {
      assert.ok(wave < 200, "the disk never filled up");
      const targetBefore = answered.get(target);
      const writing = [
        ...Array.from({ length: WAVE - 1 }, (_, i) => call(server, "POST", "/api/entities/Task", { title: `wave ${wave}.${i}`, note, step: wave })),
        call(server, "PATCH", `/api/entities/Task/${target}`, { step: wave + 1, note }),
      ];
      // A read sent while the PATCH waits for the disk may find (and cache) its version in memory:
      // it answers once that version is durable, or reads again once it has been taken back out.
      const reading = call(server, "GET", `/api/entities/Task/${target}`);
      const answers = await Promise.all(writing);
      const patched = answers[WAVE - 1]!;
      const readDuring = await reading;
      assert.equal(readDuring.status, 200);
      assert.ok(isDeepStrictEqual(readDuring.body, targetBefore) || (patched.status === 200 && isDeepStrictEqual(readDuring.body, patched.body)), `wave ${wave}: a read showed ${JSON.stringify(readDuring.body)}`);
      let waveRefused = 0;
      for (const [i, answer] of answers.entries()) {
        if (answer.status === 507) {
          assertInsufficientStorage(answer, `wave ${wave}, write ${i}`);
          waveRefused++;
          continue;
        }
        assert.equal(answer.status, i === WAVE - 1 ? 200 : 201, JSON.stringify(answer.body));
        answered.set(answer.body.id, answer.body);
      }
      refused += waveRefused;
      if (waveRefused > 0) wavesWithRefusals++;
      // A refused PATCH was taken back out of memory, and with it any view of it cached meanwhile.
      assert.deepEqual((await call(server, "GET", `/api/entities/Task/${target}`)).body, answered.get(target), `wave ${wave}`);
    }
    assert.ok(refused >= WAVE, `${refused} writes were refused`);
    t.diagnostic(`${answered.size} records answered, ${refused} writes refused with 507`);

    // Still full: reads answer 200 and show exactly what was answered (the refused writes were taken back).
    const idempotent = { "Idempotency-Key": "full-disk-1" };
    assertInsufficientStorage(await call(server, "POST", "/api/entities/Task", { title: "idempotent", note: note.repeat(40) }, idempotent), "a large write on the full disk");
    assert.deepEqual(await listAll(server), answered);
    const read = await call(server, "GET", `/api/entities/Task/${target}`);
    assert.equal(read.status, 200);
    assert.deepEqual(read.body, answered.get(target));
    assert.equal((await call(server, "GET", "/health")).status, 200);

    // Space freed: writes work again, and the refused idempotent request is carried out, once.
    await rm(filler);
    const again = await call(server, "POST", "/api/entities/Task", { title: "idempotent", note: note.repeat(40) }, idempotent);
    assert.equal(again.status, 201, JSON.stringify(again.body));
    answered.set(again.body.id, again.body);
    const replayed = await call(server, "POST", "/api/entities/Task", { title: "idempotent", note: note.repeat(40) }, idempotent);
    assert.deepEqual(replayed.body, again.body);
    const updated = await call(server, "PATCH", `/api/entities/Task/${target}`, { step: -1 });
    assert.equal(updated.status, 200);
    answered.set(target, updated.body);
    assert.deepEqual(await listAll(server), answered);

    server.child.kill("SIGKILL");
    await server.exited;
    server = await startServer(dataDir);
    assert.deepEqual(await listAll(server), answered, "after kill -9, exactly the answered writes are there");
    // The bytes of writes cut short by the full disk were cut off at once, so there is no torn tail.
    assert.doesNotMatch(server.output(), /warning/, server.output());
  } finally {
    server.child.kill("SIGKILL");
    await server.exited;
  }
});
