// When compaction runs (file-store.ts): at once when the log is twice the last snapshot, and from
// once its size at a quiet moment only, so that a busy server is not slowed by a snapshot.
import assert from "node:assert/strict";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { COMPACTION_MIN_LOG_BYTES, FileStore } from "../../src/store/file/file-store.ts";
import type { Row } from "../../src/store/store.ts";

let root: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "tabula-quiet-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

let idCounter = 0;
/** One write of records whose log line is about `bytes` long. */
async function writeBytes(store: FileStore, bytes: number): Promise<void> {
  const puts: Array<{ entity: string; row: Row }> = [];
  const title = "x".repeat(200);
  for (let written = 0; written < bytes; written += 300) {
    const id = (++idCounter).toString(16).padStart(24, "0");
    puts.push({ entity: "Task", row: { id, rev: store.nextRev(), deleted: false, data: { id, title } } });
  }
  await store.commit({ puts });
}

async function snapshots(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((name) => name.startsWith("snapshot-") && !name.endsWith(".tmp"));
}

/** Keeps the event loop busy (short synchronous slices back to back) for `ms`. */
async function stayBusy(ms: number): Promise<void> {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    const sliceEnd = Math.min(until, performance.now() + 20);
    while (performance.now() < sliceEnd);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * How long to wait for a background compaction: only a guard against a hang, since writing and
 * fsyncing a 9 MB snapshot on a disk others share has no bound (issue 16, defect 7).
 */
const COMPACTION_WAIT_MS = 30_000;

async function waitFor(condition: () => Promise<boolean>, ms: number): Promise<boolean> {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    if (await condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return condition();
}

test("a log as big as the snapshot is compacted once the server is quiet, not while it is busy", async () => {
  const dir = await mkdtemp(join(root, "data-"));
  const store = await FileStore.open({ dir, valueIndexed: new Map(), warn: () => {} });
  try {
    await writeBytes(store, COMPACTION_MIN_LOG_BYTES + 1024);
    await store.compact(); // (or joins the one the write started: over twice no snapshot at all)
    const [first] = await snapshots(dir);
    const snapshotBytes = store.describe().snapshotBytes;
    assert.ok(first !== undefined && snapshotBytes > 0, "the first snapshot is written");

    // The log grows past the snapshot's size (but not twice it) while the event loop is busy.
    await writeBytes(store, Math.max(snapshotBytes, COMPACTION_MIN_LOG_BYTES) + 1024);
    assert.ok(store.describe().logBytes < 2 * snapshotBytes, "below the size that compacts at once");
    await stayBusy(1_000);
    assert.deepEqual(await snapshots(dir), [first], "no compaction while busy");

    // Then the server goes quiet: a new snapshot replaces the first.
    assert.ok(await waitFor(async () => !(await snapshots(dir)).includes(first), COMPACTION_WAIT_MS), "compacted once quiet");
    assert.ok(store.describe().logBytes < snapshotBytes, "the log was cut down");
  } finally {
    await store.close();
  }
});

test("a big log left by the last run is compacted after start-up, without waiting for a write", async () => {
  const dir = await mkdtemp(join(root, "data-"));
  let store = await FileStore.open({ dir, valueIndexed: new Map(), warn: () => {} });
  let first: string | undefined;
  try {
    await writeBytes(store, COMPACTION_MIN_LOG_BYTES + 1024);
    await store.compact();
    [first] = await snapshots(dir);
    // Over the snapshot's size, then closed before a quiet moment could come.
    await writeBytes(store, Math.max(store.describe().snapshotBytes, COMPACTION_MIN_LOG_BYTES) + 1024);
  } finally {
    await store.close();
  }
  assert.deepEqual(await snapshots(dir), [first], "the last run closed before compacting");

  store = await FileStore.open({ dir, valueIndexed: new Map(), warn: () => {} });
  try {
    assert.ok(await waitFor(async () => !(await snapshots(dir)).includes(first), COMPACTION_WAIT_MS), "compacted after start-up");
    assert.ok(store.describe().logBytes < store.describe().snapshotBytes, "the log was cut down");
  } finally {
    await store.close();
  }
});

test("a compaction that ends with the log grown past its new snapshot again compacts again, with no write to prompt it", async () => {
  const dir = await mkdtemp(join(root, "data-"));
  const store = await FileStore.open({ dir, valueIndexed: new Map(), warn: () => {} });
  const compactions = (): number => store.metrics().files!.compactions;
  try {
    // Past the minimum with no snapshot yet: this write's flush starts a compaction of it.
    await writeBytes(store, COMPACTION_MIN_LOG_BYTES + 1024);
    // Written behind that compaction, into the new segment, and on disk before it ends: over twice
    // the snapshot it is writing.
    await writeBytes(store, 2 * (COMPACTION_MIN_LOG_BYTES + 1024));
    assert.equal(compactions(), 0, "the second write was on disk before the first compaction ended");
    // No write comes after it: the end of the first compaction is what starts the second.
    assert.ok(await waitFor(async () => compactions() >= 2, COMPACTION_WAIT_MS), "compacted again");
    assert.ok(store.describe().logBytes < COMPACTION_MIN_LOG_BYTES, "the second write is in the snapshot");
  } finally {
    await store.close();
  }
});
