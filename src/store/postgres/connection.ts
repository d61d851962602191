// The `postgres` driver, loaded only when a PostgreSQL store is asked for (docs/postgresql.md: an
// optional peer dependency, so the bundle keeps no runtime dependency), and the words for what
// goes wrong reaching the database: each names what to fix, as the user gave it (option-names.ts).
// Pools are opened here with the store's connection settings, and so is the health watch's probe.

import { settingName } from "../../option-names.ts";
import { PROBE_TIMEOUT_MS } from "./health.ts";
import { STORED_JSONB_TYPE } from "./stored-text.ts";

/** What the store uses of a transaction: parameterized statements (values never in the text). */
export interface TransactionSql {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  unsafe<T extends readonly unknown[] = Array<Record<string, any>>>(text: string, params?: readonly unknown[], options?: { prepare?: boolean }): Promise<T>;
}

/**
 * A transaction. A statement that fails in it fails the whole transaction when it ends, even if the
 * error was caught (the driver rolls back); one that may fail runs in a savepoint, which alone is
 * rolled back, and whose failure may then be caught.
 */
export interface OpenTransaction extends TransactionSql {
  savepoint<T>(work: (tx: TransactionSql) => Promise<T>): Promise<T>;
}

/** What the store uses of the driver's connection pool. */
export interface Sql extends TransactionSql {
  begin<T>(work: (tx: OpenTransaction) => Promise<T>): Promise<T>;
  /** `options` follow BEGIN: "isolation level repeatable read read only". */
  begin<T>(options: string, work: (tx: OpenTransaction) => Promise<T>): Promise<T>;
  end(options?: { timeout?: number }): Promise<void>;
}

type Driver = (url: string, options: Record<string, unknown>) => Sql;

/**
 * A connection not made within this is given up (the driver's default is 30 s). Requests do not
 * wait for it: DatabaseHealth answers them 503 within 2 s of a database going away.
 */
const CONNECT_TIMEOUT_S = 2;
/**
 * How long a connection that failed waits before it tries again. The driver's default grows with
 * each failure up to 20 s, which held the first requests after the database came back that long.
 */
const RECONNECT_BACKOFF_S = 0.05;
/**
 * No look-up of array types on each new connection: the store reads no SQL array (json_agg
 * instead), and postgres 3.4 leaves that look-up's failure unhandled when the database goes
 * between the connection's start and the look-up, which would end the process.
 */
const FETCH_TYPES = false;
/**
 * Each statement runs in its connection's process alone, never with parallel workers. tabula
 * answers many requests at once, and the scan lane (scan-lane.ts) shares the database's CPU by
 * counting statements: a statement with workers takes up to three processes' CPU, and waits for
 * them to start. A count over a third of 1,000,000 records on 2 cores ran 41 times a second at 7
 * connections with workers (PostgreSQL's default), 144 without (docs/benchmarks.md, PostgreSQL).
 */
// A string: the driver leaves out start-up parameters whose value is falsy, 0 among them.
const SESSION_SETTINGS = { max_parallel_workers_per_gather: "0" };

/** Opens pools of `max` connections to `url`: PostgresStore opens another when the database comes back after an outage. */
export function poolOpener(postgres: Driver, url: string, max: number): () => Sql {
  return () =>
    postgres(url, {
      max,
      onnotice: () => {},
      connect_timeout: CONNECT_TIMEOUT_S,
      backoff: RECONNECT_BACKOFF_S,
      fetch_types: FETCH_TYPES,
      connection: SESSION_SETTINGS,
      // Revisions and seqs are bigint, read as numbers: they stay far below 2^53. jsonb is read
      // decoded (stored-text.ts): stored text escapes what jsonb cannot hold.
      types: {
        bigint: { to: 20, from: [20], serialize: (value: number) => String(value), parse: (value: string) => Number(value) },
        jsonb: STORED_JSONB_TYPE,
      },
    }) as Sql;
}

/** Resolves when the database answers a statement on a connection of its own, made for the purpose. */
export async function probeDatabase(postgres: Driver, url: string): Promise<void> {
  const probe = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: Math.ceil(PROBE_TIMEOUT_MS / 1000), backoff: RECONNECT_BACKOFF_S, fetch_types: FETCH_TYPES });
  try {
    await probe.unsafe("SELECT 1");
  } finally {
    probe.end({ timeout: 0 }).catch(() => {});
  }
}

export async function loadDriver(): Promise<Driver> {
  try {
    // A variable specifier: esbuild leaves the import to run time (the package is external anyway).
    const name = "postgres";
    const module = (await import(name)) as { default: Driver };
    return module.default;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") {
      throw new Error("The PostgreSQL store needs the postgres package beside tabula: run npm install postgres (in the folder tabula runs from), then start again.");
    }
    throw error;
  }
}

/** Connection errors of the driver and of Node's sockets (a refused, reset or timed-out connection). */
const CONNECTION_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EHOSTUNREACH", "ENOTFOUND", "EAI_AGAIN", "EPIPE", "CONNECTION_CLOSED", "CONNECTION_ENDED", "CONNECTION_DESTROYED", "CONNECT_TIMEOUT"]);

/**
 * The error as a sentence naming what to fix, when it is about reaching the database rather than
 * a statement; null otherwise. Never repeats the URL, which may hold a password: only its host.
 */
export function connectionProblem(error: unknown, url: string): Error | null {
  const code = (error as { code?: string } | null)?.code ?? "";
  const where = hostOf(url);
  const reason = (error as Error | null)?.message ?? String(error);
  if (CONNECTION_CODES.has(code) || code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03") {
    return new Error(`Cannot reach PostgreSQL at ${where} (${reason}). Check that it is running and that the host and port of ${settingName("store")} are right.`);
  }
  if (code === "28P01" || code === "28000") return new Error(`PostgreSQL at ${where} refused the credentials of ${settingName("store")} (${reason}). Check the user name and password in the URL.`);
  if (code === "3D000") return new Error(`PostgreSQL at ${where} has no such database (${reason}). Create it (createdb) or name an existing one in ${settingName("store")}.`);
  return null;
}

/** host:port/database of a URL, never its password. */
export function hostOf(url: string): string {
  try {
    const { hostname, port, pathname } = new URL(url);
    return `${hostname || "localhost"}:${port || "5432"}${pathname}`;
  } catch {
    return `the URL of ${settingName("store")}`;
  }
}

/**
 * sql.begin, safe from a connection lost mid-transaction. postgres 3.4 then sends the ROLLBACK (or
 * COMMIT) that ends the work to the closed connection, from a timer: a TypeError no caller can
 * catch, which would end the process. So the work's outcome reaches the driver only while the
 * connection lives; once it is lost, begin() has already rejected with the loss, and the work's
 * outcome is held back (a promise that never settles, dropped with the transaction). The check
 * waits one turn of the event loop: the driver tells of a lost connection to the statement first
 * and to begin() after it. A loss after the check finds the socket still open, or the write
 * cancelled by the close: both harmless.
 */
export function beginSafely<T>(sql: Sql, options: string, work: (tx: TransactionSql) => Promise<T>): Promise<T> {
  let isLost = false;
  const unlessLost = async <R>(outcome: () => R): Promise<R> => {
    await new Promise((resolve) => setImmediate(resolve));
    return isLost ? new Promise<R>(() => {}) : outcome();
  };
  const transaction = sql.begin(options, (tx) =>
    work(tx).then(
      (value) => unlessLost(() => value),
      (error: unknown) =>
        unlessLost(() => {
          throw error;
        }),
    ),
  );
  // Before the work has ended, begin() rejects only when the connection is lost.
  transaction.catch(() => (isLost = true));
  return transaction;
}
