// "The limit" of the PostgreSQL benchmark (bench/postgres.mjs): node:http and the postgres driver
// sending the statements tabula's PostgreSQL store sends, and nothing else: no routing, keys,
// validation or shaping. tabula's figures are read against this server's, on the same database in
// the same run, so that the database's and the machine's speed cancel out.
//
//   node bench/pg-direct-server.mjs URL SCHEMA    (prints "listening on http://…")
//
// GET /Task/<id>  → SELECT id, rev, deleted, data … WHERE id = $1 (prepared, as the store's get)
// POST /Task      → one transaction: INSERT of the body as a row, then nextval of the commit seq

import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import postgres from "postgres";

const [url, schema] = process.argv.slice(2);
const sql = postgres(url, { max: 10, onnotice: () => {} });
const table = `"${schema}"."Task"`;
const commits = `"${schema}"."$commits"`;
let counter = 0;

const server = createServer((req, res) => {
  const answer = (status, body) => {
    res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
    res.end(body);
  };
  const fail = (error) => answer(500, JSON.stringify({ error: String(error) }));
  if (req.method === "GET") {
    const id = req.url.slice("/Task/".length);
    sql
      .unsafe(`SELECT id, rev, deleted, data FROM ${table} WHERE id = $1`, [id], { prepare: true })
      .then((rows) => (rows.length === 0 ? answer(404, "{}") : answer(200, JSON.stringify(rows[0].data))), fail);
    return;
  }
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => {
    const now = new Date().toISOString();
    const id = Date.now().toString(16).padStart(12, "0") + "ffff" + (counter++).toString(16).padStart(8, "0");
    const data = { id, ...JSON.parse(Buffer.concat(chunks).toString()), created_date: now, updated_date: now, created_by_id: "key_direct" };
    const row = JSON.stringify([{ id, rev: Number.parseInt(randomBytes(4).toString("hex"), 16), deleted: false, data, created_date: now, updated_date: now }]);
    sql
      .begin(async (tx) => {
        await tx.unsafe(
          `INSERT INTO ${table} (id, rev, deleted, data, created_date, updated_date)
           SELECT id, rev, deleted, data, created_date, updated_date FROM jsonb_to_recordset($1::text::jsonb)
           AS v(id text, rev bigint, deleted boolean, data jsonb, created_date timestamptz, updated_date timestamptz)
           ON CONFLICT (id) DO NOTHING RETURNING id`,
          [row],
        );
        await tx.unsafe(`SELECT nextval('${commits}') AS seq`);
      })
      .then(() => answer(201, JSON.stringify(data)), fail);
  });
});
server.listen(0, "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
process.on("SIGTERM", () => server.close(() => sql.end({ timeout: 1 }).then(() => process.exit(0))));
