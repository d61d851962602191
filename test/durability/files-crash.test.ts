// Uploaded files on the file store, in a real process (docs/operating.md, "Files"): uploads cut by
// SIGKILL leave nothing half made and lose nothing answered; a 50 MiB upload and its download pass
// through without being held in memory; a backup holds the files, and verify reads them back.

import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { childEnv, cliWithSchema, killSpawned, spawnCli, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";

const SECRET = "sk_test_files_secret";
const PUBLISHABLE = "pk_test_files_publishable";
/** Only a guard against a server that never listens. */
const START_TIMEOUT_MS = 30_000;
const TASK = { name: "Task", type: "object", properties: { title: { type: "string" } }, required: ["title"] };
const MiB = 1024 * 1024;

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const jsonOf = (response: Response): Promise<any> => response.json();

let root: string;
let cli: string;
let schemaDir: string;
before(async () => {
  ({ root, cli, schemaDir } = await cliWithSchema("tabula-files-", [TASK]));
});
after(async () => {
  killSpawned();
  await rm(root, { recursive: true, force: true });
});

function start(dataDir: string): Promise<SpawnedServer> {
  const args = ["--schema", schemaDir, "--data", dataDir, "--port", "0", "--secret-key", SECRET, "--publishable-key", PUBLISHABLE];
  return startSpawnedServer(cli, args, START_TIMEOUT_MS, { env: childEnv() });
}

async function stop(server: SpawnedServer, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  server.child.kill(signal);
  await server.exited;
}

function upload(server: SpawnedServer, bytes: Uint8Array, name: string, path = "/api/files"): Promise<Response> {
  const form = new FormData();
  form.append("file", new File([bytes], name, { type: "application/octet-stream" }));
  return fetch(server.url + path, { method: "POST", headers: { "X-Api-Key": PUBLISHABLE }, body: form });
}

async function listed(server: SpawnedServer): Promise<any[]> {
  return jsonOf(await fetch(`${server.url}/api/files?limit=1000`, { headers: { "X-Api-Key": SECRET } }));
}

/** Resolves once `isMet` holds, looking every 20 ms; fails naming `what` after 20 s (a guard, not a timing). */
async function waitFor(isMet: () => Promise<boolean>, what: string): Promise<void> {
  for (const deadline = Date.now() + 20_000; !(await isMet()); ) {
    if (Date.now() > deadline) assert.fail(`still not so after 20 s: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A CLI command's exit code and output. */
function runCli(args: readonly string[]): Promise<{ code: number | null; output: string }> {
  const child = spawnCli(cli, args, { env: childEnv() });
  let output = "";
  child.stdout!.on("data", (text: string) => (output += text));
  child.stderr!.on("data", (text: string) => (output += text));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, output })));
}

/** Kernel's peak resident memory of a process since its last reset (clear_refs 5), and the reset. */
async function peakRssBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

test("uploads cut by SIGKILL leave no partial file and no temporary one; every upload answered is served whole", async () => {
  const dataDir = join(root, "crash");
  const server = await start(dataDir);
  const filesDir = join(dataDir, "files");
  // Uploads whose body stops halfway and never ends: each is in progress when the kill comes.
  const HANGING = 30;
  const COMPLETE = 70;
  const KILL_AFTER = 30;
  for (let i = 0; i < HANGING; i++) {
    const body = new ReadableStream({ start: (controller) => controller.enqueue(randomBytes(100 * 1024)) });
    fetch(`${server.url}/api/files?name=hanging${i}.bin`, { method: "POST", headers: { "X-Api-Key": PUBLISHABLE, "Content-Type": "application/octet-stream" }, body, duplex: "half" } as RequestInit).catch(() => undefined);
  }
  // files/ is made by the first upload.
  const temporaryFiles = async () => (await readdir(filesDir).catch(() => [] as string[])).filter((name) => name.startsWith(".tmp-"));
  await waitFor(async () => (await temporaryFiles()).length === HANGING, "every hanging upload has its temporary file");
  const answered = new Map<string, string>();
  let isKilled = false;
  await Promise.all(
    Array.from({ length: COMPLETE }, async (_, i) => {
      const bytes = randomBytes(64 * 1024 + i * 1999);
      try {
        const response = await upload(server, bytes, `f${i}.bin`);
        if (response.status !== 201) return;
        answered.set((await jsonOf(response)).id, sha256(bytes));
      } catch {
        return; // cut off by the kill: never answered
      }
      if (answered.size >= KILL_AFTER && !isKilled) {
        isKilled = true;
        server.child.kill("SIGKILL");
      }
    }),
  );
  await server.exited;
  assert.ok(answered.size >= KILL_AFTER, `${answered.size} uploads answered before the kill`);

  const again = await start(dataDir);
  try {
    const names = await readdir(filesDir);
    assert.deepEqual(names.filter((name) => name.startsWith(".tmp-") || name.endsWith(".tmp")), [], "no temporary file is left");
    const contents = names.filter((name) => /^[0-9a-f]{32}$/.test(name)).sort();
    const descriptions = names.filter((name) => name.endsWith(".json")).map((name) => name.slice(0, -5)).sort();
    assert.deepEqual(contents, descriptions, "every file's bytes have a description and every description its bytes");
    const files = await listed(again);
    assert.deepEqual(files.map((file) => file.id).sort(), contents);
    assert.ok(!files.some((file) => file.name.startsWith("hanging")), "no upload cut off is listed");
    for (const id of answered.keys()) assert.ok(contents.includes(id), `the answered upload ${id} is kept`);
    for (const file of files) {
      const bytes = new Uint8Array(await (await fetch(file.url.replace(/^http:\/\/[^/]+/, again.url))).arrayBuffer());
      assert.equal(bytes.length, file.size, file.id);
      assert.equal(sha256(bytes), file.sha256, file.id);
      if (answered.has(file.id)) assert.equal(file.sha256, answered.get(file.id));
    }
  } finally {
    await stop(again);
  }
});

/**
 * Node copies each piece of a body into a new buffer outside V8's heap, garbage that V8 would
 * collect only once tens of MiB of it had been made (the first 50 MiB upload raised the peak by
 * 30 MiB); the server collects its young generation every 4 MiB streamed (streamed-garbage.ts).
 * A file held whole would add its 50 MiB.
 */
test("50 MiB uploads and downloads pass through: the server's resident memory grows by less than 16 MiB an upload", async (t) => {
  const server = await start(join(root, "big"));
  try {
    const pid = server.child.pid!;
    const roundTrip = async (): Promise<number> => {
      const residentBefore = Number(/VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, "utf8"))![1]) * 1024;
      // The peak from here on (Linux: writing 5 to clear_refs resets VmHWM to the current VmRSS).
      await writeFile(`/proc/${pid}/clear_refs`, "5");
      const bytes = randomBytes(50 * MiB);
      const answer = await upload(server, bytes, "fifty.bin");
      assert.equal(answer.status, 201);
      const file = await jsonOf(answer);
      assert.equal(file.size, 50 * MiB);
      assert.equal(file.sha256, sha256(bytes));
      const read = new Uint8Array(await (await fetch(file.url)).arrayBuffer());
      assert.equal(sha256(read), file.sha256);
      return (await peakRssBytes(pid)) - residentBefore;
    };
    // Warm: the code paths of an upload and a read are loaded and compiled before measuring.
    for (let i = 0; i < 3; i++) {
      const warm = await jsonOf(await upload(server, randomBytes(2 * MiB), "warm.bin"));
      await (await fetch(warm.url)).arrayBuffer();
    }
    const first = await roundTrip();
    const second = await roundTrip();
    t.diagnostic(`peak resident memory grew by ${(first / MiB).toFixed(1)} MiB for the first 50 MiB upload and download, ${(second / MiB).toFixed(1)} MiB for the second`);
    assert.ok(first < 16 * MiB, `the first: ${(first / MiB).toFixed(1)} MiB`);
    assert.ok(second < 16 * MiB, `the second: ${(second / MiB).toFixed(1)} MiB`);
  } finally {
    await stop(server);
  }
});

test("a backup holds the files: restored, it serves the same bytes and signatures; verify reads every file back", async () => {
  const dataDir = join(root, "original");
  const server = await start(dataDir);
  const publicBytes = randomBytes(300 * 1024);
  const privateBytes = randomBytes(5000);
  const publicFile = await jsonOf(await upload(server, publicBytes, "photo.bin"));
  const { file_uri } = await jsonOf(await upload(server, privateBytes, "secret.bin", "/api/apps/app1/integration-endpoints/Core/UploadPrivateFile"));
  const signed = await jsonOf(await fetch(`${server.url}/api/files/signed-url`, { method: "POST", headers: { "X-Api-Key": PUBLISHABLE, "Content-Type": "application/json" }, body: JSON.stringify({ file_uri, expires_in: 3600 }) }));
  const backupDir = join(root, "backup");
  const backup = await fetch(`${server.url}/api/admin/backup`, { method: "POST", headers: { "X-Api-Key": SECRET, "Content-Type": "application/json" }, body: JSON.stringify({ to: backupDir }) });
  assert.equal(backup.status, 200);
  await stop(server);

  const restored = await start(backupDir);
  try {
    const served = await fetch(`${restored.url}/api/files/${publicFile.id}/photo.bin`);
    assert.equal(sha256(new Uint8Array(await served.arrayBuffer())), sha256(publicBytes));
    // The signing secret is in the store's metadata, so a URL signed before the backup still reads.
    const privateServed = await fetch(signed.signed_url.replace(/^http:\/\/[^/]+/, restored.url));
    assert.equal(privateServed.status, 200);
    assert.equal(sha256(new Uint8Array(await privateServed.arrayBuffer())), sha256(privateBytes));
  } finally {
    await stop(restored);
  }

  const sound = await runCli(["verify", "--data", backupDir]);
  assert.equal(sound.code, 0, sound.output);
  assert.match(sound.output, /files\/\s+[\d,]+ bytes\s+2 uploaded files, each read back against its size and SHA-256/);
  // The command's own backup of a folder on disk copies files/ too.
  const offline = join(root, "offline");
  const copied = await runCli(["backup", "--data", dataDir, "--to", offline]);
  assert.equal(copied.code, 0, copied.output);
  assert.equal((await readdir(join(offline, "files"))).length, 4);

  const content = join(backupDir, "files", publicFile.id);
  const damaged = Buffer.from(await readFile(content));
  damaged[1000] ^= 0xff;
  await writeFile(content, damaged);
  const check = await runCli(["verify", "--data", backupDir]);
  assert.equal(check.code, 1, check.output);
  assert.match(check.output, new RegExp(`damage   files/${publicFile.id}: holds ${publicBytes.length} bytes of SHA-256 [0-9a-f]{64}, but its description says`));
});
