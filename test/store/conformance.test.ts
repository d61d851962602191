// The Store contract (src/store/store.ts), one suite run against every store through the one
// factory server.ts uses (open-store.ts): what a commit expects and refuses, all or nothing;
// seqs and listeners in commit order; reads of what was committed; unique revisions. The HTTP
// suites run against every store too (test/run.mjs); this pins the layer under them.

import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import type { FilterNode } from "../../src/query/filter-tree.ts";
import { loadSchemaObject } from "../../src/schema/load.ts";
import { openStore, type StoreLocation } from "../../src/store/open-store.ts";
import { compareFeedPositions, ConflictError, FEED_START, type Commit, type FeedPosition, type IdempotentAnswer, type Row, type Store, type WriteBatch } from "../../src/store/store.ts";
import { dropPgSchema, freshPgSchema, isPostgresRequired, MISSING_PG_URL, pgTestUrl } from "../support/postgres.ts";

const ENTITY = "Task";
const VALUE_INDEXED = new Map([[ENTITY, ["status"]]]);
const SCHEMA = loadSchemaObject({ [ENTITY]: { properties: { title: { type: "string" }, status: { type: "string", enum: ["todo", "done"] }, priority: { type: "integer" } } } });
const STATUS_TODO: FilterNode = { type: "compare", field: "status", path: ["status"], kind: "string", isArray: false, op: "$eq", value: "todo" };
const BY_ID = { field: "id", kind: "string", descending: false } as const;
/** A read cache for the store to keep: a Map is one (Store.readCache deletes and clears). */
const newMap = (): Map<string, object> => new Map();

interface StoreCase {
  readonly name: string;
  /** A fresh, empty store, and how to drop what it left behind. */
  open(): Promise<{ store: Store; dispose(): Promise<void> }>;
}

const folders: string[] = [];
after(async () => {
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
});

const CASES: StoreCase[] = [
  { name: "memory", open: () => opened({ kind: "memory" }) },
  {
    name: "file",
    async open() {
      const dir = await mkdtemp(join(tmpdir(), "tabula-conformance-"));
      folders.push(dir);
      return opened({ kind: "file", dir });
    },
  },
];
const pgUrl = pgTestUrl();
if (pgUrl) {
  CASES.push({
    name: "postgres",
    async open() {
      const pgSchema = freshPgSchema();
      const { store, dispose } = await opened({ kind: "postgres", url: pgUrl }, pgSchema);
      return { store, dispose: () => dispose().finally(() => dropPgSchema(pgUrl, pgSchema)) };
    },
  });
} else if (isPostgresRequired()) {
  test("the postgres store: needs PostgreSQL (TABULA_REQUIRE_POSTGRES=1)", () => assert.fail(MISSING_PG_URL));
}

async function opened(location: StoreLocation, pgSchema?: string) {
  const { store } = await openStore(location, { schema: SCHEMA, valueIndexed: VALUE_INDEXED, pgSchema, changesKeep: 1000, warn: () => {} });
  return { store, dispose: () => store.close() };
}

let idCounter = 0;
function newId(): string {
  return (Date.now() * 4096 + ++idCounter).toString(16).padStart(24, "0");
}

function rowOf(store: Store, data: Record<string, unknown>, id = newId(), deleted = false): Row {
  const stamp = "2026-01-01T00:00:00.000Z";
  return { id, rev: store.nextRev(), deleted, data: { id, ...data, created_date: stamp, updated_date: stamp, created_by_id: "key_test" } };
}

function answerOf(scope: string, expiresAt: number): IdempotentAnswer {
  return { scope, fingerprint: "POST /x h", status: 201, headers: { "Content-Type": "application/json" }, body: `{"scope":${JSON.stringify(scope)}}`, expiresAt };
}

async function conflictOf(commit: Promise<Commit>): Promise<ConflictError> {
  const error = await commit.then(
    () => assert.fail("the batch was committed; a conflict was expected"),
    (error: unknown) => error,
  );
  assert.ok(error instanceof ConflictError, `expected a ConflictError, got ${String(error)}`);
  return error;
}

async function ids(store: Store, filter: FilterNode | null = null): Promise<string[]> {
  const { rows } = await store.list(ENTITY, { filter, sort: BY_ID, after: null, skip: 0, limit: 1000, deleted: "exclude" });
  return rows.map((row) => row.id);
}

for (const storeCase of CASES) {
  describe(`the ${storeCase.name} store`, () => {
    async function withStore(work: (store: Store) => Promise<void>): Promise<void> {
      const { store, dispose } = await storeCase.open();
      try {
        await work(store);
      } finally {
        await dispose();
      }
    }

    test("a committed batch is read back as written, and seqs grow in commit order", () =>
      withStore(async (store) => {
        const a = rowOf(store, { title: "a", status: "todo", priority: 2 });
        const b = rowOf(store, { title: "b", status: "done", priority: 1 });
        const first = await store.commit({ puts: [{ entity: ENTITY, row: a, replaces: 0 }] });
        const second = await store.commit({ puts: [{ entity: ENTITY, row: b, replaces: 0 }] });
        assert.ok(second.seq > first.seq, `seq ${second.seq} after ${first.seq}`);
        const read = await store.get(ENTITY, a.id);
        assert.deepEqual({ id: read?.id, rev: read?.rev, deleted: read?.deleted, data: read?.data }, { id: a.id, rev: a.rev, deleted: false, data: a.data });
        assert.equal(await store.get(ENTITY, newId()), undefined);
        assert.deepEqual(await ids(store), [a.id, b.id].sort());
        assert.deepEqual(await ids(store, STATUS_TODO), [a.id]);
        assert.equal(await store.count(ENTITY, null, "exclude"), 2);
        assert.equal(await store.count(ENTITY, STATUS_TODO, "exclude"), 1);
      }));

    test("a row that replaces another revision than the stored one refuses the whole batch", () =>
      withStore(async (store) => {
        const a = rowOf(store, { title: "a", status: "todo" });
        await store.commit({ puts: [{ entity: ENTITY, row: a, replaces: 0 }] });
        const b = rowOf(store, { title: "b" });
        const stale = { ...rowOf(store, { title: "a, changed" }, a.id) };
        const conflict = await conflictOf(
          store.commit({
            puts: [
              { entity: ENTITY, row: b, replaces: 0 },
              { entity: ENTITY, row: stale, replaces: a.rev + 1_000_000 },
            ],
          }),
        );
        assert.equal(conflict.reason, "rev");
        // Nothing of it was applied: b is not there, a is as it was.
        assert.equal(await store.get(ENTITY, b.id), undefined);
        assert.equal((await store.get(ENTITY, a.id))?.data.title, "a");
        // The same change, replacing the stored revision, goes through.
        await store.commit({ puts: [{ entity: ENTITY, row: stale, replaces: a.rev }] });
        assert.equal((await store.get(ENTITY, a.id))?.data.title, "a, changed");
      }));

    test("a new record whose id is stored is refused: replaces 0 means it must not exist", () =>
      withStore(async (store) => {
        const a = rowOf(store, { title: "a" });
        await store.commit({ puts: [{ entity: ENTITY, row: a, replaces: 0 }] });
        const again = rowOf(store, { title: "again" }, a.id);
        assert.equal((await conflictOf(store.commit({ puts: [{ entity: ENTITY, row: again, replaces: 0 }] }))).reason, "rev");
        assert.equal((await store.get(ENTITY, a.id))?.data.title, "a");
      }));

    test("an upsert's match check holds only while the live records it matched are the same", () =>
      withStore(async (store) => {
        const a = rowOf(store, { title: "a", status: "todo" });
        await store.commit({ puts: [{ entity: ENTITY, row: a, replaces: 0 }] });
        const matches = [{ entity: ENTITY, filter: STATUS_TODO, ids: [a.id], locks: ["Task\nstatus\n\"todo\""] }];
        const update = rowOf(store, { title: "a2", status: "todo" }, a.id);
        await store.commit({ puts: [{ entity: ENTITY, row: update, replaces: a.rev }], matches });
        // Another todo appears: a batch built when a was the only one is refused.
        const other = rowOf(store, { title: "other", status: "todo" });
        await store.commit({ puts: [{ entity: ENTITY, row: other, replaces: 0 }] });
        const late = rowOf(store, { title: "late", status: "todo" });
        assert.equal((await conflictOf(store.commit({ puts: [{ entity: ENTITY, row: late, replaces: 0 }], matches }))).reason, "match");
        assert.equal(await store.get(ENTITY, late.id), undefined);
        // An empty entity expected (a seed): refused once it holds a record.
        const seed: WriteBatch = { puts: [{ entity: ENTITY, row: rowOf(store, { title: "seed" }), replaces: 0 }], matches: [{ entity: ENTITY, filter: null, ids: [], locks: ["Task\nseed"] }] };
        assert.equal((await conflictOf(store.commit(seed))).reason, "match");
      }));

    test("an idempotent answer is stored with its batch; a second answer for the scope is refused until the first expires", () =>
      withStore(async (store) => {
        const now = Date.now();
        const a = rowOf(store, { title: "a" });
        await store.commit({ puts: [{ entity: ENTITY, row: a, replaces: 0 }], answer: answerOf("key_a\nk1", now + 60_000) });
        assert.equal((await store.findAnswer("key_a\nk1", now))?.body, `{"scope":"key_a\\nk1"}`);
        assert.equal(await store.findAnswer("key_a\nk2", now), undefined);
        const b = rowOf(store, { title: "b" });
        const conflict = await conflictOf(store.commit({ puts: [{ entity: ENTITY, row: b, replaces: 0 }], answer: answerOf("key_a\nk1", now + 60_000) }));
        assert.equal(conflict.reason, "answer");
        assert.equal(await store.get(ENTITY, b.id), undefined, "the rows of a refused answer are not stored");
        // An expired answer is no answer: its scope may be used again.
        await store.commit({ puts: [], answer: answerOf("key_a\nold", now - 1) });
        assert.equal(await store.findAnswer("key_a\nold", now), undefined);
        await store.commit({ puts: [], answer: answerOf("key_a\nold", now + 60_000) });
        assert.equal((await store.findAnswer("key_a\nold", now))?.scope, "key_a\nold");
      }));

    test("the feed reads each committed row once, in commit order, with what it did; never a refused batch", () =>
      withStore(async (store) => {
        const heard = new Promise<void>((resolve) => store.onFeed(resolve));
        const a = rowOf(store, { title: "a" });
        const commits: Commit[] = [await store.commit({ puts: [{ entity: ENTITY, row: a, replaces: 0 }] })];
        await heard;
        const a2 = rowOf(store, { title: "a2" }, a.id);
        commits.push(await store.commit({ puts: [{ entity: ENTITY, row: a2, replaces: a.rev }] }));
        await conflictOf(store.commit({ puts: [{ entity: ENTITY, row: rowOf(store, {}, a.id), replaces: 0 }] }));
        const a3 = rowOf(store, { title: "a2" }, a.id, true);
        const b = rowOf(store, { title: "b" });
        commits.push(await store.commit({ puts: [{ entity: ENTITY, row: a3, replaces: a2.rev }, { entity: ENTITY, row: b, replaces: 0 }] }));
        const a4 = rowOf(store, { title: "a2" }, a.id);
        commits.push(await store.commit({ puts: [{ entity: ENTITY, row: a4, replaces: a3.rev }] }));
        assert.ok(commits.every((commit, i) => i === 0 || commit.seq > commits[i - 1]!.seq), "seqs grow");
        // As a feed reader does: read once the head has reached the writes. On PostgreSQL a write is
        // readable once every older transaction of the cluster has ended, another test's included.
        await headReaching(store, { seq: commits[3]!.seq, index: 0 });
        const { events, through } = await store.readChanges(FEED_START, null, 100);
        assert.deepEqual(
          events.map((event) => [event.entity, event.type, event.row.id, event.row.seq, event.row.index]),
          [
            [ENTITY, "create", a.id, commits[0]!.seq, 0],
            [ENTITY, "update", a.id, commits[1]!.seq, 0],
            [ENTITY, "delete", a.id, commits[2]!.seq, 0],
            [ENTITY, "create", b.id, commits[2]!.seq, 1],
            [ENTITY, "restore", a.id, commits[3]!.seq, 0],
          ],
        );
        assert.equal(events[1]!.row.data.title, "a2", "an event holds the version it wrote");
        assert.deepEqual(through, { seq: commits[3]!.seq, index: 0 });
        assert.deepEqual((await store.feedState()).head, through);
        const rest = await store.readChanges({ seq: commits[2]!.seq, index: 0 }, null, 100);
        assert.deepEqual(rest.events.map((event) => event.type), ["create", "restore"]);
        const limited = await store.readChanges(FEED_START, null, 2);
        assert.deepEqual(limited.through, { seq: commits[1]!.seq, index: 0 });
        assert.deepEqual((await store.readChanges(FEED_START, new Set(["Other"]), 100)).events, []);
      }));

    test("the feed's catch-up gives each record's latest version written after a point, deleted ones too, in write order", () =>
      withStore(async (store) => {
        const [a, b, c] = [rowOf(store, { title: "a" }), rowOf(store, { title: "b" }), rowOf(store, { title: "c" })];
        for (const row of [a, b, c]) await store.commit({ puts: [{ entity: ENTITY, row, replaces: 0 }] });
        const a2 = rowOf(store, { title: "a2" }, a.id);
        await store.commit({ puts: [{ entity: ENTITY, row: a2, replaces: a.rev }] });
        const b2 = rowOf(store, { title: "b" }, b.id, true);
        await store.commit({ puts: [{ entity: ENTITY, row: b2, replaces: b.rev }] });
        const { head } = await store.feedState();
        const all = await store.readLatest(FEED_START, head, null, 10);
        assert.deepEqual(all.events.map((event) => [event.type, event.row.data.title, event.row.deleted]), [["sync", "c", false], ["sync", "a2", false], ["sync", "b", true]]);
        assert.deepEqual(all.through, head);
        const sinceC = await store.readLatest({ seq: c.seq!, index: c.index! }, head, null, 10);
        assert.deepEqual(sinceC.events.map((event) => event.row.id), [a.id, b.id]);
        const first = await store.readLatest(FEED_START, head, null, 1);
        assert.deepEqual(first.events.map((event) => event.row.id), [c.id]);
        assert.deepEqual(first.through, { seq: c.seq, index: c.index });
        const upToA = await store.readLatest(FEED_START, { seq: a2.seq!, index: a2.index! }, null, 10);
        assert.deepEqual(upToA.events.map((event) => event.row.id), [c.id, a.id]);
      }));

    test("batches committed at once are each read once, in seq order", () =>
      withStore(async (store) => {
        const rows = Array.from({ length: 8 }, (_, i) => rowOf(store, { title: String(i) }));
        const commits = await Promise.all(rows.map((row) => store.commit({ puts: [{ entity: ENTITY, row, replaces: 0 }] })));
        await headReaching(store, { seq: Math.max(...commits.map((commit) => commit.seq)), index: 0 });
        const { events } = await store.readChanges(FEED_START, null, 100);
        assert.deepEqual(events.map((event) => event.row.id).sort(), rows.map((row) => row.id).sort());
        const seqs = events.map((event) => event.row.seq!);
        assert.deepEqual(seqs, [...seqs].sort((x, y) => x - y));
        assert.deepEqual(new Set(seqs), new Set(commits.map((commit) => commit.seq)));
      }));

    test("revisions are never handed out twice, and deleted records are kept apart from live ones", () =>
      withStore(async (store) => {
        const revs = new Set(Array.from({ length: 1000 }, () => store.nextRev()));
        assert.equal(revs.size, 1000);
        const a = rowOf(store, { title: "a" });
        await store.commit({ puts: [{ entity: ENTITY, row: a, replaces: 0 }] });
        const deleted = rowOf(store, { title: "a" }, a.id, true);
        await store.commit({ puts: [{ entity: ENTITY, row: deleted, replaces: a.rev }] });
        assert.deepEqual(await ids(store), []);
        assert.equal(await store.count(ENTITY, null, "only"), 1);
        assert.equal(await store.count(ENTITY, null, "include"), 1);
        assert.equal((await store.get(ENTITY, a.id))?.deleted, true);
      }));

    test("a read cache entry is gone once its record changes, and after a reset; other records' stay", () =>
      withStore(async (store) => {
        assert.equal(store.readCache(ENTITY, newMap), null, "an entity holding no rows has no cache");
        const a = rowOf(store, { title: "a" });
        const b = rowOf(store, { title: "b" });
        await store.commit({ puts: [{ entity: ENTITY, row: a, replaces: 0 }, { entity: ENTITY, row: b, replaces: 0 }] });
        const cache = store.readCache(ENTITY, newMap);
        // PostgreSQL, which other processes write, keeps none: every read asks the database.
        if (storeCase.name === "postgres") return assert.equal(cache, null);
        assert.ok(cache);
        const view = { of: "a" };
        cache.set(a.id, view);
        cache.set(b.id, { of: "b" });
        assert.equal(store.readCache(ENTITY, newMap)?.get(a.id), view, "the store hands out the same cache each time");
        const updated = rowOf(store, { title: "a2" }, a.id);
        await store.commit({ puts: [{ entity: ENTITY, row: updated, replaces: a.rev }] });
        assert.equal(cache.has(a.id), false, "the update dropped a's entry");
        assert.equal(cache.has(b.id), true, "b's entry stays");
        const refused = rowOf(store, { title: "b2" }, b.id);
        await conflictOf(store.commit({ puts: [{ entity: ENTITY, row: refused, replaces: a.rev }] }));
        assert.equal(cache.has(b.id), true, "a refused batch changed nothing");
        await store.commit({ puts: [{ entity: ENTITY, row: rowOf(store, { title: "b" }, b.id, true), replaces: b.rev }] });
        assert.equal(cache.has(b.id), false, "the delete dropped b's entry");
        cache.set(updated.id, view);
        await store.reset();
        assert.equal(store.readCache(ENTITY, newMap)?.get(updated.id), undefined, "nothing cached survives a reset");
      }));
  });
}

/** Waits (at most 30 s) until the store's feed head reaches `position`. */
async function headReaching(store: Store, position: FeedPosition): Promise<void> {
  for (const giveUpAt = Date.now() + 30_000; ; ) {
    const { head } = await store.feedState();
    if (compareFeedPositions(head, position) >= 0 || Date.now() > giveUpAt) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
