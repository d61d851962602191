// The embedding API (issue 8): startServer() as a test fixture. Schema as a path or as objects,
// the keys it hands back, reset() between tests, close() freeing the port, and seeds validated
// like creates (an invalid one rejects naming entity, index and field).

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { PortInUseError, startServer } from "../../src/api.ts";

const EXAMPLES = fileURLToPath(new URL("../../examples/entities", import.meta.url));

const TASK = {
  name: "Task",
  type: "object",
  properties: {
    title: { type: "string" },
    status: { type: "string", enum: ["todo", "doing", "done"], default: "todo" },
    priority: { type: "integer" },
  },
  required: ["title"],
};
const NOTE = { properties: { body: { type: "string" } }, required: ["body"] };

const SEED = {
  Task: [{ title: "Seeded one", priority: 1 }, { title: "Seeded two", status: "done" }],
  Note: [{ body: "hello" }],
};

async function get(url: string, apiKey: string | null): Promise<{ status: number; body: any }> {
  const response = await fetch(url, { headers: apiKey === null ? {} : { "X-Api-Key": apiKey } });
  return { status: response.status, body: await response.json() };
}

async function post(url: string, apiKey: string, body: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(url, { method: "POST", headers: { "X-Api-Key": apiKey, "Content-Type": "application/json" }, body: JSON.stringify(body) });
  return { status: response.status, body: await response.json() };
}

function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createNetServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

test("startServer with a schema folder resolves to url, both keys, reset and close", async () => {
  const server = await startServer({ schema: EXAMPLES });
  try {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.notEqual(server.port, 0, "port 0 picks a free port, and the real one is reported");
    assert.equal(typeof server.reset, "function");
    assert.equal(typeof server.close, "function");
    assert.match(server.secretKey, /^sk_/);
    assert.match(server.publishableKey, /^pk_/);
    assert.equal(server.dataDir, null, "memory mode by default: nothing on disk");
    assert.equal(server.loaded, null, "nothing loaded in memory mode");
    const entities = await get(`${server.url}/api/entities`, server.secretKey);
    assert.deepEqual(entities.body.map((entity: { name: string }) => entity.name).sort(), ["Note", "Task"]);
    assert.equal((await get(`${server.url}/api/entities/Task`, server.publishableKey)).status, 200);
    assert.equal((await get(`${server.url}/api/entities/Task`, null)).status, 401);
  } finally {
    await server.close();
  }
});

test("startServer with declarations as objects serves them, and keys passed in are used", async () => {
  const server = await startServer({ schema: { Task: TASK, Note: NOTE }, secretKey: "sk_given_key_pad", publishableKey: "pk_given_key_pad" });
  try {
    assert.equal(server.secretKey, "sk_given_key_pad");
    assert.equal(server.publishableKey, "pk_given_key_pad");
    const created = await post(`${server.url}/api/entities/Note`, "pk_given_key_pad", { body: "from objects" });
    assert.equal(created.status, 201);
    assert.equal(created.body.body, "from objects");
    assert.equal("created_by_id" in created.body, false, "a publishable key never sees created_by_id");
  } finally {
    await server.close();
  }
});

test("startServer takes several keys of each kind through keys", async () => {
  const keys = [
    { id: "ci", kind: "secret" as const, key: "sk_ci_key_paddin" },
    { id: "web", kind: "publishable" as const, key: "pk_web_key_paddi" },
    { id: "app", kind: "publishable" as const, key: "pk_app_key_paddi" },
  ];
  const server = await startServer({ schema: { Task: TASK }, keys });
  try {
    assert.equal(server.secretKey, "sk_ci_key_paddin");
    assert.equal(server.publishableKey, "pk_web_key_paddi");
    const created = await post(`${server.url}/api/entities/Task`, "pk_app_key_paddi", { title: "by app" });
    const read = await get(`${server.url}/api/entities/Task/${created.body.id}`, "sk_ci_key_paddin");
    assert.equal(read.body.created_by_id, "app");
  } finally {
    await server.close();
  }
});

test("a seed is loaded on start, and reset() empties every entity and loads the seed again", async () => {
  const server = await startServer({ schema: { Task: TASK, Note: NOTE }, seed: SEED });
  try {
    assert.equal(server.seeded, 3);
    const tasks = await get(`${server.url}/api/entities/Task?sort_by=title`, server.secretKey);
    assert.deepEqual(tasks.body.map((task: { title: string }) => task.title), ["Seeded one", "Seeded two"]);
    assert.equal(tasks.body[0].status, "todo", "defaults apply to seeded records, as to creates");
    const seededIds = tasks.body.map((task: { id: string }) => task.id);

    await post(`${server.url}/api/entities/Task`, server.secretKey, { title: "Added by a test" });
    await post(`${server.url}/api/entities/Note`, server.secretKey, { body: "added too" });
    assert.equal((await get(`${server.url}/api/entities/Task/count`, server.secretKey)).body.count, 3);

    const startedAt = performance.now();
    await server.reset();
    console.log(`reset() with a 3-record seed took ${(performance.now() - startedAt).toFixed(2)} ms`);
    const after = await get(`${server.url}/api/entities/Task?sort_by=title`, server.secretKey);
    assert.deepEqual(after.body.map((task: { title: string }) => task.title), ["Seeded one", "Seeded two"]);
    assert.equal(after.body.some((task: { id: string }) => seededIds.includes(task.id)), false, "the seed is stored anew, not the old records kept");
    assert.equal((await get(`${server.url}/api/entities/Note/count`, server.secretKey)).body.count, 1);
    const deleted = await get(`${server.url}/api/entities/Task?deleted=only`, server.secretKey);
    assert.deepEqual(deleted.body, [], "reset empties; it does not soft-delete");
  } finally {
    await server.close();
  }
});

test("reset() without a seed leaves every entity empty, and no uploaded file", async () => {
  const server = await startServer({ schema: EXAMPLES });
  try {
    await post(`${server.url}/api/entities/Task`, server.secretKey, { title: "gone after reset" });
    const uploaded = await fetch(`${server.url}/api/files?name=a.txt`, { method: "POST", headers: { "X-Api-Key": server.secretKey, "Content-Type": "text/plain" }, body: "gone too" });
    assert.equal(uploaded.status, 201);
    const { url } = (await uploaded.json()) as { url: string };
    await server.reset();
    assert.deepEqual((await get(`${server.url}/api/entities/Task`, server.secretKey)).body, []);
    assert.deepEqual((await get(`${server.url}/api/files`, server.secretKey)).body, []);
    assert.equal((await fetch(url)).status, 404);
  } finally {
    await server.close();
  }
});

test("close() stops answering and frees the port", async () => {
  const server = await startServer({ schema: { Task: TASK } });
  const { port, url } = server;
  assert.equal(await isPortFree(port), false, "listening while open");
  await server.close();
  assert.equal(await isPortFree(port), true, "the port is free after close()");
  await assert.rejects(fetch(`${url}/health`), "nothing answers after close()");
});

test("close() returns promptly while a keep-alive client holds an idle connection", async () => {
  const server = await startServer({ schema: { Task: TASK } });
  // fetch keeps its connection open for reuse; close() must not wait for it to time out.
  await get(`${server.url}/api/entities/Task`, server.secretKey);
  const startedAt = performance.now();
  await server.close();
  assert.ok(performance.now() - startedAt < 2000, "close() returns promptly");
});

// [seed, what the refusal must name]
const INVALID_SEEDS: Array<[Record<string, unknown[]>, RegExp[]]> = [
  [{ Task: [{ title: "fine" }, { title: "fine too" }, { title: 42 }] }, [/Task/, /\[2\]|index 2/, /title/]],
  [{ Task: [{ title: "fine" }, { priority: 3 }] }, [/Task/, /\[1\]|index 1/, /title/]],
  [{ Task: [{ title: "x", status: "blocked" }] }, [/Task/, /\[0\]|index 0/, /status/]],
  [{ Task: [{ title: "x", colour: "red" }] }, [/Task/, /\[0\]|index 0/, /colour/]],
  [{ Note: [{ body: "ok" }, { body: "ok", id: "abc" }] }, [/Note/, /\[1\]|index 1/, /id/]],
  [{ Project: [{ title: "x" }] }, [/Project/]],
];

test("an invalid seed rejects start-up, naming entity, index and field", async () => {
  for (const [seed, names] of INVALID_SEEDS) {
    await assert.rejects(startServer({ schema: { Task: TASK, Note: NOTE }, seed }), (error: Error) => {
      for (const name of names) assert.match(error.message, name, `${JSON.stringify(seed)}: ${error.message}`);
      return true;
    });
  }
});

test("a rejected start leaves no port bound and no server running", async () => {
  // If a failed start left its listener open, the test runner would hang here at exit.
  await assert.rejects(startServer({ schema: { Task: TASK }, seed: { Task: [{}] } }));
  await assert.rejects(startServer({ schema: { Task: { properties: { id: { type: "string" } } } } }), /id/);
});

test("start-up to first answered request, in an empty memory store", async () => {
  const startedAt = performance.now();
  const server = await startServer({ schema: EXAMPLES });
  const listening = performance.now();
  const first = await get(`${server.url}/api/entities/Task`, server.secretKey);
  const answered = performance.now();
  await server.close();
  assert.equal(first.status, 200);
  console.log(`startServer(): listening after ${(listening - startedAt).toFixed(1)} ms, first request answered after ${(answered - startedAt).toFixed(1)} ms`);
});

test("with a data folder, loaded says how many records the folder held at start-up", async () => {
  const data = await mkdtemp(join(tmpdir(), "tabula-loaded-"));
  try {
    const first = await startServer({ schema: { Task: TASK }, memory: false, data });
    assert.deepEqual({ ...first.loaded, ms: 0, bytes: 0 }, { records: 0, deletedRecords: 0, bytes: 0, ms: 0 });
    for (const title of ["one", "two", "three"]) assert.equal((await post(`${first.url}/api/entities/Task`, first.secretKey, { title })).status, 201);
    await first.close();
    const second = await startServer({ schema: { Task: TASK }, memory: false, data });
    try {
      assert.equal(second.loaded?.records, 3);
      assert.equal(second.loaded?.deletedRecords, 0);
      assert.ok(second.loaded!.bytes > 0, "the log's bytes are counted");
      assert.ok(second.loaded!.ms >= 0);
    } finally {
      await second.close();
    }
  } finally {
    await rm(data, { recursive: true, force: true });
  }
});

test("store: a file: URL is the file store in that folder, and memory: keeps nothing", async () => {
  const data = await mkdtemp(join(tmpdir(), "tabula-store-"));
  try {
    const first = await startServer({ schema: { Task: TASK }, store: `file:${data}` });
    assert.equal(first.dataDir, data, "a store given means no memory default");
    assert.equal((await post(`${first.url}/api/entities/Task`, first.secretKey, { title: "kept" })).status, 201);
    await first.close();
    const second = await startServer({ schema: { Task: TASK }, store: `file:${data}` });
    try {
      assert.equal(second.loaded?.records, 1);
    } finally {
      await second.close();
    }
    const inMemory = await startServer({ schema: { Task: TASK }, store: "memory:" });
    try {
      assert.equal(inMemory.dataDir, null);
      assert.equal(inMemory.loaded, null);
    } finally {
      await inMemory.close();
    }
  } finally {
    await rm(data, { recursive: true, force: true });
  }
});

test("data alone is the file store in that folder: dataDir is it, keys.json is kept there, and a restart loads the records (issue 39)", async () => {
  const parent = await mkdtemp(join(tmpdir(), "tabula-data-option-"));
  const data = join(parent, "fixture-data");
  try {
    const first = await startServer({ schema: { Task: TASK }, data });
    try {
      assert.equal(first.dataDir, data, "data means the file store, with no memory: false needed");
      assert.match(first.storeDescription, /write-ahead log/);
      assert.ok(existsSync(join(data, "keys.json")), "the generated keys are kept in the folder");
      assert.equal((await post(`${first.url}/api/entities/Task`, first.secretKey, { title: "kept" })).status, 201);
    } finally {
      await first.close();
    }
    const second = await startServer({ schema: { Task: TASK }, data });
    try {
      assert.equal(second.loaded?.records, 1);
      assert.equal((await get(`${second.url}/api/entities/Task`, second.secretKey)).body[0].title, "kept");
    } finally {
      await second.close();
    }
  } finally {
    await rm(parent, { recursive: true, force: true });
  }
});

test("data with memory: true rejects naming both options, and writes nothing (issue 39)", async () => {
  const parent = await mkdtemp(join(tmpdir(), "tabula-data-memory-"));
  const data = join(parent, "fixture-data");
  try {
    await assert.rejects(startServer({ schema: { Task: TASK }, data, memory: true }), (error: Error) => {
      assert.equal(
        error.message,
        `startServer: data (${JSON.stringify(data)}) and memory: true each choose the store: data keeps records in that folder, memory: true keeps nothing on disk. Give one of them.`,
      );
      return true;
    });
    assert.equal(existsSync(data), false, "no data folder is made");
  } finally {
    await rm(parent, { recursive: true, force: true });
  }
});

// [options besides the schema, what the rejection says]
const badStoreOptions: Array<[Record<string, unknown>, RegExp]> = [
  [{ store: "memory:", memory: true }, /given twice: as store, and as memory/],
  [{ store: "file:x", data: "x" }, /given twice: as store, and as data/],
  [{ store: "s3://bucket" }, /"s3:".*file:<dir>.*memory:/],
  [{ store: "postgres://app:hunter2@127.0.0.1:1/app" }, /^(?!.*hunter2).*Cannot reach PostgreSQL at 127\.0\.0\.1:1\/app .*Check that it is running and that the host and port of the store option are right/],
];
for (const [options, message] of badStoreOptions) {
  test(`startServer(${JSON.stringify(options)}) rejects: ${message.source}`, async () => {
    await assert.rejects(startServer({ schema: { Task: TASK }, ...options }), message);
  });
}

// Issue 40 item 6: the library speaks as a library.
test("a busy port rejects with PortInUseError (code EADDRINUSE) before the data folder is made", async () => {
  const busy = createNetServer();
  await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
  const port = (busy.address() as { port: number }).port;
  const dir = await mkdtemp(join(tmpdir(), "tabula-busy-"));
  try {
    const data = join(dir, "data");
    await assert.rejects(startServer({ schema: { Task: TASK }, data, port }), (error: Error & { code?: string; port?: number }) => {
      assert.ok(error instanceof PortInUseError);
      assert.equal(error.code, "EADDRINUSE");
      assert.equal(error.port, port);
      assert.equal(error.message, `Port ${port} on 127.0.0.1 is in use; give another port, or port 0 for a free one.`);
      return true;
    });
    assert.equal(existsSync(data), false, "nothing written: no data folder, lock or keys.json");
  } finally {
    busy.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test("start-up errors name the option, not the command line's flag", async () => {
  const cases: Array<[options: Parameters<typeof startServer>[0], message: RegExp]> = [
    [{ schema: "./no-such-folder" }, /Give the schema option a folder of <Entity>\.json \(or \.jsonc\) files/],
    [{ schema: { Task: TASK }, seed: "./no-such-seed.json" }, /check the path given to the seed option/],
    [{ schema: { Task: TASK }, cors: "ftp://x" }, /^the cors option takes \*, off, or origins/],
    [{ schema: { Task: TASK }, changesKeep: -1 }, /\(the changesKeep option\)/],
  ];
  for (const [options, message] of cases) {
    await assert.rejects(startServer(options), (error: Error) => {
      assert.match(error.message, message);
      assert.doesNotMatch(error.message, /--[a-z]/, "no flag in a library's message");
      return true;
    });
  }
});
