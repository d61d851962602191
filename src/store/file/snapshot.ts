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
import { dataJsonOf, MemberNames, TextRow, unparsedDataJson } from "../text-row.ts";

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
/** Rows whose names are gathered between two yields (fieldNamesOf). */
const FIELD_NAMES_YIELD_ROWS = 1 << 14;

/** The state a snapshot records, captured in one tick while writes go on into a new segment. */
export interface SnapshotState {
  readonly seq: number;
  readonly rev: number;
  /** With the member names of the rows still held as text, when the snapshot they came from gave them. */
  readonly entities: ReadonlyArray<readonly [entity: string, rows: readonly Row[], textFieldNames?: ReadonlySet<string> | null]>;
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
  /**
   * A format 4 or 5 row line whose data opens with its id, handed over as the data's JSON text,
   * unparsed, when the reader takes rows so (the file store does: docs/architecture.md, "Rows parsed
   * on first use"). The checksum still covers it; readers without it get every row parsed.
   */
  onRowText?(entity: string, row: RowText): void;
  /** The member names of an entity's row data, when its entity line gives them (written since rows are kept as text). */
  onEntityFields?(entity: string, names: readonly string[]): void;
  onAnswer(answer: IdempotentAnswer): void;
  /** A kept event: with the version it wrote, or (undefined) the version of the record loaded as a row. */
  onEvent(event: SnapshotEvent): void;
  /** A metadata value (format 5). */
  onMeta?(write: MetaWrite): void;
}

export interface RowText {
  readonly id: string;
  readonly rev: number;
  readonly deleted: boolean;
  /** JSON.stringify of the row's data, as the snapshot's writer wrote it. */
  readonly json: string;
  readonly seq: number;
  readonly index: number;
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
    for (const [entity, entityRows, textFieldNames] of state.entities) {
      text += `${JSON.stringify({ entity, fields: await fieldNamesOf(entityRows, textFieldNames) })}\n`;
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

/**
 * Every member name of the rows' data, for the entity line: a start then knows the names stored
 * (the check for undeclared fields) without reading rows it keeps as text. Yields now and then,
 * as the writing does.
 */
async function fieldNamesOf(rows: readonly Row[], textFieldNames: ReadonlySet<string> | null | undefined): Promise<string[]> {
  const names = new Set(textFieldNames ?? []);
  const scanned = new MemberNames();
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    if (i % FIELD_NAMES_YIELD_ROWS === FIELD_NAMES_YIELD_ROWS - 1) await new Promise((resolve) => setImmediate(resolve));
    const json = unparsedDataJson(row);
    if (json !== undefined && (textFieldNames || scanned.add(json))) continue;
    for (const name in row.data) names.add(name);
  }
  for (const name of scanned.names) names.add(name);
  return [...names];
}

/** A format 3 row line; JSON.stringify writes no raw newline, so the data stays on one line. */
function rowLine(row: Row): string {
  if (!(row instanceof TextRow) && row.data.id !== row.id) return `${JSON.stringify({ row: { id: row.id, rev: row.rev, deleted: row.deleted, data: row.data, seq: row.seq ?? 0, index: row.index ?? 0 } })}\n`;
  const seq = row.seq ?? 0;
  const index = row.index ?? 0;
  // A row still unparsed since start-up is written back as the text it was read as.
  return `${row.rev} ${seq}.${index}${row.deleted ? ` ${DELETED_MARK}` : " "}${dataJsonOf(row)}\n`;
}

/**
 * The row of a format 3 or 4 row line (`from` to `to` in `text`), or undefined if the line is not
 * one. Format 3 has no position: data starts with "{" and the deleted mark with a quote, so a
 * digit after the rev can only be one.
 */
function parseRowLine(text: string, from: number, to: number, onText?: (row: RowText) => void): RowImage | null | undefined {
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
  if (onText && seq !== undefined) {
    const id = leadingIdOf(text, at, to);
    if (id !== undefined) {
      onText({ id, rev, deleted, json: text.slice(at, to), seq, index: index! });
      return null;
    }
  }
  const data = parseObject(text.slice(at, to));
  if (!data || typeof data.id !== "string") return undefined;
  return seq === undefined ? { id: data.id, rev, deleted, data } : { id: data.id, rev, deleted, data, seq, index };
}

const ID_OPENING = '{"id":"';

/**
 * The id of data JSON that opens with `{"id":"…"` and holds no escape in it, read without parsing;
 * undefined otherwise (such a row is parsed). The rest is trusted as JSON: the checksum covers it.
 */
function leadingIdOf(text: string, from: number, to: number): string | undefined {
  if (!text.startsWith(ID_OPENING, from) || text.charCodeAt(to - 1) !== 0x7d) return undefined;
  const idFrom = from + ID_OPENING.length;
  const idTo = text.indexOf('"', idFrom);
  if (idTo < 0 || idTo >= to || idTo === idFrom) return undefined;
  const id = text.slice(idFrom, idTo);
  return id.includes("\\") ? undefined : id;
}

function isDigit(code: number): boolean {
  return code >= 0x30 && code <= 0x39;
}

const EVENT_OPENING = '{"event":[';
const EVENT_CLOSING = '"]}';

/**
 * The event of a line `{"event":[seq,index,"Entity","type","id"]}` (no row: the version is the
 * record's), read without JSON.parse; undefined for any other line, which parseEventLine reads.
 */
function plainEventOf(text: string, from: number, to: number): SnapshotEvent | undefined {
  if (!text.startsWith(EVENT_CLOSING, to - EVENT_CLOSING.length)) return undefined;
  let at = from + EVENT_OPENING.length;
  let seq = 0;
  const seqFrom = at;
  for (; isDigit(text.charCodeAt(at)); at++) seq = seq * 10 + (text.charCodeAt(at) - 0x30);
  if (at === seqFrom || text.charCodeAt(at) !== 0x2c) return undefined;
  const indexFrom = ++at;
  let index = 0;
  for (; isDigit(text.charCodeAt(at)); at++) index = index * 10 + (text.charCodeAt(at) - 0x30);
  if (at === indexFrom || text.charCodeAt(at) !== 0x2c || text.charCodeAt(at + 1) !== 0x22) return undefined;
  const strings = text.slice(at + 2, to - EVENT_CLOSING.length);
  // Three plain strings: no escape, and no quote but the four between them.
  if (strings.includes("\\")) return undefined;
  const parts = strings.split('","');
  if (parts.length !== 3 || parts.some((part) => part.includes('"'))) return undefined;
  const [entity, type, id] = parts as [string, string, string];
  if (!EVENT_TYPES.has(type) || !Number.isSafeInteger(seq) || !Number.isSafeInteger(index)) return undefined;
  return { entity, type: type as EventType, seq, index, id, row: undefined };
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
  const onText = reader.onRowText && ((row: RowText): void => reader.onRowText!(entity!, row));
  const onLine = (text: string, from: number, to: number): void => {
    if (line === 1) return; // the header, read already
    const first = text.charCodeAt(from);
    if (first >= 0x30 && first <= 0x39) {
      if (entity === undefined) throw damaged(line, "a row comes before any entity line");
      const row = parseRowLine(text, from, to, onText);
      if (row === undefined) throw damaged(line, "a row line is not a revision and a data object with an id");
      if (row !== null) reader.onRow(entity, row);
      rows++;
      return;
    }
    // Most lines after the rows are kept events of current versions: read without JSON.parse.
    const event = text.startsWith(EVENT_OPENING, from) ? plainEventOf(text, from, to) : undefined;
    if (event !== undefined) {
      reader.onEvent(event);
      events++;
      return;
    }
    const value = parseObject(text.slice(from, to));
    if (typeof value?.entity === "string") {
      entity = value.entity;
      const fields = value.fields;
      if (Array.isArray(fields) && fields.every((name) => typeof name === "string")) reader.onEntityFields?.(entity, fields as string[]);
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
