// What the write-ahead log holds (wal.ts): its entries, and the rows of their puts as written to
// disk, as snapshots write rows too (snapshot.ts). Lines are framed by log-framing.ts and read back
// at start-up by log-line.ts.

import type { IdempotentAnswer, MetaWrite } from "../store.ts";

/** A row as written to disk: never its memo, which the layers above rebuild. */
export interface RowImage {
  readonly id: string;
  readonly rev: number;
  readonly deleted: boolean;
  readonly data: Readonly<Record<string, unknown>>;
  /** The version's feed position, in snapshots (a log line's rows take theirs from the line's seq). */
  readonly seq?: number;
  readonly index?: number;
}

export interface LogPut {
  readonly e: string;
  readonly row: RowImage;
  /** 1: a migration rewrote the record (Put.sync), and its event is a sync. Absent otherwise. */
  readonly s?: 1;
}

/**
 * One entry of a segment: a batch (drops, puts, meta, answer, applied in that order) or a reset,
 * numbered by seq without gaps. Usually one line; a batch written in parts is several (`more`).
 */
export interface LogEntry {
  readonly seq: number;
  readonly drops?: readonly string[];
  readonly puts?: readonly LogPut[];
  readonly meta?: readonly MetaWrite[];
  readonly answer?: IdempotentAnswer;
  readonly reset?: true;
  readonly rev?: number;
  /** On every line of a batch written in parts but its last, which alone completes it. */
  readonly more?: true;
}
