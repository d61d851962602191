// The CSV reader (src/records/csv-reader.ts): RFC 4180 cells and the physical line each record
// starts on, the same however the text is cut into chunks.

import assert from "node:assert/strict";
import { test } from "node:test";
import { CsvReader, readCsv, type CsvRecord } from "../../src/records/csv-reader.ts";

function readInChunks(text: string, size: number): CsvRecord[] {
  const reader = new CsvReader();
  const out: CsvRecord[] = [];
  for (let at = 0; at < text.length; at += size) out.push(...reader.push(text.slice(at, at + size)));
  return [...out, ...reader.end()];
}

const CASES: Array<[name: string, text: string, expected: Array<[line: number, cells: string[]]>]> = [
  ["plain cells, LF", "a,b\n1,2\n", [[1, ["a", "b"]], [2, ["1", "2"]]]],
  ["CRLF line ends", "a,b\r\n1,2\r\n", [[1, ["a", "b"]], [2, ["1", "2"]]]],
  ["no line end after the last record", "a,b\n1,2", [[1, ["a", "b"]], [2, ["1", "2"]]]],
  ["a BOM opens the file", "\uFEFFa,b\n1,2\n", [[1, ["a", "b"]], [2, ["1", "2"]]]],
  ["empty cells", "a,b,c\n,,\n1,,3\n", [[1, ["a", "b", "c"]], [2, ["", "", ""]], [3, ["1", "", "3"]]]],
  ["a quoted cell holds commas and doubled quotes", 'a,b\n"x, y","say ""hi"""\n', [[1, ["a", "b"]], [2, ["x, y", 'say "hi"']]]],
  ["a quoted cell holds a line break: the next record's line counts it", 'a,b\n"one\ntwo",2\nz,3\n', [[1, ["a", "b"]], [2, ["one\ntwo", "2"]], [4, ["z", "3"]]]],
  ["a quoted CRLF is kept, and counts one line", 'a\r\n"one\r\ntwo"\r\nz\r\n', [[1, ["a"]], [2, ["one\r\ntwo"]], [4, ["z"]]]],
  ["blank lines are no records, but count", "a\n\n1\n\n\n2\n", [[1, ["a"]], [3, ["1"]], [6, ["2"]]]],
  ["a quoted empty cell is a record", 'a\n""\n', [[1, ["a"]], [2, [""]]]],
  ["white space is part of a cell", "a, b \n", [[1, ["a", " b "]]]],
  ["an empty text has no record", "", []],
];

for (const [name, text, expected] of CASES) {
  test(`CSV: ${name}, in any chunks`, () => {
    const want = expected.map(([line, cells]) => ({ line, cells }));
    assert.deepEqual(readCsv(text), want);
    for (const size of [1, 2, 3, 7]) assert.deepEqual(readInChunks(text, size), want, `chunks of ${size}`);
  });
}

const REFUSALS: Array<[name: string, text: string, message: RegExp, line: number]> = [
  ["a quote that never closes", 'a\n"open\nstill open\n', /^Line 2: a quoted cell opens here and never closes/, 2],
  ["text after a closing quote", 'a\n"x"y\n', /^Line 2: text after the closing quote/, 2],
  ["a quote inside an unquoted cell", 'a\nx"y\n', /^Line 2: a quote inside a cell that does not start with one/, 2],
];

for (const [name, text, message, line] of REFUSALS) {
  test(`CSV: ${name} is refused at its line, in any chunks`, () => {
    for (const size of [1, 4, text.length]) {
      assert.throws(() => readInChunks(text, size), (error: Error & { line?: number }) => message.test(error.message) && error.line === line);
    }
  });
}
