// A row as the PostgreSQL store's statements read it (id, rev, deleted, data; seq and idx where
// asked for), and the Row it becomes.

import type { Row } from "../store.ts";

export interface DbRow {
  id: string;
  rev: string | number;
  deleted: boolean;
  data: Record<string, unknown>;
}

export function toRow(row: DbRow & { seq?: number | string; idx?: number }): Row {
  // Transient: a row read from the database is never read again as this object (Row.isTransient).
  const stored: Row = { id: row.id, rev: Number(row.rev), deleted: row.deleted, data: row.data, isTransient: true };
  if (row.seq !== undefined) {
    stored.seq = Number(row.seq);
    stored.index = row.idx;
  }
  return stored;
}
