// One write the PostgreSQL database refuses ends that request only (issue 39): it is answered 500
// `internal` with a generic body and the cause in the log, and the process goes on serving writes.
// A long text once did this (a sort index's row was too big); here a trigger refuses one title, so
// the test keeps holding whatever the store learns to accept. Runs the built CLI: the exit it
// guards against is the CLI's.

import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";
import postgres from "postgres";
import { describeWithPostgres, dropPgSchema, freshPgSchema } from "../support/postgres.ts";
import { PUBLISHABLE } from "../support/server.ts";
import { BUILT_CLI, killSpawned, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";

const EXAMPLES_SCHEMA = join(import.meta.dirname, "../../examples/entities");
const REFUSED_TITLE = "refused by a trigger";
/** The command line refuses a key flag under 16 characters, as the shared test secret is. */
const SECRET = "sk_write_errors_secret";
/** What the CLI waits after a fatal store failure before it exits; the test waits longer. */
const PAST_FATAL_GRACE_MS = 1500;

describeWithPostgres("a write the PostgreSQL database refuses", (url) => {
  const pgSchema = freshPgSchema();
  let server: SpawnedServer;

  before(async () => {
    const args = ["--schema", EXAMPLES_SCHEMA, "--store", url, "--pg-schema", pgSchema, "--port", "0", "--secret-key", SECRET, "--publishable-key", PUBLISHABLE];
    server = await startSpawnedServer(BUILT_CLI, args, 30_000);
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      await sql.unsafe(`CREATE FUNCTION ${pgSchema}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.data ->> 'title' = '${REFUSED_TITLE}' THEN RAISE EXCEPTION 'refused for the test'; END IF; RETURN NEW; END $$`);
      await sql.unsafe(`CREATE TRIGGER refuse BEFORE INSERT ON ${pgSchema}."Task" FOR EACH ROW EXECUTE FUNCTION ${pgSchema}.refuse()`);
    } finally {
      await sql.end();
    }
  });

  after(async () => {
    killSpawned();
    await dropPgSchema(url, pgSchema);
  });

  const create = async (title: string) => {
    const response = await fetch(`${server.url}/api/entities/Task`, { method: "POST", headers: { "X-Api-Key": PUBLISHABLE, "Content-Type": "application/json" }, body: JSON.stringify({ title }) });
    return { status: response.status, body: (await response.json()) as { error?: { code: string; message: string }; title?: string } };
  };

  test("is answered 500 internal with a generic body, and the process goes on serving writes", async () => {
    const refused = await create(REFUSED_TITLE);
    assert.equal(refused.status, 500, JSON.stringify(refused.body));
    assert.equal(refused.body.error?.code, "internal");
    assert.doesNotMatch(refused.body.error!.message, /refused for the test|Task|select|insert/i, "the database's words stay in the log");
    await new Promise((resolve) => setTimeout(resolve, PAST_FATAL_GRACE_MS));
    assert.equal(server.child.exitCode, null, `tabula exited:\n${server.output()}`);
    const next = await create("the next write");
    assert.equal(next.status, 201, JSON.stringify(next.body));
    assert.equal(next.body.title, "the next write");
    assert.match(server.output(), /refused for the test/, "the cause is logged");
  });
});
