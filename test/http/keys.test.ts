// Managing keys while the server runs (docs/api.md, "Managing keys"), on every store: create, list
// (never a key), use, roll, revoke, expiry, the last secret key, keys given by flag, streams of a
// revoked key, and keys kept hashed at rest (keys.json, the $keys table).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { PUBLISHABLE, SECRET, startTestServer, TEST_STORE, type TestServer } from "../support/server.ts";
import { SseClient } from "../support/sse.ts";
import { dropPgSchema, freshPgSchema, pgTestUrl } from "../support/postgres.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `status` of GET /api/entities/Task with `apiKey` is `expected`; the ms it took. */
async function statusWithin(server: TestServer, apiKey: string, expected: number, ms: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    const { status } = await server.call("GET", "/api/entities/Task", { apiKey });
    if (status === expected) return Date.now() - started;
    if (Date.now() - started > ms) assert.fail(`still ${status} after ${ms} ms, expected ${expected}`);
    await sleep(25);
  }
}

async function createKey(server: TestServer, body: unknown, apiKey = SECRET) {
  const created = await server.call("POST", "/api/keys", { body, apiKey });
  assert.equal(created.status, 201, created.text);
  return created.body as { id: string; key: string; kind: string; name: string; prefix: string; expires_at: string | null };
}

describe("managing keys through /api/keys", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  test("a created key is answered once in full, works as its kind, and the list shows its prefix but never a key", async () => {
    const made = await createKey(server, { kind: "secret", name: "ci deploys" });
    assert.match(made.key, /^sk_[A-Za-z0-9_-]{32}$/);
    assert.equal(made.prefix, made.key.slice(0, 8));
    assert.deepEqual([made.kind, made.name, made.expires_at], ["secret", "ci deploys", null]);
    const record = await server.call("POST", "/api/entities/Task", { body: { title: "by ci" }, apiKey: made.key });
    assert.equal(record.status, 201);
    assert.equal(record.body.created_by_id, made.id);

    const list = await server.call("GET", "/api/keys");
    assert.equal(list.status, 200);
    assert.equal(list.text.includes(made.key), false, "the list holds no key in full");
    assert.equal(list.text.includes(SECRET), false, "nor a flag key");
    const listed = list.body.find((key: { id: string }) => key.id === made.id);
    assert.deepEqual(Object.keys(listed).sort(), ["created", "expires_at", "id", "kind", "last_used", "name", "prefix", "source"]);
    assert.deepEqual([listed.prefix, listed.source, listed.name], [made.key.slice(0, 8), "stored", "ci deploys"]);
    assert.match(listed.last_used, /^\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000Z$/, "last use, to the minute");
    const flag = list.body.find((key: { source: string; kind: string }) => key.source === "flag" && key.kind === "secret");
    assert.equal(flag.prefix, SECRET.slice(0, 8));

    const publishable = await createKey(server, { kind: "publishable", name: "web" });
    assert.match(publishable.key, /^pk_/);
    const restore = await server.call("PUT", `/api/entities/Task/${record.body.id}/restore`, { apiKey: publishable.key });
    assert.equal(restore.status, 403, "a publishable key made by the API is a publishable key");
  });

  test("a publishable key may not list, create, revoke or roll keys (403)", async () => {
    const made = await createKey(server, { kind: "publishable", name: "target" });
    for (const [method, path, body] of [["GET", "/api/keys"], ["POST", "/api/keys", { kind: "secret", name: "x" }], ["DELETE", `/api/keys/${made.id}`], ["POST", `/api/keys/${made.id}/roll`]] as const) {
      const answer = await server.call(method, path, { body, apiKey: PUBLISHABLE });
      assert.equal(answer.status, 403, `${method} ${path}`);
      assert.equal(answer.body.error.code, "forbidden");
    }
    assert.equal(await statusWithin(server, made.key, 200, 0) >= 0, true, "the target was neither revoked nor rolled");
  });

  test("bad bodies are 400 naming what to mend", async () => {
    const cases: Array<[unknown, string, string]> = [
      [{ name: "x" }, "invalid_field", "kind"],
      [{ kind: "admin", name: "x" }, "invalid_field", "kind"],
      [{ kind: "secret" }, "invalid_field", "name"],
      [{ kind: "secret", name: "" }, "invalid_field", "name"],
      [{ kind: "secret", name: "x", expires_at: "tomorrow" }, "invalid_field", "expires_at"],
      [{ kind: "secret", name: "x", expires_at: "2001-01-01T00:00:00Z" }, "invalid_field", "expires_at"],
      [{ kind: "secret", name: "x", key: "sk_mine_0000000000" }, "unknown_field", "key"],
      [[], "invalid_json", ""],
    ];
    for (const [body, code, field] of cases) {
      const answer = await server.call("POST", "/api/keys", { body });
      assert.equal(answer.status, 400, JSON.stringify(body));
      assert.equal(answer.body.error.code, code, JSON.stringify(body));
      if (field) assert.equal(answer.body.error.details.field, field);
    }
    const roll = await server.call("POST", "/api/keys/key_nope/roll", { body: { expires_in: -1 } });
    assert.equal(roll.status, 400);
    assert.equal(roll.body.error.details.field, "expires_in");
  });

  test("an unknown key id is 404 key_not_found; a flag key is not revoked or rolled (409 key_not_managed)", async () => {
    for (const [method, path] of [["DELETE", "/api/keys/key_nope"], ["POST", "/api/keys/key_nope/roll"]] as const) {
      const answer = await server.call(method, path);
      assert.equal(answer.status, 404);
      assert.equal(answer.body.error.code, "key_not_found");
    }
    const flagId = server.keys.first("secret").id;
    const list = await server.call("GET", "/api/keys");
    const flag = list.body.find((key: { source: string; kind: string }) => key.source === "flag" && key.kind === "secret");
    for (const [method, path] of [["DELETE", `/api/keys/${flag.id}`], ["POST", `/api/keys/${flag.id}/roll`]] as const) {
      const answer = await server.call(method, path);
      assert.equal(answer.status, 409, `${method} ${path}`);
      assert.equal(answer.body.error.code, "key_not_managed");
    }
    assert.ok(flagId);
    assert.equal((await server.call("GET", "/api/entities/Task")).status, 200);
  });

  test("a revoked key is 401 at once, its id 404 after, and Idempotency-Key never replays a key", async () => {
    const made = await createKey(server, { kind: "secret", name: "leaked" });
    assert.equal((await server.call("GET", "/api/entities/Task", { apiKey: made.key })).status, 200);
    const revoked = await server.call("DELETE", `/api/keys/${made.id}`);
    assert.equal(revoked.status, 200);
    assert.deepEqual([revoked.body.id, revoked.body.revoked], [made.id, true]);
    assert.equal(revoked.text.includes(made.key), false);
    const refused = await server.call("GET", "/api/entities/Task", { apiKey: made.key });
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error.code, "unauthorized");
    assert.equal((await server.call("DELETE", `/api/keys/${made.id}`)).status, 404);
    assert.equal((await server.call("GET", "/api/keys")).body.some((key: { id: string }) => key.id === made.id), false);

    const headers = { "Idempotency-Key": "same-key-twice" };
    const first = await server.call("POST", "/api/keys", { body: { kind: "secret", name: "twice" }, headers });
    const second = await server.call("POST", "/api/keys", { body: { kind: "secret", name: "twice" }, headers });
    assert.deepEqual([first.status, second.status], [201, 201]);
    assert.notEqual(first.body.key, second.body.key, "no answer holding a key is kept to be replayed");
  });

  test("a rolled key and its successor both work until expires_in, then only the successor", async () => {
    const made = await createKey(server, { kind: "secret", name: "rolled" });
    const rolled = await server.call("POST", `/api/keys/${made.id}/roll`, { body: { expires_in: 1 }, apiKey: made.key });
    assert.equal(rolled.status, 201, rolled.text);
    assert.deepEqual([rolled.body.kind, rolled.body.name, rolled.body.rolled.id], ["secret", "rolled", made.id]);
    assert.notEqual(rolled.body.key, made.key);
    assert.ok(Math.abs(Date.parse(rolled.body.rolled.expires_at) - (Date.now() + 1000)) < 1000, rolled.body.rolled.expires_at);
    assert.equal((await server.call("GET", "/api/entities/Task", { apiKey: made.key })).status, 200, "the old key, until its expiry");
    assert.equal((await server.call("GET", "/api/entities/Task", { apiKey: rolled.body.key })).status, 200);
    await statusWithin(server, made.key, 401, 2500);
    assert.equal((await server.call("GET", "/api/entities/Task", { apiKey: rolled.body.key })).status, 200);

    const daily = await createKey(server, { kind: "publishable", name: "daily" });
    const byDefault = await server.call("POST", `/api/keys/${daily.id}/roll`);
    assert.equal(byDefault.status, 201);
    const lives = Date.parse(byDefault.body.rolled.expires_at) - Date.now();
    assert.ok(lives > 86_000_000 && lives <= 86_400_000, `a day by default (${lives} ms)`);
  });

  test("a key created with expires_at works until then, then is 401", async () => {
    const made = await createKey(server, { kind: "publishable", name: "short", expires_at: new Date(Date.now() + 1000).toISOString() });
    assert.equal((await server.call("GET", "/api/entities/Task", { apiKey: made.key })).status, 200);
    await statusWithin(server, made.key, 401, 2500);
  });

  test("an open change feed stream of a revoked key is closed within a second", async () => {
    const made = await createKey(server, { kind: "secret", name: "listener" });
    const stream = new SseClient(`${server.url}/api/entities/Task/changes`, { "X-Api-Key": made.key });
    await stream.opened;
    assert.equal(stream.status, 200);
    const started = Date.now();
    assert.equal((await server.call("DELETE", `/api/keys/${made.id}`)).status, 200);
    await stream.waitForEnd(1000);
    assert.ok(Date.now() - started < 1000);
    assert.equal(stream.events.at(-1)?.event, "unauthorized");
    stream.close();
  });
});

describe("the last secret key", () => {
  let server: TestServer;
  before(async () => {
    // No flag secret key: the server generates one, which is then the only secret key.
    server = await startTestServer({ secretKey: undefined });
  });
  after(() => server.close());

  test("is not revoked (409 last_secret_key); once another exists, it may be", async () => {
    const generated = server.keys.first("secret").id;
    const refused = await server.call("DELETE", `/api/keys/${generated}`, { apiKey: server.secretKey });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.code, "last_secret_key");
    const other = await createKey(server, { kind: "secret", name: "successor" }, server.secretKey);
    assert.equal((await server.call("DELETE", `/api/keys/${generated}`, { apiKey: other.key })).status, 200);
    const last = await server.call("DELETE", `/api/keys/${other.id}`, { apiKey: other.key });
    assert.equal(last.status, 409);
    assert.equal(last.body.error.code, "last_secret_key");
  });
});

describe("keys at rest", { skip: TEST_STORE === "memory" ? "the memory store keeps nothing at rest" : false }, () => {
  test("only hashes and prefixes are kept: no key appears in full in keys.json or the $keys table", async () => {
    const pgUrl = pgTestUrl();
    const pgSchema = freshPgSchema();
    const server = TEST_STORE === "postgres" ? await startTestServer({ store: pgUrl!, pgSchema, secretKey: undefined }) : await startTestServer({ secretKey: undefined });
    try {
      const made = await createKey(server, { kind: "secret", name: "kept" }, server.secretKey);
      const generated = server.secretKey;
      const atRest = await readAtRest(server, pgUrl, pgSchema);
      assert.equal(atRest.includes(made.key), false, "the created key is not kept");
      assert.equal(atRest.includes(generated), false, "nor the generated one");
      assert.equal(atRest.includes(made.key.slice(0, 12)), false, "nor more than its prefix");
      assert.ok(atRest.includes(made.key.slice(0, 8)), "its prefix is");
      const { createHash } = await import("node:crypto");
      assert.ok(atRest.includes(createHash("sha256").update(made.key).digest("hex")), "its SHA-256 is");
    } finally {
      await server.close();
      if (TEST_STORE === "postgres") await dropPgSchema(pgUrl!, pgSchema);
    }
  });
});

async function readAtRest(server: TestServer, pgUrl: string | null, pgSchema: string): Promise<string> {
  if (TEST_STORE === "file") return readFileSync(join(server.dataDir!, "keys.json"), "utf8");
  const { default: postgres } = await import("postgres");
  const sql = postgres(pgUrl!, { max: 1, onnotice: () => {} });
  try {
    return JSON.stringify(await sql.unsafe(`SELECT * FROM "${pgSchema}"."$keys"`));
  } finally {
    await sql.end();
  }
}
