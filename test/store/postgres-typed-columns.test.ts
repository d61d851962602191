// The typed columns of the PostgreSQL store (issue 59, typed-columns.ts): a database made before
// them (no f_… columns, the sort indexes over `data`) is upgraded at its first start, once, by
// processes starting together, saying so as it rewrites a table that holds rows; answers are the
// same after as before; a field added or removed from the declaration adds or drops its column.

import assert from "node:assert/strict";
import { after, test } from "node:test";
import postgres from "postgres";
import { startServer } from "../../src/api.ts";
import { columnNameOf, SEARCH_COLUMN, SEARCH_STATISTICS, typedColumnsOf } from "../../src/store/postgres/typed-columns.ts";
import { loadSchemaObject } from "../../src/schema/load.ts";
import { describeWithPostgres, dropPgSchema, freshPgSchema } from "../support/postgres.ts";
import { SECRET, TASK } from "../support/server.ts";

/** Two of the indexes an older tabula made over `data`, instead of the typed columns' ones. */
const OLD_INDEXES = [
  `CREATE INDEX "Task_order_title" ON %T ((left(((CASE WHEN jsonb_typeof((data -> 'title')) = 'string' THEN 'a' || (data ->> 'title') ELSE 'b' END) COLLATE "C"), 512) COLLATE "C"), id) WHERE NOT deleted`,
  `CREATE INDEX "Task_sort_priority" ON %T ((CASE WHEN jsonb_typeof((data -> 'priority')) = 'number' THEN ((data -> 'priority'))::numeric ELSE 'Infinity'::numeric END), id) WHERE NOT deleted`,
];

const RECORDS = [
  { title: "b", priority: 2, done: true, due_date: "2026-01-02", email: "a@x.io" },
  { title: "a", priority: 2, done: false, start_at: "2026-01-01T10:00:00.000Z" },
  { title: "x".repeat(700), priority: -2, estimate: 0.1 },
  { title: "x".repeat(700) + "a", estimate: 1e21, status: "done" },
  { title: "É\u0000é", priority: 3, status: "doing", done: true },
  { title: "a", status: "done" },
];

const QUERIES = [
  "/api/entities/Task?sort_by=title",
  "/api/entities/Task?sort_by=-priority&fields=title,priority",
  "/api/entities/Task?q=%7B%22priority%22%3A2%7D&sort_by=-created_date",
  "/api/entities/Task/count?q=%7B%22status%22%3A%22done%22%7D",
  "/api/entities/Task/count?q=%7B%22done%22%3A%7B%22%24ne%22%3Atrue%7D%7D",
  `/api/entities/Task?q=${encodeURIComponent(JSON.stringify({ title: { $gte: "x".repeat(700) } }))}&sort_by=-title&fields=title`,
  `/api/entities/Task?q=${encodeURIComponent(JSON.stringify({ priority: { $lt: 3 }, estimate: { $exists: false } }))}&sort_by=priority`,
];

describeWithPostgres("typed columns on PostgreSQL", (url) => {
  const pgSchema = freshPgSchema();
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  after(async () => {
    await sql.end();
    await dropPgSchema(url, pgSchema);
  });
  const table = `"${pgSchema}"."Task"`;

  const columnNames = async () =>
    (await sql.unsafe(`SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'Task' AND column_name LIKE 'f\\_%' ORDER BY 1`, [pgSchema])).map((row) => row.column_name as string);
  const indexNames = async () =>
    (await sql.unsafe(`SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'Task' ORDER BY 1`, [pgSchema])).map((row) => row.indexname as string);
  const searchColumn = typedColumnsOf(loadSchemaObject({ Task: TASK }).entities.get("Task")!).get(SEARCH_COLUMN)!.name;
  const searchStatistics = async () =>
    Number((await sql.unsafe(`SELECT attstattarget FROM pg_attribute WHERE attrelid = $1::regclass AND attname = $2`, [table, searchColumn]))[0]!.attstattarget);
  const lastAnalyzed = async () => (await sql.unsafe(`SELECT last_analyze FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'Task'`, [pgSchema]))[0]!.last_analyze as Date | null;
  const answersOf = async (base: string) =>
    Promise.all(QUERIES.map(async (path) => (await fetch(`${base}${path}`, { headers: { "X-Api-Key": SECRET } })).json()));

  test("a database made before them is upgraded once at start-up, by processes starting together, and answers as before", async () => {
    const first = await startServer({ schema: { Task: TASK }, store: url, pgSchema, secretKey: SECRET });
    let before: unknown[];
    try {
      for (const record of RECORDS) {
        const created = await fetch(`${first.url}/api/entities/Task`, { method: "POST", headers: { "X-Api-Key": SECRET, "Content-Type": "application/json" }, body: JSON.stringify(record) });
        assert.equal(created.status, 201, await created.text());
      }
      before = await answersOf(first.url);
    } finally {
      await first.close();
    }
    // A new table's search column is sampled deep from the first (autovacuum samples it as rows come).
    assert.equal(await searchStatistics(), SEARCH_STATISTICS);
    // The table as an older tabula left it: no typed columns (their indexes go with them), indexes over data.
    const wanted = [...typedColumnsOf(loadSchemaObject({ Task: TASK }).entities.get("Task")!).values()].map((column) => column.name).sort();
    assert.deepEqual(await columnNames(), wanted);
    await sql.unsafe(`ALTER TABLE ${table} ${wanted.map((name) => `DROP COLUMN "${name}"`).join(", ")}`);
    for (const index of OLD_INDEXES) await sql.unsafe(index.replace("%T", table));
    assert.deepEqual(await columnNames(), []);

    const lines: string[] = [];
    const servers = await Promise.all([0, 1].map(() => startServer({ schema: { Task: TASK }, store: url, pgSchema, secretKey: SECRET, progress: (line) => lines.push(line) })));
    try {
      assert.deepEqual(await columnNames(), wanted);
      const indexes = await indexNames();
      for (const name of wanted) assert.ok(indexes.includes(`Task_${name}`), `${name}'s index: ${indexes.join(", ")}`);
      assert.ok(!indexes.includes("Task_order_title") && !indexes.includes("Task_sort_priority"), indexes.join(", "));
      // One process rewrote the table, and said so; the other found it done.
      assert.equal(lines.filter((line) => line.includes("rewrites the table")).length, 1, lines.join("\n"));
      // Then each index it made, and how many are left, and when all were ready.
      assert.equal(lines.filter((line) => /making index 1 of \d+ /.test(line)).length, 1, lines.join("\n"));
      assert.equal(lines.filter((line) => / ready in [\d.]+ s$/.test(line)).length, 1, lines.join("\n"));
      assert.deepEqual(await answersOf(servers[1]!.url), before);
      // A record written now has its columns too: PostgreSQL generates them.
      const created = await fetch(`${servers[0]!.url}/api/entities/Task`, { method: "POST", headers: { "X-Api-Key": SECRET, "Content-Type": "application/json" }, body: '{"title":"c","priority":2}' });
      assert.equal(created.status, 201);
      const counted = await fetch(`${servers[1]!.url}/api/entities/Task/count?q=%7B%22priority%22%3A2%7D`, { headers: { "X-Api-Key": SECRET } });
      assert.deepEqual(await counted.json(), { count: 3 });
      const [{ key }] = await sql.unsafe(`SELECT "${columnNameOf("priority", "number")}"::text AS key FROM ${table} WHERE data ->> 'title' = 'c'`);
      assert.equal(key, "2");
    } finally {
      await Promise.all(servers.map((server) => server.close()));
    }
  });

  test("a table whose search column has the planner's default sample gets a deeper one at start-up, sampled at once, once", async () => {
    await sql.unsafe(`ALTER TABLE ${table} ALTER COLUMN "${searchColumn}" SET STATISTICS -1`);
    const analyzedBefore = await lastAnalyzed();
    const lines: string[] = [];
    const servers = await Promise.all([0, 1].map(() => startServer({ schema: { Task: TASK }, store: url, pgSchema, secretKey: SECRET, progress: (line) => lines.push(line) })));
    try {
      assert.equal(await searchStatistics(), SEARCH_STATISTICS);
      assert.equal(lines.filter((line) => line === "PostgreSQL: Task: sampling the search text for the planner…").length, 1, lines.join("\n"));
      const analyzed = await lastAnalyzed();
      assert.ok(analyzed !== null && (analyzedBefore === null || analyzed > analyzedBefore), `sampled: ${analyzedBefore} then ${analyzed}`);
      const found = await fetch(`${servers[1]!.url}/api/entities/Task?search=${encodeURIComponent("é")}&fields=title`, { headers: { "X-Api-Key": SECRET } });
      assert.deepEqual(((await found.json()) as Array<{ title: string }>).map((record) => record.title), ["É\u0000é"]);
    } finally {
      await Promise.all(servers.map((server) => server.close()));
    }
    // Started again, nothing left to do: no line.
    const again = await startServer({ schema: { Task: TASK }, store: url, pgSchema, secretKey: SECRET, progress: (line) => lines.push(line) });
    await again.close();
    assert.equal(lines.filter((line) => line.includes("sampling")).length, 1, lines.join("\n"));
  });

  test("a field added or removed from the declaration adds or drops its column and index", async () => {
    const { meta: _meta, ...properties } = TASK.properties;
    const changed = { ...TASK, properties: { ...properties, rank: { type: "number" } } };
    const server = await startServer({ schema: { Task: changed }, store: url, pgSchema, secretKey: SECRET });
    try {
      const columns = await columnNames();
      assert.ok(columns.includes(columnNameOf("rank", "number")), columns.join(", "));
      const listed = await fetch(`${server.url}/api/entities/Task?sort_by=-rank&fields=title`, { headers: { "X-Api-Key": SECRET } });
      assert.equal(listed.status, 200);
    } finally {
      await server.close();
    }
    const back = await startServer({ schema: { Task: TASK }, store: url, pgSchema, secretKey: SECRET });
    try {
      assert.ok(!(await columnNames()).includes(columnNameOf("rank", "number")));
      assert.ok(!(await indexNames()).includes(`Task_${columnNameOf("rank", "number")}`));
    } finally {
      await back.close();
    }
  });
});
