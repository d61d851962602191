// The file store on a full disk (issue 16, defect 12), on a small tmpfs: a write cut short is cut
// off the log, refused batches are taken back out of memory, and a compaction that failed for lack
// of space is tried again once there is room. Skips, saying why, when a tmpfs cannot be mounted.

import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { FileStore } from "../../src/store/file/file-store.ts";
import { StorageFullError, type IdempotentAnswer, type Row } from "../../src/store/store.ts";
import { readSegment, segmentName, WriteAheadLog } from "../../src/store/file/wal.ts";
import type { LogEntry } from "../../src/store/file/log-entry.ts";
import { fillDisk, mountTmpfs, unmountTmpfs } from "../support/tmpfs.ts";

const TMPFS_BYTES = 2 * 1024 * 1024;

let root: string;
let mountPoint: string;
let skipReason: string | undefined;
let folders = 0;

before(async () => {
  root = await mkdtemp(join(tmpdir(), "tabula-store-full-"));
  mountPoint = join(root, "disk");
  await mkdir(mountPoint);
  skipReason = mountTmpfs(mountPoint, TMPFS_BYTES);
});
after(async () => {
  if (skipReason === undefined) unmountTmpfs(mountPoint);
  await rm(root, { recursive: true, force: true });
});

/** A fresh folder on the tmpfs and a filler path beside it; the previous filler is removed. */
async function freshDir(): Promise<{ dir: string; filler: string }> {
  await rm(join(mountPoint, "filler"), { force: true });
  const dir = join(mountPoint, `dir-${++folders}`);
  await mkdir(dir);
  return { dir, filler: join(mountPoint, "filler") };
}

function openStore(dir: string, warnings: string[] = []): Promise<FileStore> {
  return FileStore.open({ dir, valueIndexed: new Map([["Task", ["status"]]]), warn: (message) => warnings.push(message) });
}

function row(store: FileStore, id: string, data: Record<string, unknown>): Row {
  return { id, rev: store.nextRev(), deleted: false, data: { id, ...data } };
}

function answer(scope: string): IdempotentAnswer {
  return { scope, fingerprint: "POST /api/entities/Task abc", status: 201, headers: {}, body: "{}", expiresAt: Date.now() + 60_000 };
}

function entry(seq: number, text: string): Omit<LogEntry, "seq"> {
  return { puts: [{ e: "Task", row: { id: `id${seq}`, rev: seq, deleted: false, data: { text } } }] };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => assert.fail("the write was expected to fail for lack of space"),
    (error: unknown) => error,
  );
}

describe("a full disk", () => {
  test("a log write cut short by a full disk is cut off, so the next entry never follows a torn line", async (t) => {
    if (skipReason) return t.skip(skipReason);
    const { dir, filler } = await freshDir();
    const dropped: number[] = [];
    const log = await WriteAheadLog.open(dir, [], 1, () => {}, (fromSeq) => dropped.push(fromSeq));
    await fillDisk(mountPoint, filler, 6 * 1024);
    // Three lines of 3 KiB in one write: two fit, whole, before the disk is full.
    const big = "x".repeat(3 * 1024);
    const refused = await Promise.all([1, 2, 3].map((seq) => rejection(log.append(entry(seq, big)))));
    for (const error of refused) assert.ok(error instanceof StorageFullError, String(error));
    assert.deepEqual(dropped, [1], "every entry from seq 1 on was dropped");
    assert.equal(log.nextSeq, 1, "the dropped seqs are handed out again");
    await log.append(entry(1, "short")); // fits in what the refused write had taken
    // Read the segment as a kill -9 now would leave it: the short line, then nothing but room.
    const seqs: number[] = [];
    const warnings: string[] = [];
    await readSegment(join(dir, segmentName(1)), { firstSeq: 1, isLast: true, warn: (m) => warnings.push(m), onEntry: (e) => seqs.push(e.seq) });
    assert.deepEqual(seqs, [1]);
    assert.deepEqual(warnings, []);
    await log.close();
  });

  test("a batch refused for lack of space is taken back out of memory, with every batch applied after it and their idempotent answers", async (t) => {
    if (skipReason) return t.skip(skipReason);
    const { dir, filler } = await freshDir();
    const store = await openStore(dir);
    const first = row(store, "a".repeat(24), { title: "first", status: "todo" });
    await store.commit({ puts: [{ entity: "Task", row: first }] });
    const { head } = store.feedState();
    await fillDisk(mountPoint, filler, 4 * 1024);
    // Written together: an update of `first` with an answer, then a new record too big for the room.
    const updated = { ...row(store, first.id, { title: "changed", status: "done" }) };
    const created = row(store, "b".repeat(24), { title: "x".repeat(64 * 1024), status: "todo" });
    const writes = [
      store.commit({ puts: [{ entity: "Task", row: updated }], answer: answer("key\n1") }),
      store.commit({ puts: [{ entity: "Task", row: created }], answer: answer("key\n2") }),
    ];
    assert.equal(store.get("Task", first.id), updated, "applied to memory at once, as before");
    // Reads meanwhile cached what they found (records/read-cache.ts): views of versions about to be refused.
    const readCache = store.readCache("Task", () => new Map<string, object>());
    assert.ok(readCache, "the file store keeps a read cache");
    readCache.set(first.id, { of: updated });
    readCache.set(created.id, { of: created });
    for (const error of await Promise.all(writes.map(rejection))) assert.ok(error instanceof StorageFullError, String(error));
    assert.equal(store.get("Task", first.id), first);
    assert.equal(store.get("Task", created.id), undefined);
    assert.deepEqual([...readCache.keys()], [], "the views of the refused versions went with them");
    assert.equal(store.findAnswer("key\n1", Date.now()), undefined);
    assert.equal(store.findAnswer("key\n2", Date.now()), undefined);
    const all = { filter: null, sort: { field: "id", kind: "string", descending: false }, after: null, skip: 0, limit: 10, deleted: "include" } as const;
    assert.deepEqual((await store.list("Task", all)).rows, [first]);
    const isDone = { type: "compare", field: "status", path: ["status"], kind: "string", isArray: false, op: "$eq", value: "done" } as const;
    assert.equal((await store.count("Task", isDone, "exclude")), 0, "the value index no longer holds the refused version");
    assert.deepEqual(store.readChanges(head, null, 10).events, [], "no event of a refused batch is ever readable");
    assert.deepEqual(store.feedState().head, head);

    await rm(filler);
    const { seq } = await store.commit({ puts: [{ entity: "Task", row: created }], answer: answer("key\n2") });
    assert.deepEqual(
      store.readChanges(head, null, 10).events.map((event) => [event.type, event.row.id, event.row.seq]),
      [["create", created.id, seq]],
      "the seqs of the refused batches are handed out again, to events that are read",
    );
    await store.close();
    const reopened = await openStore(dir);
    assert.deepEqual((await reopened.list("Task", all)).rows.map((r) => [r.id, r.data.title]), [[first.id, "first"], [created.id, created.data.title]]);
    assert.ok(reopened.findAnswer("key\n2", Date.now()));
    assert.equal(reopened.findAnswer("key\n1", Date.now()), undefined);
    await reopened.close();
  });

  test("a migration's batch refused for lack of space puts the dropped entity and the metadata back", async (t) => {
    if (skipReason) return t.skip(skipReason);
    const { dir, filler } = await freshDir();
    const store = await openStore(dir);
    const old = row(store, "c".repeat(24), { name: "old" });
    await store.commit({ puts: [{ entity: "Old", row: old }], meta: [{ key: "schema", value: { v: 1 } }] });
    const oldCache = store.readCache("Old", () => new Map<string, object>());
    await fillDisk(mountPoint, filler, 4 * 1024);
    const moved = { ...row(store, old.id, { name: "x".repeat(64 * 1024) }) };
    const write = store.commit({ drops: ["Old"], puts: [{ entity: "New", row: moved, replaces: 0, sync: true }], meta: [{ key: "schema", value: { v: 2 } }, { key: "ran", value: ["rename"] }] });
    assert.equal(store.get("Old", old.id), undefined, "applied to memory at once");
    assert.deepEqual(store.meta("schema"), { v: 2 });
    assert.ok((await rejection(write)) instanceof StorageFullError);
    assert.equal(store.get("Old", old.id), old);
    assert.equal(store.readCache("Old", () => new Map<string, object>()), oldCache, "the dropped table itself is back (its read cache with it)");
    assert.equal(store.get("New", old.id), undefined);
    assert.deepEqual(store.meta("schema"), { v: 1 });
    assert.equal(store.meta("ran"), undefined);
    await rm(filler);
    await store.close();
    const reopened = await openStore(dir);
    assert.equal(reopened.get("Old", old.id)?.data.name, "old");
    assert.deepEqual(reopened.meta("schema"), { v: 1 });
    await reopened.close();
  });

  test("a compaction that failed for lack of space is tried again once there is room, not only when the log has doubled", async (t) => {
    if (skipReason) return t.skip(skipReason);
    const { dir, filler } = await freshDir();
    const warnings: string[] = [];
    const store = await openStore(dir, warnings);
    for (let i = 0; i < 20; i++) await store.commit({ puts: [{ entity: "Task", row: row(store, i.toString(16).padStart(24, "0"), { title: "y".repeat(2048) }) }] });
    await fillDisk(mountPoint, filler, 0);
    await assert.rejects(store.compact(), (error: NodeJS.ErrnoException) => error.code === "ENOSPC");
    await rm(filler);
    // No write comes and the log stays far below its compaction size: the retry is the timer's.
    const isCompacted = (names: string[]) => names.some((name) => /^snapshot-\d+$/.test(name)) && !names.includes(segmentName(1));
    const deadline = Date.now() + 15_000;
    let names = await readdir(dir);
    while (!isCompacted(names) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      names = await readdir(dir);
    }
    assert.ok(isCompacted(names), `no snapshot replaced the first segment: ${names.join(", ")}`);
    await store.close();
    const reopened = await openStore(dir);
    assert.equal(reopened.describe().records, 20);
    await reopened.close();
  });
});
