// The PostgreSQL store's key vault: the schema's $keys table (docs/postgresql.md), shared by every
// process on the database. Changes lock the table; each process reads it again every
// KEYS_POLL_MS, so a key revoked by one is refused by all within a second. A table of the shape
// before keys were hashed (id, kind, key) is converted at the first start, under the setup lock.

import type { KeyUpdate, KeyUpdated, KeyVault } from "../../keys/key-vault.ts";
import { checkStoredKeys, type StoredKey } from "../../keys/stored-keys.ts";
import { beginSafely, connectionProblem, loadDriver, type Sql, type TransactionSql } from "./connection.ts";
import { decodeText, encodeText } from "./stored-text.ts";
import { KEYS_COLUMNS, namesIn, takeSetupLock } from "./tables.ts";

const KEYS_POLL_MS = 500;
const SELECT_KEYS = "SELECT id, kind, name, prefix, sha256, created, expires_at, last_used FROM";

export function postgresKeyVault(sql: Sql, table: string, pgSchema: string): KeyVault {
  const where = `PostgreSQL table ${pgSchema}.$keys`;
  /** The table as last read: a poll that finds the same rows changes nothing. */
  let seen = "";
  let isPrepared = false;

  const readRows = async (tx: TransactionSql): Promise<StoredKey[]> => {
    const rows = await tx.unsafe(`${SELECT_KEYS} ${table} ORDER BY created, id`);
    return checkStoredKeys(rows.map(rowOf), where).keys;
  };

  return {
    where,
    pollMs: KEYS_POLL_MS,
    update<T>(change: (stored: readonly StoredKey[]) => KeyUpdate<T>): Promise<KeyUpdated<T>> {
      return beginSafely(sql, "", async (tx) => {
        let upgraded = 0;
        if (!isPrepared) {
          upgraded = await prepareKeysTable(tx, table, pgSchema);
          isPrepared = true;
        }
        // Processes starting together: the first generates, the others find its keys.
        await tx.unsafe(`LOCK TABLE ${table} IN EXCLUSIVE MODE`);
        const stored = await readRows(tx);
        const { keys, value } = change(stored);
        if (keys !== null) await writeRows(tx, table, stored, keys);
        const kept = keys ?? stored;
        seen = JSON.stringify(kept);
        return { keys: kept, value, upgraded };
      });
    },
    async poll() {
      const keys = await readRows(sql);
      const text = JSON.stringify(keys);
      if (text === seen) return null;
      seen = text;
      return keys;
    },
    close: async () => {},
  };
}

/** The vault of a database with no store open (tabula keys --store postgres://…): one connection, ended by close(). */
export async function postgresVaultAt(url: string, pgSchema: string): Promise<KeyVault> {
  const postgres = await loadDriver();
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 10 }) as Sql;
  const vault = postgresKeyVault(sql, namesIn(pgSchema).keys, pgSchema);
  try {
    await vault.update(() => ({ keys: null, value: undefined }));
  } catch (error) {
    await sql.end({ timeout: 1 }).catch(() => {});
    throw connectionProblem(error, url) ?? error;
  }
  return { ...vault, update: (change) => vault.update(change), poll: () => vault.poll(), close: () => sql.end({ timeout: 5 }) };
}

/** Only the rows that changed are written: last_used flushes touch one or two. */
async function writeRows(tx: TransactionSql, table: string, before: readonly StoredKey[], after: readonly StoredKey[]): Promise<void> {
  const kept = new Set(after.map((key) => key.id));
  const gone = before.filter((key) => !kept.has(key.id)).map((key) => key.id);
  for (const id of gone) await tx.unsafe(`DELETE FROM ${table} WHERE id = $1`, [id]);
  const was = new Map(before.map((key) => [key.id, JSON.stringify(key)]));
  for (const key of after) {
    if (was.get(key.id) === JSON.stringify(key)) continue;
    await tx.unsafe(
      `INSERT INTO ${table} (id, kind, name, prefix, sha256, created, expires_at, last_used) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ` +
        `ON CONFLICT (id) DO UPDATE SET kind = $2, name = $3, prefix = $4, sha256 = $5, created = $6, expires_at = $7, last_used = $8`,
      // A name is text the caller chose: kept as stored text is (stored-text.ts), U+0000 escaped.
      [key.id, key.kind, encodeText(key.name), key.prefix, key.sha256, key.created, key.expires_at, key.last_used ?? null],
    );
  }
}

/**
 * Creates $keys when missing (a keys command before any server), and converts the table of full
 * keys into hashes; answers how many keys it converted.
 */
async function prepareKeysTable(tx: TransactionSql, table: string, pgSchema: string): Promise<number> {
  await takeSetupLock(tx, pgSchema);
  await tx.unsafe(`CREATE SCHEMA IF NOT EXISTS "${pgSchema.replaceAll('"', '""')}"`);
  await tx.unsafe(`CREATE TABLE IF NOT EXISTS ${table} (${KEYS_COLUMNS})`);
  const columns = await tx.unsafe(`SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = '$keys'`, [pgSchema]);
  if (!columns.some((column) => column.column_name === "key")) return 0;
  await tx.unsafe(
    `ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS name text, ADD COLUMN IF NOT EXISTS prefix text, ADD COLUMN IF NOT EXISTS sha256 text, ` +
      `ADD COLUMN IF NOT EXISTS created timestamptz, ADD COLUMN IF NOT EXISTS expires_at timestamptz, ADD COLUMN IF NOT EXISTS last_used timestamptz`,
  );
  const converted = await tx.unsafe(
    `UPDATE ${table} SET name = 'upgraded', prefix = left(key, 8), sha256 = encode(sha256(convert_to(key, 'UTF8')), 'hex'), created = now() WHERE key IS NOT NULL RETURNING id`,
  );
  await tx.unsafe(
    `ALTER TABLE ${table} DROP COLUMN key, ALTER COLUMN name SET NOT NULL, ALTER COLUMN prefix SET NOT NULL, ALTER COLUMN sha256 SET NOT NULL, ` +
      `ALTER COLUMN created SET NOT NULL, ADD UNIQUE (sha256)`,
  );
  return converted.length;
}

function rowOf(row: Record<string, unknown>): Record<string, unknown> {
  const time = (value: unknown) => (value instanceof Date ? value.toISOString() : value === null || value === undefined ? null : new Date(String(value)).toISOString());
  const name = typeof row.name === "string" ? decodeText(row.name) : row.name;
  return { ...row, name, created: time(row.created), expires_at: time(row.expires_at), last_used: time(row.last_used) };
}
