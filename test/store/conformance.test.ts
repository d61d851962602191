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
import { ConflictError, type Commit, type IdempotentAnswer, type Row, type Store, type WriteBatch } from "../../src/store/store.ts";
import { dropPgSchema, freshPgSchema, isPostgresRequired, MISSING_PG_URL, pgTestUrl } from "../support/postgres.ts";

const ENTITY = "Task";
const VALUE_INDEXED = new Map([[ENTITY, ["status"]]]);
const SCHEMA = loadSchemaObject({ [ENTITY]: { properties: { title: { type: "string" }, status: { type: "string", enum: ["todo", "done"] }, priority: { type: "integer" } } } });
const STATUS_TODO: FilterNode = { type: "compare", field: "status", path: ["status"], kind: "string", isArray: false, op: "$eq", value: "todo" };
const BY_ID = { field: "id", kind: "string", descending: false } as const;

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
  const { store } = await openStore(location, { schema: SCHEMA, valueIndexed: VALUE_INDEXED, pgSchema, warn: () => {} });
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

    test("listeners hear each commit once it is durable, in commit order, and never a refused one", () =>
      withStore(async (store) => {
        const heard: Array<{ seq: number; ids: string[] }> = [];
        store.onCommit((batch, commit) => heard.push({ seq: commit.seq, ids: batch.puts.map((put) => put.row.id) }));
        const rows = [rowOf(store, { title: "1" }), rowOf(store, { title: "2" }), rowOf(store, { title: "3" })];
        const commits: Commit[] = [];
        for (const row of rows) commits.push(await store.commit({ puts: [{ entity: ENTITY, row, replaces: 0 }] }));
        await conflictOf(store.commit({ puts: [{ entity: ENTITY, row: rowOf(store, {}, rows[0]!.id), replaces: 0 }] }));
        assert.deepEqual(heard, rows.map((row, i) => ({ seq: commits[i]!.seq, ids: [row.id] })));
        assert.ok(commits[0]!.seq < commits[1]!.seq && commits[1]!.seq < commits[2]!.seq, "seqs grow");
        // Batches committed at once are each heard once.
        const more = [rowOf(store, { title: "4" }), rowOf(store, { title: "5" })];
        await Promise.all(more.map((row) => store.commit({ puts: [{ entity: ENTITY, row, replaces: 0 }] })));
        assert.deepEqual(heard.slice(3).flatMap((h) => h.ids).sort(), more.map((row) => row.id).sort());
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
  });
}
