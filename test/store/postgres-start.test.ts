// The PostgreSQL store's bad days (issue 18): what stops a start-up, each with a message naming what
// to fix, and a database that goes away while serving: 503 store_unavailable, then service again
// once it is back, with every acknowledged write still there. The database is "taken away" by
// cutting a TCP proxy between tabula and the test cluster.

import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { connect, createServer as createTcpServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { startServer } from "../../src/api.ts";
import { BUILT_CLI, spawnCli } from "../support/spawned-server.ts";
import { describeWithPostgres, dropPgSchema, freshPgSchema } from "../support/postgres.ts";
import { SECRET, TASK } from "../support/server.ts";

/** A TCP proxy to PostgreSQL that a test can cut (every connection dropped, none accepted) and restore. */
class CuttableProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(
    private readonly host: string,
    private readonly targetPort: number,
  ) {}

  async open(): Promise<void> {
    this.server = createTcpServer((client) => {
      const upstream = connect(this.targetPort, this.host);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on("close", () => this.sockets.delete(socket));
        socket.on("error", () => {});
      }
      client.pipe(upstream).pipe(client);
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, "127.0.0.1", resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  async cut(): Promise<void> {
    const server = this.server!;
    this.server = null;
    const closed = new Promise((resolve) => server.close(resolve));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }
}

describeWithPostgres("the PostgreSQL store's start-up refusals and lost connections", (url) => {
  const schemas: string[] = [];
  after(async () => {
    for (const schema of schemas) await dropPgSchema(url, schema);
  });

  function withUrl(change: (target: URL) => void): string {
    const target = new URL(url);
    change(target);
    return target.toString();
  }

  test("a database that does not exist: refused before listening, saying to create it", async () => {
    const missing = withUrl((target) => (target.pathname = "/no_such_database"));
    await assert.rejects(startServer({ schema: { Task: TASK }, store: missing }), /has no such database.*createdb/);
  });

  test("a user the database does not know: refused, naming the credentials", async () => {
    const stranger = withUrl((target) => (target.username = "nobody_here"));
    await assert.rejects(startServer({ schema: { Task: TASK }, store: stranger }), /refused the credentials of the store option/);
  });

  test("a table of the entity's name that tabula did not make: refused, naming it and the pgSchema option", async () => {
    const pgSchema = freshPgSchema();
    schemas.push(pgSchema);
    const { default: postgres } = await import("postgres");
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    await sql.unsafe(`CREATE SCHEMA ${pgSchema}; CREATE TABLE ${pgSchema}."Task" (id integer PRIMARY KEY, name text)`);
    await sql.end();
    await assert.rejects(startServer({ schema: { Task: TASK }, store: url, pgSchema }), new RegExp(`Table ${pgSchema}\\.Task exists but is not one tabula made.*the pgSchema option`));
  });

  test("a unique declaration over stored duplicates: refused before listening, naming entity, fields and ids", async () => {
    const pgSchema = freshPgSchema();
    schemas.push(pgSchema);
    const loose = { name: "Item", properties: { email: { type: "string" } } };
    const first = await startServer({ schema: { Item: loose }, store: url, pgSchema, secretKey: SECRET });
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const answer = await fetch(`${first.url}/api/entities/Item`, { method: "POST", headers: { "X-Api-Key": SECRET, "Content-Type": "application/json" }, body: '{"email":"same@x.io"}' });
      ids.push(((await answer.json()) as { id: string }).id);
    }
    await first.close();
    await assert.rejects(
      startServer({ schema: { Item: { ...loose, unique: [["email"]] } }, store: url, pgSchema }),
      (error: Error) => /Item declares "unique": \["email"\], but live records already share such values/.test(error.message) && ids.every((id) => error.message.includes(id)),
    );
  });

  test("a schema name that PostgreSQL would need quoted is refused", async () => {
    await assert.rejects(startServer({ schema: { Task: TASK }, store: url, pgSchema: "my schema" }), /The schema name "my schema" \(the pgSchema option\) is not usable/);
  });

  // The library names its options (above); the command line names its flags.
  test("from the command line, the same refusals name the flags", async () => {
    const folder = await mkdtemp(join(tmpdir(), "tabula-pg-flags-"));
    try {
      await writeFile(join(folder, "Task.json"), JSON.stringify(TASK));
      const cases: Array<[string[], string]> = [
        [["--store", withUrl((target) => (target.username = "nobody_here"))], "refused the credentials of --store"],
        [["--store", url, "--pg-schema", "my schema"], 'The schema name "my schema" (--pg-schema) is not usable'],
      ];
      for (const [args, expected] of cases) {
        // The bundle in the repository, beside node_modules/postgres (a copy elsewhere finds no driver).
        const child = spawnCli(BUILT_CLI, ["--schema", folder, "--port", "0", "--secret-key", "sk_pg_flags_0123456789", ...args]);
        let stderr = "";
        child.stderr!.on("data", (text: string) => (stderr += text));
        const [code] = (await once(child, "close")) as [number];
        assert.equal(code, 1, stderr);
        assert.ok(stderr.includes(expected), stderr);
      }
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  test("the database going away answers 503 store_unavailable, and service resumes once it is back, acknowledged writes kept", async () => {
    const target = new URL(url);
    const proxy = new CuttableProxy(target.hostname, Number(target.port));
    await proxy.open();
    const pgSchema = freshPgSchema();
    schemas.push(pgSchema);
    const server = await startServer({ schema: { Task: TASK }, store: withUrl((u) => (u.port = String(proxy.port))), pgSchema, secretKey: SECRET });
    const call = (method: string, path: string, body?: unknown) =>
      fetch(server.url + path, { method, headers: { "X-Api-Key": SECRET, "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
    try {
      const created = (await (await call("POST", "/api/entities/Task", { title: "before the outage" })).json()) as { id: string };
      await proxy.cut();
      for (const [method, path, body] of [["GET", `/api/entities/Task/${created.id}`], ["POST", "/api/entities/Task", { title: "during" }], ["GET", "/api/entities/Task"]] as const) {
        const answer = await call(method, path, body);
        assert.equal(answer.status, 503, `${method} ${path}`);
        const { error } = (await answer.json()) as { error: { code: string; message: string } };
        assert.equal(error.code, "store_unavailable");
        assert.match(error.message, /database behind the store cannot be reached/);
        assert.equal(answer.headers.get("retry-after"), "1");
      }
      await proxy.open();
      // The pool reconnects on the next query: no restart.
      const read = await call("GET", `/api/entities/Task/${created.id}`);
      assert.equal(read.status, 200);
      assert.equal(((await read.json()) as { title: string }).title, "before the outage");
      assert.equal((await call("POST", "/api/entities/Task", { title: "after" })).status, 201);
      const titles = ((await (await call("GET", "/api/entities/Task?sort_by=created_date")).json()) as Array<{ title: string }>).map((record: { title: string }) => record.title);
      assert.deepEqual(titles, ["before the outage", "after"]);
    } finally {
      await server.close();
      await proxy.cut().catch(() => {});
    }
  });
});
