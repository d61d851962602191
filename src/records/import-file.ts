// An uploaded import file (docs/base44-sdk.md, importEntities; docs/operating.md): its bytes read
// a piece at a time as JSON (one array), NDJSON or CSV, then its records imported as
// POST …/import imports a batch (import.ts). The whole file is one all-or-nothing write, so a
// refused file stores nothing. CSV cells are typed by the entity's declaration.

import { recordOverreach, type SizeLimits } from "../json-depth.ts";
import { ApiError, invalidField, invalidFile } from "../errors.ts";
import { isPlatformField, PLATFORM_FIELDS, type EntityDef, type FieldDef } from "../schema/fields.ts";
import type { Row } from "../store/store.ts";
import type { Caller } from "../keys/caller.ts";
import { CsvReader, type CsvRecord } from "./csv-reader.ts";
import { importItems } from "./import.ts";
import { FileFormatError, parseRecord, RecordSplitter, type SourceRecord } from "./record-splitter.ts";
import type { Change, Records } from "./records.ts";

export type ImportFile =
  | { readonly format: "json"; readonly name: string; readonly records: ReadonlyArray<{ readonly line: number; readonly value: unknown }> }
  | { readonly format: "csv"; readonly name: string; readonly header: CsvRecord | null; readonly rows: readonly CsvRecord[] };

type Family = "json" | "csv";

const JSON_EXTENSIONS = ["json", "ndjson", "jsonl"];
const CSV_TYPES = ["text/csv", "application/csv", "text/comma-separated-values"];
const JSON_TYPES = ["application/json", "application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonlines"];
/** Types that say nothing of the content: the first character decides. */
const VAGUE_TYPES = ["text/plain", "application/octet-stream"];
const MEND = "Send a JSON array, NDJSON (a record per line) or CSV (a header of field names, then a record per line), encoded as UTF-8";

/** Reads one uploaded file's bytes as they arrive; end() gives its records, unchecked against the entity. */
export class ImportFileReader {
  private readonly decoder = new TextDecoder("utf-8", { fatal: true });
  private family: Family | null;
  /** Text before the first character that is not white space, while the family waits on it. */
  private leading = "";
  private isSniffed = false;
  private readonly splitter = new RecordSplitter();
  private readonly csv = new CsvReader();
  private readonly records: Array<{ line: number; value: unknown }> = [];
  private readonly rows: CsvRecord[] = [];
  private bytes = 0;

  constructor(
    private readonly name: string,
    contentType: string | null,
    /** The records' limits, past which a record is refused unread (json-depth.ts); none from the command line's own files. */
    private readonly limits?: SizeLimits,
  ) {
    this.family = familyOf(name, contentType);
  }

  push(piece: Buffer): void {
    this.bytes += piece.length;
    this.read(this.decode(piece, true));
  }

  end(): ImportFile {
    this.read(this.decode(Buffer.alloc(0), false));
    if (!this.isSniffed) {
      throw invalidFile(`The file ${this.name} is empty${this.bytes > 0 ? " (only white space)" : ""}; it holds no records. ${MEND}.`, { file: this.name });
    }
    this.guard(() => (this.family === "json" ? this.splitter.end().forEach((record) => this.keep(record)) : this.rows.push(...this.csv.end())));
    if (this.family === "json") return { format: "json", name: this.name, records: this.records };
    const [header = null, ...rows] = this.rows;
    return { format: "csv", name: this.name, header, rows };
  }

  private decode(piece: Buffer, isStreaming: boolean): string {
    try {
      return this.decoder.decode(piece, { stream: isStreaming });
    } catch {
      // TextDecoder says only that the bytes are not UTF-8; the message says what to do about it.
      throw invalidFile(`The file ${this.name} is not UTF-8 text (it may be a spreadsheet's own format, or another encoding). ${MEND}; a spreadsheet saves this as "CSV UTF-8".`, { file: this.name });
    }
  }

  private read(text: string): void {
    if (text.length === 0) return;
    if (!this.isSniffed) {
      const at = text.search(/[^\s\uFEFF]/);
      if (at === -1) {
        this.leading += text;
        return;
      }
      this.isSniffed = true;
      this.family = this.checkFamily(text[at]!);
      text = this.leading + text;
      this.leading = "";
    }
    this.guard(() => {
      if (this.family === "json") for (const record of this.splitter.push(text)) this.keep(record);
      else this.rows.push(...this.csv.push(text));
    });
  }

  /** A record's value and line; its text is let go. */
  private keep(record: SourceRecord): void {
    const { line, value } = parseRecord(record, this.limits);
    this.records.push({ line, value });
  }

  /** The family the name or type gave, if the first character agrees; else the one it shows. */
  private checkFamily(first: string): Family {
    const isJsonLike = first === "[" || first === "{";
    if (this.family === "json" && !isJsonLike) {
      throw invalidFile(`The file ${this.name} is named or typed as JSON but starts with ${JSON.stringify(first)}, not "[" (an array) or "{" (NDJSON). If it is CSV, name it .csv.`, { file: this.name, line: 1 });
    }
    if (this.family === "csv" && isJsonLike) {
      throw invalidFile(`The file ${this.name} is named or typed as CSV but starts with ${JSON.stringify(first)}, as JSON does. If it is JSON, name it .json (or .ndjson).`, { file: this.name, line: 1 });
    }
    if (this.family !== null) return this.family;
    if (isJsonLike) return "json";
    if (first === "<") throw invalidFile(`The file ${this.name} starts with "<", as XML or HTML does. ${MEND}.`, { file: this.name, line: 1 });
    return "csv";
  }

  private guard(work: () => void): void {
    try {
      work();
    } catch (error) {
      if (!(error instanceof FileFormatError)) throw error;
      throw invalidFile(`${this.name}: ${error.message} Nothing was stored.`, { file: this.name, line: error.line });
    }
  }
}

/** JSON or CSV by the file's extension, then its Content-Type; null to decide by the first character. */
function familyOf(name: string, contentType: string | null): Family | null {
  const dot = name.lastIndexOf(".");
  const extension = dot === -1 ? "" : name.slice(dot + 1).toLowerCase();
  if (extension === "csv") return "csv";
  if (JSON_EXTENSIONS.includes(extension)) return "json";
  if (contentType !== null && CSV_TYPES.includes(contentType)) return "csv";
  if (contentType !== null && (JSON_TYPES.includes(contentType) || contentType.endsWith("+json"))) return "json";
  if (extension === "" || extension === "txt" || contentType === null || VAGUE_TYPES.includes(contentType)) return null;
  throw invalidFile(`The file ${name} (${contentType}) is not JSON, NDJSON or CSV. ${MEND}; a spreadsheet saves this as "CSV UTF-8".`, { file: name, contentType });
}

/** Imports the file's records into `entity` in one write; an error names the file's line. */
export function importFile(records: Records, entity: EntityDef, file: ImportFile, caller: Caller): Promise<Change<Row[]>> {
  const items = file.format === "json" ? file.records : csvItems(entity, file, records.limits);
  if (items.length === 0) throw invalidFile(`The file ${file.name} holds no records. ${MEND}.`, { file: file.name });
  return importItems(
    records,
    entity,
    items.map((item) => item.value),
    caller,
    (error, index) => error.atLine(items[index]!.line),
  );
}

/** Each CSV record as an object of typed values; an empty cell is no value. */
function csvItems(entity: EntityDef, file: Extract<ImportFile, { format: "csv" }>, limits: SizeLimits): Array<{ line: number; value: Record<string, unknown> }> {
  if (file.header === null) throw invalidFile(`The file ${file.name} holds no records. ${MEND}.`, { file: file.name });
  const columns = csvColumns(entity, file.header);
  return file.rows.map(({ line, cells }) => {
    if (cells.length !== columns.length) {
      throw invalidFile(`Line ${line} of the file has ${cells.length} cells; the header names ${columns.length} columns. Give every record one cell per column (an empty cell is no value).`, { file: file.name, line });
    }
    const value: Record<string, unknown> = {};
    for (const [i, column] of columns.entries()) {
      const text = cells[i]!;
      if (text === "") continue;
      try {
        value[column.name] = csvValue(column, text, limits);
      } catch (error) {
        throw error instanceof ApiError ? error.atLine(line) : error;
      }
    }
    return { line, value };
  });
}

/** The header's columns: each a declared field or one an export writes (id, the timestamps, created_by_id). */
function csvColumns(entity: EntityDef, header: CsvRecord): FieldDef[] {
  const seen = new Set<string>();
  return header.cells.map((cell, i) => {
    const name = cell.trim();
    if (name === "") throw invalidFile(`Line ${header.line} of the file: column ${i + 1} of the header has no name; the header names a field in each column.`, { line: header.line });
    if (seen.has(name)) throw invalidFile(`Line ${header.line} of the file: the header names the column "${name}" twice.`, { line: header.line, field: name });
    seen.add(name);
    const field = entity.fields.get(name);
    if (field) return field;
    if (isPlatformField(name)) return { name, type: "string", required: false };
    const fields = [...entity.fieldNames, ...PLATFORM_FIELDS];
    throw new ApiError(
      400,
      "unknown_field",
      `Line ${header.line} of the file: the header names the column "${name}", which ${entity.name} does not declare. Its fields are: ${fields.join(", ")}. Rename the column, remove it, or declare the field.`,
      { field: name, fields, line: header.line },
    );
  });
}

const NUMBER_RE = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/**
 * A cell's text as the value its field's type takes; the entity's checks (validate.ts) follow. An
 * array or object far past `limits` is refused unread (json-depth.ts, UNPARSED_FACTOR).
 */
export function csvValue(field: FieldDef, text: string, limits?: SizeLimits): unknown {
  switch (field.type) {
    case "string":
      return text;
    case "number":
    case "integer": {
      const trimmed = text.trim();
      if (!NUMBER_RE.test(trimmed)) throw invalidField(field.name, `must be a ${field.type === "integer" ? "whole number" : "number"} (got ${JSON.stringify(text)}).`, { value: text });
      return Number(trimmed);
    }
    case "boolean": {
      const word = text.trim().toLowerCase();
      if (word === "true") return true;
      if (word === "false") return false;
      throw invalidField(field.name, `must be true or false (got ${JSON.stringify(text)}).`, { value: text });
    }
    case "array":
    case "object": {
      const overreach = limits === undefined ? null : recordOverreach(text, limits);
      if (overreach !== null) throw invalidField(field.name, `holds ${overreach.words}, so its cell is refused unread.`, overreach.details);
      try {
        return JSON.parse(text);
      } catch {
        // The cell's words are more use than JSON.parse's position.
        const example = field.type === "array" ? `["a", "b"]` : `{"a": 1}`;
        throw invalidField(field.name, `is an ${field.type} field: its cell holds JSON text such as ${example} (got ${JSON.stringify(text.slice(0, 60))}).`, { value: text });
      }
    }
  }
}
