// Reads a log line as start-up replays it, from the bytes it was read into: the puts of a line in
// the shape the log writes them (frameEntryLines in log-framing.ts) become rows kept as their
// data's JSON bytes (stored-row.ts), so that a replay decodes and parses no row's data, as a
// snapshot's load parses none (docs/architecture.md, "Start-up after a crash"). The fields after the
// puts (an idempotent answer, metadata) are parsed with JSON.parse. A line in any other shape (a
// reset, a migration's drops, a row whose data does not open with its own id) answers undefined,
// and the caller parses it whole.

import { StoredRow } from "../../rows/stored-row.ts";
import type { LogEntry, LogPut } from "./log-entry.ts";

const bytesOf = (text: string): Buffer => Buffer.from(text, "latin1");
const SEQ_OPENING = bytesOf('{"seq":');
const MORE = bytesOf(',"more":true');
const PUTS_OPENING = bytesOf(',"puts":[');
const PUT_OPENING = bytesOf('{"e":"');
const ROW_OPENING = bytesOf('","row":{"id":"');
const REV_OPENING = bytesOf('","rev":');
const DELETED_OPENING = bytesOf(',"deleted":');
const TRUE = bytesOf("true");
const FALSE = bytesOf("false");
const DATA_OPENING = bytesOf(',"data":');
const DATA_ID_OPENING = bytesOf('{"id":"');
const SYNC_MARK = bytesOf(',"s":1');

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/**
 * The entry of a log line's JSON text at `bytes[from, to)` (the line up to its `,"crc":…` field,
 * whose checksum the caller has checked), its puts' rows kept as the bytes of their data (which
 * `bytes` must then never be reused for); undefined when the line is not in the shape this reads.
 * The text is trusted as JSON.stringify wrote it: the checksum covers it.
 */
export function readLogLine(bytes: Buffer, from = 0, to = bytes.length): LogEntry | undefined {
  if (!startsWith(bytes, from, to, SEQ_OPENING)) return undefined;
  let at = from + SEQ_OPENING.length;
  const seqFrom = at;
  let seq = 0;
  for (; at < to && isDigit(bytes[at]!); at++) seq = seq * 10 + (bytes[at]! - 0x30);
  if (at === seqFrom || !Number.isSafeInteger(seq)) return undefined;
  const more = startsWith(bytes, at, to, MORE);
  if (more) at += MORE.length;
  if (!startsWith(bytes, at, to, PUTS_OPENING)) return undefined;
  at += PUTS_OPENING.length;
  const puts: LogPut[] = [];
  if (bytes[at] === CLOSE_BRACKET) at++;
  else {
    for (;;) {
      const end = readPut(bytes, at, to, seq, puts);
      if (end < 0) return undefined;
      at = end;
      const code = at < to ? bytes[at++] : undefined;
      if (code === CLOSE_BRACKET) break;
      if (code !== COMMA) return undefined;
    }
  }
  const entry: { seq: number; more?: true; puts: LogPut[] } = more ? { seq, more: true, puts } : { seq, puts };
  if (at === to) return entry;
  // The fields after the puts (answer, meta), few: parsed as an object of their own.
  if (bytes[at] !== COMMA) return undefined;
  let rest: unknown;
  try {
    rest = JSON.parse(`{${bytes.toString("utf8", at + 1, to)}}`);
  } catch {
    // Checked by its checksum, so written so by a writer other than this one: parsed whole instead.
    return undefined;
  }
  if (typeof rest !== "object" || rest === null || "seq" in rest || "puts" in rest || "more" in rest) return undefined;
  return { ...entry, ...rest };
}

/**
 * Reads the put `{"e":…,"row":{"id","rev","deleted","data"}(,"s":1)}` at `from` into `puts`;
 * answers where it ends, or -1 when it is not in that shape.
 */
function readPut(bytes: Buffer, from: number, to: number, seq: number, puts: LogPut[]): number {
  if (!startsWith(bytes, from, to, PUT_OPENING)) return -1;
  const entityFrom = from + PUT_OPENING.length;
  const entityTo = plainStringEnd(bytes, entityFrom, to);
  if (entityTo < 0 || !startsWith(bytes, entityTo, to, ROW_OPENING)) return -1;
  const idFrom = entityTo + ROW_OPENING.length;
  const idTo = plainStringEnd(bytes, idFrom, to);
  if (idTo <= idFrom || !startsWith(bytes, idTo, to, REV_OPENING)) return -1;
  let at = idTo + REV_OPENING.length;
  const revFrom = at;
  let rev = 0;
  for (; at < to && isDigit(bytes[at]!); at++) rev = rev * 10 + (bytes[at]! - 0x30);
  if (at === revFrom || !Number.isSafeInteger(rev) || !startsWith(bytes, at, to, DELETED_OPENING)) return -1;
  at += DELETED_OPENING.length;
  let deleted: boolean;
  if (startsWith(bytes, at, to, TRUE)) {
    deleted = true;
    at += TRUE.length;
  } else if (startsWith(bytes, at, to, FALSE)) {
    deleted = false;
    at += FALSE.length;
  } else {
    return -1;
  }
  if (!startsWith(bytes, at, to, DATA_OPENING)) return -1;
  const dataFrom = at + DATA_OPENING.length;
  // Kept as text only when the data opens with the row's own id, as records do: a snapshot writes
  // a text row as its data alone and reads the id back from it (snapshot.ts).
  const dataIdFrom = dataFrom + DATA_ID_OPENING.length;
  const idLength = idTo - idFrom;
  if (!startsWith(bytes, dataFrom, to, DATA_ID_OPENING) || dataIdFrom + idLength >= to || !isSameBytes(bytes, idFrom, dataIdFrom, idLength) || bytes[dataIdFrom + idLength] !== QUOTE) return -1;
  const dataTo = objectEnd(bytes, dataFrom, to);
  // The row's object closes right after its data; the sync mark, if any, is the put's.
  if (dataTo < 0 || dataTo >= to || bytes[dataTo] !== CLOSE_BRACE) return -1;
  at = dataTo + 1;
  const sync = startsWith(bytes, at, to, SYNC_MARK);
  if (sync) at += SYNC_MARK.length;
  if (at >= to || bytes[at] !== CLOSE_BRACE) return -1;
  const entity = entityNameAt(bytes, entityFrom, entityTo);
  const id = textAt(bytes, idFrom, idTo);
  // The batch's apply gives the row its feed position again (its index counts every part's puts).
  const row = StoredRow.ofText(id, rev, deleted, bytes, dataFrom, dataTo, seq, puts.length);
  puts.push(sync ? { e: entity, row, s: 1 } : { e: entity, row });
  return at + 1;
}

/** The last entity name read, as bytes and as a string: the puts of a log mostly share theirs. */
let lastEntity = { bytes: Buffer.alloc(0), name: "" };

function entityNameAt(bytes: Buffer, from: number, to: number): string {
  const { bytes: last, name } = lastEntity;
  if (last.length === to - from && startsWith(bytes, from, to, last)) return name;
  lastEntity = { bytes: Buffer.from(bytes.subarray(from, to)), name: textAt(bytes, from, to) };
  return lastEntity.name;
}

/** The text of a plain string's bytes (no escape in them): latin1 reads ASCII as utf8 would, faster. */
function textAt(bytes: Buffer, from: number, to: number): string {
  for (let at = from; at < to; at++) if (bytes[at]! >= 0x80) return bytes.toString("utf8", from, to);
  return bytes.toString("latin1", from, to);
}

/** Where the string whose text starts at `from` closes, when it holds no escape; -1 otherwise. */
function plainStringEnd(bytes: Buffer, from: number, to: number): number {
  for (let at = from; at < to; at++) {
    const code = bytes[at]!;
    if (code === QUOTE) return at;
    if (code === BACKSLASH) return -1;
  }
  return -1;
}

/**
 * Where the JSON object opening at `from` ends (the index after its closing brace), or -1 when it
 * does not end before `to`. One pass over the bytes: a string's escapes are skipped two at a time.
 */
export function objectEnd(bytes: Uint8Array, from: number, to = bytes.length): number {
  let depth = 0;
  for (let at = from; at < to; at++) {
    const code = bytes[at]!;
    if (code === QUOTE) {
      for (at++; at < to; at++) {
        const inner = bytes[at]!;
        if (inner === QUOTE) break;
        if (inner === BACKSLASH) at++;
      }
      if (at >= to) return -1;
    } else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      depth++;
    } else if ((code === CLOSE_BRACE || code === CLOSE_BRACKET) && --depth === 0) {
      return at + 1;
    }
  }
  return -1;
}

function startsWith(bytes: Buffer, at: number, to: number, prefix: Buffer): boolean {
  if (at + prefix.length > to) return false;
  for (let i = 0; i < prefix.length; i++) if (bytes[at + i] !== prefix[i]) return false;
  return true;
}

function isSameBytes(bytes: Buffer, a: number, b: number, length: number): boolean {
  for (let i = 0; i < length; i++) if (bytes[a + i] !== bytes[b + i]) return false;
  return true;
}

function isDigit(code: number): boolean {
  return code >= 0x30 && code <= 0x39;
}
