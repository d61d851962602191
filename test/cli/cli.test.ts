// The command line (docs/operating.md, issue 2), spawned as users run it: `node dist/tabula.mjs`. Flags,
// env, the banner, bad input exiting 1 before listening, keys.json, signals, seeds, the data lock,
// and choosing the store.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { TASK } from "../support/server.ts";
import { childEnv, cliWithSchema, freePort, killSpawned, spawnCli, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const START_TIMEOUT_MS = 10_000;
/**
 * CLI processes started at once. Each start costs a node start-up's CPU, so with every test of a
 * suite at once (there are 15) on 2 loaded cores a start took over START_TIMEOUT_MS (issue 16, defect 7).
 */
const CONCURRENT_TESTS = 4;
const NOTE = { name: "Note", properties: { body: { type: "string" }, pinned: { type: "boolean" } }, required: ["body"] };
const VERSION = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version as string;

let root: string;
let schemaDir: string;
let CLI: string;
before(async () => {
  ({ root, cli: CLI, schemaDir } = await cliWithSchema("tabula-cli-", [TASK, NOTE]));
});
after(async () => {
  killSpawned();
  await rm(root, { recursive: true, force: true });
});

/** A folder of its own under the test root. */
let folders = 0;
async function folder(files: Record<string, unknown> = {}): Promise<string> {
  const dir = join(root, `case-${++folders}`);
  await mkdir(dir);
  for (const [name, content] of Object.entries(files)) {
    await writeFile(join(dir, name), typeof content === "string" ? content : JSON.stringify(content));
  }
  return dir;
}

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI to its end (for commands that must not start listening). */
function run(args: string[], env: Record<string, string> = {}, cwd?: string): Promise<Exit> {
  const child = spawnCli(CLI, args, { env: childEnv(env), cwd });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (text) => (stdout += text));
  child.stderr!.on("data", (text) => (stderr += text));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`tabula ${args.join(" ")} did not exit:\n${stdout}${stderr}`));
    }, START_TIMEOUT_MS);
    // "close", not "exit": it comes once stdout and stderr are read to their end.
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Starts the CLI and waits for its `listening on` line. */
function start(args: string[], env: Record<string, string> = {}, cwd?: string): Promise<SpawnedServer> {
  return startSpawnedServer(CLI, args, START_TIMEOUT_MS, { env: childEnv(env), cwd });
}

/** Starts the CLI and sends SIGTERM from the very handler that sees its listening line. */
function terminateOnListening(args: string[]): Promise<{ code: number | null; signal: NodeJS.Signals | null; output: string }> {
  const child = spawnCli(CLI, args, { env: childEnv({}) });
  let output = "";
  const onData = (text: string) => {
    output += text;
    if (/listening on/.test(output) && !child.killed) child.kill("SIGTERM");
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), START_TIMEOUT_MS);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output });
    });
  });
}

/** Sends `signal` and answers the exit code. */
async function stop(server: SpawnedServer, signal: NodeJS.Signals = "SIGTERM"): Promise<number | null> {
  server.child.kill(signal);
  return server.exited;
}

async function call(server: SpawnedServer, apiKey: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { "X-Api-Key": apiKey };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(server.url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

const sha256Of = (key: string) => createHash("sha256").update(key).digest("hex");

/** The full keys printed in the banner, by kind. */
// A key is base64url, so it may end in "-": the end of a key is the first character that cannot be in
// one (\b there would cut a trailing "-" off and the key would not work).
function printedKeys(output: string): { secret: string[]; publishable: string[] } {
  return {
    secret: [...output.matchAll(/\b(sk_[A-Za-z0-9_-]{8,})(?![A-Za-z0-9_-])/g)].map((m) => m[1]!),
    publishable: [...output.matchAll(/\b(pk_[A-Za-z0-9_-]{8,})(?![A-Za-z0-9_-])/g)].map((m) => m[1]!),
  };
}

describe("flags", { concurrency: CONCURRENT_TESTS }, () => {
  test("--help prints the usage and every flag, and exits 0", async () => {
    const { code, stdout } = await run(["--help"]);
    assert.equal(code, 0);
    assert.match(stdout, /Usage/);
    for (const flag of ["--schema", "--store", "--data", "--memory", "--port", "--host", "--secret-key", "--publishable-key", "--seed", "--max-body", "--changes-keep", "--max-streams", "--webhooks-allow-private", "--webhook-retry-scale", "--version"]) {
      assert.ok(stdout.includes(flag), `--help mentions ${flag}`);
    }
    assert.doesNotMatch(stdout, /listening on/);
  });

  test("--version prints the package version and exits 0", async () => {
    const { code, stdout } = await run(["--version"]);
    assert.equal(code, 0);
    assert.equal(stdout.trim(), VERSION);
  });

  // [args, what stderr must name]
  const badFlags: Array<[string[], RegExp]> = [
    [["--bogus"], /--bogus/],
    [["stray"], /stray/],
    [["--port"], /--port/],
    [["--port", "http"], /--port.*http/],
    [["--max-body", "lots"], /--max-body.*lots/],
    [["--memory=yes"], /--memory/],
    [["--rate-limit", "0"], /--rate-limit must be a whole number .* \(got "0"\)/],
    [["--rate-limit", "fast"], /--rate-limit.*fast/],
    [["--changes-keep", "-1"], /--changes-keep must be a whole number of events, at least 0 \(got "-1"\)/],
    [["--changes-keep", "lots"], /--changes-keep must be a whole number of events/],
    [["--max-streams", "0"], /--max-streams must be a whole number of streams, at least 1 \(got "0"\)/],
    [["--trust-proxy=yes"], /--trust-proxy takes no value/],
    [["--webhook-retry-scale", "2"], /--webhook-retry-scale must be a number above 0 and at most 1, such as 0\.001 \(got "2"\)/],
    [["--webhook-retry-scale", "0"], /--webhook-retry-scale must be a number above 0/],
    [["--webhooks-allow-private=yes"], /--webhooks-allow-private takes no value/],
  ];
  for (const [args, named] of badFlags) {
    test(`${args.join(" ")} exits 1 before listening with a message naming the fault`, async () => {
      const { code, stdout, stderr } = await run(["--schema", schemaDir, "--memory", ...args]);
      assert.equal(code, 1);
      assert.match(stderr, named);
      assert.doesNotMatch(stdout + stderr, /listening on/);
    });
  }

  test("a missing schema folder exits 1 naming it", async () => {
    const missing = join(root, "no-such-folder");
    const { code, stdout, stderr } = await run(["--schema", missing, "--memory", "--port", "0"]);
    assert.equal(code, 1);
    assert.ok(stderr.includes(missing), stderr);
    assert.doesNotMatch(stdout, /listening on/);
  });

  test("TABULA_SCHEMA names the schema when --schema is not given", async () => {
    const missing = join(root, "env-schema-missing");
    const { code, stderr } = await run(["--memory", "--port", "0"], { TABULA_SCHEMA: missing });
    assert.equal(code, 1);
    assert.ok(stderr.includes(missing), stderr);
  });

  for (const [variable, value] of [["TABULA_PORT", "http"], ["PORT", "99999"]] as const) {
    test(`a bad ${variable} exits 1 naming ${variable}, not --port`, async () => {
      const { code, stdout, stderr } = await run(["--schema", schemaDir, "--memory"], { [variable]: value });
      assert.equal(code, 1);
      assert.match(stderr, new RegExp(`${variable} must be a number.*"${value}"`));
      assert.doesNotMatch(stderr, /--port must/);
      assert.doesNotMatch(stdout, /listening on/);
    });
  }

  // [file name, declaration, entity, field]
  const badDeclarations: Array<[string, unknown, string, string]> = [
    ["Task.json", { properties: { title: { type: "string" }, size: { type: "float" } } }, "Task", "size"],
    ["Note.json", { name: "Note", properties: { body: { type: "string" }, id: { type: "string" } } }, "Note", "id"],
    ["Item.json", { properties: { when: { type: "string", format: "time" } } }, "Item", "when"],
  ];
  for (const [file, declaration, entity, field] of badDeclarations) {
    test(`an invalid declaration of ${entity}.${field} exits 1 naming the file, entity and field`, async () => {
      const dir = await folder({ [file]: declaration, "Ok.json": { properties: { a: { type: "string" } } } });
      const { code, stdout, stderr } = await run(["--schema", dir, "--memory", "--port", "0"]);
      assert.equal(code, 1);
      assert.ok(stderr.includes(join(dir, file)), `names the file: ${stderr}`);
      assert.ok(stderr.includes(entity), `names the entity: ${stderr}`);
      assert.ok(stderr.includes(`"${field}"`), `names the field: ${stderr}`);
      assert.doesNotMatch(stdout, /listening on/);
    });
  }

  test("a schema file that is not JSON exits 1 naming it", async () => {
    const dir = await folder({ "Task.json": "{ not json" });
    const { code, stderr } = await run(["--schema", dir, "--memory", "--port", "0"]);
    assert.equal(code, 1);
    assert.ok(stderr.includes(join(dir, "Task.json")), stderr);
  });
});

describe("running", { concurrency: CONCURRENT_TESTS }, () => {
  test("--memory --port 0 prints the URL, the entities with field counts and both keys, which work", async () => {
    const server = await start(["--schema", schemaDir, "--memory", "--port", "0"]);
    try {
      const output = server.output();
      assert.match(output, /listening on http:\/\/127\.0\.0\.1:\d+/);
      assert.match(server.url, /^http:\/\/127\.0\.0\.1:[1-9]\d*$/);
      assert.match(output, /Task \(10 fields\)/);
      assert.match(output, /Note \(2 fields\)/);
      assert.match(output, /memory/);
      const keys = printedKeys(output);
      assert.equal(keys.secret.length, 1, output);
      assert.equal(keys.publishable.length, 1, output);
      const created = await call(server, keys.secret[0]!, "POST", "/api/entities/Note", { body: "hello" });
      assert.equal(created.status, 201);
      assert.match(created.body.created_by_id, /\S/);
      const read = await call(server, keys.publishable[0]!, "GET", `/api/entities/Note/${created.body.id}`);
      assert.equal(read.status, 200);
      assert.equal(read.body.body, "hello");
      assert.equal("created_by_id" in read.body, false);
      assert.equal((await call(server, "sk_wrong_key_value", "GET", "/api/entities/Note")).status, 401);
      const health = await fetch(server.url + "/health");
      assert.equal(health.status, 200);
      assert.deepEqual(await health.json(), { status: "ok" });
    } finally {
      assert.equal(await stop(server, "SIGINT"), 0, "SIGINT exits 0");
    }
  });

  test("--schema with one entity's <Entity>.json serves that entity alone", async () => {
    const server = await start(["--schema", join(schemaDir, "Note.json"), "--memory", "--port", "0"]);
    try {
      const output = server.output();
      assert.match(output, /Note \(2 fields\)/);
      assert.doesNotMatch(output, /Task/);
      const secret = printedKeys(output).secret[0]!;
      assert.equal((await call(server, secret, "POST", "/api/entities/Note", { body: "one file" })).status, 201);
      assert.equal((await call(server, secret, "GET", "/api/entities/Task")).status, 404);
    } finally {
      assert.equal(await stop(server, "SIGTERM"), 0);
    }
  });

  test("TABULA_SECRET_KEY, TABULA_PUBLISHABLE_KEY and TABULA_PORT are used when no flag is given", async () => {
    const port = await freePort();
    const env = { TABULA_SECRET_KEY: "sk_from_env_0001", TABULA_PUBLISHABLE_KEY: "pk_from_env_0001", TABULA_PORT: String(port) };
    const server = await start(["--schema", schemaDir, "--memory"], env);
    try {
      assert.equal(server.url, `http://127.0.0.1:${port}`);
      const created = await call(server, "sk_from_env_0001", "POST", "/api/entities/Task", { title: "env" });
      assert.equal(created.status, 201);
      assert.equal((await call(server, "pk_from_env_0001", "GET", `/api/entities/Task/${created.body.id}`)).status, 200);
      assert.equal(printedKeys(server.output()).secret.includes("sk_from_env_0001"), true, "memory mode prints the keys");
    } finally {
      await stop(server);
    }
  });

  test("PORT is used when TABULA_PORT is not set, and TABULA_PORT beats it", async () => {
    const port = await freePort();
    let other = await freePort();
    while (other === port) other = await freePort();
    const withPort = await start(["--schema", schemaDir, "--memory"], { PORT: String(port) });
    await stop(withPort);
    assert.equal(withPort.url, `http://127.0.0.1:${port}`);
    const withBoth = await start(["--schema", schemaDir, "--memory"], { PORT: String(port), TABULA_PORT: String(other) });
    await stop(withBoth);
    assert.equal(withBoth.url, `http://127.0.0.1:${other}`);
  });

  test("flags beat env vars", async () => {
    const server = await start(["--schema", schemaDir, "--memory", "--port", "0", "--secret-key", "sk_from_flag_001"], { TABULA_SECRET_KEY: "sk_from_env_0002", TABULA_PORT: "1" });
    try {
      assert.equal((await call(server, "sk_from_flag_001", "GET", "/api/entities/Task")).status, 200);
      assert.equal((await call(server, "sk_from_env_0002", "GET", "/api/entities/Task")).status, 401);
    } finally {
      await stop(server);
    }
  });

  test("with --data, generated keys are saved in keys.json, reused on restart and not printed in full again", async () => {
    const data = join(await folder(), "data");
    const first = await start(["--schema", schemaDir, "--data", data, "--port", "0"]);
    assert.doesNotMatch(first.output(), /^loaded/m, "an empty folder loads nothing worth a line");
    const printed = printedKeys(first.output());
    assert.equal(await stop(first), 0);
    assert.equal(printed.secret.length, 1, first.output());
    assert.equal(printed.publishable.length, 1, first.output());
    assert.ok(first.output().includes(join(data, "keys.json")), "the banner says where the keys are kept");
    const saved = JSON.parse(readFileSync(join(data, "keys.json"), "utf8")) as Array<{ id: string; kind: string; sha256: string; last_used?: string | null }>;
    assert.deepEqual(saved.map((k) => k.kind).sort(), ["publishable", "secret"]);
    // Kept as hashes only: the printed key is nowhere on disk.
    assert.equal(saved.find((k) => k.kind === "secret")!.sha256, sha256Of(printed.secret[0]!));
    assert.equal(saved.find((k) => k.kind === "publishable")!.sha256, sha256Of(printed.publishable[0]!));
    assert.equal(readFileSync(join(data, "keys.json"), "utf8").includes(printed.secret[0]!), false);

    const second = await start(["--schema", schemaDir, "--data", data, "--port", "0"]);
    try {
      const output = second.output();
      assert.equal(output.includes(printed.secret[0]!), false, "the secret key is not printed in full again");
      assert.equal(output.includes(printed.publishable[0]!), false, "nor the publishable key");
      const created = await call(second, printed.secret[0]!, "POST", "/api/entities/Task", { title: "same key" });
      assert.equal(created.status, 201);
      assert.equal(created.body.created_by_id, saved.find((k) => k.kind === "secret")!.id);
      assert.equal((await call(second, printed.publishable[0]!, "GET", "/api/entities/Task")).status, 200);
    } finally {
      assert.equal(await stop(second), 0);
    }
    const again = JSON.parse(readFileSync(join(data, "keys.json"), "utf8")) as typeof saved;
    assert.deepEqual(again.map(({ last_used, ...key }) => key), saved.map(({ last_used, ...key }) => key), "keys.json is left as it was, but for the keys' last use");
  });

  test("keys.json with several keys of each kind: every key works as its kind, and none is generated", async () => {
    const keys = [
      { id: "key_admin", kind: "secret", key: "sk_admin_00000001" },
      { id: "key_ci", kind: "secret", key: "sk_ci_000000000002" },
      { id: "key_web", kind: "publishable", key: "pk_web_0000000001" },
      { id: "key_app", kind: "publishable", key: "pk_app_0000000002" },
    ];
    const dir = await folder();
    const data = join(dir, "data");
    await mkdir(data);
    await writeFile(join(data, "keys.json"), JSON.stringify(keys));
    const server = await start(["--schema", schemaDir, "--data", data, "--port", "0"]);
    try {
      for (const apiKey of keys) {
        const created = await call(server, apiKey.key, "POST", "/api/entities/Task", { title: `by ${apiKey.id}` });
        assert.equal(created.status, 201, apiKey.id);
        if (apiKey.kind === "secret") assert.equal(created.body.created_by_id, apiKey.id);
        else assert.equal("created_by_id" in created.body, false);
        const read = await call(server, "sk_admin_00000001", "GET", `/api/entities/Task/${created.body.id}`);
        assert.equal(read.body.created_by_id, apiKey.id, "created_by_id is the creating key's id");
        assert.equal((await call(server, apiKey.key, "DELETE", `/api/entities/Task/${created.body.id}`)).status, 200);
        const restore = await call(server, apiKey.key, "PUT", `/api/entities/Task/${created.body.id}/restore`);
        assert.equal(restore.status, apiKey.kind === "secret" ? 200 : 403, `${apiKey.id} restores as a ${apiKey.kind} key`);
      }
      assert.equal(printedKeys(server.output()).secret.length, 0, "no key is generated or printed in full");
      assert.match(server.output(), /keys\.json held 4 keys in full: now kept as SHA-256 hashes only/, "the banner says keys.json was upgraded");
    } finally {
      await stop(server);
    }
    // A keys.json of full keys (before keys were hashed) is rewritten hashed at the first start.
    const text = readFileSync(join(data, "keys.json"), "utf8");
    for (const apiKey of keys) assert.equal(text.includes(apiKey.key), false, `${apiKey.id} is no longer kept in full`);
    const upgraded = JSON.parse(text) as Array<{ id: string; kind: string; prefix: string; sha256: string }>;
    assert.deepEqual(upgraded.map(({ id, kind, prefix, sha256 }) => [id, kind, prefix, sha256]), keys.map((k) => [k.id, k.kind, k.key.slice(0, 8), sha256Of(k.key)]));
    assert.equal(statSync(join(data, "keys.json")).mode & 0o777, 0o600, "written 0600");
    const restarted = await start(["--schema", schemaDir, "--data", data, "--port", "0"]);
    try {
      assert.doesNotMatch(restarted.output(), /in full: now kept/, "said once");
      assert.equal((await call(restarted, "sk_ci_000000000002", "GET", "/api/entities/Task")).status, 200, "the upgraded keys still work");
    } finally {
      await stop(restarted);
    }
  });

  test("an invalid keys.json exits 1 naming the file", async () => {
    const data = await folder({ "keys.json": [{ id: "k", kind: "admin", key: "sk_whatever_123_" }] });
    const { code, stderr } = await run(["--schema", schemaDir, "--data", data, "--port", "0"]);
    assert.equal(code, 1);
    assert.ok(stderr.includes(join(data, "keys.json")), stderr);
  });

  for (const signal of ["SIGTERM"] as const) {
    test(`${signal} exits 0, and a record created before is there after a restart on the same --data`, async () => {
      const data = join(await folder(), "data");
      const args = ["--schema", schemaDir, "--data", data, "--port", "0", "--secret-key", "sk_durable_0001_"];
      const first = await start(args);
      const created = await call(first, "sk_durable_0001_", "POST", "/api/entities/Task", { title: "survives", tags: ["x"] });
      assert.equal(created.status, 201);
      const deleted = await call(first, "sk_durable_0001_", "POST", "/api/entities/Task", { title: "stays deleted" });
      assert.equal((await call(first, "sk_durable_0001_", "DELETE", `/api/entities/Task/${deleted.body.id}`)).status, 200);
      assert.equal(await stop(first, signal), 0);

      const second = await start(args);
      try {
        assert.match(second.output(), /^loaded {11}1 record \(and 1 deleted\) from [1-9]\d* KiB of snapshot and log in \d+\.\d\d s$/m);
        const read = await call(second, "sk_durable_0001_", "GET", `/api/entities/Task/${created.body.id}`);
        assert.equal(read.status, 200);
        assert.deepEqual(read.body, created.body);
        assert.equal((await call(second, "sk_durable_0001_", "GET", `/api/entities/Task/${deleted.body.id}`)).status, 404);
        const list = await call(second, "sk_durable_0001_", "GET", "/api/entities/Task");
        assert.deepEqual(list.body.map((r: { id: string }) => r.id), [created.body.id]);
        const later = await call(second, "sk_durable_0001_", "POST", "/api/entities/Task", { title: "after restart" });
        assert.ok(later.body.id > created.body.id, "ids keep growing across restarts");
      } finally {
        assert.equal(await stop(second), 0);
      }
    });
  }

  test("SIGTERM sent the instant the listening line appears exits 0 through the graceful close, in 20 starts (issue 16, defect 5)", async () => {
    const outcomes = [];
    for (let start = 0; start < 20; start++) outcomes.push(await terminateOnListening(["--schema", schemaDir, "--memory", "--port", "0"]));
    for (const { code, signal, output } of outcomes) {
      assert.equal(signal, null, `killed by ${signal}, not exited:\n${output}`);
      assert.equal(code, 0, output);
      assert.match(output, /SIGTERM: finishing requests in flight/);
    }
  });

  test("--seed loads its records into an empty store", async () => {
    const dir = await folder({ "seed.json": { Task: [{ title: "first", priority: 1 }, { title: "second", status: "done" }], Note: [{ body: "hi" }] } });
    const server = await start(["--schema", schemaDir, "--memory", "--port", "0", "--secret-key", "sk_seeded_00001_", "--seed", join(dir, "seed.json")]);
    try {
      assert.match(server.output(), /3 records/);
      const tasks = await call(server, "sk_seeded_00001_", "GET", "/api/entities/Task");
      assert.deepEqual(tasks.body.map((r: { title: string }) => r.title).sort(), ["first", "second"]);
      const first = tasks.body.find((r: { title: string }) => r.title === "first");
      assert.equal(first.status, "todo", "defaults are filled in seeded records");
      assert.match(first.id, /^[0-9a-f]{24}$/);
      const notes = await call(server, "sk_seeded_00001_", "GET", "/api/entities/Note");
      assert.equal(notes.body.length, 1);
    } finally {
      await stop(server);
    }
  });

  test("--seed is not loaded again when the store already holds records", async () => {
    const dir = await folder({ "seed.json": { Task: [{ title: "seeded once" }] } });
    const args = ["--schema", schemaDir, "--data", join(dir, "data"), "--port", "0", "--secret-key", "sk_seeded_00002_", "--seed", join(dir, "seed.json")];
    await stop(await start(args));
    const second = await start(args);
    try {
      const tasks = await call(second, "sk_seeded_00002_", "GET", "/api/entities/Task");
      assert.deepEqual(tasks.body.map((r: { title: string }) => r.title), ["seeded once"]);
    } finally {
      await stop(second);
    }
  });

  // [seed, what stderr must name]
  const badSeeds: Array<[unknown, RegExp[]]> = [
    [{ Task: [{ title: "ok" }, { title: 5 }] }, [/Task\[1\]/, /"title"/]],
    [{ Task: [{ title: "ok" }, { title: "ok" }, { title: "x", colour: "red" }] }, [/Task\[2\]/, /colour/]],
    [{ Note: [{ pinned: true }] }, [/Note\[0\]/, /"body"/]],
    [{ Project: [{ title: "x" }] }, [/Project/]],
  ];
  for (const [seed, named] of badSeeds) {
    test(`an invalid seed ${JSON.stringify(seed)} exits 1 naming entity, index and field`, async () => {
      const dir = await folder({ "seed.json": seed });
      const { code, stdout, stderr } = await run(["--schema", schemaDir, "--memory", "--port", "0", "--seed", join(dir, "seed.json")]);
      assert.equal(code, 1);
      for (const pattern of named) assert.match(stderr, pattern);
      assert.ok(stderr.includes(join(dir, "seed.json")), `names the seed file: ${stderr}`);
      assert.doesNotMatch(stdout, /listening on/);
    });
  }

  test("a second server on the same --data exits 1 with a clear message, and the first keeps serving", async () => {
    const data = join(await folder(), "data");
    const first = await start(["--schema", schemaDir, "--data", data, "--port", "0", "--secret-key", "sk_locked_00001_"]);
    try {
      const second = await run(["--schema", schemaDir, "--data", data, "--port", "0", "--secret-key", "sk_locked_00001_"]);
      assert.equal(second.code, 1);
      assert.ok(second.stderr.includes(data), second.stderr);
      assert.match(second.stderr, /in use|another/i);
      assert.match(second.stderr, new RegExp(`pid ${first.child.pid}`));
      assert.doesNotMatch(second.stdout, /listening on/);
      assert.equal((await call(first, "sk_locked_00001_", "GET", "/api/entities/Task")).status, 200);
    } finally {
      assert.equal(await stop(first), 0);
    }
  });
});

describe("choosing the store", { concurrency: CONCURRENT_TESTS }, () => {
  const FORMS = /file:<dir>.*memory:/;
  // [args, env, what stderr must name]: usage errors, so each also points to --help.
  const badStores: Array<[string[], Record<string, string>, RegExp[]]> = [
    [["--memory", "--store", "file:x"], {}, [/--store and --memory/, /give one of --store, --data and --memory/]],
    [["--data", "x", "--memory"], {}, [/--data and --memory/]],
    [["--store", "file:x", "--data", "x"], {}, [/--store and --data/]],
    [["--store", "bogus://somewhere"], {}, [/--store/, /"bogus:"/, FORMS]],
    [["--store", "./folder"], {}, [/--store must be a store URL/, /write file:\.\/folder/]],
    [["--store", "file:"], {}, [/--store: file: needs a folder/]],
    [["--store", "memory:extra"], {}, [/--store: memory: takes nothing/]],
    [["--store", "file://elsewhere/data"], {}, [/--store is not a usable file URL/]],
    [[], { TABULA_STORE: "redis://cache:6379" }, [/TABULA_STORE/, /"redis:"/, FORMS]],
  ];
  for (const [args, env, named] of badStores) {
    test(`${[...Object.entries(env).map(([name, value]) => `${name}=${value}`), ...args].join(" ")} is a usage error: exit 1 before listening, naming the fault`, async () => {
      const { code, stdout, stderr } = await run(["--schema", schemaDir, "--port", "0", ...args], env);
      assert.equal(code, 1);
      for (const pattern of named) assert.match(stderr, pattern);
      assert.match(stderr, /tabula-server --help/);
      assert.doesNotMatch(stdout + stderr, /listening on/);
    });
  }

  for (const url of ["postgres://tabula:hunter2@db.example:5432/app", "postgresql://tabula:hunter2@db.example/app"]) {
    test(`--store ${url.split(":")[0]}://… without the postgres package beside the bundle exits 1 before listening, saying npm install postgres, and the password is not printed`, async () => {
      const { code, stdout, stderr } = await run(["--schema", schemaDir, "--port", "0", "--store", url]);
      assert.equal(code, 1);
      assert.match(stderr, /PostgreSQL store needs the postgres package .*npm install postgres/);
      assert.doesNotMatch(stderr, /hunter2/);
      assert.doesNotMatch(stdout + stderr, /listening on/);
    });
  }

  test("a postgres:// DATABASE_URL is the store when nothing else chooses one: exit 1 here (no driver), saying how to choose another", async () => {
    const { code, stdout, stderr } = await run(["--schema", schemaDir, "--port", "0"], { DATABASE_URL: "postgres://app:hunter2@db.example/app" });
    assert.equal(code, 1);
    assert.match(stderr, /npm install postgres/);
    assert.match(stderr, /DATABASE_URL.*none of --store, --data, --memory, TABULA_STORE and TABULA_DATA/);
    assert.doesNotMatch(stderr, /hunter2/);
    assert.doesNotMatch(stdout, /listening on/);
  });

  // [args, env]: each chooses the store before DATABASE_URL is read.
  const beforeDatabaseUrl: Array<[string[], Record<string, string>]> = [
    [["--memory"], {}],
    [["--store", "memory:"], {}],
    [[], { TABULA_STORE: "memory:" }],
  ];
  for (const [args, env] of beforeDatabaseUrl) {
    test(`${[...Object.keys(env), ...args].join(" ")} beats a postgres:// DATABASE_URL`, async () => {
      const server = await start(["--schema", schemaDir, "--port", "0", ...args], { DATABASE_URL: "postgres://app:hunter2@db.example/app", ...env });
      try {
        assert.match(server.output(), /^data {13}in memory only/m);
      } finally {
        assert.equal(await stop(server), 0);
      }
    });
  }

  test("--data and TABULA_DATA beat a postgres:// DATABASE_URL, and a DATABASE_URL of another database is left to its program", async () => {
    const dir = await folder();
    for (const [args, env] of [[["--data", "flag-data"], {}], [[], { TABULA_DATA: "env-data" }], [[], { DATABASE_URL: "mysql://app:hunter2@db.example/app" }]] as const) {
      const server = await start(["--schema", schemaDir, "--port", "0", ...args], { DATABASE_URL: "postgres://app:hunter2@db.example/app", ...env }, dir);
      assert.equal(await stop(server), 0);
    }
    for (const data of ["flag-data", "env-data", "data"]) assert.ok(existsSync(join(dir, data, "keys.json")), `${data} holds the file store`);
  });

  test("a postgres:// DATABASE_URL beside a ./data that holds a data folder: exit 1 naming both and how to choose", async () => {
    const dir = await folder();
    const first = await start(["--schema", schemaDir, "--port", "0"], {}, dir);
    assert.equal(await stop(first), 0);
    assert.ok(existsSync(join(dir, "data", "keys.json")));
    const { code, stdout, stderr } = await run(["--schema", schemaDir, "--port", "0"], { DATABASE_URL: "postgres://app:hunter2@db.example/app" }, dir);
    assert.equal(code, 1);
    assert.match(stderr, /DATABASE_URL names a PostgreSQL database, and \.\/data holds a data folder/);
    assert.match(stderr, /--data \.\/data/);
    assert.match(stderr, /--store "\$DATABASE_URL"/);
    assert.doesNotMatch(stderr, /hunter2/);
    assert.doesNotMatch(stdout, /listening on/);
  });

  test("--store file:<dir> keeps records across a restart, as TABULA_STORE=file://<dir> and --data <dir> read them", async () => {
    const data = join(await folder(), "data");
    const secret = ["--secret-key", "sk_store_file_01"];
    const first = await start(["--schema", schemaDir, "--port", "0", "--store", `file:${data}`, ...secret]);
    const created = await call(first, "sk_store_file_01", "POST", "/api/entities/Task", { title: "kept" });
    assert.equal(created.status, 201);
    assert.ok(first.output().includes(`data             ${data} (write-ahead log`), first.output());
    assert.equal(await stop(first), 0);
    assert.ok(existsSync(join(data, "keys.json")));

    for (const [args, env] of [[[], { TABULA_STORE: pathToFileURL(data).href }], [["--data", data], {}]] as const) {
      const again = await start(["--schema", schemaDir, "--port", "0", ...secret, ...args], env);
      try {
        assert.match(again.output(), /^loaded {11}1 record from/m);
        assert.deepEqual((await call(again, "sk_store_file_01", "GET", `/api/entities/Task/${created.body.id}`)).body, created.body);
      } finally {
        assert.equal(await stop(again), 0);
      }
    }
  });

  test("--store memory: keeps nothing: no data folder, and a restart starts empty", async () => {
    const dir = await folder();
    const args = ["--schema", schemaDir, "--port", "0", "--store", "memory:", "--secret-key", "sk_store_memory1"];
    const first = await start(args, {}, dir);
    assert.match(first.output(), /^data {13}in memory only/m);
    assert.equal((await call(first, "sk_store_memory1", "POST", "/api/entities/Task", { title: "gone" })).status, 201);
    assert.equal((await call(first, "sk_store_memory1", "GET", "/api/entities/Task")).body.length, 1);
    assert.equal(await stop(first), 0);
    assert.equal(existsSync(join(dir, "data")), false, "nothing written to ./data");

    const second = await start(args, {}, dir);
    try {
      assert.deepEqual((await call(second, "sk_store_memory1", "GET", "/api/entities/Task")).body, []);
    } finally {
      assert.equal(await stop(second), 0);
    }
  });
});
