// parseAggregateSpec, aggregate() and the date buckets as pure functions over a memory store: tables
// of [input, expected], and a seeded comparison with a brute-force reference written from the
// rules of docs/aggregates.md (nulls, empty measures, array groups, ordering), over random records with deletes.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { aggregate } from "../../src/records/aggregate.ts";
import { parseAggregateSpec } from "../../src/records/aggregate-spec.ts";
import { bucketLabel, bucketOf } from "../../src/records/date-bucket.ts";
import { compareSortKeys, toSortKey } from "../../src/schema/fields.ts";
import { loadSchemaObject } from "../../src/schema/load.ts";
import { MemoryStore } from "../../src/store/memory/memory-store.ts";
import type { Row } from "../../src/store/store.ts";
import { TASK } from "../support/server.ts";
import { seeded } from "../support/random.ts";

const entity = loadSchemaObject({ Task: TASK }).entities.get("Task")!;
const SECRET = { mayUseCreatedBy: true };

function storeOf(records: Array<Record<string, unknown> & { deleted?: boolean }>, valueIndexed = ["status", "done"]): MemoryStore {
  const store = new MemoryStore(new Map([["Task", valueIndexed]]));
  const rows: Row[] = records.map(({ deleted, ...data }, i) => {
    const id = (i + 1).toString(16).padStart(24, "0");
    return { id, rev: store.nextRev(), deleted: deleted === true, data: { id, ...data, created_date: "2026-01-01T00:00:00.000Z", updated_date: "2026-01-01T00:00:00.000Z", created_by_id: "key_a" } };
  });
  void store.commit({ puts: rows.map((row) => ({ entity: "Task", row })) });
  return store;
}

function run(store: MemoryStore, spec: unknown) {
  return aggregate(store, entity, parseAggregateSpec(entity, spec, SECRET));
}

describe("date buckets", () => {
  test("each unit names its bucket in UTC; weeks by their Monday, across year ends and leap days", () => {
    const table: Array<[unit: "day" | "week" | "month" | "year", value: string, label: string]> = [
      ["day", "2026-03-04", "2026-03-04"],
      ["day", "2026-03-04T23:59:59.999Z", "2026-03-04"],
      ["day", "2026-03-05T01:00:00+02:00", "2026-03-04"],
      ["week", "2026-01-01", "2025-12-29"], // a Thursday
      ["week", "2026-01-04", "2025-12-29"], // a Sunday ends the week
      ["week", "2026-01-05", "2026-01-05"], // a Monday starts one
      ["week", "2027-01-01T10:00:00.000Z", "2026-12-28"],
      ["week", "2024-03-01", "2024-02-26"],
      ["week", "1970-01-01", "1969-12-29"],
      ["week", "1969-12-31T23:00:00.000Z", "1969-12-29"],
      ["week", "0001-01-03", "0001-01-01"],
      ["month", "2024-02-29", "2024-02"],
      ["month", "2026-12-31T23:30:00-01:00", "2027-01"],
      ["month", "1969-12-31", "1969-12"],
      ["year", "2026-12-31T23:59:59.999Z", "2026"],
      ["year", "0999-06-01", "0999"],
      ["year", "0000-01-01T00:30:00+01:00", "-000001"],
    ];
    for (const [unit, value, label] of table) {
      const bucket = bucketOf(unit, value);
      assert.notEqual(bucket, null, `${unit} ${value}`);
      assert.equal(bucketLabel(unit, bucket!), label, `${unit} ${value}`);
    }
  });

  test("buckets order as their labels do, and what is no date is no bucket", () => {
    const days = ["1969-12-31", "1970-01-01", "2025-12-31", "2026-01-01", "2026-02-01"];
    for (const unit of ["day", "week", "month", "year"] as const) {
      const buckets = days.map((day) => bucketOf(unit, day)!);
      assert.deepEqual(buckets, [...buckets].sort((a, b) => a - b), unit);
    }
    for (const value of [undefined, null, 3, "soon", "2026-02-30", ["2026-01-01"]]) assert.equal(bucketOf("day", value), null, JSON.stringify(value));
  });
});

describe("parseAggregateSpec", () => {
  test("orders the columns: the bucket, groupBy's fields, count, then sum, avg, min, max, count_distinct", () => {
    const spec = parseAggregateSpec(entity, { countDistinct: "tags", max: "title", min: "due_date", avg: "estimate", sum: ["priority", "estimate"], groupBy: ["status", "tags"], dateBucket: { field: "start_at", unit: "week" } }, SECRET);
    assert.deepEqual([...spec.columns], [
      ["start_at", "string"], ["status", "string"], ["tags", "string"], ["count", "number"], ["sum_priority", "number"], ["sum_estimate", "number"],
      ["avg_estimate", "number"], ["min_due_date", "date"], ["max_title", "string"], ["count_distinct_tags", "number"],
    ]);
    assert.deepEqual(spec.groups.map((column) => [column.name, column.isArray, column.bucket]), [["start_at", false, "week"], ["status", false, null], ["tags", true, null]]);
    assert.deepEqual([spec.filter, spec.having, spec.sort, spec.limit, spec.count], [null, [], null, 1000, true]);
  });

  test("refuses what it cannot compute, with the code and parameter at fault", () => {
    const PUBLISHABLE = { mayUseCreatedBy: false };
    const table: Array<[spec: unknown, code: string, parameter?: string, access?: typeof PUBLISHABLE]> = [
      [null, "invalid_json"],
      [{ groupBy: ["tags", "tags"] }, "invalid_parameter", "groupBy"],
      [{ countDistinct: "created_by_id" }, "forbidden", undefined, PUBLISHABLE],
      [{ dateBucket: { field: "tags", unit: "day" } }, "invalid_parameter", "dateBucket"],
      [{ countDistinct: "" }, "invalid_json", "countDistinct"],
      [{ groupBy: "status", count: false, having: { count: 1 } }, "unknown_field", "having"],
    ];
    for (const [spec, code, parameter, access = SECRET] of table) {
      assert.throws(() => parseAggregateSpec(entity, spec, access), (error: any) => {
        assert.equal(error.code, code, JSON.stringify(spec));
        if (parameter) assert.equal(error.details.parameter, parameter, JSON.stringify(spec));
        return true;
      });
    }
  });
});

describe("aggregate", () => {
  const store = storeOf([
    { title: "a", status: "todo", priority: 2, estimate: 0.1, tags: ["x", "y"], due_date: "2026-01-01" },
    { title: "b", status: "todo", priority: 4, estimate: 0.2, tags: ["y"], due_date: "2026-01-01" },
    { title: "c", status: "done", priority: 6, done: true },
    { title: "d", status: "done", priority: 1000, deleted: true },
    { title: "e", status: "legacy-value", priority: "7" },
  ]);

  test("tables of spec → rows", async () => {
    const table: Array<[spec: unknown, rows: unknown[], truncated?: boolean]> = [
      [{}, [{ count: 4 }]],
      [{ sum: "estimate", avg: "priority" }, [{ count: 4, sum_estimate: 0.30000000000000004, avg_priority: 4 }]],
      [{ groupBy: "status" }, [{ status: "done", count: 1 }, { status: "legacy-value", count: 1 }, { status: "todo", count: 2 }]],
      [{ groupBy: "priority", count: false }, [{ priority: 2 }, { priority: 4 }, { priority: 6 }, { priority: null }]],
      [{ groupBy: "tags", countDistinct: "title" }, [{ tags: "x", count: 1, count_distinct_title: 1 }, { tags: "y", count: 2, count_distinct_title: 2 }, { tags: null, count: 2, count_distinct_title: 2 }]],
      [{ dateBucket: { field: "due_date", unit: "year" }, limit: 1 }, [{ due_date: "2026", count: 2 }], true],
      [{ groupBy: "done", sort: "-count", limit: 1 }, [{ done: null, count: 3 }], true],
      [{ groupBy: "status", having: { status: "nothing" } }, []],
    ];
    for (const [spec, rows, truncated = false] of table) assert.deepEqual(await run(store, spec), { rows, truncated }, JSON.stringify(spec));
  });
});

// ---------------------------------------------------------------- seeded comparison

type Data = Record<string, unknown>;

function randomRecord(next: () => number): Data & { deleted: boolean } {
  const pick = <T>(values: readonly T[]) => values[Math.floor(next() * values.length)]!;
  const record: Data & { deleted: boolean } = { title: pick(["a", "B", "é", "\u{1f600}", "z"]), deleted: next() < 0.2 };
  if (next() < 0.8) record.status = pick(["todo", "doing", "done"]);
  if (next() < 0.7) record.done = next() < 0.5;
  if (next() < 0.7) record.priority = pick([-3, 0, 1, 2, 5, 8]);
  if (next() < 0.6) record.estimate = pick([0.1, 0.2, 0.7, 1.5, 3]);
  if (next() < 0.6) record.due_date = pick(["2025-12-28", "2025-12-29", "2026-01-01", "2026-01-04", "2026-02-28"]);
  if (next() < 0.7) record.tags = Array.from({ length: Math.floor(next() * 4) }, () => pick(["p", "q", "r"]));
  return record;
}

/** The rules of docs/aggregates.md, computed the slow and obvious way. */
function reference(records: Array<Data & { deleted: boolean }>, groupBy: string[], arrayField: string | null): Data[] {
  const groups = new Map<string, { key: unknown[]; members: Data[] }>();
  for (const record of records.filter((r) => !r.deleted)) {
    const scalar = groupBy.map((field) => (field === arrayField ? undefined : record[field] ?? null));
    const elements = arrayField ? [...new Set(((record[arrayField] as unknown[]) ?? []))] : [undefined];
    for (const element of elements.length > 0 ? elements : [null]) {
      const key = groupBy.map((field, i) => (field === arrayField ? element : scalar[i]));
      const text = JSON.stringify(key);
      if (!groups.has(text)) groups.set(text, { key, members: [] });
      groups.get(text)!.members.push(record);
    }
  }
  if (groupBy.length === 0 && groups.size === 0) groups.set("[]", { key: [], members: [] }); // one total row, even of nothing
  const numbers = (members: Data[], field: string) => members.map((m) => m[field]).filter((v): v is number => typeof v === "number");
  const rows = [...groups.values()].map(({ key, members }) => {
    const row: Data = {};
    groupBy.forEach((field, i) => (row[field] = key[i]));
    const estimates = numbers(members, "estimate");
    const priorities = numbers(members, "priority");
    const dates = members.map((m) => m.due_date).filter((v): v is string => typeof v === "string").sort();
    row.count = members.length;
    row.sum_priority = priorities.reduce((a, b) => a + b, 0);
    row.avg_estimate = estimates.length === 0 ? null : estimates.reduce((a, b) => a + b, 0) / estimates.length;
    row.min_due_date = dates[0] ?? null;
    row.max_priority = priorities.length === 0 ? null : Math.max(...priorities);
    row.count_distinct_title = new Set(members.map((m) => m.title)).size;
    return row;
  });
  const kindOf = (field: string) => (field === "done" ? "boolean" : field === "priority" ? "number" : "string");
  return rows.sort((a, b) => {
    for (const field of groupBy) {
      const order = compareSortKeys(toSortKey(kindOf(field), a[field]), toSortKey(kindOf(field), b[field]));
      if (order !== 0) return order;
    }
    return 0;
  });
}

test("aggregate agrees with a brute-force reference on random records, counted or walked", async () => {
  const next = seeded(20260707);
  const groupings: Array<[string[], string | null]> = [
    [[], null], [["status"], null], [["done"], null], [["status", "done"], null], [["priority", "status", "done"], null],
    [["tags"], "tags"], [["done", "tags"], "tags"], [["status", "done", "priority", "tags"], "tags"],
  ];
  for (let round = 0; round < 30; round++) {
    const records = Array.from({ length: Math.floor(next() * 60) }, () => randomRecord(next));
    const store = storeOf(records);
    for (const [groupBy, arrayField] of groupings) {
      const expected = reference(records, groupBy, arrayField);
      const spec = { groupBy, sum: "priority", avg: "estimate", min: "due_date", max: "priority", countDistinct: "title" };
      const { rows } = await run(store, spec);
      assert.equal(rows.length, expected.length, JSON.stringify(spec));
      rows.forEach((row, i) => {
        const want = expected[i]!;
        for (const [column, value] of Object.entries(want)) {
          if (typeof value === "number" && column.startsWith("avg_")) assert.ok(Math.abs((row[column] as number) - value) < 1e-9, `${column}: ${row[column]} vs ${value}`);
          else assert.deepEqual(row[column], value, `round ${round}, ${JSON.stringify(groupBy)}, row ${i}, ${column}`);
        }
      });
      // Count alone: from the value index when grouped by one indexed field, by walking otherwise.
      const counted = (await run(store, { groupBy })).rows;
      assert.deepEqual(counted, expected.map((row) => Object.fromEntries([...groupBy, "count"].map((name) => [name, row[name]]))), `count by ${groupBy}`);
    }
  }
});
