// An uploaded import file (src/records/import-file.ts) on its own: which format a file is read
// as, the records it holds, the refusals of files that are not records, and CSV cells typed by
// their field's declaration.

import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError } from "../../src/errors.ts";
import { csvValue, ImportFileReader, type ImportFile } from "../../src/records/import-file.ts";
import type { FieldDef } from "../../src/schema/fields.ts";

function read(name: string, contentType: string | null, text: string | Buffer, pieceSize = 5): ImportFile {
  const reader = new ImportFileReader(name, contentType);
  const bytes = typeof text === "string" ? Buffer.from(text) : text;
  for (let at = 0; at < bytes.length; at += pieceSize) reader.push(bytes.subarray(at, at + pieceSize));
  return reader.end();
}

function summary(file: ImportFile): unknown {
  return file.format === "json"
    ? { format: "json", records: file.records.map(({ line, value }) => [line, value]) }
    : { format: "csv", header: file.header?.cells, rows: file.rows.map(({ line, cells }) => [line, cells]) };
}

const FORMATS: Array<[name: string, contentType: string | null, text: string, expected: unknown]> = [
  ["a.csv", "application/vnd.ms-excel", "title\nx\n", { format: "csv", header: ["title"], rows: [[2, ["x"]]] }],
  ["a.json", null, '\n[{"title": "x"},\n {"title": "y"}]', { format: "json", records: [[2, { title: "x" }], [3, { title: "y" }]] }],
  ["a.ndjson", null, '{"title": "x"}\n\n{"title": "y"}\n', { format: "json", records: [[1, { title: "x" }], [3, { title: "y" }]] }],
  ["a.jsonl", "application/octet-stream", '{"title": "x"}', { format: "json", records: [[1, { title: "x" }]] }],
  ["upload", "text/csv", "title\nx", { format: "csv", header: ["title"], rows: [[2, ["x"]]] }],
  ["upload", "application/x-ndjson", '{"title": "x"}', { format: "json", records: [[1, { title: "x" }]] }],
  ["blob", null, '  [{"title": "x"}]', { format: "json", records: [[1, { title: "x" }]] }],
  ["blob", "application/octet-stream", "title,done\nx,true\n", { format: "csv", header: ["title", "done"], rows: [[2, ["x", "true"]]] }],
  ["notes.txt", "text/plain", '{"title": "x"}\n', { format: "json", records: [[1, { title: "x" }]] }],
  ["bom.csv", "text/csv", "\uFEFFtitle\r\nx\r\n", { format: "csv", header: ["title"], rows: [[2, ["x"]]] }],
];

for (const [name, contentType, text, expected] of FORMATS) {
  test(`${name} (${contentType ?? "no type"}) is read as ${(expected as { format: string }).format}`, () => {
    assert.deepEqual(summary(read(name, contentType, text)), expected);
    assert.deepEqual(summary(read(name, contentType, text, 1)), expected);
  });
}

const REFUSALS: Array<[name: string, contentType: string | null, text: string | Buffer, message: RegExp]> = [
  ["empty.csv", "text/csv", "", /The file empty\.csv is empty; it holds no records/],
  ["blank.json", null, " \n\t\n", /is empty \(only white space\)/],
  ["sheet.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "PK\u0003\u0004", /is not JSON, NDJSON or CSV/],
  ["photo", null, Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00]), /is not UTF-8 text/],
  ["page", null, "<html></html>", /starts with "<", as XML or HTML does/],
  ["a.json", null, "title\nx\n", /named or typed as JSON but starts with "t"/],
  ["a.csv", null, '[{"title": "x"}]', /named or typed as CSV but starts with "\["/],
  ["a.json", null, '[{"title": "x"},\n{"title": ', /a\.json: The JSON array that starts the file never ends \(line 2\)/],
  ["a.ndjson", null, '{"title": "x"}\n{"title": \n', /a\.ndjson: Line 2: not valid JSON/],
  ["a.csv", null, 'title\n"x\n', /a\.csv: Line 2: a quoted cell opens here and never closes/],
];

for (const [name, contentType, text, message] of REFUSALS) {
  test(`${name}: ${message.source.slice(0, 50)}… is 400 invalid_file`, () => {
    assert.throws(
      () => read(name, contentType, text),
      (error) => error instanceof ApiError && error.status === 400 && error.code === "invalid_file" && message.test(error.message),
    );
  });
}

const field = (type: FieldDef["type"]): FieldDef => ({ name: "f", type, required: false });

test("CSV cells are typed by their field's declaration", () => {
  const cases: Array<[FieldDef["type"], string, unknown]> = [
    ["string", " as is ", " as is "],
    ["number", "3", 3],
    ["number", "-2.5e2", -250],
    ["number", " 0.5 ", 0.5],
    ["integer", "3", 3],
    ["integer", "3.5", 3.5], // the declaration's check refuses it, naming the line
    ["boolean", "true", true],
    ["boolean", "FALSE", false],
    ["array", '["a", "b"]', ["a", "b"]],
    ["object", '{"deep": [1]}', { deep: [1] }],
  ];
  for (const [type, text, expected] of cases) assert.deepEqual(csvValue(field(type), text), expected, `${type} ${JSON.stringify(text)}`);
});

test("a CSV cell its field's type cannot take is refused invalid_field", () => {
  const cases: Array<[FieldDef["type"], string, RegExp]> = [
    ["number", "three", /must be a number \(got "three"\)/],
    ["number", "0x10", /must be a number/],
    ["integer", "1,000", /must be a whole number/],
    ["boolean", "yes", /must be true or false \(got "yes"\)/],
    ["array", "a;b", /its cell holds JSON text such as \["a", "b"\]/],
    ["object", "{a: 1}", /its cell holds JSON text such as \{"a": 1\}/],
  ];
  for (const [type, text, message] of cases) {
    assert.throws(() => csvValue(field(type), text), (error) => error instanceof ApiError && error.code === "invalid_field" && message.test(error.message), `${type} ${text}`);
  }
});
