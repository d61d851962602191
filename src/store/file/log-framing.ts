// The framing of data-file lines: one line of JSON text ending in a CRC-32 of what comes before it
// (frameLine, parseFramedLine), which the write-ahead log (wal.ts) and snapshots (snapshot.ts)
// share; a log entry framed as one line or, when very large, as several parts (frameEntryLines,
// PartJoiner); and files read a run of whole lines at a time (scanLines, scanLineRuns).

import { isAscii } from "node:buffer";
import { open } from "node:fs/promises";
import { crc32 } from "node:zlib";
import type { Row } from "../store.ts";
import type { LogEntry, LogPut } from "./log-entry.ts";
import { readLogLine } from "./log-line.ts";

/**
 * Files are read this much at a time, and each run of whole lines decoded into one string. Node
 * makes a decoded string of about 1 MiB or more an external string in native memory, and at
 * start-up those left ~70 MiB of freed native heap resident; below that size the text lives in the
 * JS heap and goes with the next scavenge.
 */
const SCAN_CHUNK_BYTES = 512 * 1024;
/** `,"crc":"xxxxxxxx"}`: every framed line ends with these 18 bytes. */
const CRC_SUFFIX = ',"crc":"';
const CRC_SUFFIX_BYTES = CRC_SUFFIX.length + 8 + 2;
const CRC_SUFFIX_CODES = Buffer.from(CRC_SUFFIX, "latin1");
const NEWLINE = 0x0a;
/**
 * A batch whose line would be longer than this is written in parts (see frameEntryLines): a
 * migration's batch of a million records never becomes one string, which V8 caps at about 512 MiB.
 */
export const MAX_LOG_LINE_CHARS = 64 * 1024 * 1024;

/**
 * One line of JSON text ending in a CRC-32 of everything before the crc field, so that `jq` reads
 * the files as they are and a torn or flipped line is told from a whole one. `value` must have at
 * least one field of its own.
 */
export function frameLine(value: object): string {
  return frameHead(JSON.stringify(value).slice(0, -1));
}

/**
 * `head` (JSON text without its closing brace) framed. The checksum is taken over the string, and
 * a flush encodes its lines together: for lines of one record that costs less than encoding each
 * line to bytes once and checksumming those, and for a 1,000-record line about the same.
 */
function frameHead(head: string): string {
  return `${head}${CRC_SUFFIX}${crcHex(crc32(head))}"}\n`;
}

/** A CRC-32 as written in data files: 8 lowercase hex digits. */
export function crcHex(crc: number): string {
  return crc.toString(16).padStart(8, "0");
}

/**
 * A log entry framed as frameLine({ seq, ...fields }) frames it, byte for byte, but a row's data
 * JSON is taken from memo.dataJson when the records layer left it there: a new version is
 * serialized once, for its answer and its log line.
 */
export function frameEntry(seq: number, fields: Omit<LogEntry, "seq">): string {
  return frameEntryLines(seq, fields, Infinity)[0]!;
}

/**
 * The lines of a log entry. A batch whose line would pass `maxLineChars` is written in parts, each
 * a framed line of its own holding the next run of its puts, in order:
 *   {"seq":7,"more":true,"puts":[…],"crc":…}      every part but the last: the same seq, "more"
 *   {"seq":7,"puts":[…],"answer":…,"crc":…}        the last part: the rest, as a one-line entry is
 * The seq is the batch's, as for a batch of one line: the log numbers batches, not lines, and the
 * rows' feed positions (seq, index in the batch) count the puts of every part. A reader holds the
 * parts until the last one comes (PartJoiner) and applies the batch then, whole. Parts are written
 * together, in one group, so a crash can leave only the first parts of the newest batch at the end
 * of the log, which start-up cuts off as it cuts any torn tail: the batch, never answered, is gone
 * whole. A single put longer than the bound is a part of its own.
 */
export function frameEntryLines(seq: number, fields: Omit<LogEntry, "seq">, maxLineChars = MAX_LOG_LINE_CHARS): string[] {
  return frameEntryPieces(seq, fields, maxLineChars).map((pieces) => pieces.join(""));
}

/**
 * The lines of frameEntryLines, each as the pieces of text it is made of (a row's data JSON is one),
 * its checksum taken piece by piece. The log writes the pieces as they are (encodeLines): a batch's
 * line is never joined into one string, which for a bulk write of 10 MB would be a copy of 10 MB,
 * and the checksum's encoding of it another.
 */
export function frameEntryPieces(seq: number, fields: Omit<LogEntry, "seq">, maxLineChars: number): string[][] {
  const puts = fields.puts ?? [];
  const lines: string[][] = [];
  let part: string[] = [];
  let partChars = 0;
  let first = 0;
  for (let i = 0; i < puts.length; i++) {
    const [open, data, close] = putPieces(puts[i]!);
    const chars = open.length + data.length + close.length;
    if (i > first && partChars + chars > maxLineChars) {
      lines.push(framePieces([`{"seq":${seq},"more":true,"puts":[`, ...part, "]"]));
      part = [];
      partChars = 0;
      first = i;
    }
    if (i > first) {
      part.push(",");
      partChars++;
    }
    part.push(open, data, close);
    partChars += chars;
  }
  const pieces = [`{"seq":${seq}`];
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined) continue; // as JSON.stringify skips it
    if (name === "puts") {
      // A loop, not push(...part): a migration's batch holds millions of pieces, past what a call takes as arguments.
      pieces.push(`,"puts":[`);
      for (const piece of part) pieces.push(piece);
      pieces.push("]");
    }
    else pieces.push(`,${JSON.stringify(name)}:${JSON.stringify(value)}`);
  }
  lines.push(framePieces(pieces));
  return lines;
}

/** `pieces` (a line's text without its closing brace) with the checksum frameHead gives it. */
function framePieces(pieces: string[]): string[] {
  let crc = 0;
  for (const piece of pieces) crc = crc32(piece, crc);
  pieces.push(`${CRC_SUFFIX}${crcHex(crc)}"}\n`);
  return pieces;
}

/** JSON.stringify(put) in three pieces, its data JSON the middle one; its row written as a RowImage: never its memo. */
function putPieces({ e, row, s }: LogPut): [string, string, string] {
  // Rows handed to the log are Rows (store.ts); memo.dataJson is JSON.stringify(row.data) (records.ts).
  const data = (row as Row).memo?.dataJson ?? JSON.stringify(row.data);
  return [`{"e":${JSON.stringify(e)},"row":{"id":${JSON.stringify(row.id)},"rev":${row.rev},"deleted":${row.deleted},"data":`, data, `}${s === 1 ? ',"s":1' : ""}}`];
}

/**
 * Joins the lines of a batch written in parts back into its entry (see frameEntryLines). Lines are
 * handed over in file order, each parsed and whole; `take` answers the entry a line completes.
 */
export class PartJoiner {
  private held: { seq: number; puts: LogPut[]; parts: number } | null = null;

  /** The seq of the batch whose first parts are held, waiting for its last; undefined when none is. */
  get heldSeq(): number | undefined {
    return this.held?.seq;
  }

  /** How many parts are held. */
  get heldParts(): number {
    return this.held?.parts ?? 0;
  }

  /**
   * The entry `line` completes; null while it is a part with more to come. A line of another seq
   * than the held parts' answers "orphaned" and is not taken: those parts never got their last (the
   * log is damaged) and are dropped; take the line again to start what follows.
   */
  take(line: LogEntry): LogEntry | null | "orphaned" {
    const held = this.held;
    if (held !== null && held.seq !== line.seq) {
      this.held = null;
      return "orphaned";
    }
    if (line.more === true) {
      if (held === null) this.held = { seq: line.seq, puts: [], parts: 0 };
      appendAll(this.held!.puts, line.puts ?? []);
      this.held!.parts++;
      return null;
    }
    if (held === null) return line;
    this.held = null;
    appendAll(held.puts, line.puts ?? []);
    return { ...line, puts: held.puts };
  }

  /** Forgets held parts (a reader met damage after them). */
  drop(): void {
    this.held = null;
  }
}

/** Pushes one at a time: a spread of a million arguments would overflow the stack. */
function appendAll<T>(to: T[], items: readonly T[]): void {
  for (const item of items) to.push(item);
}

/**
 * The object a framed line holds (without its newline), or undefined when the line is damaged.
 * `text` is the line already decoded, when the caller has it (see scanLines); the checksum is
 * always checked on the bytes.
 */
export function parseFramedLine(line: Buffer, text?: string): Record<string, unknown> | undefined {
  return isFrameWhole(line) ? parseObjectText(text ?? line.toString("utf8")) : undefined;
}

/**
 * The entry the framed log line at `bytes[from, to)` (without its newline) holds, as start-up
 * replays it: like parseFramedLine, but the rows of its puts kept as their bytes, unparsed
 * (log-line.ts), unless the line is in a shape that reader leaves to JSON.parse. `bytes` must never
 * be reused: the rows point into it.
 */
export function readFramedLogLine(bytes: Buffer, from: number, to: number): Record<string, unknown> | undefined {
  if (!isFrameWhole(bytes.subarray(from, to))) return undefined;
  const entry = readLogLine(bytes, from, to - CRC_SUFFIX_BYTES);
  return entry ? (entry as unknown as Record<string, unknown>) : parseObjectText(bytes.toString("utf8", from, to));
}

/** Whether a line (without its newline) ends with a well-formed checksum that its bytes match. */
function isFrameWhole(line: Buffer): boolean {
  const headEnd = line.length - CRC_SUFFIX_BYTES;
  if (headEnd < 2 || !hasCrcSuffix(line, headEnd)) return false;
  const crc = parseHexCrc(line, line.length - 10);
  if (crc === undefined || line[line.length - 2] !== 0x22 || line[line.length - 1] !== 0x7d) return false;
  return crc32(line.subarray(0, headEnd)) === crc;
}

function parseObjectText(text: string): Record<string, unknown> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // A line whose checksum matches but which does not parse is as damaged as one that fails it.
    return undefined;
  }
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/**
 * Why parseFramedLine refuses `line` (without its newline), in words; undefined when it does not.
 * For reports (tabula verify): never on the start-up path, which only needs whether.
 */
export function describeFrameDamage(line: Buffer): string | undefined {
  const headEnd = line.length - CRC_SUFFIX_BYTES;
  if (headEnd < 2 || !hasCrcSuffix(line, headEnd) || line[line.length - 2] !== 0x22 || line[line.length - 1] !== 0x7d) return "torn entry: the line does not end with its checksum";
  const stated = parseHexCrc(line, line.length - 10);
  if (stated === undefined) return "torn entry: the checksum is not 8 hex digits";
  const actual = crc32(line.subarray(0, headEnd));
  if (actual !== stated) return `bad checksum: the line says ${crcHex(stated)}, its text's CRC-32 is ${crcHex(actual)}`;
  if (parseFramedLine(line) === undefined) return "bad JSON: the checksum matches but the text is not a JSON object";
  return undefined;
}

// Byte by byte rather than through a decoded slice and a regex: this runs once per row at start-up.
function hasCrcSuffix(line: Buffer, at: number): boolean {
  for (let i = 0; i < CRC_SUFFIX.length; i++) if (line[at + i] !== CRC_SUFFIX_CODES[i]) return false;
  return true;
}

/** The 8 lowercase hex digits at `at` as a number, or undefined if they are not that. */
function parseHexCrc(line: Buffer, at: number): number | undefined {
  let crc = 0;
  for (let i = at; i < at + 8; i++) {
    const code = line[i]!;
    const digit = code >= 0x30 && code <= 0x39 ? code - 0x30 : code >= 0x61 && code <= 0x66 ? code - 0x57 : -1;
    if (digit < 0) return undefined;
    crc = crc * 16 + digit;
  }
  return crc;
}

export interface ScanResult {
  /** Bytes in the file. */
  readonly size: number;
  /** Where the bytes after the last newline start (size when the file ends with one). */
  readonly tailOffset: number;
  /** Whether those bytes are all zero (a log segment's preallocated room); true when there are none. */
  readonly tailIsZeros: boolean;
}

/**
 * Hands every newline-terminated line of a file to onLine; `line` is a view of the read buffer,
 * valid during the call only. A run of pure ASCII lines (the usual case) is decoded once and each
 * line gets its slice of that text: a snapshot line then parsed in 5.9 µs instead of 7.7 µs with a
 * decode of its own. Other lines get no text and are decoded by parseFramedLine.
 */
export async function scanLines(path: string, onLine: (line: Buffer, offset: number, text: string | undefined) => void): Promise<ScanResult> {
  const { size, rest } = await scanLineRuns(path, false, (run, offset) => {
    // latin1 maps each byte to one character, so for ASCII text byte offsets are string offsets.
    const text = isAscii(run) ? run.toString("latin1") : undefined;
    for (let from = 0; from < run.length; ) {
      const newline = run.indexOf(NEWLINE, from);
      onLine(run.subarray(from, newline), offset + from, text?.slice(from, newline));
      from = newline + 1;
    }
  });
  return { size, tailOffset: size - rest.length, tailIsZeros: isAllZeros(rest) };
}

/**
 * Reads a file a chunk at a time (never whole) and hands over runs of whole lines: each a view
 * of the read buffer that ends with a newline (valid during the call only), with its offset in
 * the file. A line is never joined from pieces: the bytes after a run's last newline move to
 * the front of the buffer and the next read fills in after them. A line longer than the buffer
 * grows it, but reads still stop at SCAN_CHUNK_BYTES once the long line is through, so runs
 * stay short. With `holdLastLine` each run leaves its last whole line to the next, so the
 * file's last whole line is never handed over (a snapshot's end marker). Answers the file's
 * size and the bytes no run held: that line, if any, and whatever follows the last newline.
 */
export async function scanLineRuns(path: string, holdLastLine: boolean, onRun: (run: Buffer, offset: number) => void): Promise<{ size: number; rest: Buffer }> {
  const handle = await open(path, "r");
  try {
    let buffer = Buffer.allocUnsafe(SCAN_CHUNK_BYTES);
    let kept = 0;
    let position = 0;
    for (;;) {
      if (kept === buffer.length) buffer = Buffer.concat([buffer, Buffer.allocUnsafe(buffer.length)]);
      const fill = kept < SCAN_CHUNK_BYTES ? SCAN_CHUNK_BYTES : buffer.length;
      const { bytesRead } = await handle.read(buffer, kept, fill - kept, position);
      if (bytesRead === 0) break;
      position += bytesRead;
      const end = kept + bytesRead;
      const last = buffer.lastIndexOf(NEWLINE, end - 1);
      const cut = !holdLastLine ? last : last > 0 ? buffer.lastIndexOf(NEWLINE, last - 1) : -1;
      if (cut < 0) {
        kept = end;
        continue;
      }
      onRun(buffer.subarray(0, cut + 1), position - end);
      buffer.copy(buffer, 0, cut + 1, end);
      kept = end - cut - 1;
    }
    return { size: position, rest: Buffer.from(buffer.subarray(0, kept)) };
  } finally {
    await handle.close();
  }
}

function isAllZeros(bytes: Buffer): boolean {
  for (let i = 0; i < bytes.length; i++) if (bytes[i] !== 0) return false;
  return true;
}
