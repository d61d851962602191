// Snapshots: every row of every entity (deleted rows and undeclared entities included), the live
// idempotency answers and the revision counter in `snapshot-<seq>`, which covers every log entry
// before seq. Written to a .tmp file, synced, then renamed, so a snapshot that has its name is
// whole; its end marker holds the CRC-32 of every byte before it, checked on reading.
//
// Format 5 (the one written) is a stream of JSON values, one line each, made to load fast:
//   {"format":"tabula-snapshot/5","seq":…,"rev":…,"horizon":[s,i],"crc":…}   the header, framed like a log line
//   {"entity":"Task","fields":[…],"rows":…}                  the rows that follow are Task's: their member names, how many
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

import { open } from "node:fs/promises";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import type { FeedPosition, IdempotentAnswer, MetaWrite, Row } from "../store.ts";
import type { ChangeType } from "../../views.ts";
import { parseSeqFileName, seqFileName } from "./wal.ts";
import { crcHex, frameLine, parseFramedLine, scanLines } from "./log-framing.ts";
import type { RowImage } from "./log-entry.ts";
import { replaceFile, TEMPORARY_SUFFIX, writeFully } from "../../disk/durable-file.ts";
import { newlineAt, readLineRuns } from "./line-runs.ts";
import { MemberNames } from "../member-names.ts";
import { dataJsonOf, isUnparsed, unparsedDataJson } from "../../rows/stored-row.ts";
import { DATA_OPENING, type CapturedRows } from "../memory/loaded-rows.ts";

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
  /** And the rows still held as the bytes of the snapshot they were loaded from (row-map.ts). */
  readonly entities: ReadonlyArray<readonly [entity: string, rows: readonly Row[], textFieldNames?: ReadonlySet<string> | null, loaded?: CapturedRows | null]>;
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
   * A format 4 or 5 row line whose data opens with its id, handed over as where the data's JSON
   * lies in the bytes read (`bytes[from, to)`, opening with `{"id":"` and the id, which ends at
   * idTo and holds no escape), unparsed, when the reader takes rows so (the file store does: docs/architecture.md, "Rows parsed
   * on first use"). The checksum still covers it; readers without it get every row parsed.
   */
  onRowText?(entity: string, bytes: Buffer, idTo: number, from: number, to: number, rev: number, deleted: boolean, seq: number, index: number): void;
  /** The member names of an entity's row data, when its entity line gives them (written since rows are kept as text). */
  onEntityFields?(entity: string, names: readonly string[]): void;
  /** How many rows of the entity follow, when its entity line says (written since rows are kept as bytes). */
  onEntityRows?(entity: string, rows: number): void;
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

/**
 * Writes, syncs and renames the snapshot; answers its size in bytes. Yields between chunks, and
 * gives up there once `isStopped` says so (the store is closing): the temporary file is removed,
 * and the log still holds everything.
 */
export async function writeSnapshot(dir: string, state: SnapshotState, isStopped: () => boolean = () => false): Promise<number> {
  let bytes = 0;
  await replaceFile(join(dir, snapshotName(state.seq)), async (handle) => {
    let checksum = 0;
    let text = frameLine({ format: SNAPSHOT_FORMAT, seq: state.seq, rev: state.rev, horizon: [state.horizon.seq, state.horizon.index] });
    const flush = async (): Promise<void> => {
      if (isStopped()) throw new Error("The store closed while the snapshot was being written; the log still holds every write.");
      const buffer = Buffer.from(text);
      text = "";
      checksum = crc32(buffer, checksum);
      await writeFully(handle, buffer);
      bytes += buffer.length;
    };
    let rows = 0;
    for (const [entity, entityRows, textFieldNames, loaded] of state.entities) {
      const fields = await fieldNamesOf(entityRows, textFieldNames, loaded);
      // The row count lets a reader size its tables before the rows come (older readers ignore it).
      text += `${JSON.stringify({ entity, fields, rows: entityRows.length + (loaded?.count ?? 0) })}\n`;
      for (const row of entityRows) {
        text += rowLine(row);
        rows++;
        if (text.length >= WRITE_CHUNK_CHARS) await flush();
      }
      for (const row of loaded?.rows() ?? []) {
        text += rowLine(row);
        rows++;
        if (text.length >= WRITE_CHUNK_CHARS) await flush();
      }
    }
    for (const answer of state.answers) {
      text += `${JSON.stringify({ answer })}\n`;
      if (text.length >= WRITE_CHUNK_CHARS) await flush();
    }
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
async function fieldNamesOf(rows: readonly Row[], textFieldNames: ReadonlySet<string> | null | undefined, loaded: CapturedRows | null | undefined): Promise<string[]> {
  const names = new Set(textFieldNames ?? []);
  const scanned = new MemberNames();
  // Rows held as loaded bytes were all loaded as text: listed in textFieldNames when it is known.
  const toRead = function* (): Generator<Row> {
    yield* rows;
    if (!textFieldNames && loaded) yield* loaded.rows();
  };
  let visited = 0;
  for (const row of toRead()) {
    if (++visited % FIELD_NAMES_YIELD_ROWS === 0) await new Promise((resolve) => setImmediate(resolve));
    if (isUnparsed(row) && (textFieldNames || scanned.add(unparsedDataJson(row)!))) continue;
    for (const name in row.data) names.add(name);
  }
  for (const name of scanned.names) names.add(name);
  return [...names];
}

/** A format 3 row line; JSON.stringify writes no raw newline, so the data stays on one line. */
function rowLine(row: Row): string {
  if (unparsedDataJson(row) === undefined && row.data.id !== row.id) return `${JSON.stringify({ row: { id: row.id, rev: row.rev, deleted: row.deleted, data: row.data, seq: row.seq ?? 0, index: row.index ?? 0 } })}\n`;
  const seq = row.seq ?? 0;
  const index = row.index ?? 0;
  // A row still unparsed since start-up is written back as the text it was read as.
  return `${row.rev} ${seq}.${index}${row.deleted ? ` ${DELETED_MARK}` : " "}${dataJsonOf(row)}\n`;
}

/**
 * The row of a format 3, 4 or 5 row line (`line[from, to)`), or undefined if the line is not one.
 * Format 3 has no position: data starts with "{" and the deleted mark with a quote, so a digit
 * after the rev can only be one. A line with a position whose data opens with its id is handed to
 * `onText` unparsed, and null answered.
 */
function parseRowLine(line: Buffer, from: number, to: number, onText: TextRowHandler | undefined): RowImage | null | undefined {
  let at = from;
  let rev = 0;
  for (let code = line[at]!; isDigit(code); code = line[++at]!) rev = rev * 10 + (code - 0x30);
  if (at === from || line[at] !== 0x20) return undefined;
  at++;
  let seq: number | undefined;
  let index = 0;
  if (isDigit(line[at]!)) {
    const seqFrom = at;
    for (seq = 0; isDigit(line[at]!); at++) seq = seq * 10 + (line[at]! - 0x30);
    if (at === seqFrom || line[at] !== 0x2e) return undefined;
    const indexFrom = ++at;
    for (; isDigit(line[at]!); at++) index = index * 10 + (line[at]! - 0x30);
    if (at === indexFrom || line[at] !== 0x20) return undefined;
    at++;
  }
  const deleted = startsWithBytes(line, at, DELETED_MARK_BYTES);
  if (deleted) at += DELETED_MARK_BYTES.length;
  if (onText && seq !== undefined) {
    const idTo = leadingIdEnd(line, at, to);
    if (idTo >= 0) {
      onText(line, idTo, at, to, rev, deleted, seq, index);
      return null;
    }
  }
  const data = parseObject(line.toString("utf8", at, to));
  if (!data || typeof data.id !== "string") return undefined;
  return seq === undefined ? { id: data.id, rev, deleted, data } : { id: data.id, rev, deleted, data, seq, index };
}

type TextRowHandler = (bytes: Buffer, idTo: number, from: number, to: number, rev: number, deleted: boolean, seq: number, index: number) => void;

const ID_OPENING = Buffer.from(DATA_OPENING);
const DELETED_MARK_BYTES = Buffer.from(DELETED_MARK);

/**
 * Where the id of data JSON that opens with `{"id":"…"` ends (its closing quote), when it is not
 * empty and holds no escape; -1 otherwise (such a row is parsed). Read without parsing: the rest
 * is trusted as JSON, the checksum covers it.
 */
function leadingIdEnd(line: Buffer, from: number, to: number): number {
  if (!startsWithBytes(line, from, ID_OPENING) || line[to - 1] !== 0x7d) return -1;
  const idFrom = from + ID_OPENING.length;
  for (let at = idFrom; at < to; at++) {
    const code = line[at]!;
    if (code === 0x22) return at === idFrom ? -1 : at;
    if (code === 0x5c) return -1;
  }
  return -1;
}

function startsWithBytes(line: Buffer, at: number, prefix: Buffer): boolean {
  for (let i = 0; i < prefix.length; i++) if (line[at + i] !== prefix[i]) return false;
  return true;
}

function isDigit(code: number): boolean {
  return code >= 0x30 && code <= 0x39;
}

const EVENT_OPENING = Buffer.from('{"event":[');
const EVENT_CLOSING = Buffer.from('"]}');
/** The types an event line may name, by their bytes: read without making a string. */
const EVENT_TYPE_BYTES: ReadonlyArray<readonly [Buffer, EventType]> = (["create", "update", "delete", "restore", "sync"] as const).map((type) => [Buffer.from(type), type]);

/**
 * The event of a line `{"event":[seq,index,"Entity","type","id"]}` (no row: the version is the
 * record's), read without JSON.parse; undefined for any other line, which parseEventLine reads.
 */
function plainEventOf(line: Buffer, from: number, to: number): SnapshotEvent | undefined {
  if (!startsWithBytes(line, from, EVENT_OPENING) || !startsWithBytes(line, to - EVENT_CLOSING.length, EVENT_CLOSING)) return undefined;
  let at = from + EVENT_OPENING.length;
  let seq = 0;
  const seqFrom = at;
  for (; isDigit(line[at]!); at++) seq = seq * 10 + (line[at]! - 0x30);
  if (at === seqFrom || line[at] !== 0x2c) return undefined;
  const indexFrom = ++at;
  let index = 0;
  for (; isDigit(line[at]!); at++) index = index * 10 + (line[at]! - 0x30);
  if (at === indexFrom || line[at] !== 0x2c || line[at + 1] !== 0x22) return undefined;
  // Three plain strings, "…","…","…": no escape, no quote but the four between them, ASCII.
  const entityFrom = at + 2;
  const stringsTo = to - EVENT_CLOSING.length;
  let entityTo = -1;
  let typeTo = -1;
  for (at = entityFrom; at < stringsTo; at++) {
    const code = line[at]!;
    if (code === 0x5c || code >= 0x80) return undefined;
    if (code !== 0x22) continue;
    if (line[at + 1] !== 0x2c || line[at + 2] !== 0x22 || typeTo >= 0) return undefined;
    if (entityTo < 0) entityTo = at;
    else typeTo = at;
    at += 2;
  }
  if (typeTo < 0 || !Number.isSafeInteger(seq) || !Number.isSafeInteger(index)) return undefined;
  const type = eventTypeAt(line, entityTo + 3, typeTo);
  if (type === undefined) return undefined;
  return { entity: entityNameAt(line, entityFrom, entityTo), type, seq, index, id: line.toString("latin1", typeTo + 3, stringsTo), row: undefined };
}

/** The last entity name an event line gave, as bytes and as a string: kept events share it. */
let lastEntity = { bytes: Buffer.alloc(0), name: "" };

function entityNameAt(line: Buffer, from: number, to: number): string {
  const { bytes, name } = lastEntity;
  if (bytes.length === to - from && startsWithBytes(line, from, bytes)) return name;
  lastEntity = { bytes: Buffer.from(line.subarray(from, to)), name: line.toString("latin1", from, to) };
  return lastEntity.name;
}

function eventTypeAt(line: Buffer, from: number, to: number): EventType | undefined {
  for (const [bytes, type] of EVENT_TYPE_BYTES) if (bytes.length === to - from && startsWithBytes(line, from, bytes)) return type;
  return undefined;
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
  const onRowText = reader.onRowText?.bind(reader);
  const onText: TextRowHandler | undefined =
    onRowText && ((bytes, idTo, from, to, rev, deleted, seq, index) => onRowText(entity!, bytes, idTo, from, to, rev, deleted, seq, index));
  const onLine = (bytes: Buffer, from: number, to: number): void => {
    if (line === 1) return; // the header, read already
    if (isDigit(bytes[from]!)) {
      if (entity === undefined) throw damaged(line, "a row comes before any entity line");
      const row = parseRowLine(bytes, from, to, onText);
      if (row === undefined) throw damaged(line, "a row line is not a revision and a data object with an id");
      if (row !== null) reader.onRow(entity, row);
      rows++;
      return;
    }
    // Most lines after the rows are kept events of current versions: read without JSON.parse.
    const event = plainEventOf(bytes, from, to);
    if (event !== undefined) {
      reader.onEvent(event);
      events++;
      return;
    }
    const value = parseObject(bytes.toString("utf8", from, to));
    if (typeof value?.entity === "string") {
      entity = value.entity;
      const fields = value.fields;
      if (Array.isArray(fields) && fields.every((name) => typeof name === "string")) reader.onEntityFields?.(entity, fields as string[]);
      if (Number.isSafeInteger(value.rows) && (value.rows as number) >= 0) reader.onEntityRows?.(entity, value.rows as number);
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
  // Read as bytes and never decoded whole: rows kept as text point into the runs (line-runs.ts).
  const { size, rest } = await readLineRuns(path, true, (run) => {
    checksum = crc32(run, checksum);
    for (let from = 0; from < run.length; ) {
      const to = newlineAt(run, from);
      line++;
      onLine(run, from, to);
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
