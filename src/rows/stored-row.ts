// Every version of a record that the memory and file stores hold is a StoredRow: one class, so that
// the scans, sorts and filters reading row.data meet one shape of object. Rows built as object
// literals in four places, beside rows kept as text, had five shapes, and counts, searches and
// updates ran 9–27% slower than before rows were kept as text (docs/benchmarks.md, "Start-up and
// cold reads").
//
// A row loaded from a snapshot keeps its data as the JSON bytes it was read as, in the buffer the
// file was read into, until something reads row.data: a start-up parses no row
// (docs/architecture.md, "Rows parsed on first use"). Rows are immutable versions, so the text
// stays the data's JSON for as long as it is kept, and a snapshot or a read by id can use it as it is.

import { RepeatedStrings } from "./repeated-strings.ts";
import type { Row, RowMemo } from "./row.ts";

/** Shared by every row parsed on first use, in the order they are parsed. */
const parsedStrings = new RepeatedStrings();

export type RowData = Readonly<Record<string, unknown>>;

export class StoredRow implements Row {
  memo: RowMemo | undefined;
  seq: number | undefined;
  index: number | undefined;
  /** The data; undefined while it is held as text. */
  private parsed: RowData | undefined;
  /**
   * While the data is held as text: what holds its JSON, from textAt to textEnd: the bytes a
   * snapshot was read into, or the decoded text of a log line (log-line.ts).
   */
  private textBytes: Buffer | string | undefined = undefined;
  /** -1 for a version never held as text (see wasLoadedAsText). */
  private textAt = -1;
  private textEnd = -1;

  constructor(
    readonly id: string,
    readonly rev: number,
    readonly deleted: boolean,
    data: RowData,
    memo?: RowMemo,
    seq?: number,
    index?: number,
  ) {
    this.parsed = data;
    this.memo = memo;
    this.seq = seq;
    this.index = index;
  }

  /**
   * A row whose data is the JSON at `text[from, to)`, parsed when first read. The caller has
   * checked the text (a checksum covers it) and read the id out of it.
   */
  static ofText(id: string, rev: number, deleted: boolean, text: Buffer | string, from: number, to: number, seq: number, index: number): StoredRow {
    const row = new StoredRow(id, rev, deleted, undefined as unknown as RowData, undefined, seq, index);
    row.textBytes = text;
    row.textAt = from;
    row.textEnd = to;
    return row;
  }

  get data(): RowData {
    const parsed = this.parsed;
    return parsed !== undefined ? parsed : this.parseText();
  }

  /** The data's JSON as it was stored, while it has not been parsed. */
  get unparsedJson(): string | undefined {
    const text = this.textBytes;
    if (text === undefined) return undefined;
    return typeof text === "string" ? text.slice(this.textAt, this.textEnd) : text.toString("utf8", this.textAt, this.textEnd);
  }

  get isUnparsed(): boolean {
    return this.textBytes !== undefined;
  }

  /** Whether this version was loaded as text (its member names are among the table's textFieldNames). */
  get wasLoadedAsText(): boolean {
    return this.textAt >= 0;
  }

  private parseText(): RowData {
    // The bytes were checked when they were read, and JSON.stringify wrote them: they parse.
    const parsed = JSON.parse(this.unparsedJson!) as Record<string, unknown>;
    // The row's id is the string the table is keyed by: data.id becomes that same string.
    if (parsed.id === this.id) parsed.id = this.id;
    parsedStrings.share(this.id, parsed);
    this.parsed = parsed;
    // The buffer (or text) is shared with the other rows of its part of the file; this row lets go of it.
    this.textBytes = undefined;
    return parsed;
  }
}

/** JSON.stringify(row.data), without parsing or stringifying when the row still holds it as text. */
export function dataJsonOf(row: Row): string {
  return unparsedDataJson(row) ?? row.memo?.dataJson ?? JSON.stringify(row.data);
}

/** The data's JSON text of a row not yet parsed, else undefined. */
export function unparsedDataJson(row: Row): string | undefined {
  return row instanceof StoredRow ? row.unparsedJson : undefined;
}

/** Whether the row still holds its data as the text it was loaded as (cheaper than unparsedDataJson). */
export function isUnparsed(row: Row): boolean {
  return row instanceof StoredRow && row.isUnparsed;
}

