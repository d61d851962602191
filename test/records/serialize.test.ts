// Record JSON of new row versions (issue 7): a version the records layer builds carries its data's
// JSON, which must be byte for byte the record JSON built field by field (recordObject) for either
// key kind, and the data's own JSON. Rows holding a field no longer declared carry none.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Caller } from "../../src/keys/caller.ts";
import { Records } from "../../src/records/records.ts";
import { MAX_CACHED_JSON_ROWS, MAX_CACHED_PAGE_ROWS, recordJson, recordJsonWith, recordObject, recordsJson } from "../../src/records/serialize.ts";
import { loadSchemaObject } from "../../src/schema/load.ts";
import { validateChanges, validateCreate } from "../../src/schema/validate.ts";
import { MemoryStore } from "../../src/store/memory/memory-store.ts";
import type { Row } from "../../src/store/store.ts";
import { TASK } from "../support/server.ts";

const schema = loadSchemaObject({ Task: TASK });
const task = schema.entities.get("Task")!;
const SECRET: Caller = { keyId: "key_1", kind: "secret" };
const PUBLISHABLE: Caller = { keyId: "key_2", kind: "publishable" };

function freshRecords(): Records {
  return new Records(schema, new MemoryStore(new Map([["Task", ["status", "done"]]])));
}

/** The record JSON built field by field, as reads of rows loaded from disk get it. */
function reference(row: Row, caller: Caller): string {
  return JSON.stringify(recordObject(task, row, caller, null));
}

function assertRecordJson(row: Row, what: string): void {
  const dataJson = row.memo?.dataJson;
  assert.equal(dataJson, JSON.stringify(row.data), `${what}: memo.dataJson is the data's JSON`);
  for (const caller of [SECRET, PUBLISHABLE]) {
    assert.equal(recordJson(task, row, caller), reference(row, caller), `${what}, ${caller.kind} key`);
  }
  assert.equal("created_by_id" in JSON.parse(recordJson(task, row, PUBLISHABLE)), false, what);
}

// [what, create body, changes applied after]
const cases: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
  ["only the required field", { title: "a" }, { priority: 3 }],
  ["fields in another order than declared", { tags: ["x"], due_date: "2026-11-22", title: "b", done: true, priority: 1 }, { estimate: 2.5, title: "b2" }],
  ["every field", { title: "c", status: "doing", priority: 2, estimate: 0.5, done: false, due_date: "2026-01-01", start_at: "2026-11-22T14:00:00+02:00", email: "a@b.co", tags: [], meta: { a: [1, { b: null }] } }, { status: "done", meta: null }],
  ["text that JSON escapes", { title: 'quote " backslash \\ newline \n tab \t é ✓ 😀 \u2028 \u0000' }, { title: "</script>" }],
  ["an object field holding a created_by_id of its own", { title: "d", meta: { created_by_id: "not me", id: 1 } }, { tags: ["created_by_id"] }],
  ["a cleared field", { title: "e", priority: 5, done: true }, { priority: null, done: null }],
];

describe("the JSON of new row versions", () => {
  for (const [what, body, changes] of cases) {
    test(`a created record equals its field-by-field JSON: ${what}`, () => {
      const records = freshRecords();
      const created = records.create(task, body, SECRET).result;
      assertRecordJson(created, `${what}, created`);
    });

    test(`an updated, deleted and restored record equals its field-by-field JSON: ${what}`, async () => {
      const records = freshRecords();
      const created = records.create(task, body, SECRET).result;
      void records.store.commit({ puts: [{ entity: "Task", row: created }] });
      const updated = records.update(task, created, changes, SECRET).result;
      assertRecordJson(updated, `${what}, updated`);
      const deleted = records.remove(task, updated, SECRET).result;
      assertRecordJson(deleted, `${what}, deleted`);
      void records.store.commit({ puts: [{ entity: "Task", row: deleted }] });
      const restored = (await records.restore(task, created.id)).result.row;
      assertRecordJson(restored, `${what}, restored`);
    });
  }

  test("a batch's records share their time yet keep distinct, growing ids", () => {
    const records = freshRecords();
    const now = Date.now();
    const rows = [1, 2, 3].map((i) => records.newRow(validateCreate(task, { title: `t${i}` }), SECRET, now));
    assert.deepEqual(new Set(rows.map((row) => row.data.created_date)).size, 1);
    assert.deepEqual([...rows.map((row) => row.id)].sort(), rows.map((row) => row.id));
    assert.equal(new Set(rows.map((row) => row.id)).size, 3);
    assert.equal(rows[0]!.data.created_date, new Date(now).toISOString());
  });

  test("created_date is the time an id carries, even when the clock steps back", () => {
    const records = freshRecords();
    const now = Date.now();
    const rows = [now, now - 5_000, now + 1].map((time, i) => records.newRow(validateCreate(task, { title: `t${i}` }), SECRET, time));
    assert.deepEqual(rows.map((row) => Date.parse(row.data.created_date as string)), [now, now, now + 1]);
    for (const row of rows) assert.equal(parseInt(row.id.slice(0, 12), 16), Date.parse(row.data.created_date as string));
    assert.ok(rows[0]!.id < rows[1]!.id && rows[1]!.id < rows[2]!.id);
  });

  test("a list of new versions and a reply with extra members are the field-by-field JSON", () => {
    const records = freshRecords();
    const rows = cases.map(([, body]) => records.newRow(validateCreate(task, body), PUBLISHABLE, Date.now()));
    for (const caller of [SECRET, PUBLISHABLE]) {
      assert.equal(recordsJson(task, rows, caller, null), `[${rows.map((row) => reference(row, caller)).join(",")}]`);
      const expected = JSON.stringify({ ...recordObject(task, rows[1]!, caller, null), created: true });
      assert.equal(recordJsonWith(task, rows[1]!, caller, { created: true }), expected);
    }
  });

  test("a field no longer declared stays in the new version's data, carries no data JSON, and is never shown", () => {
    const records = freshRecords();
    const id = "0000000000010000000000ab";
    const old: Row = { id, rev: 1, deleted: false, data: { id, title: "old", colour: "red", created_date: "2026-01-01T00:00:00.000Z", updated_date: "2026-01-01T00:00:00.000Z", created_by_id: "key_1" } };
    void records.store.commit({ puts: [{ entity: "Task", row: old }] });
    const updated = records.changedRow(task, old, validateChanges(task, { priority: 2 }), Date.now());
    assert.equal(updated.data.colour, "red");
    assert.equal(updated.data.priority, 2);
    assert.equal(updated.memo?.dataJson, undefined);
    for (const caller of [SECRET, PUBLISHABLE]) {
      assert.equal(recordJson(task, updated, caller), reference(updated, caller));
      assert.equal(recordJson(task, updated, caller).includes("colour"), false);
    }
  });

  test("updated_date never goes back, and the new version is in record order", () => {
    const records = freshRecords();
    const created = records.newRow(validateCreate(task, { title: "x" }), SECRET, Date.now() + 60_000);
    const updated = records.changedRow(task, created, validateChanges(task, { priority: 1 }), Date.now());
    assert.equal(updated.data.updated_date, created.data.updated_date);
    assert.deepEqual(Object.keys(updated.data), ["id", "title", "status", "priority", "created_date", "updated_date", "created_by_id"]);
  });
});

describe("the read JSON cache", () => {
  test("is bounded: past MAX_CACHED_JSON_ROWS versions, the one cached longest ago gives its JSON up, and answers stay the same", () => {
    const rows: Row[] = Array.from({ length: MAX_CACHED_JSON_ROWS + 10 }, (_, i) => ({
      id: `id${i}`,
      rev: i + 1,
      deleted: false,
      data: { id: `id${i}`, title: `record ${i}`, created_date: "2026-01-01T00:00:00.000Z", updated_date: "2026-01-01T00:00:00.000Z", created_by_id: "key_1" },
    }));
    const first = rows[0]!;
    const expected = reference(first, SECRET);
    assert.equal(recordJson(task, first, SECRET), expected);
    assert.equal(first.memo?.secretJson, expected, "a read caches the JSON");
    assert.equal(recordJson(task, first, PUBLISHABLE), reference(first, PUBLISHABLE));
    for (const row of rows.slice(1)) recordJson(task, row, SECRET);
    assert.equal(first.memo?.secretJson, undefined, "the oldest cached version was emptied");
    assert.equal(first.memo?.publicJson, undefined);
    assert.equal(rows.at(-1)!.memo?.secretJson, reference(rows.at(-1)!, SECRET), "the newest keeps its JSON");
    assert.equal(recordJson(task, first, SECRET), expected, "an emptied version answers the same, built again");
  });

  test("holds the rows of pages up to MAX_CACHED_PAGE_ROWS, not of bigger ones, whose answers are the same", () => {
    const page = (size: number, from: number): Row[] => Array.from({ length: size }, (_, i) => ({
      id: `p${from + i}`,
      rev: 1,
      deleted: false,
      data: { id: `p${from + i}`, title: `page row ${from + i}`, created_date: "2026-01-01T00:00:00.000Z", updated_date: "2026-01-01T00:00:00.000Z", created_by_id: "key_1" },
    }));
    const small = page(MAX_CACHED_PAGE_ROWS, 0);
    const big = page(MAX_CACHED_PAGE_ROWS + 1, MAX_CACHED_PAGE_ROWS);
    const expected = (rows: Row[]) => `[${rows.map((row) => reference(row, SECRET)).join(",")}]`;
    assert.equal(recordsJson(task, small, SECRET, null), expected(small));
    assert.equal(recordsJson(task, big, SECRET, null), expected(big));
    assert.ok(small.every((row) => row.memo?.secretJson === reference(row, SECRET)), "a page's rows are cached");
    assert.ok(big.every((row) => row.memo?.secretJson === undefined), "a bigger page's rows are not");
  });

  test("leaves transient rows (read from PostgreSQL for one answer) uncached, alone or in a page, and answers the same", () => {
    const transient = (i: number): Row => ({
      id: `t${i}`,
      rev: 1,
      deleted: false,
      data: { id: `t${i}`, title: `read once ${i}`, created_date: "2026-01-01T00:00:00.000Z", updated_date: "2026-01-01T00:00:00.000Z", created_by_id: "key_1" },
      isTransient: true,
    });
    const one = transient(0);
    assert.equal(recordJson(task, one, SECRET), reference(one, SECRET));
    assert.equal(recordJson(task, one, PUBLISHABLE), reference(one, PUBLISHABLE));
    assert.equal(one.memo, undefined, "a transient row gets no memo");
    const rows = [1, 2, 3].map(transient);
    // Values recordObject leaves out, keeps or reorders: a null, an undeclared field, nested values.
    rows.push({ ...transient(4), data: { meta: { b: 1, a: [null, "x"] }, priority: null, gone: 1, tags: [], id: "t4", title: "odd \u2028 \"one\"", created_date: "2026-01-01T00:00:00.000Z", updated_date: "2026-01-01T00:00:00.000Z", created_by_id: null } });
    for (const caller of [SECRET, PUBLISHABLE]) {
      assert.equal(recordsJson(task, rows, caller, null), `[${rows.map((row) => reference(row, caller)).join(",")}]`, `a page, ${caller.kind} key`);
      assert.equal(recordsJson(task, [], caller, null), "[]");
    }
    assert.ok(rows.every((row) => row.memo === undefined), "nor do the rows of a page");
    const mixed = [transient(5), page1Row()];
    assert.equal(recordsJson(task, mixed, SECRET, null), `[${mixed.map((row) => reference(row, SECRET)).join(",")}]`, "a page of transient and kept rows");
  });

  /** A row the store keeps, its JSON already cached. */
  function page1Row(): Row {
    const row: Row = { id: "k1", rev: 2, deleted: false, data: { id: "k1", title: "kept", created_date: "2026-01-01T00:00:00.000Z", updated_date: "2026-01-01T00:00:00.000Z", created_by_id: "key_1" } };
    recordJson(task, row, SECRET);
    return row;
  }

  test("a written version gives up its data JSON once the store has it", () => {
    const records = freshRecords();
    const change = records.create(task, { title: "Keep it short" }, SECRET);
    const row = change.puts[0]!.row;
    assert.notEqual(row.memo?.dataJson, undefined);
    void records.store.commit({ puts: [{ entity: "Task", row }] });
    assert.equal(row.memo?.dataJson, undefined);
    assert.equal(recordJson(task, row, SECRET), reference(row, SECRET));
  });
});
