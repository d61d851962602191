// --max-groups, --max-array-items, --max-object-keys, --max-record-size, --max-file-size and
// --max-files-total (docs/operating.md), spawned as users run
// the command: in --help, bad values exiting 1 before listening with a message naming the flag or
// variable, and the limits given reaching the requests (and the variables too).

import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { TASK } from "../support/server.ts";
import { childEnv, cliWithSchema, killSpawned, spawnCli, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";

const START_TIMEOUT_MS = 10_000;
const SECRET = "sk_limit_flags_secret_key";

let root: string;
let schemaDir: string;
let CLI: string;
before(async () => {
  ({ root, cli: CLI, schemaDir } = await cliWithSchema("tabula-limit-flags-", [TASK]));
});
after(async () => {
  killSpawned();
  await rm(root, { recursive: true, force: true });
});

function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  const child = spawnCli(CLI, args, { env: childEnv(env) });
  let output = "";
  child.stdout!.on("data", (text) => (output += text));
  child.stderr!.on("data", (text) => (output += text));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`tabula ${args.join(" ")} did not exit:\n${output}`));
    }, START_TIMEOUT_MS);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

async function call(server: SpawnedServer, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { "X-Api-Key": SECRET, "Content-Type": "application/json" };
  const response = await fetch(server.url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: response.status, body: await response.json() };
}

describe("the limit flags", { concurrency: 4 }, () => {
  test("--help lists each with its variable and default", async () => {
    const { code, output } = await run(["--help"]);
    assert.equal(code, 0);
    assert.match(output, /--max-groups N .*\[TABULA_MAX_GROUPS, default 10000\]/);
    assert.match(output, /--max-array-items N .*\[TABULA_MAX_ARRAY_ITEMS, default 10000\]/);
    assert.match(output, /--max-object-keys N .*\[TABULA_MAX_OBJECT_KEYS, default 1000\]/);
    assert.match(output, /--max-record-size SIZE .*\[TABULA_MAX_RECORD_SIZE, default 1mb\]/);
    assert.match(output, /--max-file-size SIZE .*\[TABULA_MAX_FILE_SIZE, default 50mb\]/);
    assert.match(output, /--max-files-total SIZE .*\[TABULA_MAX_FILES_TOTAL, default 10gb\]/);
  });

  // [args, env, what the message must say]
  const bad: Array<[string[], Record<string, string>, RegExp]> = [
    [["--max-groups", "0"], {}, /--max-groups must be a whole number of groups, at least 1 \(got "0"\)/],
    [["--max-groups"], {}, /--max-groups needs a value/],
    [["--max-array-items", "lots"], {}, /--max-array-items must be a whole number of items, at least 1 \(got "lots"\)/],
    [["--max-array-items", "1.5"], {}, /--max-array-items must be a whole number of items/],
    [["--max-object-keys=-1"], {}, /--max-object-keys must be a whole number of keys, at least 1 \(got "-1"\)/],
    [[], { TABULA_MAX_GROUPS: "none" }, /TABULA_MAX_GROUPS must be a whole number of groups/],
    [[], { TABULA_MAX_OBJECT_KEYS: "0" }, /TABULA_MAX_OBJECT_KEYS must be a whole number of keys, at least 1/],
    [["--max-record-size", "big"], {}, /--max-record-size must be a size such as 1048576, 512kb, 10mb or 2gb \(got "big"\)/],
    [[], { TABULA_MAX_RECORD_SIZE: "0" }, /TABULA_MAX_RECORD_SIZE must be a size/],
    [["--max-files-total", "plenty"], {}, /--max-files-total must be a size such as 1048576, 512kb, 10mb or 2gb \(got "plenty"\)/],
    [[], { TABULA_MAX_FILES_TOTAL: "0" }, /TABULA_MAX_FILES_TOTAL must be a size/],
  ];
  for (const [args, env, said] of bad) {
    test(`${[...args, ...Object.entries(env).map(([name, value]) => `${name}=${value}`)].join(" ")} exits 1 before listening, naming the fault`, async () => {
      const { code, output } = await run(["--schema", schemaDir, "--memory", "--port", "0", ...args], env);
      assert.equal(code, 1, output);
      assert.match(output, said);
      assert.doesNotMatch(output, /listening on/);
    });
  }

  for (const [how, args, env] of [
    ["flags", ["--max-groups", "2", "--max-array-items", "3", "--max-object-keys", "2", "--max-record-size", "1kb", "--max-file-size", "1kb", "--max-files-total", "1kb"], {}],
    ["variables", [], { TABULA_MAX_GROUPS: "2", TABULA_MAX_ARRAY_ITEMS: "3", TABULA_MAX_OBJECT_KEYS: "2", TABULA_MAX_RECORD_SIZE: "1kb", TABULA_MAX_FILE_SIZE: "1kb", TABULA_MAX_FILES_TOTAL: "1kb" }],
  ] as const) {
    test(`the limits given as ${how} hold requests to them, naming the flag`, async () => {
      const server = await startSpawnedServer(CLI, ["--schema", schemaDir, "--memory", "--port", "0", "--secret-key", SECRET, ...args], START_TIMEOUT_MS, { env: childEnv(env) });
      try {
        const tags = await call(server, "POST", "/api/entities/Task", { title: "a", tags: ["x", "y", "z", "w"] });
        assert.equal(tags.status, 400);
        assert.deepEqual([tags.body.error.code, tags.body.error.details.field, tags.body.error.details.items, tags.body.error.details.maxArrayItems], ["invalid_field", "tags", 4, 3]);
        assert.match(tags.body.error.message, /--max-array-items/);
        const meta = await call(server, "POST", "/api/entities/Task", { title: "a", meta: { a: 1, b: 2, c: 3 } });
        assert.deepEqual([meta.status, meta.body.error.details.field, meta.body.error.details.maxObjectKeys], [400, "meta", 2]);
        assert.equal((await call(server, "POST", "/api/entities/Task", { title: "a", tags: ["x", "y", "z"], meta: { a: 1, b: 2 } })).status, 201);
        assert.equal((await call(server, "POST", "/api/entities/Task", { title: "b" })).status, 201);
        assert.deepEqual((await call(server, "POST", "/api/entities/Task/aggregate", { groupBy: "title" })).body.rows, [
          { title: "a", count: 1 },
          { title: "b", count: 1 },
        ]);
        assert.equal((await call(server, "POST", "/api/entities/Task", { title: "c" })).status, 201);
        const groups = await call(server, "POST", "/api/entities/Task/aggregate", { groupBy: "title" });
        assert.deepEqual([groups.status, groups.body.error.code, groups.body.error.details], [400, "invalid_parameter", { parameter: "groupBy", maxGroups: 2 }]);
        assert.match(groups.body.error.message, /--max-groups/);
        const long = await call(server, "POST", "/api/entities/Task", { title: "x".repeat(1024) });
        assert.deepEqual([long.status, long.body.error.code, long.body.error.details.maxRecordBytes], [413, "payload_too_large", 1024]);
        const upload = async (bytes: number) => {
          const response = await fetch(`${server.url}/api/files?name=f.bin`, { method: "POST", headers: { "X-Api-Key": SECRET, "Content-Type": "application/octet-stream" }, body: new Uint8Array(bytes) });
          return { status: response.status, body: (await response.json()) as any };
        };
        const tooBig = await upload(1025);
        assert.deepEqual([tooBig.status, tooBig.body.error.details.maxBytes], [413, 1024]);
        assert.equal((await upload(600)).status, 201);
        const full = await upload(600);
        assert.deepEqual([full.status, full.body.error.code, full.body.error.details.maxBytes], [507, "insufficient_storage", 1024]);
        assert.match(full.body.error.message, /--max-files-total/);
      } finally {
        server.child.kill("SIGTERM");
        await server.exited;
      }
    });
  }
});
