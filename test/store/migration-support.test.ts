// What the migration engine and the start-up schema check ask of every store (store.ts): metadata
// written with a batch, drops, sync puts, forEachRow, uniqueClashes and exclusively. One suite run
// against each store through open-store.ts, as conformance.test.ts is; "reopened" is a second open
// of the same folder (file) or schema (PostgreSQL), and the memory store's same instance.

import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { loadSchemaObject, type Schema } from "../../src/schema/load.ts";
import { MemoryStore } from "../../src/store/memory/memory-store.ts";
import { openStore, type StoreLocation } from "../../src/store/open-store.ts";
import { FEED_START, type FeedEvent, type Row, type Store } from "../../src/store/store.ts";
import { WRITE_CHUNK_ROWS } from "../../src/store/postgres/postgres-writes.ts";
import { findPostgresBin, startCluster } from "../support/pg-cluster.mjs";
import { dropPgSchema, freshPgSchema, isPostgresRequired, MISSING_PG_URL, pgTestUrl } from "../support/postgres.ts";

const STAMP = "2026-01-01T00:00:00.000Z";
const V1 = loadSchemaObject({ Task: { properties: { title: { type: "string" } } }, Old: { properties: { name: { type: "string" } } } });
/** Old renamed New; Item declares a unique email. */
const V2 = loadSchemaObject({
  Task: { properties: { title: { type: "string" } } },
  New: { properties: { name: { type: "string" } } },
  Item: { properties: { email: { type: "string" } }, unique: [["email"]] },
});
const LOOSE_ITEM = loadSchemaObject({ Task: { properties: { title: { type: "string" } } }, Item: { properties: { email: { type: "string" } } } });

interface Place {
  /** A store over this place's data, made with `schema` (the memory store: always the same one). */
  open(schema: Schema): Promise<Store>;
  /** Whether a store opened again sees what an earlier one wrote (not the memory store's). */
  readonly isShared: boolean;
  /** Whether two stores may be open on the place at once (PostgreSQL). */
  readonly isConcurrent: boolean;
  dispose(): Promise<void>;
}

interface StoreCase {
  readonly name: string;
  /**
   * `isAlone`: PostgreSQL on a cluster of its own. A commit's transaction holds back every reader of
   * a change feed on the cluster (their XMIN) while it runs, and one of 100,000 records runs for
   * seconds: tests of other files sharing the cluster would wait that long for their events.
   */
  place(isAlone?: boolean): Promise<Place>;
}

const folders: string[] = [];
after(async () => {
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
});

async function openAt(location: StoreLocation, schema: Schema, pgSchema?: string): Promise<Store> {
  return (await openStore(location, { schema, valueIndexed: new Map(), pgSchema, changesKeep: 1000, warn: () => {} })).store;
}

const CASES: StoreCase[] = [
  {
    name: "memory",
    async place() {
      const store = new MemoryStore(new Map());
      return { open: async () => store, isShared: false, isConcurrent: true, dispose: () => store.close() };
    },
  },
  {
    name: "file",
    async place() {
      const dir = await mkdtemp(join(tmpdir(), "tabula-migration-support-"));
      folders.push(dir);
      return { open: (schema) => openAt({ kind: "file", dir }, schema), isShared: true, isConcurrent: false, dispose: async () => {} };
    },
  },
];
const pgUrl = pgTestUrl();
if (pgUrl) {
  CASES.push({
    name: "postgres",
    async place(isAlone = false) {
      const pgSchema = freshPgSchema();
      // Without PostgreSQL's binaries here (TABULA_TEST_PG_URL names a database elsewhere), the shared one.
      const cluster = isAlone && findPostgresBin() !== null ? await startCluster() : null;
      const url = cluster?.url ?? pgUrl;
      const dispose = async () => (cluster ? cluster.stop() : dropPgSchema(url, pgSchema));
      return { open: (schema) => openAt({ kind: "postgres", url }, schema, pgSchema), isShared: true, isConcurrent: true, dispose };
    },
  });
} else if (isPostgresRequired()) {
  test("the postgres store: needs PostgreSQL (TABULA_REQUIRE_POSTGRES=1)", () => assert.fail(MISSING_PG_URL));
}

let idCounter = 0;
function newId(): string {
  return (Date.now() * 4096 + ++idCounter).toString(16).padStart(24, "0");
}

function rowOf(store: Store, data: Record<string, unknown>, id = newId(), deleted = false): Row {
  return { id, rev: store.nextRev(), deleted, data: { id, ...data, created_date: STAMP, updated_date: STAMP, created_by_id: "key_test" } };
}

async function rowsOf(store: Store, entity: string): Promise<Array<{ id: string; deleted: boolean; data: unknown }>> {
  const rows: Row[] = [];
  await store.forEachRow(entity, (row) => rows.push(row));
  return rows.map(({ id, deleted, data }) => ({ id, deleted, data })).sort((a, b) => (a.id < b.id ? -1 : 1));
}

/** Every readable event, once the store's own writes are readable (PostgreSQL makes them so shortly after). */
async function eventsOf(store: Store): Promise<FeedEvent[]> {
  await store.feedState();
  return (await store.readChanges(FEED_START, null, 1000)).events;
}

for (const storeCase of CASES) {
  describe(`the ${storeCase.name} store, for migrations`, () => {
    async function withPlace(work: (place: Place) => Promise<void>, isAlone = false): Promise<void> {
      const place = await storeCase.place(isAlone);
      try {
        await work(place);
      } finally {
        await place.dispose();
      }
    }

    /** `store` closed and the place opened again (the memory store: the same one, kept open). */
    async function reopen(place: Place, store: Store, schema: Schema): Promise<Store> {
      if (!place.isShared) return store;
      await store.close();
      return place.open(schema);
    }

    test("metadata written with a batch is read back, survives a reopen, and null removes it; a reset keeps it", () =>
      withPlace(async (place) => {
        let store = await place.open(V1);
        assert.equal(await store.meta("schema"), undefined);
        const row = rowOf(store, { title: "a" });
        const declarations = { Task: { properties: { title: { type: "string" } } }, note: "é \n \" ✓" };
        await store.commit({ puts: [{ entity: "Task", row, replaces: 0 }], meta: [{ key: "schema", value: declarations }, { key: "ran", value: ["m1"] }, { key: "gone", value: 1 }] });
        await store.commit({ puts: [], meta: [{ key: "gone", value: null }, { key: "ran", value: ["m1", "m2"] }] });
        assert.deepEqual(await store.meta("schema"), declarations);
        // A value read is a copy: changing it changes nothing stored.
        ((await store.meta("ran")) as string[]).push("mutated");
        assert.deepEqual(await store.meta("ran"), ["m1", "m2"]);
        assert.equal(await store.meta("gone"), undefined);
        store = await reopen(place, store, V1);
        assert.deepEqual(await store.meta("schema"), declarations);
        assert.deepEqual(await store.meta("ran"), ["m1", "m2"]);
        assert.equal(await store.meta("gone"), undefined);
        assert.equal((await store.get("Task", row.id))?.data.title, "a");
        await store.reset();
        assert.equal(await store.get("Task", row.id), undefined);
        assert.deepEqual(await store.meta("ran"), ["m1", "m2"], "a reset empties records, not metadata");
        store = await reopen(place, store, V1);
        assert.deepEqual(await store.meta("ran"), ["m1", "m2"]);
        await store.close();
      }));

    if (storeCase.name === "postgres") {
      test("metadata committed by one process is read by another sharing the schema", () =>
        withPlace(async (place) => {
          const [first, second] = [await place.open(V1), await place.open(V1)];
          try {
            await first.commit({ puts: [], meta: [{ key: "schema", value: { v: 2 } }] });
            assert.deepEqual(await second.meta("schema"), { v: 2 });
            await second.commit({ puts: [], meta: [{ key: "schema", value: null }] });
            assert.equal(await first.meta("schema"), undefined);
          } finally {
            await Promise.all([first.close(), second.close()]);
          }
        }));

      test("exclusively: a task of another process waits until the first one's has finished; a task of another name does not", () =>
        withPlace(async (place) => {
          const [first, second] = [await place.open(V1), await place.open(V1)];
          try {
            const steps: string[] = [];
            let started!: () => void;
            const isStarted = new Promise<void>((resolve) => (started = resolve));
            const one = first.exclusively("migrate", async () => {
              steps.push("first starts");
              started();
              await new Promise((resolve) => setTimeout(resolve, 400));
              steps.push("first ends");
              return 1;
            });
            await isStarted;
            const two = second.exclusively("migrate", async () => {
              steps.push("second starts");
              return 2;
            });
            // Meanwhile, another name is not held up.
            assert.equal(await second.exclusively("other", async () => steps.push("other runs")), 2);
            assert.deepEqual(await Promise.all([one, two]), [1, 2]);
            assert.deepEqual(steps, ["first starts", "other runs", "first ends", "second starts"]);
          } finally {
            await Promise.all([first.close(), second.close()]);
          }
        }));
    }

    test("drops and puts in one batch rename an entity: the rows move with their ids, the old entity is gone, also after a reopen", () =>
      withPlace(async (place) => {
        let store = await place.open(V1);
        const live = rowOf(store, { name: "kept" });
        const deleted = rowOf(store, { name: "was deleted" }, newId(), true);
        await store.commit({ puts: [{ entity: "Old", row: live, replaces: 0 }, { entity: "Old", row: deleted, replaces: 0 }] });
        store = await reopen(place, store, V2);
        assert.equal((await rowsOf(store, "Old")).length, 2, "an entity no longer declared keeps its rows until dropped");
        const moved = [live, deleted].map((row) => ({ ...rowOf(store, row.data, row.id, row.deleted) }));
        await store.commit({ drops: ["Old"], puts: moved.map((row) => ({ entity: "New", row, replaces: 0, sync: true as const })), meta: [{ key: "ran", value: ["rename"] }] });
        const expected = moved.map(({ id, deleted, data }) => ({ id, deleted, data })).sort((a, b) => (a.id < b.id ? -1 : 1));
        assert.deepEqual(await rowsOf(store, "Old"), []);
        assert.deepEqual(await rowsOf(store, "New"), expected);
        assert.equal(await store.get("Old", live.id), undefined);
        assert.equal((await store.get("New", live.id))?.rev, moved[0]!.rev);
        store = await reopen(place, store, V2);
        assert.deepEqual(await rowsOf(store, "Old"), []);
        assert.deepEqual(await rowsOf(store, "New"), expected);
        assert.deepEqual(await store.meta("ran"), ["rename"]);
        // A drop of an entity that holds nothing (in PostgreSQL: has no table) does nothing.
        await store.commit({ drops: ["Never"], puts: [] });
        await store.close();
      }));

    test("a sync put's event is a sync, of a live or a deleted row; a delete is still a delete", () =>
      withPlace(async (place) => {
        let store = await place.open(V1);
        const a = rowOf(store, { title: "a" });
        const b = rowOf(store, { title: "b" });
        await store.commit({ puts: [{ entity: "Task", row: a, replaces: 0 }, { entity: "Task", row: b, replaces: 0 }] });
        const gone = rowOf(store, { title: "b" }, b.id, true);
        await store.commit({ puts: [{ entity: "Task", row: gone, replaces: b.rev }] });
        const a2 = rowOf(store, { title: "A" }, a.id);
        const gone2 = rowOf(store, { title: "B" }, b.id, true);
        await store.commit({ puts: [{ entity: "Task", row: a2, replaces: a.rev, sync: true }, { entity: "Task", row: gone2, replaces: gone.rev, sync: true }] });
        const expected = [
          ["create", a.id, false],
          ["create", b.id, false],
          ["delete", b.id, true],
          ["sync", a.id, false],
          ["sync", b.id, true],
        ];
        const seen = (events: FeedEvent[]) => events.map((event) => [event.type, event.row.id, event.row.deleted]);
        assert.deepEqual(seen(await eventsOf(store)), expected);
        assert.equal((await store.get("Task", a.id))?.data.title, "A");
        store = await reopen(place, store, V1);
        if (place.isShared) assert.deepEqual(seen(await eventsOf(store)), expected, "events read back after a reopen");
        await store.close();
      }));

    test("forEachRow visits every row, deleted ones included, of declared and undeclared entities; none of an unknown one", () =>
      withPlace(async (place) => {
        let store = await place.open(V1);
        const rows = [rowOf(store, { name: "x" }), rowOf(store, { name: "y" }, newId(), true)];
        await store.commit({ puts: rows.map((row) => ({ entity: "Old", row, replaces: 0 })) });
        const task = rowOf(store, { title: "t" }, newId(), true);
        await store.commit({ puts: [{ entity: "Task", row: task, replaces: 0 }] });
        store = await reopen(place, store, V2);
        assert.deepEqual(
          await rowsOf(store, "Old"),
          rows.map(({ id, deleted, data }) => ({ id, deleted, data })),
        );
        assert.deepEqual(await rowsOf(store, "Task"), [{ id: task.id, deleted: true, data: task.data }]);
        assert.deepEqual(await rowsOf(store, "Nowhere"), []);
        await store.close();
      }));

    test("exclusively runs the task and answers what it answers, or its error", () =>
      withPlace(async (place) => {
        const store = await place.open(V1);
        try {
          assert.equal(await store.exclusively("migrate", async () => 42), 42);
          await assert.rejects(
            store.exclusively("migrate", async () => {
              throw new Error("the task failed");
            }),
            /the task failed/,
          );
          // Released after a failure: the next task runs.
          assert.equal(await store.exclusively("migrate", async () => "again"), "again");
        } finally {
          await store.close();
        }
      }));

    if (storeCase.name !== "memory") {
      test("a unique set declared over stored duplicates is reported by uniqueClashes, group by group, first holder first, not thrown", () =>
        withPlace(async (place) => {
          let store = await place.open(LOOSE_ITEM);
          const same = [rowOf(store, { email: "same@x.io" }), rowOf(store, { email: "same@x.io" }), rowOf(store, { email: "same@x.io" })];
          const other = [rowOf(store, { email: "o@x.io" }), rowOf(store, { email: "o@x.io" })];
          const alone = rowOf(store, { email: "alone@x.io" });
          const deletedTwin = rowOf(store, { email: "alone@x.io" }, newId(), true);
          for (const row of [...same, ...other, alone, deletedTwin]) await store.commit({ puts: [{ entity: "Item", row, replaces: 0 }] });
          assert.deepEqual(await store.uniqueClashes(), []);
          store = await reopen(place, store, V2);
          const clashes = (await store.uniqueClashes()).map(({ entity, fields, ids }) => ({ entity, fields: [...fields], ids: [...ids] }));
          assert.deepEqual(
            clashes.sort((a, b) => (a.ids[0]! < b.ids[0]! ? -1 : 1)),
            [
              { entity: "Item", fields: ["email"], ids: same.map((row) => row.id) },
              { entity: "Item", fields: ["email"], ids: other.map((row) => row.id) },
            ],
          );
          await store.close();
        }));

      // On PostgreSQL 20,000 (four statements of WRITE_CHUNK_ROWS each, in one transaction) prove
      // the same as 100,000, in a fifth of the suite's time.
      test(`a batch of ${storeCase.name === "postgres" ? "20,000" : "100,000"} puts commits in one piece and is read back after a reopen`, { timeout: 240_000 }, () =>
        withPlace(async (place) => {
          let store = await place.open(V1);
          const count = storeCase.name === "postgres" ? 4 * WRITE_CHUNK_ROWS : 100_000;
          const rows = Array.from({ length: count }, (_, i) => rowOf(store, { title: `task ${i}` }));
          await store.commit({ puts: rows.map((row) => ({ entity: "Task", row, replaces: 0 })) });
          // A migration rewrites them all, each replacing the revision it read.
          const rewritten = rows.map((row) => rowOf(store, { title: `${row.data.title as string}!` }, row.id));
          await store.commit({ puts: rewritten.map((row, i) => ({ entity: "Task", row, replaces: rows[i]!.rev, sync: true as const })), meta: [{ key: "ran", value: ["bang"] }] });
          store = await reopen(place, store, V1);
          assert.equal(await store.count("Task", null, "exclude"), count);
          let visited = 0;
          let right = 0;
          await store.forEachRow("Task", (row) => {
            visited++;
            if (row.data.title === `task ${Number(String(row.data.title).slice(5, -1))}!` && row.rev === rewritten[Number(String(row.data.title).slice(5, -1))]!.rev) right++;
          });
          assert.equal(visited, count);
          assert.equal(right, count);
          assert.deepEqual(await store.meta("ran"), ["bang"]);
          await store.close();
        }, true));
    }
  });
}
