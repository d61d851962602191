// Reads a log line as start-up replays it: the puts of a line in the shape the log writes them
// (frameEntryLines in log-framing.ts) become rows kept as their data's JSON text (stored-row.ts), so that a
// replay parses no row's data, as a snapshot's load parses none (docs/architecture.md, "Start-up
// after a crash"). The fields after the puts (an idempotent answer, metadata) are parsed with
// JSON.parse. A line in any other shape (a reset, a migration's drops, a row whose data does not
// open with its own id) answers undefined, and the caller parses it whole.

import { StoredRow } from "../../rows/stored-row.ts";
import type { LogEntry, LogPut } from "./log-entry.ts";

const SEQ_OPENING = '{"seq":';
const MORE = ',"more":true';
const PUTS_OPENING = ',"puts":[';
const PUT_OPENING = '{"e":"';
const ROW_OPENING = '","row":{"id":"';
const REV_OPENING = '","rev":';
const DELETED_OPENING = ',"deleted":';
const DATA_OPENING = ',"data":';
const DATA_ID_OPENING = '{"id":"';
const SYNC_MARK = ',"s":1';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/**
 * The entry of a log line's JSON text `head` (the line up to its `,"crc":…` field, whose checksum
 * the caller has checked), its puts' rows kept as text; undefined when the line is not in the
 * shape this reads. The text is trusted as JSON.stringify wrote it: the checksum covers it.
 */
export function readLogLine(head: string): LogEntry | undefined {
  if (!head.startsWith(SEQ_OPENING)) return undefined;
  let at = SEQ_OPENING.length;
  const seqFrom = at;
  let seq = 0;
  for (let code = head.charCodeAt(at); isDigit(code); code = head.charCodeAt(++at)) seq = seq * 10 + (code - 0x30);
  if (at === seqFrom || !Number.isSafeInteger(seq)) return undefined;
  const more = head.startsWith(MORE, at);
  if (more) at += MORE.length;
  if (!head.startsWith(PUTS_OPENING, at)) return undefined;
  at += PUTS_OPENING.length;
  const puts: LogPut[] = [];
  if (head.charCodeAt(at) === CLOSE_BRACKET) at++;
  else {
    for (;;) {
      const put = readPut(head, at, seq, puts.length);
      if (put === undefined) return undefined;
      puts.push(put.put);
      at = put.end;
      const code = head.charCodeAt(at++);
      if (code === CLOSE_BRACKET) break;
      if (code !== COMMA) return undefined;
    }
  }
  const entry: { seq: number; more?: true; puts: LogPut[] } = more ? { seq, more: true, puts } : { seq, puts };
  if (at === head.length) return entry;
  // The fields after the puts (answer, meta), few and small: parsed as an object of their own.
  if (head.charCodeAt(at) !== COMMA) return undefined;
  let rest: unknown;
  try {
    rest = JSON.parse(`{${head.slice(at + 1)}}`);
  } catch {
    // Checked by its checksum, so written so by a writer other than this one: parsed whole instead.
    return undefined;
  }
  if (typeof rest !== "object" || rest === null || "seq" in rest || "puts" in rest || "more" in rest) return undefined;
  return { ...entry, ...rest };
}

/** The put `{"e":…,"row":{"id","rev","deleted","data"}(,"s":1)}` at `from`, and where it ends. */
function readPut(head: string, from: number, seq: number, index: number): { put: LogPut; end: number } | undefined {
  if (!head.startsWith(PUT_OPENING, from)) return undefined;
  const entityFrom = from + PUT_OPENING.length;
  const entityTo = plainStringEnd(head, entityFrom);
  if (entityTo < 0 || !head.startsWith(ROW_OPENING, entityTo)) return undefined;
  const idFrom = entityTo + ROW_OPENING.length;
  const idTo = plainStringEnd(head, idFrom);
  if (idTo < 0 || idTo === idFrom || !head.startsWith(REV_OPENING, idTo)) return undefined;
  let at = idTo + REV_OPENING.length;
  const revFrom = at;
  let rev = 0;
  for (let code = head.charCodeAt(at); isDigit(code); code = head.charCodeAt(++at)) rev = rev * 10 + (code - 0x30);
  if (at === revFrom || !Number.isSafeInteger(rev) || !head.startsWith(DELETED_OPENING, at)) return undefined;
  at += DELETED_OPENING.length;
  let deleted: boolean;
  if (head.startsWith("true", at)) {
    deleted = true;
    at += 4;
  } else if (head.startsWith("false", at)) {
    deleted = false;
    at += 5;
  } else {
    return undefined;
  }
  if (!head.startsWith(DATA_OPENING, at)) return undefined;
  const dataFrom = at + DATA_OPENING.length;
  // Kept as text only when the data opens with the row's own id, as records do: a snapshot writes
  // a text row as its data alone and reads the id back from it (snapshot.ts).
  const id = head.slice(idFrom, idTo);
  if (!head.startsWith(DATA_ID_OPENING, dataFrom) || !head.startsWith(id, dataFrom + DATA_ID_OPENING.length) || head.charCodeAt(dataFrom + DATA_ID_OPENING.length + id.length) !== QUOTE) return undefined;
  const dataTo = objectEnd(head, dataFrom);
  if (dataTo < 0 || head.charCodeAt(dataTo) !== CLOSE_BRACE) return undefined;
  at = dataTo + 1;
  const sync = head.startsWith(SYNC_MARK, at);
  if (sync) at += SYNC_MARK.length;
  if (head.charCodeAt(at) !== CLOSE_BRACE) return undefined;
  const entity = head.slice(entityFrom, entityTo);
  // The batch's apply gives the row its feed position again (its index counts every part's puts).
  const row = StoredRow.ofText(id, rev, deleted, head, dataFrom, dataTo, seq, index);
  return { put: sync ? { e: entity, row, s: 1 } : { e: entity, row }, end: at + 1 };
}

/** Where the string whose text starts at `from` closes, when it holds no escape; -1 otherwise. */
function plainStringEnd(text: string, from: number): number {
  const to = text.indexOf('"', from);
  if (to < 0) return -1;
  // Between the two only: a search of the line for a backslash would read the puts after this one.
  for (let at = from; at < to; at++) if (text.charCodeAt(at) === BACKSLASH) return -1;
  return to;
}

/**
 * Where the JSON object opening at `from` ends (the index after its closing brace), or -1. Strings
 * are skipped with indexOf, so a record's long text costs a few jumps, not a step per character.
 */
export function objectEnd(text: string, from: number): number {
  let depth = 0;
  for (let at = from; at < text.length; ) {
    const code = text.charCodeAt(at);
    if (code === QUOTE) {
      at = stringEnd(text, at);
      if (at < 0) return -1;
      continue;
    }
    if (code === OPEN_BRACE || code === OPEN_BRACKET) depth++;
    else if ((code === CLOSE_BRACE || code === CLOSE_BRACKET) && --depth === 0) return at + 1;
    at++;
  }
  return -1;
}

/** The index after the string opening at `quote`: past the next quote not escaped by a backslash. */
function stringEnd(text: string, quote: number): number {
  for (let at = text.indexOf('"', quote + 1); at >= 0; at = text.indexOf('"', at + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at + 1;
  }
  return -1;
}

function isDigit(code: number): boolean {
  return code >= 0x30 && code <= 0x39;
}
