// A row loaded from a snapshot, kept as its data's JSON text until something reads row.data: a
// start-up then parses no row (docs/architecture.md, "Rows parsed on first use"). The text goes
// once the data is parsed. Rows are immutable versions, so the text stays the data's JSON for as
// long as it is kept, and a snapshot or a read by id can use it as it is.

import type { Row, RowMemo } from "./store.ts";

export class TextRow implements Row {
  memo?: RowMemo = undefined;
  seq?: number;
  index?: number;
  private text: string | undefined;
  private parsed: Readonly<Record<string, unknown>> | undefined = undefined;

  constructor(
    readonly id: string,
    readonly rev: number,
    readonly deleted: boolean,
    text: string,
    seq: number,
    index: number,
  ) {
    this.text = text;
    this.seq = seq;
    this.index = index;
  }

  get data(): Readonly<Record<string, unknown>> {
    if (this.parsed === undefined) {
      // The snapshot's checksum covered this text when it was read; the snapshot's writer wrote it
      // with JSON.stringify, so it parses.
      this.parsed = JSON.parse(this.text!) as Record<string, unknown>;
      this.text = undefined;
    }
    return this.parsed;
  }

  /** The data's JSON as stored, while it has not been parsed. */
  get unparsedJson(): string | undefined {
    return this.text;
  }
}

/** JSON.stringify(row.data), without parsing or stringifying when the row still holds it as text. */
export function dataJsonOf(row: Row): string {
  return (row instanceof TextRow ? row.unparsedJson : undefined) ?? row.memo?.dataJson ?? JSON.stringify(row.data);
}

/** The data's JSON text of a row not yet parsed, else undefined. */
export function unparsedDataJson(row: Row): string | undefined {
  return row instanceof TextRow ? row.unparsedJson : undefined;
}

/**
 * Calls `visit` with where each member name of a JSON object's text lies (between its quotes), as
 * JSON.stringify writes it (no white space), without parsing the values: strings are skipped with
 * indexOf. Answers false, having visited some names perhaps, for text it does not read so (a name
 * with an escape in it), which the caller then parses.
 */
export function forEachMemberName(json: string, visit: (json: string, nameFrom: number, nameTo: number) => void): boolean {
  const end = json.length - 1;
  if (json.charCodeAt(0) !== 0x7b || json.charCodeAt(end) !== 0x7d) return false;
  let at = 1;
  while (at < end) {
    if (json.charCodeAt(at) !== 0x22) return false;
    const nameEnd = closingQuoteOf(json, at);
    if (nameEnd < 0 || json.charCodeAt(nameEnd + 1) !== 0x3a) return false;
    const nameFrom = at + 1;
    if (json.lastIndexOf("\\", nameEnd) >= nameFrom) return false;
    at = nameEnd + 2;
    visit(json, nameFrom, nameEnd);
    // Past the value: to the comma or closing brace at this object's own depth.
    for (let depth = 0; ; ) {
      const code = json.charCodeAt(at);
      if (code === 0x22) {
        const close = closingQuoteOf(json, at);
        if (close < 0) return false;
        at = close + 1;
      } else if (code === 0x7b || code === 0x5b) {
        depth++;
        at++;
      } else if (code === 0x7d || code === 0x5d) {
        if (depth === 0) break;
        depth--;
        at++;
      } else if (code === 0x2c && depth === 0) {
        break;
      } else if (Number.isNaN(code)) {
        return false;
      } else {
        at++;
      }
    }
    if (at === end) return true;
    if (json.charCodeAt(at) !== 0x2c) return false;
    at++;
  }
  return at === end;
}

/** Where the string opening at `quote` closes: the next quote not escaped by a backslash. */
function closingQuoteOf(json: string, quote: number): number {
  for (let at = json.indexOf('"', quote + 1); at >= 0; at = json.indexOf('"', at + 1)) {
    let backslashes = 0;
    while (json.charCodeAt(at - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
  return -1;
}

/**
 * Gathers the member names of many rows' data JSON, slicing a name out only when it is new: rows
 * of one entity mostly share theirs, in the same order, so each is first compared with the name
 * that followed the one before.
 */
export class MemberNames {
  readonly names: string[] = [];
  private last = -1;

  /** False when `json` must be parsed instead (see forEachMemberName). */
  add(json: string): boolean {
    this.last = -1;
    return forEachMemberName(json, this.visit);
  }

  private readonly visit = (json: string, from: number, to: number): void => {
    const { names } = this;
    const length = to - from;
    for (let tried = 0, at = this.last + 1; tried < names.length; tried++, at++) {
      if (at === names.length) at = 0;
      const name = names[at]!;
      if (name.length === length && json.startsWith(name, from)) {
        this.last = at;
        return;
      }
    }
    this.last = names.push(json.slice(from, to)) - 1;
  };
}
