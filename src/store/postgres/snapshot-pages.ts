// An export's read on PostgreSQL (Store.openExport): one REPEATABLE READ, READ ONLY transaction held
// while the client reads, page by page, so every page sees the database as the first did, while
// writes go on beside it (MVCC: nothing waits on an export). The transaction runs in postgres.js's
// begin(); the pages are asked for from outside it, so the two meet through a queue of asks.

import type { SortPosition } from "../../query/filter-tree.ts";
import { EXPORT_PAGE_ROWS, type Row, type RowPages } from "../store.ts";
import { beginSafely, type Sql, type TransactionSql } from "./connection.ts";

/** Reads up to `max` rows after `after` (null: from the first), in id order, inside `tx`. */
export type ReadPage = (tx: TransactionSql, after: SortPosition | null, max: number) => Promise<Row[]>;

interface Ask {
  resolve(rows: Row[]): void;
  reject(error: unknown): void;
}

/** Opens the transaction and reads its first page, so that a database out of reach fails here. */
export async function openSnapshotPages(sql: Sql, readPage: ReadPage): Promise<RowPages> {
  const asks: Array<Ask | null> = []; // null: close
  let wake: (() => void) | null = null;
  let failure: unknown;
  const nextAsk = async (): Promise<Ask | null> => {
    while (asks.length === 0) await new Promise<void>((resolve) => (wake = resolve));
    return asks.shift()!;
  };
  const ask = (entry: Ask | null) => {
    asks.push(entry);
    wake?.();
    wake = null;
  };
  const finished = beginSafely(sql, "isolation level repeatable read read only", async (tx) => {
      let after: SortPosition | null = null;
      let isDone = false;
      for (let entry = await nextAsk(); entry !== null; entry = await nextAsk()) {
        if (isDone) {
          entry.resolve([]);
          continue;
        }
        try {
          const rows = await readPage(tx, after, EXPORT_PAGE_ROWS);
          isDone = rows.length < EXPORT_PAGE_ROWS;
          if (rows.length > 0) after = { key: rows[rows.length - 1]!.id, id: rows[rows.length - 1]!.id };
          entry.resolve(rows);
        } catch (error) {
          entry.reject(error);
          throw error;
        }
      }
    })
    .catch((error: unknown) => {
      // The transaction is over (a lost connection, or it never began): every ask still waiting fails.
      failure = error;
      for (const entry of asks.splice(0)) entry?.reject(error);
    });
  const next = (): Promise<Row[]> =>
    failure !== undefined ? Promise.reject(failure) : new Promise<Row[]>((resolve, reject) => ask({ resolve, reject }));
  let first: Row[] | null = await next();
  let isClosed = false;
  return {
    next() {
      if (first === null) return next();
      const rows = first;
      first = null;
      return Promise.resolve(rows);
    },
    async close() {
      if (!isClosed) ask(null);
      isClosed = true;
      await finished;
    },
  };
}
