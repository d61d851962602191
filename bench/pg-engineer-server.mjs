// The second floor of the PostgreSQL benchmark (bench/postgres.mjs, issue 59): node:http and the
// postgres driver sending the SQL a database engineer would write for the same requests, over a
// table of typed columns (task_typed: text, integer, double precision, boolean, date, timestamptz)
// with the indexes they would make, copied from tabula's Task table by makeEngineerTable. Beside
// bench/pg-direct-server.mjs (tabula's own statements), it says what tabula's layout costs.
//
//   node bench/pg-engineer-server.mjs URL SCHEMA    (prints "listening on http://…")
//
// GET /Task/<id>        → SELECT … WHERE id = $1
// GET /list             → W2: status = todo, ORDER BY priority DESC, id DESC, a page of 100
// GET /count            → W5: count(*) WHERE status = todo (an index-only scan of (status))
// GET /search?word=WORD → W6: title ILIKE %WORD% (a trigram index on title), newest first, 20

import { createServer } from "node:http";
import postgres from "postgres";

const PAGE = 100;
const SEARCH_PAGE = 20;
const COLUMNS = "id, title, status, priority, estimate, done, to_char(due_date, 'YYYY-MM-DD') AS due_date, tags, created_date, updated_date, created_by_id";

/** task_typed in `schema`, from its Task table, with the engineer's indexes, vacuumed and analyzed. */
export async function makeEngineerTable(url, schema) {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const table = `"${schema}".task_typed`;
  try {
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}`);
    await sql.unsafe(`CREATE TABLE ${table} (
      id text COLLATE "C" PRIMARY KEY, title text, status text, priority integer, estimate double precision, done boolean, due_date date,
      tags jsonb, created_date timestamptz NOT NULL, updated_date timestamptz NOT NULL, created_by_id text, deleted boolean NOT NULL DEFAULT false)`);
    await sql.unsafe(`INSERT INTO ${table} SELECT id, data ->> 'title', data ->> 'status', (data ->> 'priority')::integer, (data ->> 'estimate')::double precision,
      (data ->> 'done')::boolean, (data ->> 'due_date')::date, data -> 'tags', created_date, updated_date, data ->> 'created_by_id', deleted FROM "${schema}"."Task"`);
    await sql.unsafe(`CREATE INDEX ON ${table} (status) WHERE NOT deleted`);
    await sql.unsafe(`CREATE INDEX ON ${table} (priority, id) WHERE NOT deleted`);
    await sql.unsafe(`CREATE INDEX ON ${table} (created_date, id) WHERE NOT deleted`);
    await sql.unsafe(`CREATE INDEX ON ${table} USING gin (title gin_trgm_ops) WHERE NOT deleted`);
    await sql.unsafe(`VACUUM ANALYZE ${table}`);
  } finally {
    await sql.end();
  }
}

function serve(url, schema) {
  const sql = postgres(url, {
    max: 10,
    onnotice: () => {},
    fetch_types: false,
    // As tabula's pool (src/store/postgres/connection.ts): a statement runs without parallel workers.
    connection: { max_parallel_workers_per_gather: "0" }, // a string: the driver drops a falsy 0
    types: { bigint: { to: 20, from: [20], serialize: (value) => String(value), parse: (value) => Number(value) } },
  });
  const table = `"${schema}".task_typed`;
  const LIST = `SELECT ${COLUMNS} FROM ${table} WHERE NOT deleted AND status = $1 ORDER BY priority DESC, id DESC LIMIT ${PAGE + 1}`;
  const COUNT = `SELECT count(*)::int AS count FROM ${table} WHERE NOT deleted AND status = $1`;
  const SEARCH = `SELECT ${COLUMNS} FROM ${table} WHERE NOT deleted AND title ILIKE $1 ORDER BY created_date DESC, id DESC LIMIT ${SEARCH_PAGE + 1}`;
  const BY_ID = `SELECT ${COLUMNS} FROM ${table} WHERE id = $1`;
  /** A row as a record: the fields it holds (null columns left out). */
  const recordOf = (row) => Object.fromEntries(Object.entries(row).filter(([, value]) => value !== null));
  const page = (rows, limit) => JSON.stringify(rows.slice(0, limit).map(recordOf));
  const server = createServer((req, res) => {
    const answer = (status, body) => {
      res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
      res.end(body);
    };
    const fail = (error) => answer(500, JSON.stringify({ error: String(error) }));
    if (req.url === "/list") sql.unsafe(LIST, ["todo"], { prepare: true }).then((rows) => answer(200, page(rows, PAGE)), fail);
    else if (req.url === "/count") sql.unsafe(COUNT, ["todo"], { prepare: true }).then(([row]) => answer(200, `{"count":${row.count}}`), fail);
    else if (req.url.startsWith("/search?word=")) {
      const word = decodeURIComponent(req.url.slice("/search?word=".length));
      sql.unsafe(SEARCH, [`%${word.replace(/[\\%_]/g, "\\$&")}%`], { prepare: true }).then((rows) => answer(200, page(rows, SEARCH_PAGE)), fail);
    } else {
      const id = req.url.slice("/Task/".length);
      sql.unsafe(BY_ID, [id], { prepare: true }).then((rows) => (rows.length === 0 ? answer(404, "{}") : answer(200, JSON.stringify(recordOf(rows[0])))), fail);
    }
  });
  server.listen(0, "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
  process.on("SIGTERM", () => server.close(() => sql.end({ timeout: 1 }).then(() => process.exit(0))));
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split("/").pop())) serve(process.argv[2], process.argv[3]);
