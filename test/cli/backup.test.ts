// tabula backup and POST /api/admin/backup (docs/operating.md), spawned as users run them: backups taken
// while clients keep writing hold every write answered before the backup began, as answered (data
// and ETag), and no batch in part; a server starts from each. Then the refusals.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { cliInTempFolder, killSpawned, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";

const SECRET_KEY = "sk_backup_test_k";
const PUBLISHABLE_KEY = "pk_backup_test_k";
const START_TIMEOUT_MS = 30_000;
const WRITERS = 8;
/** Records per bulk create: a backup holds all of a bulk or none of it. */
const BULK = 10;
/** Writes go on this long before a backup begins, and after it ends. */
const WRITE_AROUND_MS = 300;
const TASK = { name: "Task", type: "object", properties: { title: { type: "string" }, step: { type: "integer" }, bulk: { type: "string" } }, required: ["title"] };

interface Version {
  readonly body: Record<string, unknown>;
  readonly etag: string;
}

/** Every version a client saw answered, per record id, in the order answered, with when. */
class Answered {
  readonly versions = new Map<string, Array<Version & { at: number }>>();
  /** Answers recorded so far. */
  count = 0;
  record(body: Record<string, unknown>, etag: string): void {
    this.count++;
    const id = body.id as string;
    let list = this.versions.get(id);
    if (!list) this.versions.set(id, (list = []));
    list.push({ body, etag, at: performance.now() });
  }
}

let root: string;
let cli: string;
let server: SpawnedServer;
let dataDir: string;
before(async () => {
  ({ root, cli } = await cliInTempFolder("tabula-backup-"));
  await writeFile(join(root, "Task.json"), JSON.stringify(TASK));
  dataDir = join(root, "data");
  server = await startServer(dataDir);
});
after(async () => {
  killSpawned();
  await rm(root, { recursive: true, force: true });
});

function startServer(dir: string, ...args: string[]): Promise<SpawnedServer> {
  const store = dir === "memory" ? ["--memory"] : ["--data", dir];
  return startSpawnedServer(cli, ["--schema", root, ...store, "--port", "0", "--secret-key", SECRET_KEY, "--publishable-key", PUBLISHABLE_KEY, "--log", "off", ...args], START_TIMEOUT_MS);
}

async function call(url: string, method: string, path: string, body?: unknown, apiKey = SECRET_KEY): Promise<{ status: number; body: any; etag: string | null }> {
  const answer = await fetch(url + path, { method, headers: { "X-Api-Key": apiKey, "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: answer.status, body: await answer.json(), etag: answer.headers.get("etag") };
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function tabula(...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, ...args], (error, stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, stdout, stderr }));
  });
}

/** One client: bulk creates, single creates and updates of its own records, until told to stop. */
async function write(url: string, writer: string, isStopping: () => boolean): Promise<void> {
  const mine: string[] = [];
  for (let step = 0; !isStopping(); step++) {
    if (step % 5 === 0) {
      const bulk = `${writer}-${step}`;
      const reply = await call(url, "POST", "/api/entities/Task/bulk", Array.from({ length: BULK }, (_, i) => ({ title: `${bulk}-${i}`, bulk, step })));
      assert.equal(reply.status, 201);
      // A bulk's answer has no ETag of its own: each record's is read back where checked.
      for (const record of reply.body) answered.record(record, "");
    } else if (step % 2 === 0 && mine.length > 0) {
      const id = mine[step % mine.length]!;
      const reply = await call(url, "PUT", `/api/entities/Task/${id}`, { step });
      assert.equal(reply.status, 200);
      answered.record(reply.body, reply.etag!);
    } else {
      const reply = await call(url, "POST", "/api/entities/Task", { title: `${writer}-${step}`, step });
      assert.equal(reply.status, 201);
      answered.record(reply.body, reply.etag!);
      mine.push(reply.body.id);
    }
  }
}

/** Every write answered by the server the tests share, over all of them: each backup holds the earlier tests' too. */
const answered = new Answered();
/** Backups taken so far: writers of each are named apart (bulk names stay unique). */
let rounds = 0;

/** Runs `backup` while WRITERS clients write; answers what was answered, and when the backup began. */
async function backUpWhileWriting(backup: () => Promise<void>): Promise<{ answered: Answered; began: number }> {
  let isStopping = false;
  const round = ++rounds;
  const writers = Array.from({ length: WRITERS }, (_, writer) => write(server.url, `r${round}w${writer}`, () => isStopping));
  // Writes answered before the backup are what it must hold: wait for some from every writer (a
  // loaded host may take longer than WRITE_AROUND_MS to answer the first, a bulk with its fsync).
  const answeredBefore = answered.count;
  await new Promise((resolve) => setTimeout(resolve, WRITE_AROUND_MS));
  for (let waited = 0; answered.count < answeredBefore + 2 * WRITERS && waited < 30_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
  const began = performance.now();
  try {
    await backup();
    await new Promise((resolve) => setTimeout(resolve, WRITE_AROUND_MS));
  } finally {
    isStopping = true;
    await Promise.all(writers);
  }
  return { answered, began };
}

/**
 * Starts a server on the backup and checks: every record answered before `began` is there, as one
 * of the versions answered for it (the one answered before `began` or a later one), with its ETag;
 * every record there was answered; and each bulk is there whole or not at all.
 */
async function checkBackup(dir: string, { answered, began }: { answered: Answered; began: number }): Promise<number> {
  const restored = await startServer(dir);
  try {
    const stored = new Map<string, { body: Record<string, unknown>; etag: string }>();
    for (let cursor: string | null = null; ; ) {
      const answer = await fetch(`${restored.url}/api/entities/Task?limit=5000&sort_by=id${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { headers: { "X-Api-Key": SECRET_KEY } });
      for (const record of (await answer.json()) as Array<Record<string, unknown>>) stored.set(record.id as string, { body: record, etag: "" });
      cursor = answer.headers.get("x-next-cursor");
      if (!cursor) break;
    }
    let before = 0;
    for (const [id, versions] of answered.versions) {
      // Answers of one record come in the order it was written (each write waits for the one before).
      const lastBefore = versions.filter((version) => version.at < began).length - 1;
      if (lastBefore < 0) continue;
      before++;
      const record = stored.get(id);
      assert.ok(record, `${id}, answered before the backup began, is in the backup`);
      const match = versions.findIndex((version) => JSON.stringify(version.body) === JSON.stringify(record.body));
      assert.ok(match >= lastBefore, `${id} is in the backup as answered before the backup began or later: ${JSON.stringify(record.body)}`);
      const etag = versions[match]!.etag;
      if (etag !== "") assert.equal((await call(restored.url, "GET", `/api/entities/Task/${id}`)).etag, etag, `${id}'s ETag`);
    }
    assert.ok(before > 0, "writes were answered before the backup began");
    const bulks = new Map<string, number>();
    for (const [id, { body }] of stored) {
      assert.ok(answered.versions.has(id), `${id} in the backup was answered to a client`);
      if (typeof body.bulk === "string") bulks.set(body.bulk, (bulks.get(body.bulk) ?? 0) + 1);
    }
    for (const [bulk, count] of bulks) assert.equal(count, BULK, `bulk ${bulk} is in the backup whole`);
    return stored.size;
  } finally {
    restored.child.kill("SIGTERM");
    await restored.exited;
  }
}

test("tabula backup --data beside the running server holds every write answered before it began", async () => {
  const to = join(root, "by-command");
  let run: Run | undefined;
  const written = await backUpWhileWriting(async () => {
    run = await tabula("backup", "--data", dataDir, "--to", to);
  });
  assert.equal(run!.code, 0, run!.stderr);
  assert.match(run!.stderr, /^note: a server \(pid \d+\) is using .*; copying beside it/);
  const count = await checkBackup(to, written);
  assert.match(run!.stdout, new RegExp(`^backed up to ${to} in [\\d.]+ s: the log up to seq \\d+, [\\d.]+ KiB in 1 file \\(log-\\d+\\)\\n {2}Task {2}${count.toLocaleString("en-US")} records\\n$`));
  assert.equal((await tabula("verify", "--data", to)).code, 0);
});

test("tabula backup --url asks the server, which answers what it copied", async () => {
  const to = join(root, "by-url");
  let run: Run | undefined;
  const written = await backUpWhileWriting(async () => {
    run = await tabula("backup", "--url", server.url, "--key", SECRET_KEY, "--to", to);
  });
  assert.equal(run!.code, 0, run!.stderr);
  const count = await checkBackup(to, written);
  assert.match(run!.stdout, new RegExp(`^backed up to ${to} in [\\d.]+ s: the log up to seq \\d+, .*\\n {2}Task {2}${count.toLocaleString("en-US")} records\\n$`));
});

test("POST /api/admin/backup copies while writes go on, and answers the seq, bytes, files and records", async () => {
  const to = join(root, "by-http");
  let reply: Awaited<ReturnType<typeof call>> | undefined;
  const written = await backUpWhileWriting(async () => {
    reply = await call(server.url, "POST", "/api/admin/backup", { to });
  });
  assert.equal(reply!.status, 200, JSON.stringify(reply!.body));
  const count = await checkBackup(to, written);
  const { seq, bytes, files, records, ms } = reply!.body;
  assert.equal(reply!.body.to, to);
  assert.ok(Number.isSafeInteger(seq) && seq > 0 && bytes > 0 && ms >= 0);
  assert.deepEqual(records, { Task: count });
  assert.deepEqual([...files].sort(), (await readdir(to)).sort());
  assert.ok(!(await readdir(root)).some((name) => name.includes(".tmp-")), "no temporary folder is left beside the backup");
});

test("POST /api/admin/backup refuses: no key 401, publishable 403, GET 405, bad body 400, a folder with files 409", async () => {
  const fileful = join(root, "fileful");
  await mkdir(fileful);
  await writeFile(join(fileful, "notes.txt"), "mine");
  const cases: Array<[string, string, unknown, string | undefined, number, string]> = [
    ["no key", "POST", { to: join(root, "x1") }, "", 401, "unauthorized"],
    ["a publishable key", "POST", { to: join(root, "x2") }, PUBLISHABLE_KEY, 403, "forbidden"],
    ["GET", "GET", undefined, SECRET_KEY, 405, "method_not_allowed"],
    ["no body", "POST", undefined, SECRET_KEY, 400, "invalid_json"],
    ["a relative path", "POST", { to: "backups/today" }, SECRET_KEY, 400, "invalid_json"],
    ["another field", "POST", { to: join(root, "x3"), gzip: true }, SECRET_KEY, 400, "invalid_json"],
    ["a folder with files", "POST", { to: fileful }, SECRET_KEY, 409, "backup_target_exists"],
  ];
  for (const [name, method, body, apiKey, status, code] of cases) {
    const headers: Record<string, string> = { "Content-Type": "application/json", ...(apiKey ? { "X-Api-Key": apiKey } : {}) };
    const answer = await fetch(`${server.url}/api/admin/backup`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const reply = (await answer.json()) as { error: { code: string; message: string } };
    assert.equal(answer.status, status, name);
    assert.equal(reply.error.code, code, name);
    if (status === 405) assert.equal(answer.headers.get("allow"), "POST");
  }
  assert.deepEqual(await readdir(fileful), ["notes.txt"], "the folder with files is left as it was");
  for (const name of ["x1", "x2", "x3"]) assert.ok(!existsSync(join(root, name)), `${name} was not made`);
});

test("POST /api/admin/backup on the memory store says to use export instead (501)", async () => {
  const memory = await startServer("memory");
  try {
    const reply = await call(memory.url, "POST", "/api/admin/backup", { to: join(root, "from-memory") });
    assert.equal(reply.status, 501);
    assert.equal(reply.body.error.code, "backup_unsupported");
    assert.match(reply.body.error.message, /keeps nothing on disk.*tabula export/);
    assert.ok(!existsSync(join(root, "from-memory")));
  } finally {
    memory.child.kill("SIGTERM");
    await memory.exited;
  }
});

test("tabula backup refuses in one line: no --to, a folder with files, a folder that is not there, --url without a key", async () => {
  const fileful = join(root, "fileful-cli");
  await mkdir(fileful);
  await writeFile(join(fileful, "notes.txt"), "mine");
  const cases: Array<[string[], RegExp]> = [
    [["--data", dataDir], /^tabula backup: --to DIR2 is needed: .* \(npx tabula-server backup --help\)\n$/],
    [["--data", dataDir, "--to", fileful], /^tabula backup: The backup target .*fileful-cli exists and is not empty; give a new folder/],
    [["--data", join(root, "nowhere"), "--to", join(root, "y1")], /^tabula backup: There is no data folder .*nowhere;/],
    [["--url", server.url, "--to", join(root, "y2")], /^tabula backup: --key K is needed with --url/],
    [["--url", server.url, "--key", SECRET_KEY, "--to", "relative"], /^tabula backup: --to must be an absolute path with --url/],
    [["--url", server.url, "--key", PUBLISHABLE_KEY, "--to", join(root, "y3")], /^tabula backup: the server answered 403 forbidden: /],
  ];
  for (const [args, message] of cases) {
    const run = await tabula("backup", ...args);
    assert.equal(run.code, 1, args.join(" "));
    assert.match(run.stderr, message, args.join(" "));
    assert.equal(run.stderr.trimEnd().split("\n").length, 1, `one line: ${run.stderr}`);
  }
  for (const name of ["y1", "y2", "y3"]) assert.ok(!existsSync(join(root, name)));
});

test("tabula backup of a folder no server holds takes its lock and copies it; --help exits 0", async () => {
  const help = await tabula("backup", "--help");
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^Usage: npx tabula-server backup --to DIR2 \[--data DIR\]/);
  assert.match(help.stdout, /the SERVER writes DIR2, on ITS machine/);
  const count = (await call(server.url, "GET", "/api/entities/Task/count")).body.count as number;
  server.child.kill("SIGTERM");
  assert.equal(await server.exited, 0);
  const to = join(root, "offline");
  const run = await tabula("backup", "--data", dataDir, "--to", to);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stderr, "");
  assert.match(run.stdout, new RegExp(`\\n {2}Task {2}${count.toLocaleString("en-US")} records\\n$`));
  assert.ok(!existsSync(join(dataDir, "LOCK")), "the lock is released");
  server = await startServer(to);
  assert.equal((await call(server.url, "GET", "/api/entities/Task/count")).body.count, count);
});
