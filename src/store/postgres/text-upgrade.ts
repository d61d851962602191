// Stored text written before U+0001 escaped U+0000 (stored-text.ts) holds U+0001 as itself, which
// would now read as half an escape. At the first start of a tabula that escapes, such values are
// encoded once, under the setup lock, and a row of $meta says so: records of every table in the
// schema (entities no longer declared included), kept events, metadata and API keys' names.

import type { OpenTransaction, Sql } from "./connection.ts";
import { encodeJsonText, encodeText } from "./stored-text.ts";
import { quoteIdent, takeSetupLock, type Names } from "./tables.ts";

/** The $meta row that says the schema's text is stored escaped. */
export const STORED_TEXT_META_KEY = "$stored-text";
const STORED_TEXT_VERSION = 1;
/** Rows read at a time while looking for older text. */
const PAGE_ROWS = 1000;
/** U+0001 in the JSON text of a jsonb value, as PostgreSQL writes it. */
const ESCAPED_U0001 = "\\u0001";

/** Encodes older text where the schema holds any (see above); answers how many rows it rewrote. */
export async function encodeOlderText(sql: Sql, names: Names, pgSchema: string): Promise<number> {
  return sql.begin(async (tx) => {
    await takeSetupLock(tx, pgSchema);
    const [done] = await tx.unsafe(`SELECT 1 FROM ${names.meta} WHERE key = $1`, [STORED_TEXT_META_KEY]);
    if (done) return 0;
    let rewritten = 0;
    for (const table of await recordTables(tx, pgSchema)) rewritten += await encodeRecords(tx, `${quoteIdent(pgSchema)}.${quoteIdent(table)}`);
    // The kept events and metadata are few: read whole.
    const events = await tx.unsafe(`SELECT seq, idx, data::text AS data FROM ${names.changes} WHERE strpos(data::text, $1) > 0`, [ESCAPED_U0001]);
    for (const { seq, idx, data } of events) {
      await tx.unsafe(`UPDATE ${names.changes} SET data = $3::text::jsonb WHERE seq = $1 AND idx = $2`, [seq, idx, encodeJsonText(data as string)]);
    }
    const meta = await tx.unsafe(`SELECT key, value::text AS value FROM ${names.meta} WHERE strpos(value::text, $1) > 0`, [ESCAPED_U0001]);
    for (const { key, value } of meta) {
      await tx.unsafe(`UPDATE ${names.meta} SET value = $2::text::jsonb WHERE key = $1`, [key, encodeJsonText(value as string)]);
    }
    const keys = await tx.unsafe(`SELECT id, name FROM ${names.keys} WHERE strpos(name, chr(1)) > 0`);
    for (const { id, name } of keys) await tx.unsafe(`UPDATE ${names.keys} SET name = $2 WHERE id = $1`, [id, encodeText(name as string)]);
    await tx.unsafe(`INSERT INTO ${names.meta} (key, value) VALUES ($1, $2::text::jsonb)`, [STORED_TEXT_META_KEY, String(STORED_TEXT_VERSION)]);
    return rewritten + events.length + meta.length + keys.length;
  });
}

/** The schema's tables of records: tabula's internal tables start with "$", as no entity's name can. */
async function recordTables(tx: OpenTransaction, pgSchema: string): Promise<string[]> {
  const rows = await tx.unsafe(
    `SELECT t.table_name FROM information_schema.tables AS t
     WHERE t.table_schema = $1 AND t.table_type = 'BASE TABLE' AND left(t.table_name, 1) <> '$'
       AND EXISTS (SELECT 1 FROM information_schema.columns AS c WHERE c.table_schema = $1 AND c.table_name = t.table_name AND c.column_name = 'data' AND c.data_type = 'jsonb')
       AND EXISTS (SELECT 1 FROM information_schema.columns AS c WHERE c.table_schema = $1 AND c.table_name = t.table_name AND c.column_name = 'id')
     ORDER BY t.table_name`,
    [pgSchema],
  );
  return rows.map((row) => row.table_name as string);
}

/** A table's rows holding U+0001, page by page in id order, each rewritten encoded. */
async function encodeRecords(tx: OpenTransaction, table: string): Promise<number> {
  let rewritten = 0;
  for (let after = ""; ; ) {
    const rows = await tx.unsafe(
      `SELECT id, data::text AS data FROM ${table} WHERE id > $1 AND strpos(data::text, $2) > 0 ORDER BY id LIMIT $3`,
      [after, ESCAPED_U0001, PAGE_ROWS],
    );
    for (const { id, data } of rows) await tx.unsafe(`UPDATE ${table} SET data = $2::text::jsonb WHERE id = $1`, [id, encodeJsonText(data as string)]);
    rewritten += rows.length;
    if (rows.length < PAGE_ROWS) return rewritten;
    after = rows.at(-1)!.id as string;
  }
}
