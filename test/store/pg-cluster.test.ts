// The PostgreSQL that test/run.mjs hands to tests (test/support/pg-cluster.mjs): reachable as the URL
// says, storing text as UTF-8 and sorting it by code point, with room for many test servers at once;
// and the schema each test server takes in it, dropped afterwards.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import postgres from "postgres";
import { describeWithPostgres, dropPgSchema, freshPgSchema } from "../support/postgres.ts";

/** ~40 test servers at once, each with a small pool. */
const MIN_CONNECTIONS = 200;

describeWithPostgres("the test PostgreSQL cluster", (url) => {
  let sql: postgres.Sql;
  before(() => {
    sql = postgres(url, { max: 1, onnotice: () => {} });
  });
  after(() => sql.end());

  test("answers select 1 at the URL it was given", async () => {
    const [row] = await sql`select 1 as one`;
    assert.equal(row!.one, 1);
  });

  test("stores text as UTF8, with the C.UTF-8 locale (code point order, as the memory store sorts)", async () => {
    const [row] = await sql`
      select current_setting('server_encoding') as encoding, datcollate, datctype
      from pg_database where datname = current_database()`;
    assert.deepEqual({ ...row }, { encoding: "UTF8", datcollate: "C.UTF-8", datctype: "C.UTF-8" });
    const [sorted] = await sql`select array_agg(word order by word) as words from unnest(${["é", "a", "Z", "B", "😀", "ß"]}::text[]) as word`;
    assert.deepEqual(sorted!.words, ["B", "Z", "a", "ß", "é", "😀"]);
  });

  test(`allows at least ${MIN_CONNECTIONS} connections`, async () => {
    const [row] = await sql`select current_setting('max_connections')::int as max`;
    assert.ok(row!.max >= MIN_CONNECTIONS, `max_connections is ${row!.max}`);
  });

  test("dropPgSchema removes a test server's schema with all it holds", async () => {
    const schema = freshPgSchema();
    await sql`create schema ${sql(schema)}`;
    await sql`create table ${sql(schema)}.task (id text primary key)`;
    await dropPgSchema(url, schema);
    const rows = await sql`select 1 from information_schema.schemata where schema_name = ${schema}`;
    assert.equal(rows.length, 0);
  });
});
