// The file store's log and snapshots with what migrations write: a batch too long for one line is
// written in parts that replay all or nothing (log-framing.ts, frameEntryLines), and metadata, drops and
// sync puts survive replay, compaction and tabula verify's reading.

import assert from "node:assert/strict";
import { mkdtemp, readFile, readdir, rm, truncate } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { FileStore } from "../../src/store/file/file-store.ts";
import { checkDataFolder } from "../../src/store/file/folder-check.ts";
import { frameEntryLines, parseFramedLine } from "../../src/store/file/log-framing.ts";
import { FEED_START, type Row } from "../../src/store/store.ts";

/** Small, so that a batch of a few dozen rows is written in parts. */
const MAX_LINE_CHARS = 2000;

let root: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "tabula-file-batches-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

function openStore(dir: string, warnings: string[] = []): Promise<FileStore> {
  return FileStore.open({ dir, valueIndexed: new Map(), maxLogLineChars: MAX_LINE_CHARS, warn: (message) => warnings.push(message) });
}

let idCounter = 0;
function rowOf(store: FileStore, data: Record<string, unknown>, id = (++idCounter).toString(16).padStart(24, "0"), deleted = false): Row {
  return { id, rev: store.nextRev(), deleted, data: { id, ...data } };
}

/** The lines of the folder's only log segment, with the byte offset each starts at. */
async function logLines(dir: string): Promise<Array<{ offset: number; text: string }>> {
  const names = (await readdir(dir)).filter((name) => name.startsWith("log-"));
  assert.equal(names.length, 1, `one segment, not ${names.join(", ")}`);
  const text = (await readFile(join(dir, names[0]!))).toString("latin1").replace(/\0+$/, "");
  const lines: Array<{ offset: number; text: string }> = [];
  for (let offset = 0; offset < text.length; ) {
    const end = text.indexOf("\n", offset);
    lines.push({ offset, text: text.slice(offset, end) });
    offset = end + 1;
  }
  return lines;
}

async function segmentPath(dir: string): Promise<string> {
  return join(dir, (await readdir(dir)).find((name) => name.startsWith("log-"))!);
}

/** A first batch of one row, then a batch of `count` rows too long for one line; the store closed. */
async function foldersWithBigBatch(count: number): Promise<{ dir: string; first: Row; big: Row[]; bigSeq: number }> {
  const dir = await mkdtemp(join(root, "data-"));
  const store = await openStore(dir);
  const first = rowOf(store, { title: "before" });
  await store.commit({ puts: [{ entity: "Task", row: first, replaces: 0 }] });
  const big = Array.from({ length: count }, (_, i) => rowOf(store, { title: `row ${i} ${"x".repeat(100)}` }));
  const { seq: bigSeq } = await store.commit({ puts: big.map((row) => ({ entity: "Task", row, replaces: 0, sync: true as const })), meta: [{ key: "ran", value: ["big"] }] });
  await store.close();
  return { dir, first, big, bigSeq };
}

describe("a batch whose log line would be too long", () => {
  test("frameEntryLines cuts the puts into parts of the batch's seq, the last holding the rest and the other fields", () => {
    const puts = Array.from({ length: 10 }, (_, i) => ({ e: "Task", row: { id: `r${i}`, rev: i + 1, deleted: false, data: { id: `r${i}`, text: "y".repeat(40) } } }));
    const lines = frameEntryLines(7, { puts, answer: undefined, meta: [{ key: "k", value: 1 }] }, 250);
    assert.ok(lines.length > 1, `${lines.length} lines`);
    const values = lines.map((line) => parseFramedLine(Buffer.from(line.slice(0, -1))));
    assert.deepEqual(
      values.map((value) => [value?.seq, value?.more, value?.meta]),
      values.map((_, i) => (i < values.length - 1 ? [7, true, undefined] : [7, undefined, [{ key: "k", value: 1 }]])),
    );
    assert.deepEqual(
      values.flatMap((value) => (value!.puts as Array<{ row: { id: string } }>).map((put) => put.row.id)),
      puts.map((put) => put.row.id),
    );
    for (const line of lines.slice(0, -1)) assert.ok(line.length <= 250 + 60, `a part of ${line.length} characters`);
    // Under the bound, one line, as frameEntry writes it.
    assert.equal(frameEntryLines(7, { puts }, Infinity).length, 1);
  });

  test("is written as several lines that replay as one batch: every row, its position, its sync event and the metadata", async () => {
    const { dir, first, big, bigSeq } = await foldersWithBigBatch(60);
    const lines = await logLines(dir);
    const parts = lines.map((line) => parseFramedLine(Buffer.from(line.text, "latin1")));
    assert.ok(parts.length > 3, `${parts.length} lines`);
    assert.ok(parts.slice(1).every((part) => part?.seq === bigSeq));
    assert.ok(parts.slice(1, -1).every((part) => part?.more === true) && parts.at(-1)?.more === undefined);

    const report = await checkDataFolder(dir);
    assert.deepEqual([report.damage, report.warnings], [[], []]);
    assert.deepEqual(report.entities.get("Task"), { live: 61, deleted: 0 });
    assert.equal(report.lastSeq, bigSeq);

    const warnings: string[] = [];
    const store = await openStore(dir, warnings);
    try {
      assert.deepEqual(warnings, []);
      assert.equal(store.get("Task", first.id)?.data.title, "before");
      assert.deepEqual(
        big.map((row) => [store.get("Task", row.id)?.rev, store.get("Task", row.id)?.seq, store.get("Task", row.id)?.index]),
        big.map((row, index) => [row.rev, bigSeq, index]),
      );
      const events = store.readChanges(FEED_START, null, 1000).events;
      assert.deepEqual(
        events.map((event) => event.type),
        ["create", ...big.map(() => "sync")],
      );
      assert.deepEqual(store.meta("ran"), ["big"]);
      // The log goes on after it.
      const next = rowOf(store, { title: "after" });
      assert.equal((await store.commit({ puts: [{ entity: "Task", row: next, replaces: 0 }] })).seq, bigSeq + 1);
    } finally {
      await store.close();
    }
  });

  const cuts: Array<[string, (lines: Array<{ offset: number; text: string }>) => number]> = [
    ["after its first part", (lines) => lines[2]!.offset],
    ["inside its second part", (lines) => lines[2]!.offset + 50],
    ["before the newline of its last part", (lines) => lines.at(-1)!.offset + lines.at(-1)!.text.length],
  ];
  for (const [where, cutAt] of cuts) {
    test(`torn ${where}, vanishes whole: the store opens with a warning, holds nothing of it, and writes on`, async () => {
      const { dir, first, big, bigSeq } = await foldersWithBigBatch(60);
      const lines = await logLines(dir);
      await truncate(await segmentPath(dir), cutAt(lines));

      const report = await checkDataFolder(dir);
      assert.deepEqual(report.damage, [], "a torn tail of the newest segment is no damage");
      assert.equal(report.warnings.length, 1, JSON.stringify(report.warnings));
      assert.equal(report.warnings[0]!.offset, lines[1]!.offset, "the cut starts at the batch's first part");
      assert.deepEqual(report.entities.get("Task"), { live: 1, deleted: 0 });

      const warnings: string[] = [];
      const store = await openStore(dir, warnings);
      try {
        assert.equal(warnings.length, 1);
        assert.match(warnings[0]!, new RegExp(`dropped \\d+ bytes of a torn or damaged tail at byte ${lines[1]!.offset}`));
        assert.equal(store.get("Task", first.id)?.data.title, "before");
        assert.deepEqual(big.filter((row) => store.get("Task", row.id) !== undefined), []);
        assert.equal(store.meta("ran"), undefined);
        assert.equal(store.readChanges(FEED_START, null, 1000).events.length, 1);
        const next = rowOf(store, { title: "after" });
        assert.equal((await store.commit({ puts: [{ entity: "Task", row: next, replaces: 0 }] })).seq, bigSeq, "the batch's seq is taken again");
      } finally {
        await store.close();
      }
      const reopened = await openStore(dir, warnings);
      try {
        assert.equal(warnings.length, 1, "nothing more to cut");
        assert.equal(reopened.count("Task", null, "exclude"), 2);
      } finally {
        await reopened.close();
      }
    });
  }
});

describe("metadata, drops and sync puts in the file store", () => {
  test("survive a compaction (the snapshot keeps metadata and sync events) and a reopen, and verify reads them", async () => {
    const dir = await mkdtemp(join(root, "data-"));
    const store = await openStore(dir);
    const old = [rowOf(store, { name: "a" }), rowOf(store, { name: "b" }, undefined, true)];
    await store.commit({ puts: old.map((row) => ({ entity: "Old", row, replaces: 0 })), meta: [{ key: "schema", value: { v: 1 } }, { key: "temp", value: "x" }] });
    const moved = old.map((row) => rowOf(store, row.data, row.id, row.deleted));
    await store.commit({ drops: ["Old"], puts: moved.map((row) => ({ entity: "New", row, replaces: 0, sync: true as const })), meta: [{ key: "schema", value: { v: 2 } }, { key: "temp", value: null }] });

    const beforeCompaction = await checkDataFolder(dir);
    assert.deepEqual([beforeCompaction.damage, beforeCompaction.warnings], [[], []]);
    assert.equal(beforeCompaction.entities.get("Old"), undefined, "verify applies a drop");
    assert.deepEqual(beforeCompaction.entities.get("New"), { live: 1, deleted: 1 });

    await store.compact();
    const kept = rowOf(store, { name: "after" });
    await store.commit({ puts: [{ entity: "New", row: kept, replaces: 0 }], meta: [{ key: "after", value: [1, 2] }] });
    await store.close();

    const snapshot = (await readdir(dir)).find((name) => name.startsWith("snapshot-"))!;
    const snapshotText = await readFile(join(dir, snapshot), "utf8");
    assert.match(snapshotText, /\n\{"meta":\{"key":"schema","value":\{"v":2\}\}\}\n/);
    assert.match(snapshotText, /"sync"/);
    const report = await checkDataFolder(dir);
    assert.deepEqual([report.damage, report.warnings], [[], []]);
    assert.deepEqual(report.entities.get("New"), { live: 2, deleted: 1 });

    const reopened = await openStore(dir);
    try {
      assert.deepEqual(reopened.meta("schema"), { v: 2 });
      assert.equal(reopened.meta("temp"), undefined);
      assert.deepEqual(reopened.meta("after"), [1, 2]);
      assert.equal(reopened.get("Old", old[0]!.id), undefined);
      assert.deepEqual(
        [...moved, kept].map((row) => reopened.get("New", row.id)?.rev),
        [...moved, kept].map((row) => row.rev),
      );
      assert.deepEqual(
        reopened.readChanges(FEED_START, null, 100).events.map((event) => [event.entity, event.type]),
        [
          ["Old", "create"],
          ["Old", "create"],
          ["New", "sync"],
          ["New", "sync"],
          ["New", "create"],
        ],
        "earlier events of a dropped entity stay in the window",
      );
    } finally {
      await reopened.close();
    }
  });
});
