// Two tabula processes on one PostgreSQL database (docs/postgresql.md#several-processes): what one server guarantees holds
// across both. Races are sent to both processes at once, many rounds each, and every round must end
// as it would on one server: one If-Match update wins and the other gets 412; two upserts of one
// new key make one record; one idempotency key sent to both stores one record and answers twice
// alike; ids never clash; a cursor walk whose pages come from alternating processes equals one
// big page; and the API keys one process generated are the other's too.

import assert from "node:assert/strict";
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { BUILT_CLI, copyCli, killSpawned, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";
import { describeWithPostgres, dropPgSchema, freshPgSchema } from "../support/postgres.ts";
import { SseClient } from "../support/sse.ts";

const EXAMPLES = join(import.meta.dirname, "../../examples/entities");
const ROUNDS = 12;

let SCHEMA = EXAMPLES;

describeWithPostgres("two tabula processes on one PostgreSQL database", (url) => {
  const pgSchema = freshPgSchema();
  let folder: string;
  let a: SpawnedServer;
  let b: SpawnedServer;
  let secret: string;

  before(async () => {
    folder = await mkdtemp(join(tmpdir(), "tabula-processes-"));
    // The example entities, with Task's email declared unique (for the race on one new value).
    const schema = join(folder, "entities");
    await mkdir(schema);
    const task = JSON.parse(await readFile(join(EXAMPLES, "Task.json"), "utf8"));
    await writeFile(join(schema, "Task.json"), JSON.stringify({ ...task, unique: [["email"]] }));
    await copyFile(join(EXAMPLES, "Note.json"), join(schema, "Note.json"));
    SCHEMA = schema;
    // The bundle in the repository, beside node_modules/postgres (a copy elsewhere finds no driver).
    const cli = BUILT_CLI;
    const args = ["--schema", SCHEMA, "--store", url, "--pg-schema", pgSchema, "--port", "0"];
    // Started together: they race to create the tables and to generate the keys.
    [a, b] = await Promise.all([startSpawnedServer(cli, args, 30_000), startSpawnedServer(cli, args, 30_000)]);
    // The one that generated the keys prints them whole; the other names them by id.
    secret = [a, b].map((server) => /secret key\s+(sk_[A-Za-z0-9_-]+)\s/.exec(server.output())?.[1]).find((key) => key !== undefined)!;
  });

  after(async () => {
    killSpawned();
    await dropPgSchema(url, pgSchema);
    await rm(folder, { recursive: true, force: true });
  });

  async function call(server: SpawnedServer, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const response = await fetch(server.url + path, {
      method,
      headers: { "X-Api-Key": secret, ...(body === undefined ? {} : { "Content-Type": "application/json" }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined, text };
  }

  test("without the postgres package beside it, tabula exits 1 saying npm install postgres", async () => {
    const lonely = copyCli(folder);
    const started = startSpawnedServer(lonely, ["--schema", SCHEMA, "--store", url, "--port", "0"], 30_000);
    await assert.rejects(started, /exited with 1 before listening:\n.*npm install postgres/);
  });

  test("both processes hold the same keys: the ones the first generated, saved in the database", async () => {
    const idsOf = (server: SpawnedServer) => [...server.output().matchAll(/key\s+\S+\s+id (key_[0-9a-f]+)/g)].map((match) => match[1]).sort();
    assert.deepEqual(idsOf(a), idsOf(b), `${a.output()}\n${b.output()}`);
    assert.equal(idsOf(a).length, 2);
    assert.equal([a, b].filter((server) => /\(generated, saved in PostgreSQL table/.test(server.output())).length, 1, "exactly one process generated them");
    for (const server of [a, b]) assert.equal((await call(server, "GET", "/api/entities/Task/count")).status, 200);
  });

  test("two If-Match updates of one version, one per process: one wins, the other gets 412", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const created = await call(a, "POST", "/api/entities/Task", { title: `round ${round}` });
      const etag = created.headers.get("etag")!;
      const answers = await Promise.all([
        call(a, "PATCH", `/api/entities/Task/${created.body.id}`, { title: "by a" }, { "If-Match": etag }),
        call(b, "PATCH", `/api/entities/Task/${created.body.id}`, { title: "by b" }, { "If-Match": etag }),
      ]);
      assert.deepEqual(answers.map((answer) => answer.status).sort(), [200, 412], answers.map((answer) => answer.text).join("\n"));
      const winner = answers.find((answer) => answer.status === 200)!;
      const stored = await call(b, "GET", `/api/entities/Task/${created.body.id}`);
      assert.equal(stored.body.title, winner.body.title);
      assert.equal(stored.headers.get("etag"), winner.headers.get("etag"));
    }
  });

  test("updates without If-Match from both processes are all kept, none lost", async () => {
    const created = await call(a, "POST", "/api/entities/Task", { title: "counter", priority: 0 });
    const path = `/api/entities/Task/update-many`;
    // $inc reads and writes in one batch: a lost update would show as a smaller total.
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => call(i % 2 === 0 ? a : b, "PATCH", path, { q: { title: "counter" }, inc: { priority: 1 } })),
    );
    assert.deepEqual(new Set(answers.map((answer) => answer.status)), new Set([200]), answers.map((answer) => answer.text).join("\n"));
    assert.equal((await call(b, "GET", `/api/entities/Task/${created.body.id}`)).body.priority, 20);
  });

  test("two upserts of one new key, one per process, make one record", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const email = `upsert-${round}@example.com`;
      const answers = await Promise.all(
        [a, b].map((server, i) => call(server, "POST", "/api/entities/Task/upsert", { match: ["email"], records: [{ email, title: `from ${i}` }] })),
      );
      assert.deepEqual(answers.map((answer) => answer.status), [200, 200], answers.map((answer) => answer.text).join("\n"));
      const found = await call(a, "GET", `/api/entities/Task?q=${encodeURIComponent(JSON.stringify({ email }))}`);
      assert.equal(found.body.length, 1, `round ${round}: ${found.text}`);
      const created = answers.flatMap((answer) => answer.body.results ?? answer.body).filter((result: { created?: boolean }) => result.created === true);
      assert.equal(created.length, 1, `round ${round}: exactly one upsert created it: ${answers.map((answer) => answer.text).join("\n")}`);
    }
  });

  test("one idempotency key sent to both processes at once stores one record and answers both alike", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const key = `idem-${round}-${Date.now()}`;
      const body = { title: `idempotent ${round}` };
      const answers = await Promise.all([a, b].map((server) => call(server, "POST", "/api/entities/Task", body, { "Idempotency-Key": key })));
      const statuses = answers.map((answer) => answer.status);
      // One stores; the other replays its answer (201 again), or, if it came while the first was
      // still in flight in its own process only, the same 409 one server would give.
      assert.ok(statuses.every((status) => status === 201), `round ${round}: ${answers.map((answer) => answer.text).join("\n")}`);
      assert.equal(answers[0]!.body.id, answers[1]!.body.id);
      assert.equal(answers.filter((answer) => answer.headers.get("idempotent-replayed") === "true").length, 1);
      const found = await call(b, "GET", `/api/entities/Task/count?q=${encodeURIComponent(JSON.stringify({ title: body.title }))}`);
      assert.equal(found.body.count, 1);
    }
  });

  test("two creates of one new unique value, one per process: one is stored, the other is 409 unique_violation", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const email = `unique-${round}@example.com`;
      const answers = await Promise.all([a, b].map((server, i) => call(server, "POST", "/api/entities/Task", { email, title: `from ${i}` })));
      assert.deepEqual(answers.map((answer) => answer.status).sort(), [201, 409], answers.map((answer) => answer.text).join("\n"));
      const refused = answers.find((answer) => answer.status === 409)!;
      const stored = answers.find((answer) => answer.status === 201)!;
      assert.equal(refused.body.error.code, "unique_violation");
      assert.equal(refused.body.error.details.existing_id, stored.body.id);
    }
  });

  test("ids made by both processes at once never clash, and a cursor walk over alternating processes equals one big page", async () => {
    const batches = await Promise.all(
      Array.from({ length: 6 }, (_, i) => call(i % 2 === 0 ? a : b, "POST", "/api/entities/Note/bulk", Array.from({ length: 50 }, (_, j) => ({ body: `note ${i}-${j}` })))),
    );
    const ids = batches.flatMap((batch) => batch.body.map((record: { id: string }) => record.id));
    assert.equal(new Set(ids).size, 300);
    for (const sort of ["-created_date", "created_date", "-updated_date", "id", "-id"]) {
      const all = await call(a, "GET", `/api/entities/Note?sort_by=${sort}&limit=1000`);
      const walked: string[] = [];
      let path = `/api/entities/Note?sort_by=${sort}&limit=7`;
      for (let page = 0; ; page++) {
        const answer = await call(page % 2 === 0 ? a : b, "GET", path);
        assert.equal(answer.status, 200, answer.text);
        walked.push(...answer.body.map((record: { id: string }) => record.id));
        const cursor = answer.headers.get("x-next-cursor");
        if (!cursor) break;
        path = `/api/entities/Note?sort_by=${sort}&limit=7&cursor=${encodeURIComponent(cursor)}`;
      }
      assert.deepEqual(walked, all.body.map((record: { id: string }) => record.id), sort);
    }
  });

  test("the change feed of each process carries the writes of both, in one order, each once; a stream resumes on the other process", async () => {
    const since = (await call(a, "GET", "/api/entities/Note/changes")).body.next as string;
    const onA = new SseClient(`${a.url}/api/entities/Note/changes`, { "X-Api-Key": secret, "Last-Event-ID": since });
    const onB = new SseClient(`${b.url}/api/entities/Note/changes`, { "X-Api-Key": secret, "Last-Event-ID": since });
    await Promise.all([onA.opened, onB.opened]);
    // Both processes write at once, 16 writers each.
    const written = (
      await Promise.all(
        Array.from({ length: 32 }, async (_, w) => {
          const ids: string[] = [];
          for (let i = 0; i < 4; i++) {
            const created = await call(w % 2 ? a : b, "POST", "/api/entities/Note", { body: `n${w}-${i}` });
            assert.equal(created.status, 201, created.text);
            ids.push(created.body.id);
          }
          return ids;
        }),
      )
    ).flat();
    await Promise.all([onA.waitFor(written.length), onB.waitFor(written.length)]);
    const idsOf = (client: SseClient) => client.events.map((event) => event.id);
    assert.deepEqual(idsOf(onA), idsOf(onB), "both processes send the same events in the same order");
    assert.equal(new Set(idsOf(onA)).size, written.length, "each once");
    assert.deepEqual(onA.events.map((event) => event.json.id).sort(), [...written].sort());
    // A stream cut on a resumes on b from its last id.
    const lastOnA = onA.events[40]!.id!;
    onA.close();
    const resumed = await call(b, "GET", `/api/entities/Note/changes?since=${lastOnA}&limit=1000`);
    assert.deepEqual(resumed.body.changes.map((change: { event_id: string }) => change.event_id), idsOf(onB).slice(41));
    onB.close();
  });

  test("a user signed in on one process is signed in on the other; a session ended on one is refused by the other within a second", async () => {
    const register = await call(a, "POST", "/api/auth/register", { email: "two@example.com", password: "correct horse battery" });
    assert.equal(register.status, 200, register.text);
    const code = /for two@example\.com: code (\d{6})/.exec(a.output())?.[1];
    assert.ok(code, "the code is printed by the process that took the sign-up");
    // Proven on the other process: the code is in the shared store.
    const verified = await call(b, "POST", "/api/auth/verify-otp", { email: "two@example.com", otp_code: code });
    assert.equal(verified.status, 200, verified.text);
    const token = verified.body.access_token;
    const asUser = (server: SpawnedServer) => fetch(`${server.url}/api/entities/User/me`, { headers: { Authorization: `Bearer ${token}` } });
    // Signed by b, accepted by a: one signing secret for both.
    assert.equal((await asUser(a)).status, 200);
    const stream = new SseClient(`${a.url}/api/entities/Note/changes?key=${encodeURIComponent(token)}`);
    await stream.opened;
    assert.equal(stream.status, 200);
    const ended = await call(b, "DELETE", `/api/users/${verified.body.user.id}/sessions`);
    assert.equal(ended.status, 200, ended.text);
    const at = Date.now();
    await stream.waitForEnd(5000);
    assert.ok(Date.now() - at < 2000, `the stream on a ended ${Date.now() - at} ms later`);
    assert.equal((await asUser(a)).status, 401);
  });
});
