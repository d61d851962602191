// A database made when the unique index of a "unique" declaration held whole values (which refused
// a text over about 2,700 bytes): at start-up the old index is dropped and the one over short
// values or the digest of long ones made, once, by processes starting together; what was stored
// stays guarded, and a long value sent to both processes at once is stored once.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, test } from "node:test";
import postgres from "postgres";
import { startServer } from "../../src/api.ts";
import { describeWithPostgres, dropPgSchema, freshPgSchema } from "../support/postgres.ts";
import { SECRET } from "../support/server.ts";

const ITEM = {
  name: "Item",
  properties: { email: { type: "string" }, sku: { type: "string" }, warehouse: { type: "string" } },
  unique: [["email"], ["sku", "warehouse"]],
};
const PATH = "/api/entities/Item";

/** The unique index of each set before, as an older tabula made it. */
function oldIndex(pgSchema: string, fields: string[]): string {
  const holdsAll = fields.map((field) => `data ? '${field}'`).concat(fields.map((field) => `jsonb_typeof(data -> '${field}') IS DISTINCT FROM 'null'`));
  return `CREATE UNIQUE INDEX "Item_unique_${fields.join("_")}" ON "${pgSchema}"."Item" (${fields.map((field) => `(data -> '${field}')`).join(", ")}) WHERE NOT deleted AND ${holdsAll.join(" AND ")}`;
}

describeWithPostgres("the unique indexes of a database made by an older tabula", (url) => {
  const pgSchema = freshPgSchema();
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  after(async () => {
    await sql.end();
    await dropPgSchema(url, pgSchema);
  });

  const indexNames = async () =>
    (await sql.unsafe(`SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'Item' AND indexname LIKE '%unique%' ORDER BY 1`, [pgSchema])).map((row) => row.indexname as string);
  const post = (server: { url: string }, body: unknown) =>
    fetch(`${server.url}${PATH}`, { method: "POST", headers: { "X-Api-Key": SECRET, "Content-Type": "application/json" }, body: JSON.stringify(body) });

  test("are replaced at start-up by processes starting together; stored values stay guarded and a long one is stored once", async () => {
    const first = await startServer({ schema: { Item: ITEM }, store: url, pgSchema, secretKey: SECRET });
    const ann = ((await (await post(first, { email: "ann@x.io", sku: "S1", warehouse: "A" })).json()) as { id: string }).id;
    await first.close();
    // The table as an older tabula left it.
    await sql.unsafe(`DROP INDEX "${pgSchema}"."Item_unique_(email)"; DROP INDEX "${pgSchema}"."Item_unique_(sku,warehouse)"`);
    await sql.unsafe(`${oldIndex(pgSchema, ["email"])}; ${oldIndex(pgSchema, ["sku", "warehouse"])}`);
    assert.deepEqual(await indexNames(), ["Item_unique_email", "Item_unique_sku_warehouse"]);

    const servers = await Promise.all([0, 1].map(() => startServer({ schema: { Item: ITEM }, store: url, pgSchema, secretKey: SECRET })));
    try {
      assert.deepEqual(await indexNames(), ["Item_unique_(email)", "Item_unique_(sku,warehouse)"]);
      for (const body of [{ email: "ann@x.io" }, { sku: "S1", warehouse: "A" }]) {
        const refused = await post(servers[1]!, body);
        assert.equal(refused.status, 409);
        assert.equal(((await refused.json()) as { error: { details: { existing_id: string } } }).error.details.existing_id, ann);
      }
      // Random, as a repeated character would compress below what the old index could hold.
      const email = `${randomBytes(50_000).toString("hex")}@x.io`;
      const answers = await Promise.all(servers.map((server) => post(server, { email })));
      assert.deepEqual(answers.map((answer) => answer.status).sort(), [201, 409]);
      const [created, refused] = await Promise.all([answers.find((answer) => answer.status === 201)!, answers.find((answer) => answer.status === 409)!].map((answer) => answer.json()));
      assert.equal((refused as { error: { details: { existing_id: string } } }).error.details.existing_id, (created as { id: string }).id);
    } finally {
      await Promise.all(servers.map((server) => server.close()));
    }
    // Once done, a start-up finds nothing to do.
    const again = await startServer({ schema: { Item: ITEM }, store: url, pgSchema, secretKey: SECRET });
    await again.close();
    assert.deepEqual(await indexNames(), ["Item_unique_(email)", "Item_unique_(sku,warehouse)"]);
  });
});
