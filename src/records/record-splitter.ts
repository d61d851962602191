// The records of an import file, one at a time with the line each starts on, whatever the file's
// size: NDJSON (one record per line; blank lines skipped) or one JSON array, told apart by the
// first character that is not white space. The array is cut into its elements by a scanner that
// tracks strings and nesting, so each element is parsed alone and the file is never held whole.
// Used by `tabula import` and by an upload to POST …/import (docs/operating.md).

import { recordOverreach, type SizeLimits } from "../json-depth.ts";

/** The file is not what it should be, at `line`: the message says what and where. */
export class FileFormatError extends Error {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(message);
  }
}

export interface SourceRecord {
  /** 1-based line of the file where the record starts. */
  readonly line: number;
  /** The record's JSON text. */
  readonly text: string;
}

export type ImportFormat = "ndjson" | "json";

/** Splits chunks of text into records; push() gives the records each chunk completes. */
export class RecordSplitter {
  private format: ImportFormat | null = null;
  private line = 1;
  /** Text of the record being read (from earlier chunks), and the line it started on. */
  private pending = "";
  private startLine = 0;
  private hasElement = false;
  // The JSON array scanner's state.
  private depth = 0;
  private isInString = false;
  private isEscaped = false;
  private isArrayClosed = false;

  push(chunk: string): SourceRecord[] {
    let from = 0;
    if (this.format === null) {
      from = chunk.search(/[^\s\uFEFF]/);
      if (from === -1) {
        this.line += countLines(chunk, 0, chunk.length);
        return [];
      }
      this.line += countLines(chunk, 0, from);
      this.format = chunk[from] === "[" ? "json" : "ndjson";
      if (this.format === "json") from++;
    }
    return this.format === "ndjson" ? this.ndjson(chunk, from) : this.array(chunk, from);
  }

  /** What is left at the end of the file: the last NDJSON line, or an unclosed array. */
  end(): SourceRecord[] {
    if (this.format === "ndjson") return this.ndjson("\n", 0);
    if (this.format === "json" && !this.isArrayClosed) {
      throw new FileFormatError(`The JSON array that starts the file never ends (line ${this.line}): the file is cut short, or is not one JSON array.`, this.line);
    }
    return [];
  }

  private ndjson(chunk: string, from: number): SourceRecord[] {
    const out: SourceRecord[] = [];
    for (let at = from; ; ) {
      const newline = chunk.indexOf("\n", at);
      if (newline === -1) {
        this.pending += chunk.slice(at);
        return out;
      }
      const text = (this.pending + chunk.slice(at, newline)).trim();
      if (text !== "") out.push({ line: this.line, text });
      this.pending = "";
      this.line++;
      at = newline + 1;
    }
  }

  private array(chunk: string, from: number): SourceRecord[] {
    const out: SourceRecord[] = [];
    let segment = from; // where this chunk's part of the pending element starts
    for (let i = from; i < chunk.length; i++) {
      const c = chunk.charCodeAt(i);
      if (c === NEWLINE) this.line++;
      if (this.isArrayClosed) {
        if (!isSpace(c)) throw new FileFormatError(`Line ${this.line}: text after the end of the JSON array; a file holds one array, or NDJSON.`, this.line);
        continue;
      }
      if (this.isInString) {
        if (this.isEscaped) this.isEscaped = false;
        else if (c === BACKSLASH) this.isEscaped = true;
        else if (c === QUOTE) this.isInString = false;
        continue;
      }
      if (this.depth === 0 && (c === COMMA || c === CLOSE_BRACKET)) {
        const text = (this.pending + chunk.slice(segment, i)).trim();
        this.pending = "";
        segment = i + 1;
        if (text === "" && (c === COMMA || this.hasElement)) {
          throw new FileFormatError(`Line ${this.line}: an empty element in the JSON array (two commas, or a comma before "]").`, this.line);
        }
        if (text !== "") out.push({ line: this.startLine, text });
        this.hasElement = c === COMMA;
        if (c === CLOSE_BRACKET) this.isArrayClosed = true;
        continue;
      }
      if (this.depth === 0 && !isSpace(c) && (this.pending + chunk.slice(segment, i)).trim() === "") this.startLine = this.line;
      if (c === QUOTE) this.isInString = true;
      else if (c === OPEN_BRACE || c === OPEN_BRACKET) this.depth++;
      else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) this.depth--;
    }
    if (!this.isArrayClosed) this.pending += chunk.slice(segment);
    return out;
  }
}

const NEWLINE = 10;
const QUOTE = 34;
const COMMA = 44;
const BACKSLASH = 92;
const OPEN_BRACKET = 91;
const CLOSE_BRACKET = 93;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;

function isSpace(c: number): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9;
}

function countLines(text: string, from: number, to: number): number {
  let lines = 0;
  for (let i = text.indexOf("\n", from); i !== -1 && i < to; i = text.indexOf("\n", i + 1)) lines++;
  return lines;
}

/**
 * A record's JSON parsed, or a FileFormatError naming its line. With `limits` (an upload's), a
 * record far past them is refused unread (json-depth.ts, UNPARSED_FACTOR).
 */
export function parseRecord(record: SourceRecord, limits?: SizeLimits): SourceRecord & { readonly value: unknown } {
  const overreach = limits === undefined ? null : recordOverreach(record.text, limits);
  if (overreach !== null) throw new FileFormatError(`Line ${record.line}: the record holds ${overreach.words}, so it is refused unread.`, record.line);
  try {
    return { ...record, value: JSON.parse(record.text) };
  } catch (error) {
    throw new FileFormatError(`Line ${record.line}: not valid JSON (${(error as Error).message}).`, record.line);
  }
}
