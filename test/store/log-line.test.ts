import assert from "node:assert/strict";
import { appendFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { objectEnd, readLogLine } from "../../src/store/file/log-line.ts";
import { readSegment } from "../../src/store/file/wal.ts";
import { frameEntry } from "../../src/store/file/log-framing.ts";
import type { LogEntry, LogPut } from "../../src/store/file/log-entry.ts";
import { StoredRow } from "../../src/rows/stored-row.ts";

const CRC_FIELD_CHARS = ',"crc":"00000000"}\n'.length;

/** The head readLogLine is handed: the framed line without its crc field and newline. */
function headOf(seq: number, fields: Omit<LogEntry, "seq">): string {
  const line = frameEntry(seq, fields);
  return line.slice(0, line.length - CRC_FIELD_CHARS);
}

/** An entry as plain JSON values, rows as their images: what JSON.parse of the line gives, less the crc. */
function plain(entry: LogEntry): unknown {
  const puts = entry.puts?.map(({ e, row, s }: LogPut) => ({ e, row: { id: row.id, rev: row.rev, deleted: row.deleted, data: row.data }, ...(s ? { s } : {}) }));
  return JSON.parse(JSON.stringify({ ...entry, puts }));
}

const record = (id: string, extra: Record<string, unknown> = {}) => ({ id, title: `title of ${id}`, ...extra, created_date: "2026-11-28T10:00:00.000Z" });
const put = (id: string, data: Record<string, unknown> = record(id), rev = 1, deleted = false): LogPut => ({ e: "Task", row: { id, rev, deleted, data } });

describe("reading a log line's puts as their bytes", () => {
  const read: Array<[string, number, Omit<LogEntry, "seq">]> = [
    ["one put", 7, { puts: [put("a1")] }],
    ["several puts, one deleted, one a migration's rewrite", 8, { puts: [put("a1", record("a1"), 3), put("b2", record("b2"), 4, true), { ...put("c3"), s: 1 }] }],
    ["a batch without puts", 9, { puts: [] }],
    ["an idempotent answer and metadata after the puts", 10, { puts: [put("a1")], meta: [{ key: "schema", value: { Task: { n: 1 } } }], answer: { scope: "k", fingerprint: "f", status: 201, headers: { etag: '"1"' }, body: '{"id":"a1"}', expiresAt: 1 } }],
    ["the first part of a batch written in parts", 11, { more: true, puts: [put("a1"), put("b2")] }],
    ["data with quotes, backslashes, braces and brackets in strings", 12, { puts: [put("a1", record("a1", { note: 'a "quoted" } ] { [ \\ back\\"slash', tags: ["}", "{", "\\"] }))] }],
    ["nested objects and arrays", 13, { puts: [put("a1", record("a1", { address: { lines: [{ n: 1 }, [2, [3]]], empty: {} }, list: [] }))] }],
    ["text beyond ASCII", 14, { puts: [put("a1", record("a1", { title: "héllo ✓ 𝄞 \u2028" }))] }],
    ["an entity name and ids with other characters", 15, { puts: [{ e: "Ünïcode Entity", row: { id: "id-ü", rev: 2, deleted: false, data: record("id-ü") } }] }],
  ];
  for (const [name, seq, fields] of read) {
    test(`${name}: the entry JSON.parse gives, each row kept as its bytes`, () => {
      const head = headOf(seq, fields);
      const entry = readLogLine(Buffer.from(head));
      assert.ok(entry, "read");
      // Before anything reads row.data, which parses it.
      for (const { row } of entry.puts ?? []) assert.ok(row instanceof StoredRow && row.isUnparsed);
      assert.deepEqual(plain(entry), plain(JSON.parse(`${head}}`) as LogEntry));
    });
  }

  const leftToJsonParse: Array<[string, string]> = [
    ["a reset", headOf(3, { reset: true, rev: 5 })],
    ["a migration's drops before its puts", headOf(3, { drops: ["Old"], puts: [put("a1")] })],
    ["data that does not open with the id", headOf(3, { puts: [put("a1", { title: "no id first", id: "a1" })] })],
    ["data whose id is not the row's", headOf(3, { puts: [put("a1", record("other"))] })],
    ["data without an id", headOf(3, { puts: [put("a1", { title: "none" })] })],
    ["an id with an escape in it", headOf(3, { puts: [put('a"1')] })],
    ["an entity name with an escape in it", headOf(3, { puts: [{ e: 'Ta"sk', row: put("a1").row }] })],
    ["a line in another shape", '{"puts":[],"seq":3'],
    ["a line cut inside its data", headOf(3, { puts: [put("a1")] }).slice(0, -10)],
  ];
  for (const [name, head] of leftToJsonParse) {
    test(`${name}: answers undefined, left to JSON.parse`, () => {
      assert.equal(readLogLine(Buffer.from(head)), undefined);
    });
  }

  test("a row read as text parses, when first read, into the data it was written with", () => {
    const data = record("a1", { priority: 3, done: false, tags: ["x"] });
    const row = readLogLine(Buffer.from(headOf(4, { puts: [put("a1", data, 9)] })))!.puts![0]!.row as StoredRow;
    assert.equal(row.unparsedJson, JSON.stringify(data));
    assert.deepEqual(row.data, data);
    assert.equal(row.unparsedJson, undefined);
  });
});

describe("where a JSON object ends", () => {
  const cases: Array<[string, number]> = [
    ["{}", 2],
    ['{"a":1}tail', 7],
    ['{"a":"}"}', 9],
    ['{"a":"\\"}"}', 11],
    ['{"a":"\\\\"}x', 10],
    ['{"a":[{"b":{}},[]]}', 19],
    ['{"a":"x', -1],
    ['{"a":{}', -1],
  ];
  for (const [text, end] of cases) {
    test(`${text} ends at ${end}`, () => assert.equal(objectEnd(Buffer.from(text), 0), end));
  }
});

describe("replaying a segment of records", () => {
  let root: string;
  before(async () => {
    root = await mkdtemp(join(tmpdir(), "tabula-log-line-"));
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  test("rows come as text, and a torn last line is still cut off with a warning", async () => {
    const path = join(root, "segment");
    const lines = [1, 2, 3].map((seq) => frameEntry(seq, { puts: [put(`id${seq}`, record(`id${seq}`), seq)] }));
    // The last line with one byte of its data changed: its checksum no longer matches.
    const flipped = lines[2]!.replace("title of id3", "title of id4");
    await writeFile(path, lines[0]! + lines[1]!);
    await appendFile(path, flipped);
    const entries: LogEntry[] = [];
    const warnings: string[] = [];
    const { bytes, nextSeq } = await readSegment(path, { firstSeq: 1, isLast: true, warn: (m) => warnings.push(m), onEntry: (e) => entries.push(e) });
    assert.deepEqual(entries.map((e) => e.seq), [1, 2]);
    assert.ok(entries.every((e) => e.puts![0]!.row instanceof StoredRow));
    assert.deepEqual(entries[1]!.puts![0]!.row.data, record("id2"));
    assert.equal(nextSeq, 3);
    assert.equal(bytes, Buffer.byteLength(lines[0]! + lines[1]!));
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /dropped \d+ bytes of a torn or damaged tail/);
  });
});
