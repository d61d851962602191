// distinctValues() and resolveDistinctField() as pure functions over memory stores: a table of
// fields and their values, pages resumed after a value, and the value-index path agreeing with
// the row walk and with a brute-force reference on random records.

import assert from "node:assert/strict";
import { test } from "node:test";
import { parseFilter } from "../../src/query/filter.ts";
import { distinctValues, isDistinctValue, resolveDistinctField } from "../../src/records/distinct.ts";
import { compareSortKeys, toSortKey } from "../../src/schema/fields.ts";
import { loadSchemaObject } from "../../src/schema/load.ts";
import { MemoryStore } from "../../src/store/memory/memory-store.ts";
import type { Row } from "../../src/store/store.ts";
import { TASK } from "../support/server.ts";
import { seeded } from "../support/random.ts";

const entity = loadSchemaObject({ Task: TASK }).entities.get("Task")!;
const SECRET = { mayUseCreatedBy: true };

function storeOf(records: Array<Record<string, unknown> & { deleted?: boolean }>, valueIndexed: string[]): MemoryStore {
  const store = new MemoryStore(new Map([["Task", valueIndexed]]));
  const rows: Row[] = records.map(({ deleted, ...data }, i) => {
    const id = (i + 1).toString(16).padStart(24, "0");
    return { id, rev: store.nextRev(), deleted: deleted === true, data: { id, ...data } };
  });
  void store.commit({ puts: rows.map((row) => ({ entity: "Task", row })) });
  return store;
}

function values(store: MemoryStore, field: string, options: { q?: unknown; after?: unknown; limit?: number } = {}) {
  const filter = options.q === undefined ? null : parseFilter(entity, options.q, SECRET);
  return distinctValues(store, entity, { field: resolveDistinctField(entity, field, SECRET), filter, after: options.after, limit: options.limit ?? 100 });
}

const RECORDS = [
  { status: "todo", priority: 10, done: true, due_date: "2026-01-02", start_at: "2026-01-01T00:00:00.000Z", tags: ["b", "a"] },
  { status: "doing", priority: 9, done: false, due_date: "2025-12-31", tags: ["a"] },
  { status: "todo", priority: -1, tags: [] },
  { status: "done", priority: 7, done: true, tags: ["z"], deleted: true },
  { status: "legacy", priority: "8", done: "yes", tags: "c" }, // left by an older declaration
];

test("values of every kind, ascending, without deleted records, nulls, or values of another type", async () => {
  const table: Array<[field: string, expected: unknown[]]> = [
    ["status", ["doing", "legacy", "todo"]],
    ["priority", [-1, 9, 10]],
    ["done", [false, true]],
    ["due_date", ["2025-12-31", "2026-01-02"]],
    ["start_at", ["2026-01-01T00:00:00.000Z"]],
    ["tags", ["a", "b"]],
    ["estimate", []],
  ];
  for (const valueIndexed of [[], ["status", "done"]]) {
    const store = storeOf(RECORDS, valueIndexed);
    for (const [field, expected] of table) {
      assert.deepEqual(await values(store, field), { values: expected, hasMore: false, last: null }, `${field}, indexed ${valueIndexed}`);
    }
  }
});

test("a page ends at limit, names its last value, and the next resumes strictly after it", async () => {
  const store = storeOf(RECORDS, ["status"]);
  assert.deepEqual(await values(store, "priority", { limit: 2 }), { values: [-1, 9], hasMore: true, last: 9 });
  assert.deepEqual(await values(store, "priority", { limit: 2, after: 9 }), { values: [10], hasMore: false, last: null });
  assert.deepEqual(await values(store, "priority", { after: 9.5 }), { values: [10], hasMore: false, last: null });
  assert.deepEqual(await values(store, "status", { limit: 1, after: "doing" }), { values: ["legacy"], hasMore: true, last: "legacy" });
  assert.deepEqual(await values(store, "due_date", { after: "2025-12-31T12:00:00Z" }), { values: ["2026-01-02"], hasMore: false, last: null });
  assert.deepEqual(await values(store, "status", { q: { priority: { $gt: 0 } } }), { values: ["doing", "todo"], hasMore: false, last: null });
});

test("fields of no order are refused, and a cursor's value must fit its field", () => {
  assert.throws(() => resolveDistinctField(entity, "meta", SECRET), { code: "invalid_parameter" });
  assert.throws(() => resolveDistinctField(entity, "nope", SECRET), { code: "unknown_field" });
  assert.throws(() => resolveDistinctField(entity, "created_by_id", { mayUseCreatedBy: false }), { code: "forbidden" });
  const untyped = loadSchemaObject({ Note: { properties: { list: { type: "array" }, nested: { type: "array", items: { type: "object" } } } } }).entities.get("Note")!;
  assert.throws(() => resolveDistinctField(untyped, "list", SECRET), { code: "invalid_parameter" });
  assert.throws(() => resolveDistinctField(untyped, "nested", SECRET), { code: "invalid_parameter" });
  const table: Array<[field: string, value: unknown, fits: boolean]> = [
    ["priority", 3, true], ["priority", "3", false], ["done", false, true], ["done", 0, false],
    ["due_date", "2026-01-01", true], ["due_date", "soon", false], ["tags", "a", true], ["tags", 1, false],
  ];
  for (const [field, value, fits] of table) assert.equal(isDistinctValue(resolveDistinctField(entity, field, SECRET), value), fits, `${field} ${value}`);
});

test("with or without a value index, and page by page, distinct equals a brute-force reference", async () => {
  const next = seeded(777);
  const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]!;
  const kinds: Record<string, "string" | "number" | "boolean" | "date"> = { status: "string", done: "boolean", priority: "number", due_date: "date", tags: "string", title: "string" };
  for (let round = 0; round < 25; round++) {
    const records = Array.from({ length: Math.floor(next() * 40) }, () => {
      const record: Record<string, unknown> & { deleted: boolean } = { title: pick(["a", "B", "é", "\u{1f600}", "\uff3a"]), deleted: next() < 0.25 };
      if (next() < 0.8) record.status = pick(["todo", "doing", "done"]);
      if (next() < 0.7) record.done = next() < 0.5;
      if (next() < 0.7) record.priority = pick([-2, 0, 1, 1.5, 30]);
      if (next() < 0.6) record.due_date = pick(["2025-12-31", "2026-01-01", "2026-01-10"]);
      if (next() < 0.7) record.tags = Array.from({ length: Math.floor(next() * 3) }, () => pick(["x", "y", "z"]));
      return record;
    });
    const indexed = storeOf(records, ["status", "done"]);
    const walked = storeOf(records, []);
    for (const [field, kind] of Object.entries(kinds)) {
      const live = records.filter((record) => !record.deleted).flatMap((record) => (field === "tags" ? ((record.tags as unknown[]) ?? []) : [record[field]]));
      const expected = [...new Set(live.filter((value) => value !== undefined))].sort((a, b) => compareSortKeys(toSortKey(kind, a), toSortKey(kind, b)));
      assert.deepEqual((await values(indexed, field)).values, expected, `round ${round} ${field}`);
      assert.deepEqual((await values(walked, field)).values, expected, `round ${round} ${field}, walked`);
      const pages: unknown[] = [];
      for (let after: unknown = undefined; ; ) {
        const page = await values(indexed, field, { after, limit: 2 });
        pages.push(...page.values);
        if (!page.hasMore) break;
        after = page.last;
      }
      assert.deepEqual(pages, expected, `round ${round} ${field}, in pages of 2`);
    }
  }
});
