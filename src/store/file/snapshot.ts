// Snapshots: every row of every entity (deleted rows and undeclared entities included), the live
// idempotency answers and the revision counter in `snapshot-<seq>`, which covers every log entry
// before seq. Written to a .tmp file, synced, then renamed, so a snapshot that has its name is
// whole; its end marker holds the CRC-32 of every byte before it, checked on reading.
//
// Format 5 (the one written) is a stream of JSON values, one line each, made to load fast:
//   {"format":"tabula-snapshot/5","seq":…,"rev":…,"horizon":[s,i],"crc":…}   the header, framed like a log line
//   {"entity":"Task"}                                        the rows that follow are Task's
//   7 12.0 {"id":"01a2…","title":…}                          a row: its rev, feed position, then its data
//   9 13.4 "deleted" {"id":"01a3…",…}                        a deleted row
//   {"row":{"id","rev","deleted","data","seq","index"}}      a row whose id is not data.id
//   {"answer":{…}}                                           an unexpired idempotent answer
//   {"event":[seq,index,"Task","update","01a2…"]}            a change feed event whose version is the row's
//   {"event":[…],"row":{"id","rev","deleted","data"}}        one whose version was replaced since
//   {"meta":{"key":…,"value":…}}                             a metadata value (Store.meta)
//   {"end":true,"rows":…,"answers":…,"events":…,"meta":…,"checksum":…,"crc":…}   the end marker, framed
// A row line is parsed as its data object alone: no wrapper object, no per-line checksum. The
// events are the feed's kept window before seq (docs/change-feed.md), in commit order; the horizon is the
// newest event no longer kept. Format 4 is format 5 without metadata and sync events (a migration's
// rewrites, docs/schema-changes.md). Format 3 is format 4 without positions, events and horizon: its
// rows are given positions 0.1, 0.2… in file order. Formats 1 and 2 (framed JSON lines, a checksum
// each) are still read.

import { isAscii } from "node:buffer";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import type { ChangeType, FeedPosition, IdempotentAnswer, MetaWrite, Row } from "../store.ts";
import { crcHex, frameLine, parseFramedLine, parseSeqFileName, scanLineRuns, scanLines, seqFileName, writeFully, type RowImage } from "./wal.ts";
import { replaceFile, TEMPORARY_SUFFIX } from "./durable-file.ts";

const SNAPSHOT_FORMAT = "tabula-snapshot/5";
/**
 * Format 5 without metadata lines and sync events. A new format rather than new lines in format 4:
 * an older tabula then refuses the snapshot by its format, not as damage.
 */
const SNAPSHOT_FORMAT_4 = "tabula-snapshot/4";
/** Format 4 without feed positions, events or horizon. */
const SNAPSHOT_FORMAT_3 = "tabula-snapshot/3";
/** Framed row lines `{"e","rev","data"}` (see fromSnapshotRow). */
const SNAPSHOT_FORMAT_2 = "tabula-snapshot/2";
/** Framed row lines `{"e","row":{"id","rev","deleted","data"}}`, the row image of the log. */
const SNAPSHOT_FORMAT_1 = "tabula-snapshot/1";
/** Between a row line's rev and its data when the row is deleted. */
const DELETED_MARK = '"deleted" ';
const NEWLINE = 0x0a;
/** The header is read on its own first, to choose the reader; it is far shorter than this. */
const HEADER_READ_BYTES = 4096;
const SNAPSHOT_PREFIX = "snapshot-";
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
  /** The change feed's kept events before seq, oldest first, each saying whether its version is still the record's. */
  readonly events: ReadonlyArray<{ readonly entity: string; readonly type: EventType; readonly row: Row; readonly current: boolean }>;
  readonly horizon: FeedPosition;
  /** Store.meta()'s values. */
  readonly meta: readonly MetaWrite[];
}

/** What a kept event did: a change, or a migration's rewrite (sync). */
export type EventType = ChangeType | "sync";

export interface SnapshotReader {
  onRow(entity: string, row: RowImage): void;
  onAnswer(answer: IdempotentAnswer): void;
  /** A kept event: with the version it wrote, or (undefined) the version of the record loaded as a row. */
  onEvent(event: SnapshotEvent): void;
  /** A metadata value (format 5). */
  onMeta?(write: MetaWrite): void;
}

export interface SnapshotEvent {
  readonly entity: string;
  readonly type: EventType;
  readonly seq: number;
  readonly index: number;
  readonly id: string;
  readonly row: RowImage | undefined;
}

export interface SnapshotHeader {
  readonly seq: number;
  readonly rev: number;
  readonly bytes: number;
  /** Undefined for snapshots written before the change feed. */
  readonly horizon: FeedPosition | undefined;
}

const EVENT_TYPES: ReadonlySet<string> = new Set(["create", "update", "delete", "restore", "sync"]);

export function snapshotName(seq: number): string {
  return seqFileName(SNAPSHOT_PREFIX, seq);
}

/** The seq of a snapshot file name, or undefined for any other file (a .tmp file included). */
export function parseSnapshotName(name: string): number | undefined {
  return parseSeqFileName(SNAPSHOT_PREFIX, name);
}

export function isTemporarySnapshot(name: string): boolean {
  return name.startsWith(SNAPSHOT_PREFIX) && name.endsWith(TEMPORARY_SUFFIX);
}

/** Writes, syncs and renames the snapshot; answers its size in bytes. Yields between chunks. */
export async function writeSnapshot(dir: string, state: SnapshotState): Promise<number> {
  let bytes = 0;
  await replaceFile(join(dir, snapshotName(state.seq)), async (handle) => {
    let checksum = 0;
    let text = frameLine({ format: SNAPSHOT_FORMAT, seq: state.seq, rev: state.rev, horizon: [state.horizon.seq, state.horizon.index] });
    const flush = async (): Promise<void> => {
      const buffer = Buffer.from(text);
      text = "";
      checksum = crc32(buffer, checksum);
      await writeFully(handle, buffer);
      bytes += buffer.length;
    };
    let rows = 0;
    for (const [entity, entityRows] of state.entities) {
      text += `${JSON.stringify({ entity })}\n`;
      for (const row of entityRows) {
        text += rowLine(row);
        rows++;
        if (text.length >= WRITE_CHUNK_CHARS) await flush();
      }
    }
    for (const answer of state.answers) text += `${JSON.stringify({ answer })}\n`;
    for (const { entity, type, row, current } of state.events) {
      const event = [row.seq, row.index, entity, type, row.id];
      text += current ? `${JSON.stringify({ event })}\n` : `${JSON.stringify({ event, row: { id: row.id, rev: row.rev, deleted: row.deleted, data: row.data } })}\n`;
      if (text.length >= WRITE_CHUNK_CHARS) await flush();
    }
    for (const { key, value } of state.meta) text += `${JSON.stringify({ meta: { key, value } })}\n`;
    await flush();
    text = frameLine({ end: true, rows, answers: state.answers.length, events: state.events.length, meta: state.meta.length, checksum: crcHex(checksum) });
    await flush();
  });
  return bytes;
}

/** A format 3 row line; JSON.stringify writes no raw newline, so the data stays on one line. */
function rowLine(row: Row): string {
  const seq = row.seq ?? 0;
  const index = row.index ?? 0;
  if (row.data.id !== row.id) return `${JSON.stringify({ row: { id: row.id, rev: row.rev, deleted: row.deleted, data: row.data, seq, index } })}\n`;
  return `${row.rev} ${seq}.${index}${row.deleted ? ` ${DELETED_MARK}` : " "}${JSON.stringify(row.data)}\n`;
}

/**
 * The row of a format 3 or 4 row line (`from` to `to` in `text`), or undefined if the line is not
 * one. Format 3 has no position: data starts with "{" and the deleted mark with a quote, so a
 * digit after the rev can only be one.
 */
function parseRowLine(text: string, from: number, to: number): RowImage | undefined {
  let at = from;
  let rev = 0;
  for (let code = text.charCodeAt(at); code >= 0x30 && code <= 0x39; code = text.charCodeAt(++at)) rev = rev * 10 + (code - 0x30);
  if (at === from || text.charCodeAt(at) !== 0x20) return undefined;
  at++;
  let seq: number | undefined;
  let index: number | undefined;
  if (isDigit(text.charCodeAt(at))) {
    const seqFrom = at;
    for (seq = 0; isDigit(text.charCodeAt(at)); at++) seq = seq * 10 + (text.charCodeAt(at) - 0x30);
    if (at === seqFrom || text.charCodeAt(at) !== 0x2e) return undefined;
    const indexFrom = ++at;
    for (index = 0; isDigit(text.charCodeAt(at)); at++) index = index * 10 + (text.charCodeAt(at) - 0x30);
    if (at === indexFrom || text.charCodeAt(at) !== 0x20) return undefined;
    at++;
  }
  const deleted = text.startsWith(DELETED_MARK, at);
  if (deleted) at += DELETED_MARK.length;
  const data = parseObject(text.slice(at, to));
  if (!data || typeof data.id !== "string") return undefined;
  return seq === undefined ? { id: data.id, rev, deleted, data } : { id: data.id, rev, deleted, data, seq, index };
}

function isDigit(code: number): boolean {
  return code >= 0x30 && code <= 0x39;
}

/** The event of an event line, or undefined when it is malformed. */
function parseEventLine(value: Record<string, unknown>): SnapshotEvent | undefined {
  const event = value.event;
  if (!Array.isArray(event) || event.length !== 5) return undefined;
  const [seq, index, entity, type, id] = event as unknown[];
  if (!Number.isSafeInteger(seq) || !Number.isSafeInteger(index) || typeof entity !== "string" || typeof type !== "string" || !EVENT_TYPES.has(type) || typeof id !== "string") return undefined;
  let row: RowImage | undefined;
  if (value.row !== undefined) {
    const image = value.row as RowImage;
    if (typeof image !== "object" || image === null || image.id !== id || typeof image.rev !== "number" || typeof image.data !== "object" || image.data === null) return undefined;
    row = { id, rev: image.rev, deleted: image.deleted === true, data: image.data, seq: seq as number, index: index as number };
  }
  return { entity, type: type as EventType, seq: seq as number, index: index as number, id, row };
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The row image of a format 2 row line: `{"e","rev","data"}`, plus `"deleted":true` for a deleted
 * row and `"id"` only when it is not data.id.
 */
function fromSnapshotRow(value: Record<string, unknown>): RowImage {
  const data = value.data as Record<string, unknown>;
  return { id: (value.id ?? data.id) as string, rev: value.rev as number, deleted: value.deleted === true, data };
}

/** Reads a snapshot back through `reader`; throws, naming the file and where, if it is not whole. */
export async function readSnapshot(path: string, reader: SnapshotReader): Promise<SnapshotHeader> {
  const header = await readHeader(path);
  const isLines = header?.format === SNAPSHOT_FORMAT || header?.format === SNAPSHOT_FORMAT_4 || header?.format === SNAPSHOT_FORMAT_3;
  return isLines ? readLineSnapshot(path, header!, reader) : readFramedSnapshot(path, reader);
}

/** A snapshot that is not whole; where it can, it says the line (formats 3, 4) or byte (1, 2) at fault, for tabula verify. */
export class SnapshotDamageError extends Error {
  constructor(
    message: string,
    readonly why: string,
    readonly at: { readonly line?: number; readonly byte?: number },
  ) {
    super(message);
  }
}

function damagedError(path: string, where: string, why: string, at: { line?: number; byte?: number } = {}): Error {
  return new SnapshotDamageError(`Cannot open the data folder: the snapshot ${path} is damaged at ${where} (${why}). Restore the folder from a backup.`, why, at);
}

/** The first line's object, or undefined when it is incomplete or fails its checksum. */
async function readHeader(path: string): Promise<Record<string, unknown> | undefined> {
  const handle = await open(path, "r");
  try {
    const buffer = Buffer.alloc(HEADER_READ_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    const newline = buffer.subarray(0, bytesRead).indexOf(NEWLINE);
    return newline < 0 ? undefined : parseFramedLine(buffer.subarray(0, newline));
  } finally {
    await handle.close();
  }
}

/** Reads formats 3, 4 and 5. */
async function readLineSnapshot(path: string, header: Record<string, unknown>, reader: SnapshotReader): Promise<SnapshotHeader> {
  const damaged = (line: number, why: string): Error => damagedError(path, `line ${line}`, why, { line });
  let entity: string | undefined;
  let rows = 0;
  let answers = 0;
  let events = 0;
  let metaValues = 0;
  let line = 0;
  let checksum = 0;
  const onLine = (text: string, from: number, to: number): void => {
    if (line === 1) return; // the header, read already
    const first = text.charCodeAt(from);
    if (first >= 0x30 && first <= 0x39) {
      const row = parseRowLine(text, from, to);
      if (!row) throw damaged(line, "a row line is not a revision and a data object with an id");
      if (entity === undefined) throw damaged(line, "a row comes before any entity line");
      reader.onRow(entity, row);
      rows++;
      return;
    }
    const value = parseObject(text.slice(from, to));
    if (typeof value?.entity === "string") {
      entity = value.entity;
    } else if (value?.event) {
      // Before rows: an event line may carry the version it wrote as "row".
      const event = parseEventLine(value);
      if (!event) throw damaged(line, "an event line is not [seq, index, entity, type, id] with the row it wrote");
      reader.onEvent(event);
      events++;
    } else if (value?.row) {
      const row = value.row as RowImage;
      if (typeof row.id !== "string" || typeof row.rev !== "number" || typeof row.data !== "object" || row.data === null) throw damaged(line, "a row has no id, rev or data");
      if (entity === undefined) throw damaged(line, "a row comes before any entity line");
      const position = typeof row.seq === "number" && typeof row.index === "number" ? { seq: row.seq, index: row.index } : {};
      reader.onRow(entity, { id: row.id, rev: row.rev, deleted: row.deleted === true, data: row.data, ...position });
      rows++;
    } else if (value?.answer) {
      reader.onAnswer(value.answer as IdempotentAnswer);
      answers++;
    } else if (value?.meta) {
      const write = value.meta as { key?: unknown; value?: unknown };
      if (typeof write.key !== "string" || write.value === undefined) throw damaged(line, "a metadata line is not {key, value}");
      reader.onMeta?.({ key: write.key, value: write.value });
      metaValues++;
    } else {
      throw damaged(line, "a line is neither a row, an entity, an answer, an event, a metadata value nor the end marker");
    }
  };
  // The end marker, the last line, is held back from the runs: the checksum covers what precedes it.
  const { size, rest } = await scanLineRuns(path, true, (run) => {
    checksum = crc32(run, checksum);
    // Decoded a run at a time, not a line at a time; latin1 is the faster decoder where it may serve.
    const text = isAscii(run) ? run.toString("latin1") : run.toString("utf8");
    for (let from = 0; from < text.length; ) {
      const to = text.indexOf("\n", from);
      line++;
      onLine(text, from, to);
      from = to + 1;
    }
  });
  const newline = rest.indexOf(NEWLINE);
  const lastLine = newline < 0 ? undefined : rest.subarray(0, newline);
  if (rest.length > (lastLine ? newline + 1 : 0)) throw damaged(lastLine ? line + 2 : line + 1, "the last line is incomplete");
  const footer = lastLine && parseFramedLine(lastLine);
  if (footer?.end !== true) throw damaged(lastLine ? line + 1 : line, "the end marker is missing");
  if (footer.rows !== rows || footer.answers !== answers || (footer.events ?? 0) !== events || (footer.meta ?? 0) !== metaValues) {
    const counted = [`${footer.rows} rows`, `${footer.answers} answers`, `${footer.events ?? 0} events`];
    const held = [rows, answers, events];
    // Metadata values are named only when there are some, as formats 3 and 4 have none.
    if ((footer.meta ?? 0) !== 0 || metaValues !== 0) {
      counted.push(`${footer.meta ?? 0} metadata values`);
      held.push(metaValues);
    }
    const list = (items: readonly unknown[]): string => `${items.slice(0, -1).join(", ")} and ${items.at(-1)}`;
    throw damaged(line + 1, `the end marker counts ${list(counted)}, the file holds ${list(held)}`);
  }
  if (footer.checksum !== crcHex(checksum)) throw damagedError(path, "an unknown place", "the checksum of its lines does not match the end marker's");
  const horizon = Array.isArray(header.horizon) ? { seq: header.horizon[0] as number, index: header.horizon[1] as number } : undefined;
  return { seq: header.seq as number, rev: header.rev as number, bytes: size, horizon };
}

/** Reads a format 1 or 2 snapshot: framed lines, each checked against its own checksum. */
async function readFramedSnapshot(path: string, reader: SnapshotReader): Promise<SnapshotHeader> {
  let header: { seq: number; rev: number; format: string } | undefined;
  let footer: { rows: number; answers: number } | undefined;
  let rows = 0;
  let answers = 0;
  const damaged = (offset: number, why: string): Error => damagedError(path, `byte ${offset}`, why, { byte: offset });
  const { size, tailOffset } = await scanLines(path, (line, offset, text) => {
    const value = parseFramedLine(line, text);
    if (!value) throw damaged(offset, "a line is incomplete or fails its checksum");
    if (footer) throw damaged(offset, "lines follow the end marker");
    if (!header) {
      if (value.format !== SNAPSHOT_FORMAT_2 && value.format !== SNAPSHOT_FORMAT_1) {
        throw damaged(offset, `the first line does not name the format ${SNAPSHOT_FORMAT}, ${SNAPSHOT_FORMAT_2} or ${SNAPSHOT_FORMAT_1}`);
      }
      header = { seq: value.seq as number, rev: value.rev as number, format: value.format };
    } else if (typeof value.e === "string") {
      const isFormat2 = header.format === SNAPSHOT_FORMAT_2;
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
  return { seq: header.seq, rev: header.rev, bytes: size, horizon: undefined };
}
