// "The limit" of the PostgreSQL benchmark (bench/postgres.mjs): node:http and the postgres driver
// sending the statements tabula's PostgreSQL store sends, and nothing else: no routing, keys,
// validation or shaping. tabula's figures are read against this server's, on the same database in
// the same run, so that the database's and the machine's speed cancel out. The pool and the
// driver's options are the store's (src/store/postgres/postgres-store.ts, open), so that both wait
// on PostgreSQL alike.
//
//   node bench/pg-direct-server.mjs URL SCHEMA    (prints "listening on http://…")
//
// GET /Task/<id>        → SELECT id, rev, deleted, data … WHERE id = $1 (prepared, as the store's get)
// GET /list             → W2: status = todo, sort -priority, a page of 100 (the store's statement)
// GET /count            → W5: count of status = todo
// GET /search?word=WORD → W6: WORD in the search column (the text fields), limit 20, newest first
// POST /Task            → the store's create: one statement inserting the row and its change event
//
// The statements below are the store's text, word for word (captured with log_statement = all);
// the bench checks that both servers answer the same JSON before it measures them.

import { createHash, randomBytes } from "node:crypto";
import { createServer } from "node:http";
import postgres from "postgres";

const [url, schema] = process.argv.slice(2);
const sql = postgres(url, {
  max: 10,
  onnotice: () => {},
  fetch_types: false,
  // As tabula's pool (src/store/postgres/connection.ts): a statement runs without parallel workers.
  connection: { max_parallel_workers_per_gather: "0" }, // a string: the driver drops a falsy 0
  types: { bigint: { to: 20, from: [20], serialize: (value) => String(value), parse: (value) => Number(value) } },
});
const table = `"${schema}"."Task"`;
const changes = `"${schema}"."$changes"`;
const channel = `tabula_changes_${schema}`.slice(0, 63);
const CREATE =
  `WITH x AS (SELECT pg_current_xact_id()::text::bigint AS seq), v AS (SELECT id, rev, deleted, data, created_date, updated_date, seq, idx
    FROM jsonb_to_recordset($1::text::jsonb) AS v(id text, rev bigint, deleted boolean, data jsonb, created_date timestamptz,
      updated_date timestamptz, seq bigint, idx integer)), ` +
  `ins AS (INSERT INTO ${table} (id, rev, deleted, data, created_date, updated_date, seq, idx) ` +
  `SELECT v.id, v.rev, v.deleted, v.data, v.created_date, v.updated_date, x.seq, v.idx FROM v, x), ` +
  `ev AS (INSERT INTO ${changes} (seq, idx, entity, id, type, rev, deleted, data) SELECT x.seq, v.idx, $2::text, v.id, 'create', v.rev, v.deleted, v.data FROM v, x) ` +
  `SELECT x.seq, pg_notify($3::text, x.seq::text) FROM x`;
const PAGE = 100;
const SEARCH_PAGE = 20;
/** The status todo as its typed column holds it: "a" and the text (src/store/postgres/sql-values.ts, sortKeyExpression). */
const TODO = "atodo";
let counter = 0;

/** A field's typed column, named as src/store/postgres/typed-columns.ts names it (columnNameOf). */
const column = (field, kind) => `"f_${field}_${createHash("sha256").update(`v1\u0000${field}\u0000${kind}`).digest("hex").slice(0, 8)}"`;
const LIST = `SELECT id, rev, deleted, data FROM ${table} WHERE (NOT deleted) AND ((${column("status", "string")} IN ($1::text))) ORDER BY ${column("priority", "number")} DESC, id DESC LIMIT $2`;
const COUNT = `SELECT count(*)::int AS count FROM ${table} WHERE (NOT deleted) AND ((${column("status", "string")} IN ($1::text)))`;
/** The search column: the text fields joined (title, status, due_date), folded (typed-columns.ts, SEARCH_COLUMN). */
const SEARCH_COLUMN = `"f_search_${createHash("sha256").update(`v1\u0000$search\u0000title\u0000status\u0000due_date\u0000string`).digest("hex").slice(0, 8)}"`;
const SEARCH = `SELECT id, rev, deleted, data FROM ${table} WHERE (NOT deleted) AND ((${SEARCH_COLUMN} LIKE $1::text)) ORDER BY ${column("created_date", "date")} DESC, id DESC LIMIT $2`;

/** The rows' records as a JSON array, the first `limit` of them (the store asks for one more, to know if there are more). */
const page = (rows, limit) => `[${rows.slice(0, limit).map((row) => JSON.stringify(row.data)).join(",")}]`;

const server = createServer((req, res) => {
  const answer = (status, body) => {
    res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
    res.end(body);
  };
  const fail = (error) => answer(500, JSON.stringify({ error: String(error) }));
  if (req.method === "GET") {
    if (req.url === "/list") {
      sql.unsafe(LIST, [TODO, PAGE + 1]).then((rows) => answer(200, page(rows, PAGE)), fail);
    } else if (req.url === "/count") {
      sql.unsafe(COUNT, [TODO]).then(([row]) => answer(200, `{"count":${row.count}}`), fail);
    } else if (req.url.startsWith("/search?word=")) {
      const word = decodeURIComponent(req.url.slice("/search?word=".length)).toLowerCase();
      sql.unsafe(SEARCH, [`%${word}%`, SEARCH_PAGE + 1]).then((rows) => answer(200, page(rows, SEARCH_PAGE)), fail);
    } else {
      const id = req.url.slice("/Task/".length);
      sql
        .unsafe(`SELECT id, rev, deleted, data FROM ${table} WHERE id = $1`, [id], { prepare: true })
        .then((rows) => (rows.length === 0 ? answer(404, "{}") : answer(200, JSON.stringify(rows[0].data))), fail);
    }
    return;
  }
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => {
    const now = new Date().toISOString();
    const id = Date.now().toString(16).padStart(12, "0") + "ffff" + (counter++).toString(16).padStart(8, "0");
    const data = { id, ...JSON.parse(Buffer.concat(chunks).toString()), created_date: now, updated_date: now, created_by_id: "key_direct" };
    const row = JSON.stringify([{ id, rev: Number.parseInt(randomBytes(4).toString("hex"), 16), deleted: false, data, created_date: now, updated_date: now, seq: 0, idx: 0 }]);
    // The store's create (src/store/postgres/postgres-writes.ts, insertAtOnce): one statement, its
    // transaction id the feed's seq, the row and its event inserted, the commit announced.
    sql
      .unsafe(CREATE, [row, "Task", channel], { prepare: true })
      .then(() => answer(201, JSON.stringify(data)), fail);
  });
});
server.listen(0, "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
process.on("SIGTERM", () => server.close(() => sql.end({ timeout: 1 }).then(() => process.exit(0))));
