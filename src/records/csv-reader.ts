// CSV as RFC 4180 writes it (and as `tabula export --format csv` does): cells split by commas,
// a quoted cell may hold commas, line breaks and doubled quotes; records end with CRLF or LF; a
// BOM may open the file. Read a chunk at a time; each record carries the physical line it starts
// on, so that an error names the line a spreadsheet shows. What the cells mean is import-file.ts's.

import { FileFormatError } from "./record-splitter.ts";

export interface CsvRecord {
  /** 1-based line of the file where the record starts. */
  readonly line: number;
  readonly cells: readonly string[];
}

const QUOTE = 34;
const COMMA = 44;
const CR = 13;
const LF = 10;
const BOM = 0xfeff;

type State = "cellStart" | "unquoted" | "quoted" | "quoteInQuoted";

export class CsvReader {
  private state: State = "cellStart";
  private cell = "";
  private cells: string[] = [];
  private line = 1;
  private recordLine = 1;
  /** The last character was a CR: a LF now ends nothing more (CRLF is one line end). */
  private afterCr = false;
  private isStart = true;

  push(chunk: string): CsvRecord[] {
    const out: CsvRecord[] = [];
    let from = 0;
    if (this.isStart && chunk.length > 0) {
      this.isStart = false;
      if (chunk.charCodeAt(0) === BOM) from = 1;
    }
    for (let i = from; i < chunk.length; i++) {
      const c = chunk.charCodeAt(i);
      const wasAfterCr = this.afterCr;
      this.afterCr = c === CR;
      // The LF of a CRLF: its line was counted, and outside quotes its record ended, at the CR.
      if (c === LF && wasAfterCr && this.state !== "quoted") continue;
      switch (this.state) {
        case "cellStart":
          if (c === QUOTE) this.state = "quoted";
          else this.unquoted(c, chunk[i]!, out);
          break;
        case "unquoted":
          this.unquoted(c, chunk[i]!, out);
          break;
        case "quoted":
          if (c === QUOTE) this.state = "quoteInQuoted";
          else {
            if (c === CR || (c === LF && !wasAfterCr)) this.line++;
            this.cell += chunk[i];
          }
          break;
        case "quoteInQuoted":
          if (c === QUOTE) {
            this.cell += '"';
            this.state = "quoted";
          } else if (c === COMMA) this.endCell();
          else if (c === CR || c === LF) this.endRecord(out);
          else throw new FileFormatError(`Line ${this.line}: text after the closing quote of a cell; a quote inside a quoted cell is written twice ("").`, this.line);
          break;
      }
    }
    return out;
  }

  /** The last record when the file does not end with a line break; an unclosed quote is refused. */
  end(): CsvRecord[] {
    if (this.state === "quoted") {
      throw new FileFormatError(`Line ${this.recordLine}: a quoted cell opens here and never closes; the file is cut short, or a quote is missing.`, this.recordLine);
    }
    const out: CsvRecord[] = [];
    if (this.state !== "cellStart" || this.cells.length > 0) this.endRecord(out);
    return out;
  }

  private unquoted(c: number, char: string, out: CsvRecord[]): void {
    if (c === COMMA) this.endCell();
    else if (c === CR || c === LF) this.endRecord(out);
    else if (c === QUOTE) throw new FileFormatError(`Line ${this.line}: a quote inside a cell that does not start with one; quote the whole cell and double the quotes in it ("say ""hi""").`, this.line);
    else {
      this.cell += char;
      this.state = "unquoted";
    }
  }

  private endCell(): void {
    this.cells.push(this.cell);
    this.cell = "";
    this.state = "cellStart";
  }

  private endRecord(out: CsvRecord[]): void {
    const wasQuoted = this.state === "quoteInQuoted";
    this.endCell();
    // A blank line is no record (RFC 4180 has none; spreadsheets leave them at the end).
    if (!(this.cells.length === 1 && this.cells[0] === "" && !wasQuoted)) out.push({ line: this.recordLine, cells: this.cells });
    this.cells = [];
    this.line++;
    this.recordLine = this.line;
  }
}

/** Every record of a whole text (tests, small files). */
export function readCsv(text: string): CsvRecord[] {
  const reader = new CsvReader();
  return [...reader.push(text), ...reader.end()];
}
