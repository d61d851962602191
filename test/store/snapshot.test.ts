import assert from "node:assert/strict";
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { crc32 } from "node:zlib";
import { FileStore } from "../../src/store/file/file-store.ts";
import { snapshotName } from "../../src/store/file/snapshot.ts";
import type { IdempotentAnswer, Row } from "../../src/store/store.ts";
import { segmentName } from "../../src/store/file/wal.ts";
import { frameLine, parseFramedLine } from "../../src/store/file/log-framing.ts";

let root: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "tabula-snapshot-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

function openStore(dir: string): Promise<FileStore> {
  return FileStore.open({ dir, valueIndexed: new Map([["Task", ["status", "done"]]]), warn: (message) => assert.fail(message) });
}

const CREATED = "2026-11-23T12:21:11.184Z";
const answer: IdempotentAnswer = { scope: "key_1\nidem", fingerprint: "POST /api/entities/Task abc", status: 201, headers: { etag: '"1"' }, body: '{"id":"x"}', expiresAt: Date.now() + 60_000 };

/** Rows covering what a snapshot must keep: deleted rows, undeclared fields and entities, odd data. */
function sampleRows(): Array<{ entity: string; row: Row }> {
  const record = (id: string, rev: number, data: Record<string, unknown>, deleted = false): Row => ({ id, rev, deleted, data: { id, ...data } });
  return [
    { entity: "Task", row: record("a1", 1, { title: "never updated", status: "todo", done: false, created_date: CREATED, updated_date: CREATED, created_by_id: "key_1" }) },
    { entity: "Task", row: record("a2", 2, { title: "same batch", status: "todo", done: true, created_date: CREATED, updated_date: CREATED, created_by_id: "key_1" }) },
    { entity: "Task", row: record("a3", 5, { title: "updated", status: "done", created_date: CREATED, updated_date: "2026-11-24T00:00:00.000Z", created_by_id: "key_2" }) },
    { entity: "Task", row: record("a4", 4, { title: "deleted ✓ héllo", status: "doing", tags: ["x", "y"], meta: { nested: [1, null] }, created_date: CREATED, updated_date: CREATED, created_by_id: "key_1" }, true) },
    { entity: "Task", row: record("a5", 6, { title: "no dates", undeclared: 3.5 }) },
    { entity: "Task", row: { id: "a6", rev: 7, deleted: false, data: { title: "data without its id" } } },
    { entity: "Gone", row: record("b1", 3, { name: "an entity no longer declared", created_date: CREATED, updated_date: CREATED }) },
  ];
}

/** Everything an answer is built from, key order included (records are serialized in data order). */
function stateOf(store: FileStore, rows: Array<{ entity: string; row: Row }>): unknown[] {
  return rows.map(({ entity, row }) => {
    const stored = store.get(entity, row.id);
    return stored && { entity, id: stored.id, rev: stored.rev, deleted: stored.deleted, data: JSON.stringify(stored.data), fields: Object.keys(stored.data) };
  });
}

async function liveIdsWith(store: FileStore, field: string, value: unknown): Promise<string[]> {
  const table = (store as unknown as { table(entity: string): { liveRowsWith(field: string, value: unknown): ReadonlySet<Row> } }).table("Task");
  return [...table.liveRowsWith(field, value)!].map((row) => row.id).sort();
}

async function snapshotPath(dir: string): Promise<string> {
  const name = (await readdir(dir)).find((file) => file.startsWith("snapshot-") && !file.endsWith(".tmp"))!;
  return join(dir, name);
}

async function snapshotLines(dir: string): Promise<string[]> {
  return (await readFile(await snapshotPath(dir), "utf8")).trimEnd().split("\n");
}

/** A store of sampleRows() and one answer, compacted and closed: its folder, state and next revision. */
async function compactedSample(prefix: string): Promise<{ dir: string; rows: Array<{ entity: string; row: Row }>; expected: unknown[]; nextRev: number }> {
  const dir = await mkdtemp(join(root, prefix));
  const store = await openStore(dir);
  const rows = sampleRows();
  for (const put of rows) await store.commit({ puts: [put] });
  await store.commit({ puts: [], answer });
  await store.compact();
  const expected = stateOf(store, rows);
  const nextRev = store.nextRev();
  await store.close();
  return { dir, rows, expected, nextRev };
}

/** The message of the error that opening `dir` fails with. */
async function openingError(dir: string): Promise<string> {
  const error = await openStore(dir).then(
    (store) => store.close().then(() => assert.fail("the folder opened")),
    (error: Error) => error,
  );
  return error.message;
}

describe("snapshot format 5", () => {
  test("every field round-trips: deleted rows, undeclared fields and entities, ids, answers, revisions", async () => {
    const { dir, rows, expected, nextRev } = await compactedSample("v3-");
    const reopened = await openStore(dir);
    assert.deepEqual(stateOf(reopened, rows), expected);
    assert.deepEqual(reopened.findAnswer(answer.scope, Date.now()), answer);
    assert.equal(reopened.nextRev(), nextRev, "a revision handed out but never written is not kept");
    assert.deepEqual(await liveIdsWith(reopened, "status", "todo"), ["a1", "a2"]);
    assert.deepEqual(await liveIdsWith(reopened, "status", "doing"), [], "a deleted row is in no value index");
    assert.deepEqual(reopened.describe().deletedRecords, 1);
    await reopened.close();
  });

  test("lines: a framed header, an entity line per entity, rev, feed position and data per row, the kept events, and a framed end marker with the checksum", async () => {
    const { dir } = await compactedSample("v3-lines-");
    const lines = await snapshotLines(dir);
    const file = await readFile(await snapshotPath(dir));
    const header = parseFramedLine(Buffer.from(lines[0]!));
    assert.equal(header?.format, "tabula-snapshot/5");
    assert.deepEqual(header?.horizon, [0, 0]);
    const data = (id: string): string => JSON.stringify(sampleRows().find(({ row }) => row.id === id)!.row.data);
    assert.deepEqual(lines.slice(1, -1), [
      '{"entity":"Task","fields":["id","title","status","done","created_date","updated_date","created_by_id","tags","meta","undeclared"],"rows":6}',
      `1 1.0 ${data("a1")}`,
      `2 2.0 ${data("a2")}`,
      `5 3.0 ${data("a3")}`,
      `4 4.0 "deleted" ${data("a4")}`,
      `6 5.0 ${data("a5")}`,
      `{"row":{"id":"a6","rev":7,"deleted":false,"data":${data("a6")},"seq":6,"index":0}}`,
      '{"entity":"Gone","fields":["id","name","created_date","updated_date"],"rows":1}',
      `3 7.0 ${data("b1")}`,
      JSON.stringify({ answer }),
      ...sampleRows().map(({ entity, row }, i) => JSON.stringify({ event: [i + 1, 0, entity, "create", row.id] })),
    ]);
    const footer = parseFramedLine(Buffer.from(lines.at(-1)!));
    const bodyBytes = file.length - Buffer.byteLength(lines.at(-1)!) - 1;
    assert.deepEqual(footer, { end: true, rows: 7, answers: 1, events: 7, meta: 0, checksum: crc32(file.subarray(0, bodyBytes)).toString(16).padStart(8, "0"), crc: footer!.crc });
  });

  test("the change feed's kept events survive compaction and restart: replaced versions with their data, current ones by reference", async () => {
    const dir = await mkdtemp(join(root, "v4-events-"));
    const store = await FileStore.open({ dir, valueIndexed: new Map(), changesKeep: 4, warn: (message) => assert.fail(message) });
    const version = (title: string, rev: number, deleted = false): Row => ({ id: "r1", rev, deleted, data: { id: "r1", title } });
    for (const [i, row] of [version("one", 1), version("two", 2), version("three", 3), version("three", 4, true), version("four", 5), version("five", 6)].entries()) {
      await store.commit({ puts: [{ entity: "Task", row, replaces: i === 0 ? 0 : i }] });
    }
    const other = { id: "r2", rev: 7, deleted: false, data: { id: "r2", title: "other" } };
    await store.commit({ puts: [{ entity: "Task", row: other, replaces: 0 }] });
    const events = (s: FileStore) => s.readChanges({ seq: 0, index: 0 }, null, 100).events.map(({ type, row }) => [type, row.id, row.seq, row.index, row.data.title, row.deleted]);
    const before = events(store);
    assert.deepEqual(before, [["delete", "r1", 4, 0, "three", true], ["restore", "r1", 5, 0, "four", false], ["update", "r1", 6, 0, "five", false], ["create", "r2", 7, 0, "other", false]]);
    assert.deepEqual(store.feedState().horizon, { seq: 3, index: 0 });
    await store.compact();
    await store.close();
    const lines = await snapshotLines(dir);
    assert.deepEqual(lines.filter((line) => line.startsWith('{"event"')).map((line) => JSON.parse(line)), [
      { event: [4, 0, "Task", "delete", "r1"], row: { id: "r1", rev: 4, deleted: true, data: { id: "r1", title: "three" } } },
      { event: [5, 0, "Task", "restore", "r1"], row: { id: "r1", rev: 5, deleted: false, data: { id: "r1", title: "four" } } },
      { event: [6, 0, "Task", "update", "r1"] },
      { event: [7, 0, "Task", "create", "r2"] },
    ]);
    const reopened = await FileStore.open({ dir, valueIndexed: new Map(), changesKeep: 4, warn: (message) => assert.fail(message) });
    assert.deepEqual(events(reopened), before);
    assert.deepEqual(reopened.feedState().horizon, { seq: 3, index: 0 });
    assert.equal(reopened.readChanges({ seq: 0, index: 0 }, null, 100).events[2]!.row, reopened.get("Task", "r1"), "a current version is shared with its record");
    await reopened.close();
  });

  test("a snapshot with lines longer than a read chunk and non-ASCII text reads back whole", async () => {
    const dir = await mkdtemp(join(root, "v3-long-"));
    const store = await openStore(dir);
    // 40 lines of 60,000 to 120,000 bytes across chunk boundaries, and in the middle one of 3 MiB, longer than a chunk.
    const rows = Array.from({ length: 40 }, (_, i) => ({ entity: "Task", row: { id: `l${i}`, rev: i + 1, deleted: false, data: { id: `l${i}`, title: (i % 3 ? "a" : "é✓").repeat(30_000 + i) + (i === 20 ? "x".repeat(3 << 20) : "") } } }));
    for (const put of rows) await store.commit({ puts: [put] });
    await store.compact();
    const expected = stateOf(store, rows);
    await store.close();
    const reopened = await openStore(dir);
    assert.deepEqual(stateOf(reopened, rows), expected);
    await reopened.close();
  });

  const damages: Array<[string, (text: string) => string, RegExp]> = [
    ["a changed letter that still parses", (text) => text.replace("never updated", "never updatex"), /damaged at an unknown place \(the checksum of its lines does not match/],
    ["a row line that does not parse", (text) => text.replace(/\n2 2\.0 \{/, "\n2 2.0 {{"), /damaged at line 4 \(a row line is not a revision and a data object with an id\)/],
    ["a cut-off end marker", (text) => text.slice(0, -10), /damaged at line 19 \(the last line is incomplete\)/],
    ["no end marker", (text) => text.slice(0, text.lastIndexOf("{")), /damaged at line 18 \(the end marker is missing\)/],
    ["a lost row", (text) => text.replace(/\n6 [^\n]*/, "").replace(/\n\{"event":\[5,0,[^\n]*/, ""), /the end marker counts 7 rows, 1 answers and 7 events, the file holds 6, 1 and 6/],
    ["a lost version of a kept event", (text) => text.replace(/\n6 [^\n]*/, ""), /keeps the event 5\.0 of Task a5, but not the version it wrote/],
    ["an unknown line", (text) => text.replace(/(\{"entity":"Gone"[^\n]*)/, '$1\n{"what":1}'), /damaged at line 10 \(a line is neither a row, an entity, an answer, an event, a metadata value nor the end marker\)/],
  ];
  for (const [name, damage, expected] of damages) {
    test(`${name} stops start-up, naming the file`, async () => {
      const { dir } = await compactedSample("v3-damaged-");
      const path = await snapshotPath(dir);
      await writeFile(path, damage(await readFile(path, "utf8")));
      const message = await openingError(dir);
      assert.match(message, expected);
      assert.ok(message.includes(path), message);
    });
  }
});

describe("snapshot formats 1 and 2", () => {
  const rowLines: Record<string, (entity: string, row: Row) => object> = {
    "tabula-snapshot/1": (entity, row) => ({ e: entity, row }),
    "tabula-snapshot/2": (entity, row) => ({ e: entity, id: row.data.id === row.id ? undefined : row.id, rev: row.rev, deleted: row.deleted || undefined, data: row.data }),
  };
  for (const [format, rowLine] of Object.entries(rowLines)) {
    test(`a folder whose snapshot is ${format} still opens, and the log after it replays`, async () => {
      const dir = await mkdtemp(join(root, "old-format-"));
      const rows = sampleRows();
      const text = [
        frameLine({ format, seq: 3, rev: 7 }),
        ...rows.map(({ entity, row }) => frameLine(rowLine(entity, row))),
        frameLine({ answer }),
        frameLine({ end: true, rows: rows.length, answers: 1 }),
      ].join("");
      // 0600, as tabula writes them: a folder others may read is warned about (docs/operating.md).
      await writeFile(join(dir, snapshotName(3)), text, { mode: 0o600 });
      const later = { id: "a1", rev: 8, deleted: false, data: { ...rows[0]!.row.data, title: "changed in the log", updated_date: "2026-11-25T00:00:00.000Z" } };
      await writeFile(join(dir, segmentName(3)), frameLine({ seq: 3, puts: [{ e: "Task", row: later }] }), { mode: 0o600 });

      const store = await openStore(dir);
      const expected = stateOf({ get: (entity: string, id: string) => (id === "a1" ? later : rows.find((put) => put.entity === entity && put.row.id === id)?.row) } as FileStore, rows);
      assert.deepEqual(stateOf(store, rows), expected);
      assert.deepEqual(store.findAnswer(answer.scope, Date.now()), answer);
      assert.equal(store.nextRev(), 9);
      assert.deepEqual(await liveIdsWith(store, "status", "todo"), ["a1", "a2"]);
      assert.deepEqual(await liveIdsWith(store, "done", true), ["a2"]);
      // Rows older than the feed get the positions 0.1, 0.2… (file order); the log's, their entry's.
      assert.deepEqual(
        rows.map(({ entity, row }) => [store.get(entity, row.id)!.seq, store.get(entity, row.id)!.index]),
        [[3, 0], [0, 2], [0, 3], [0, 4], [0, 5], [0, 6], [0, 7]],
      );
      assert.deepEqual(store.feedState().horizon, { seq: 0, index: 7 }, "a resume from 0 catches up from the rows");
      // The next snapshot is written in the current format, and reads back the same.
      await store.compact();
      await store.close();
      assert.equal(parseFramedLine(Buffer.from((await snapshotLines(dir))[0]!))?.format, "tabula-snapshot/5");
      const reopened = await openStore(dir);
      assert.deepEqual(stateOf(reopened, rows), expected);
      await reopened.close();
    });
  }

  test("a damaged line of a format 2 snapshot stops start-up, naming its byte", async () => {
    const dir = await mkdtemp(join(root, "v2-damaged-"));
    const header = frameLine({ format: "tabula-snapshot/2", seq: 1, rev: 1 });
    await writeFile(join(dir, snapshotName(1)), header + frameLine({ e: "Task", rev: 1, data: { id: "a" } }).replace('"a"', '"b"') + frameLine({ end: true, rows: 1, answers: 0 }));
    assert.match(await openingError(dir), new RegExp(`damaged at byte ${header.length} \\(a line is incomplete or fails its checksum\\)`));
  });
});

describe("rows loaded at start-up", () => {
  test("share repeated strings without changing any value or key order", async () => {
    const dir = await mkdtemp(join(root, "shared-"));
    const store = await openStore(dir);
    // Absent and non-string dates must stay absent or as they are, not become shared strings.
    const odd: Row[] = [
      { id: "c1", rev: 1, deleted: false, data: { id: "c1", updated_date: CREATED } },
      { id: "c2", rev: 2, deleted: false, data: { id: "c2", created_date: 5, updated_date: 5, created_by_id: 7 } },
      { id: "c3", rev: 3, deleted: false, data: { id: "c3", created_date: CREATED } },
      { id: "c4", rev: 4, deleted: false, data: { id: "c4", created_by_id: "key_1", created_date: CREATED, updated_date: "2026-11-23T12:21:11.185Z" } },
    ];
    const rows = [...sampleRows(), ...odd.map((row) => ({ entity: "Task", row }))];
    for (const put of rows) await store.commit({ puts: [put] });
    const expected = stateOf(store, rows);
    await store.close();
    const replayed = await openStore(dir); // from the log
    assert.deepEqual(stateOf(replayed, rows), expected);
    await replayed.compact();
    await replayed.close();
    const loaded = await openStore(dir); // from the snapshot
    assert.deepEqual(stateOf(loaded, rows), expected);
    await loaded.close();
  });
});

describe("reading framed lines", () => {
  test("a line parses the same from its decoded text as from its bytes", () => {
    const line = frameLine({ seq: 1, text: "abc" }).slice(0, -1);
    assert.deepEqual(parseFramedLine(Buffer.from(line), line), parseFramedLine(Buffer.from(line)));
  });

  test("the checksum is checked on the bytes even when the text is given", () => {
    const line = frameLine({ seq: 1, text: "abc" }).slice(0, -1);
    assert.equal(parseFramedLine(Buffer.from(line.replace("abc", "abd")), line), undefined);
  });

  const suffixes: Array<[string, string]> = [
    ["uppercase hex digits", '"crc":"ABCDEF12"}'],
    ["a non-hex digit", '"crc":"0000000g"}'],
    ["a missing closing brace", '"crc":"00000000""'],
  ];
  for (const [name, suffix] of suffixes) {
    test(`a crc with ${name} is refused`, () => {
      const line = `{"seq":1,${suffix}`;
      assert.equal(parseFramedLine(Buffer.from(line)), undefined);
    });
  }
});
