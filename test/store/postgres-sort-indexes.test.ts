// A database made before the sort indexes of text fields held a prefix (issue 39): at start-up the
// old index (the whole key, which refuses a long text) is dropped and the typed column's (which
// holds a prefix: typed-columns.ts) made, once, by processes starting together; then a long title
// is stored and sorted.

import assert from "node:assert/strict";
import { after, test } from "node:test";
import postgres from "postgres";
import { startServer } from "../../src/api.ts";
import { describeWithPostgres, dropPgSchema, freshPgSchema } from "../support/postgres.ts";
import { SECRET, TASK } from "../support/server.ts";
import { columnNameOf } from "../../src/store/postgres/typed-columns.ts";

/** The index every text field had before: its whole sort key, then id. */
const OLD_TITLE_INDEX = `(((CASE WHEN jsonb_typeof((data -> 'title')) = 'string' THEN 'a' || (data ->> 'title') ELSE 'b' END) COLLATE "C"), id) WHERE NOT deleted`;

const TITLE_COLUMN = columnNameOf("title", "string");

describeWithPostgres("the sort indexes of a database made by an older tabula", (url) => {
  const pgSchema = freshPgSchema();
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  after(async () => {
    await sql.end();
    await dropPgSchema(url, pgSchema);
  });

  const indexNames = async () =>
    (await sql.unsafe(`SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'Task' AND indexname LIKE '%title%' ORDER BY 1`, [pgSchema])).map((row) => row.indexname as string);

  test("are replaced at start-up by processes starting together, and a long title is then stored", async () => {
    const first = await startServer({ schema: { Task: TASK }, store: url, pgSchema, secretKey: SECRET });
    await first.close();
    // The table as an older tabula left it.
    await sql.unsafe(`ALTER TABLE "${pgSchema}"."Task" DROP COLUMN "${TITLE_COLUMN}"; CREATE INDEX "Task_sort_title" ON "${pgSchema}"."Task" ${OLD_TITLE_INDEX}`);
    assert.deepEqual(await indexNames(), ["Task_sort_title"]);

    const servers = await Promise.all([0, 1].map(() => startServer({ schema: { Task: TASK }, store: url, pgSchema, secretKey: SECRET })));
    try {
      assert.deepEqual(await indexNames(), [`Task_${TITLE_COLUMN}`]);
      const title = "x".repeat(2_800);
      const created = await fetch(`${servers[0]!.url}/api/entities/Task`, { method: "POST", headers: { "X-Api-Key": SECRET, "Content-Type": "application/json" }, body: JSON.stringify({ title }) });
      assert.equal(created.status, 201, await created.text());
      await fetch(`${servers[1]!.url}/api/entities/Task`, { method: "POST", headers: { "X-Api-Key": SECRET, "Content-Type": "application/json" }, body: '{"title":"y"}' });
      const listed = await fetch(`${servers[1]!.url}/api/entities/Task?sort_by=-title&fields=title`, { headers: { "X-Api-Key": SECRET } });
      assert.deepEqual(((await listed.json()) as Array<{ title: string }>).map((record) => record.title.length), [1, 2_800]);
    } finally {
      await Promise.all(servers.map((server) => server.close()));
    }
  });
});
