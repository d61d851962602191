// tabula verify (docs/operating.md), spawned as users run it: a folder a real server wrote (a snapshot
// from a compaction, log entries after it) is sound; a byte flipped in the middle of the log, a
// torn tail, and damage in the snapshot are each found by file and byte offset.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { appendFile, cp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { cliInTempFolder, killSpawned, startSpawnedServer } from "../support/spawned-server.ts";

const SECRET_KEY = "sk_verify_test_k";
const START_TIMEOUT_MS = 30_000;
const BULK = 5000;
/** Two bulks of records this big make a log over 8 MiB, which the server compacts into a snapshot. */
const PADDING = "x".repeat(1000);
/** Single creates after the snapshot: log entries to damage. */
const AFTER_SNAPSHOT = 5;
const TASK = { name: "Task", type: "object", properties: { title: { type: "string" }, pad: { type: "string" } }, required: ["title"] };

let root: string;
let cli: string;
let sound: string;
before(async () => {
  ({ root, cli } = await cliInTempFolder("tabula-verify-"));
  await writeFile(join(root, "Task.json"), JSON.stringify(TASK));
  sound = join(root, "sound");
  await writeFolder(sound);
});
after(async () => {
  killSpawned();
  await rm(root, { recursive: true, force: true });
});

/**
 * The served declarations (seq 1), 10,000 records in two bulks (2, 3), compacted; then 5 creates
 * (4..8), an update (9), a delete (10).
 */
async function writeFolder(dir: string): Promise<void> {
  const server = await startSpawnedServer(cli, ["--schema", root, "--data", dir, "--port", "0", "--secret-key", SECRET_KEY, "--log", "off"], START_TIMEOUT_MS);
  const call = async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const answer = await fetch(server.url + path, { method, headers: { "X-Api-Key": SECRET_KEY, "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
    assert.ok(answer.ok, `${method} ${path}: ${answer.status}`);
    return answer.json();
  };
  for (let bulk = 0; bulk < 2; bulk++) await call("POST", "/api/entities/Task/bulk", Array.from({ length: BULK }, (_, i) => ({ title: `bulk ${bulk} ${i}`, pad: PADDING })));
  // The compaction runs in the background once the log is over 8 MiB.
  for (const startedAt = Date.now(); !(await readdir(dir)).some((name) => name.startsWith("snapshot-") && !name.endsWith(".tmp")); ) {
    assert.ok(Date.now() - startedAt < 20_000, "the server did not compact its log into a snapshot");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const ids: string[] = [];
  for (let i = 0; i < AFTER_SNAPSHOT; i++) ids.push(((await call("POST", "/api/entities/Task", { title: `single ${i}` })) as { id: string }).id);
  await call("PUT", `/api/entities/Task/${ids[0]}`, { title: "updated" });
  await call("DELETE", `/api/entities/Task/${ids[1]}`);
  server.child.kill("SIGTERM");
  assert.equal(await server.exited, 0);
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function verify(...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, "verify", ...args], (error, stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, stdout, stderr }));
  });
}

async function copyOf(name: string): Promise<string> {
  const dir = join(root, name);
  await cp(sound, dir, { recursive: true });
  return dir;
}

async function fileNamed(dir: string, prefix: string): Promise<string> {
  const names = (await readdir(dir)).filter((name) => name.startsWith(prefix) && !name.endsWith(".tmp"));
  assert.equal(names.length, 1, `one ${prefix} file in ${dir}: ${names.join(", ")}`);
  return names[0]!;
}

/** Byte offsets where each line of a file starts. */
function lineStarts(bytes: Buffer): number[] {
  const starts = [0];
  for (let at = bytes.indexOf(0x0a); at >= 0 && at < bytes.length - 1; at = bytes.indexOf(0x0a, at + 1)) starts.push(at + 1);
  return starts;
}

test("a sound folder: exit 0, its files, records per entity and the last seq", async () => {
  const run = await verify("--data", sound);
  assert.equal(run.code, 0, run.stdout + run.stderr);
  const snapshot = await fileNamed(sound, "snapshot-");
  const log = await fileNamed(sound, "log-");
  assert.match(run.stdout, new RegExp(`${snapshot} +[\\d,]+ bytes  snapshot of the entries before 4: 10,000 record versions, 10,000 events\\n`));
  assert.match(run.stdout, new RegExp(`${log} +[\\d,]+ bytes  entries 4\\.\\.10\\n`));
  assert.match(run.stdout, /keys\.json +\d+ bytes  1 API key\n/);
  assert.match(run.stdout, /\n {2}Task {2}10,004 live, 1 deleted\n/);
  assert.match(run.stdout, /\nlast seq 10\n/);
  assert.match(run.stdout, /\nsound\n$/);
  assert.doesNotMatch(run.stdout, /damage|warning/);
});

test("a byte flipped in the middle of the log: exit 1, naming the file and the entry's byte offset", async () => {
  const dir = await copyOf("flipped");
  const log = await fileNamed(dir, "log-");
  const bytes = await readFile(join(dir, log));
  const third = lineStarts(bytes)[2]!;
  // A letter of the third entry's title: still JSON, so only its checksum tells.
  const at = bytes.indexOf("single 2", third) + 1;
  bytes[at] = bytes[at] === 0x61 ? 0x62 : 0x61;
  await writeFile(join(dir, log), bytes);
  const run = await verify("--data", dir);
  assert.equal(run.code, 1, run.stdout + run.stderr);
  assert.match(run.stdout, new RegExp(`\\ndamage   ${log} at byte ${third}: bad checksum: .*whole entries follow`));
  assert.match(run.stdout, /\nDAMAGED: 1 problem/);
});

test("a torn tail of the newest segment: a warning with its offset, exit 0", async () => {
  const dir = await copyOf("torn");
  const log = await fileNamed(dir, "log-");
  const size = (await readFile(join(dir, log))).length;
  const torn = '{"seq":11,"puts":[{"e":"Task","row":{"id":"01';
  await appendFile(join(dir, log), torn);
  const run = await verify("--data", dir);
  assert.equal(run.code, 0, run.stdout + run.stderr);
  assert.match(run.stdout, new RegExp(`\\nwarning  ${log} at byte ${size}: torn entry: ${torn.length} bytes after the last newline`));
  assert.match(run.stdout, /\nlast seq 10\n/);
  assert.match(run.stdout, /\nsound \(1 warning\)\n$/);
});

test("damage in a snapshot: exit 1, naming the file and the byte where the bad line starts", async () => {
  const dir = await copyOf("snapshot-damage");
  const snapshot = await fileNamed(dir, "snapshot-");
  const bytes = await readFile(join(dir, snapshot));
  // Line 3 is the first record line (after the header and the entity line): its rev becomes a letter.
  const third = lineStarts(bytes)[2]!;
  bytes[third] = 0x78;
  await writeFile(join(dir, snapshot), bytes);
  const run = await verify("--data", dir);
  assert.equal(run.code, 1, run.stdout + run.stderr);
  assert.match(run.stdout, new RegExp(`\\ndamage   ${snapshot} at byte ${third}: line 3: a line is neither a row`));
});

test("a letter changed inside a snapshot's record: its checksum tells, exit 1", async () => {
  const dir = await copyOf("snapshot-letter");
  const snapshot = await fileNamed(dir, "snapshot-");
  const bytes = await readFile(join(dir, snapshot));
  const at = bytes.indexOf("bulk 1 77");
  bytes[at] = 0x42; // "Bulk": still JSON
  await writeFile(join(dir, snapshot), bytes);
  const run = await verify("--data", dir);
  assert.equal(run.code, 1, run.stdout + run.stderr);
  assert.match(run.stdout, new RegExp(`\\ndamage   ${snapshot}: the checksum of its lines does not match`));
});

test("a folder that does not exist: one clear line, exit 1", async () => {
  const run = await verify("--data", join(root, "nowhere"));
  assert.equal(run.code, 1);
  assert.equal(run.stdout, "");
  assert.match(run.stderr, /^tabula verify: There is no folder .*nowhere; give the data folder a server runs with \(--data\)\.\n$/);
});

test("--help explains the exit status and exits 0", async () => {
  const run = await verify("--help");
  assert.equal(run.code, 0);
  assert.match(run.stdout, /^Usage: npx tabula-server verify \[--data DIR\]/);
  assert.match(run.stdout, /Exit status: 0 when the folder is sound, 1 on damage/);
});
