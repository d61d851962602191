// Snapshots: every row of every entity (deleted rows and undeclared entities included), the live
// idempotency answers and the revision counter, as framed JSON lines in `snapshot-<seq>`, which
// covers every log entry before seq. Written to a .tmp file, synced, then renamed, so a snapshot
// that has its name is whole. Format 2 (written since issue 7) drops what format 1 repeated on every
// row line; format 1 files are still read.

import { open, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import type { IdempotentAnswer, Row } from "./store.ts";
import { frameLine, parseFramedLine, parseSeqFileName, scanLines, seqFileName, syncDirectory, writeFully, type RowImage } from "./wal.ts";

const SNAPSHOT_FORMAT = "tabula-snapshot/2";
/** Row lines `{"e","row":{"id","rev","deleted","data"}}`, the row image of the log. */
const SNAPSHOT_FORMAT_1 = "tabula-snapshot/1";
const SNAPSHOT_PREFIX = "snapshot-";
const TMP_SUFFIX = ".tmp";
/**
 * Lines are gathered up to this size before each write, so a snapshot never sits in memory whole;
 * small, because a snapshot is written on the main thread between requests: a request that
 * arrives while a chunk is being serialized waits for it (about a millisecond, not fifteen).
 */
const WRITE_CHUNK_CHARS = 1 << 16;

/** The state a snapshot records, captured in one tick while writes go on into a new segment. */
export interface SnapshotState {
  readonly seq: number;
  readonly rev: number;
  readonly entities: ReadonlyArray<readonly [entity: string, rows: readonly Row[]]>;
  readonly answers: readonly IdempotentAnswer[];
}

export interface SnapshotReader {
  onRow(entity: string, row: RowImage): void;
  onAnswer(answer: IdempotentAnswer): void;
}

export function snapshotName(seq: number): string {
  return seqFileName(SNAPSHOT_PREFIX, seq);
}

/** The seq of a snapshot file name, or undefined for any other file (a .tmp file included). */
export function parseSnapshotName(name: string): number | undefined {
  return parseSeqFileName(SNAPSHOT_PREFIX, name);
}

export function isTemporarySnapshot(name: string): boolean {
  return name.startsWith(SNAPSHOT_PREFIX) && name.endsWith(TMP_SUFFIX);
}

/** Writes, syncs and renames the snapshot; answers its size in bytes. Yields between chunks. */
export async function writeSnapshot(dir: string, state: SnapshotState): Promise<number> {
  const path = join(dir, snapshotName(state.seq));
  const tmpPath = path + TMP_SUFFIX;
  const handle = await open(tmpPath, "w");
  let bytes = 0;
  try {
    let text = frameLine({ format: SNAPSHOT_FORMAT, seq: state.seq, rev: state.rev });
    const flush = async (): Promise<void> => {
      const buffer = Buffer.from(text);
      text = "";
      await writeFully(handle, buffer);
      bytes += buffer.length;
    };
    let rows = 0;
    for (const [entity, entityRows] of state.entities) {
      for (const row of entityRows) {
        text += frameLine(toSnapshotRow(entity, row));
        rows++;
        if (text.length >= WRITE_CHUNK_CHARS) await flush();
      }
    }
    for (const answer of state.answers) text += frameLine({ answer });
    text += frameLine({ end: true, rows, answers: state.answers.length });
    await flush();
    await handle.sync();
  } catch (error) {
    await handle.close();
    await rm(tmpPath, { force: true });
    throw error;
  }
  await handle.close();
  await rename(tmpPath, path);
  await syncDirectory(dir);
  return bytes;
}

/**
 * A format 2 row line: `{"e","rev","data"}`, plus `"deleted":true` for a deleted row and `"id"`
 * only when it is not data.id (it always is for records). Each property left out is less to write,
 * to parse at start-up and to hold in memory (the id is one string, not two).
 */
function toSnapshotRow(entity: string, row: Row): object {
  // JSON.stringify leaves out properties whose value is undefined.
  return { e: entity, id: row.data.id === row.id ? undefined : row.id, rev: row.rev, deleted: row.deleted || undefined, data: row.data };
}

/** The row image of a format 2 row line (see toSnapshotRow). */
function fromSnapshotRow(value: Record<string, unknown>): RowImage {
  const data = value.data as Record<string, unknown>;
  return { id: (value.id ?? data.id) as string, rev: value.rev as number, deleted: value.deleted === true, data };
}

/** Reads a snapshot back through `reader`; throws, naming the file and byte, if it is not whole. */
export async function readSnapshot(path: string, reader: SnapshotReader): Promise<{ seq: number; rev: number; bytes: number }> {
  let header: { seq: number; rev: number; format: string } | undefined;
  let footer: { rows: number; answers: number } | undefined;
  let rows = 0;
  let answers = 0;
  const damaged = (offset: number, why: string): Error =>
    new Error(`Cannot open the data folder: the snapshot ${path} is damaged at byte ${offset} (${why}). Restore the folder from a backup.`);
  const { size, tailOffset } = await scanLines(path, (line, offset, text) => {
    const value = parseFramedLine(line, text);
    if (!value) throw damaged(offset, "a line is incomplete or fails its checksum");
    if (footer) throw damaged(offset, "lines follow the end marker");
    if (!header) {
      if (value.format !== SNAPSHOT_FORMAT && value.format !== SNAPSHOT_FORMAT_1) throw damaged(offset, `the first line does not name the format ${SNAPSHOT_FORMAT} or ${SNAPSHOT_FORMAT_1}`);
      header = { seq: value.seq as number, rev: value.rev as number, format: value.format };
    } else if (typeof value.e === "string") {
      const isFormat2 = header.format === SNAPSHOT_FORMAT;
      const object = isFormat2 ? value.data : value.row;
      if (typeof object !== "object" || object === null) throw damaged(offset, "a row line has no row");
      const row = isFormat2 ? fromSnapshotRow(value) : (object as RowImage);
      if (typeof row.id !== "string") throw damaged(offset, "a row line has no id");
      reader.onRow(value.e, row);
      rows++;
    } else if (value.answer) {
      reader.onAnswer(value.answer as IdempotentAnswer);
      answers++;
    } else if (value.end === true) {
      footer = { rows: value.rows as number, answers: value.answers as number };
    } else {
      throw damaged(offset, "a line is neither a row, an answer nor the end marker");
    }
  });
  if (tailOffset < size) throw damaged(tailOffset, "the last line is incomplete");
  if (!header || !footer) throw damaged(size, "the end marker is missing");
  if (footer.rows !== rows || footer.answers !== answers) throw damaged(size, `the end marker counts ${footer.rows} rows and ${footer.answers} answers, the file holds ${rows} and ${answers}`);
  return { seq: header.seq, rev: header.rev, bytes: size };
}
