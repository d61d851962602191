// The import file reader (src/records/record-splitter.ts, src/commands/record-reader.ts): records and the lines they start on,
// the same however the file is cut into chunks.

import assert from "node:assert/strict";
import { test } from "node:test";
import { readRecords } from "../../src/commands/record-reader.ts";
import { RecordSplitter } from "../../src/records/record-splitter.ts";

function split(text: string, chunkSize: number): Array<{ line: number; text: string }> {
  const splitter = new RecordSplitter();
  const out = [];
  for (let at = 0; at < text.length; at += chunkSize) out.push(...splitter.push(text.slice(at, at + chunkSize)));
  out.push(...splitter.end());
  return out;
}

const ARRAY = '\uFEFF\n  [ {"a": "x, ] } \\" \\\\"},\n\n  {"b": [1, {"c": 2}]}\n , 7, "s,]" ,\n{}\n]\n\n';
const ARRAY_RECORDS = [
  { line: 2, text: '{"a": "x, ] } \\" \\\\"}' },
  { line: 4, text: '{"b": [1, {"c": 2}]}' },
  { line: 5, text: "7" },
  { line: 5, text: '"s,]"' },
  { line: 6, text: "{}" },
];
const NDJSON = '\n{"a": 1}\r\n\n  {"b": "x\\ny"}  \n{"c": 3}';
const NDJSON_RECORDS = [
  { line: 2, text: '{"a": 1}' },
  { line: 4, text: '{"b": "x\\ny"}' },
  { line: 5, text: '{"c": 3}' },
];

test("a JSON array's elements, each at the line it starts on, whatever the chunks", () => {
  for (let size = 1; size <= ARRAY.length; size++) assert.deepEqual(split(ARRAY, size), ARRAY_RECORDS, `chunks of ${size}`);
});

test("NDJSON lines, blank ones skipped, a last line without its line end kept", () => {
  for (let size = 1; size <= NDJSON.length; size++) assert.deepEqual(split(NDJSON, size), NDJSON_RECORDS, `chunks of ${size}`);
});

test("an empty array and an empty file hold no record", () => {
  assert.deepEqual(split(" [ ] ", 2), []);
  assert.deepEqual(split("\n\n", 1), []);
});

test("a malformed array is refused at its line", () => {
  assert.throws(() => split('[{"a": 1},\n,{"b": 2}]', 3), /^Error: Line 2: an empty element/);
  assert.throws(() => split('[{"a": 1},\n]', 3), /Line 2: an empty element/);
  assert.throws(() => split('[{"a": 1}]\n{"b": 2}', 4), /Line 2: text after the end of the JSON array/);
  assert.throws(() => split('[{"a": 1},\n{"b": 2}', 4), /never ends \(line 2\)/);
});

test("readRecords parses each record, and names the line of one that is not JSON", async () => {
  async function* chunks() {
    yield '{"a": 1}\n{"b": ';
    yield "2}\n{oops}\n";
  }
  const seen: unknown[] = [];
  await assert.rejects(
    (async () => {
      for await (const record of readRecords(chunks())) seen.push(record.value);
    })(),
    /^Error: Line 3: not valid JSON/,
  );
  assert.deepEqual(seen, [{ a: 1 }, { b: 2 }]);
});
