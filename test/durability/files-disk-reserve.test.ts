// Uploads leave the records their disk (docs/operating.md, "Files"): on a small tmpfs, an upload
// that would leave less than 512 MiB free is refused 507 `insufficient_storage`, midway as at the
// start, and leaves no file behind; the records' writes go on. Mounting needs root: the test skips,
// saying so, when it is not root or the mount is refused.

import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { copyCli, killSpawned, startSpawnedServer } from "../support/spawned-server.ts";
import { fillDisk, mountTmpfs, unmountTmpfs } from "../support/tmpfs.ts";

const MiB = 1024 * 1024;
const SECRET_KEY = "sk_files_reserve_key";
const TASK = { name: "Task", type: "object", properties: { title: { type: "string" } } };

let root: string;
let mountPoint: string;
let isMounted = false;
let skipReason: string | undefined;
let cli: string;

before(async () => {
  root = await mkdtemp(join(tmpdir(), "tabula-files-reserve-"));
  await writeFile(join(root, "Task.json"), JSON.stringify(TASK));
  cli = copyCli(root);
  mountPoint = join(root, "disk");
  await mkdir(mountPoint);
  skipReason = mountTmpfs(mountPoint, 600 * MiB);
  isMounted = skipReason === undefined;
});

after(async () => {
  killSpawned();
  if (isMounted) unmountTmpfs(mountPoint);
  await rm(root, { recursive: true, force: true });
});

test("an upload that would eat into the records' 512 MiB is 507, leaving nothing; records are still written", { skip: skipReason }, async (t) => {
  if (skipReason !== undefined) return t.skip(skipReason);
  const dataDir = join(mountPoint, "data");
  const server = await startSpawnedServer(cli, ["--schema", root, "--data", dataDir, "--port", "0", "--secret-key", SECRET_KEY, "--log", "off"], 15_000);
  try {
    const upload = (bytes: number) => fetch(`${server.url}/api/files?name=blob.bin`, { method: "POST", headers: { "X-Api-Key": SECRET_KEY, "Content-Type": "application/octet-stream" }, body: Buffer.alloc(bytes, 7) });
    // 530 MiB free: a 4 MiB file fits, a 30 MiB one crosses the line midway.
    await fillDisk(mountPoint, join(mountPoint, "filler"), 530 * MiB);
    const small = await upload(4 * MiB);
    assert.equal(small.status, 201, await small.clone().text());
    const big = await upload(30 * MiB);
    assert.equal(big.status, 507, await big.clone().text());
    assert.equal(((await big.json()) as { error: { code: string } }).error.code, "insufficient_storage");
    // Nothing of it is left, nor listed.
    assert.deepEqual((await readdir(join(dataDir, "files"))).filter((name) => name.startsWith(".tmp-")), []);
    const listed = (await (await fetch(`${server.url}/api/files`, { headers: { "X-Api-Key": SECRET_KEY } })).json()) as unknown[];
    assert.equal(listed.length, 1);
    // Below the line, the next upload is refused at once; a record is still stored.
    await rm(join(mountPoint, "filler"));
    await fillDisk(mountPoint, join(mountPoint, "filler"), 500 * MiB);
    assert.equal((await upload(1024)).status, 507);
    const record = await fetch(`${server.url}/api/entities/Task`, { method: "POST", headers: { "X-Api-Key": SECRET_KEY, "Content-Type": "application/json" }, body: JSON.stringify({ title: "still written" }) });
    assert.equal(record.status, 201);
  } finally {
    server.child.kill("SIGTERM");
    await server.exited;
  }
});
