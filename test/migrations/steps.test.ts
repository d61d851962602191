// The pieces of migrations and the schema check, directly: conversions, a step's q against stored
// values, reading migration files, and the diff's words for each kind of change.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { convertValue } from "../../src/migrations/convert.ts";
import { compileMatch } from "../../src/migrations/match.ts";
import { readMigrations } from "../../src/migrations/migration-file.ts";
import { diffSchemas } from "../../src/schema/changes/diff.ts";
import { loadSchemaObject } from "../../src/schema/load.ts";

test("conversions: what converts to each type, and what does not (undefined)", () => {
  const cases: Array<[unknown, Parameters<typeof convertValue>[1], unknown]> = [
    [3, "string", "3"],
    [true, "string", "true"],
    [{ a: 1 }, "string", undefined],
    [" 42 ", "integer", 42],
    ["7.5", "integer", undefined],
    ["7.5", "number", 7.5],
    ["1e3", "number", 1000],
    ["", "number", undefined],
    ["twelve", "number", undefined],
    [2.5, "integer", undefined],
    ["TRUE", "boolean", true],
    [0, "boolean", false],
    ["yes", "boolean", undefined],
    ["2026-03-04T23:30:00+09:00", "date", "2026-03-04"],
    ["2026-02-30", "date", undefined],
    ["2026-03-04", "date-time", "2026-03-04T00:00:00.000Z"],
    ["2026-03-04T23:30:00+09:00", "date-time", "2026-03-04T14:30:00.000Z"],
    ["soon", "date-time", undefined],
  ];
  for (const [value, to, expected] of cases) assert.deepEqual(convertValue(value, to), expected, `${JSON.stringify(value)} to ${to}`);
});

test("a step's q matches stored values as they are: any type, null as no value, $in, ranges, $or", () => {
  const match = (q: unknown) => compileMatch(q, "q");
  assert.equal(match({ priority: 3 })({ priority: 3 }), true);
  assert.equal(match({ priority: "3" })({ priority: 3 }), false, "no coercion: a migration names the stored value");
  assert.equal(match({ owner: null })({}), true);
  assert.equal(match({ owner: null })({ owner: "x" }), false);
  assert.equal(match({ state: { $in: ["b", "c"] } })({ state: "c" }), true);
  assert.equal(match({ state: { $nin: ["b"] } })({}), true);
  assert.equal(match({ n: { $gte: 2, $lt: 5 } })({ n: 4 }), true);
  assert.equal(match({ n: { $gt: 2 } })({ n: "9" }), false, "ranges compare values of the operand's type only");
  assert.equal(match({ $or: [{ a: 1 }, { b: 2 }] })({ b: 2 }), true);
  assert.equal(match({ "meta.size": "L" })({ meta: { size: "L" } }), true);
  assert.equal(match({ tags: "x" })({ tags: ["y", "x"] }), true, "an array matches when an element does");
  assert.throws(() => match({ n: { $regex: "a" } }), /unknown operator \$regex/);
});

test("migration files: read in the order of their numbers; a bad name, step or operation is named with its file and step", () => {
  const dir = mkdtempSync(join(tmpdir(), "tabula-migration-files-"));
  try {
    writeFileSync(join(dir, "0010-later.json"), JSON.stringify({ steps: [{ unset: "Task.old" }] }));
    writeFileSync(join(dir, "0002-first.json"), JSON.stringify([{ rename: "Task.title", to: "name" }]));
    writeFileSync(join(dir, "README.md"), "not a migration");
    const read = readMigrations(dir);
    assert.deepEqual(read.map((migration) => migration.name), ["0002-first.json", "0010-later.json"]);
    assert.deepEqual(read[0]!.steps[0], { op: "rename", entity: "Task", field: "title", to: "name", q: null });
    assert.match(read[0]!.checksum, /^[0-9a-f]{64}$/);
    for (const [steps, message] of [
      [[{ rename: "title", to: "name" }], /step 1: "rename" names a field as "Entity\.field"/],
      [[{ convert: "Task.n", to: "float" }], /step 1: "to" is the type to convert to/],
      [[{ unset: "Task.a" }, { set: "Task.b" }], /step 2: a set step needs "value"/],
      [[{ unset: "Task.id" }], /id is a platform field/],
      [[{ set: "Task.a", value: 1, unset: "Task.b" }], /names one of rename, convert, set, unset, renameEntity \(found set and unset\)/],
      [[], /at least one step/],
    ] as const) {
      writeFileSync(join(dir, "0011-bad.json"), JSON.stringify({ steps }));
      assert.throws(() => readMigrations(dir), (error: Error) => error.message.includes("0011-bad.json") && message.test(error.message));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the diff names each kind of change in the banner's words", () => {
  const schema = (task: Record<string, unknown>) => loadSchemaObject({ Task: { type: "object", ...task } });
  const before = schema({ properties: { a: { type: "integer" }, tags: { type: "array", items: { type: "string", enum: ["x", "y"] } }, s: { type: "string", maxLength: 5 }, gone: { type: "boolean" } }, required: ["a"] });
  const after = schema({ properties: { a: { type: "number" }, tags: { type: "array", items: { type: "string", enum: ["x"] } }, s: { type: "string", maxLength: 3 }, due: { type: "string", format: "date" } }, unique: [["s"]], access: { publishable: ["read"] } });
  assert.deepEqual(
    diffSchemas(before, after).map((change) => change.words),
    [
      "Task.a: integer → number",
      "Task.a: no longer required",
      'Task.tags: items {"type":"string","enum":["x"]}',
      "Task.s: maxLength 3",
      "Task: + due (date, optional)",
      "Task: − gone",
      "Task: unique (s)",
      "Task: publishable keys may create, delete, read, update → read",
    ],
  );
  const tagsChange = diffSchemas(before, after).find((change) => change.words.startsWith("Task.tags"))!;
  assert.equal(tagsChange.problemOf!({ tags: ["x"] }), null);
  assert.deepEqual(tagsChange.problemOf!({ tags: ["x", "y"] }), { kind: "bounds", words: 'item 1 must be one of "x"' });
});

test("the refusal suggests the next free migration number, and no \"else\": \"refuse\" right after a migration refused", async () => {
  const { nextMigrationNumber } = await import("../../src/migrations/migration-file.ts");
  const { refusalText } = await import("../../src/migrations/report.ts");
  const { checkSchema } = await import("../../src/migrations/check.ts");
  const dir = mkdtempSync(join(tmpdir(), "tabula-next-migration-"));
  try {
    assert.equal(nextMigrationNumber(null), "0001");
    assert.equal(nextMigrationNumber(dir), "0001");
    writeFileSync(join(dir, "0001-first.json"), "{}");
    writeFileSync(join(dir, "0012-twelfth.json"), "{}");
    writeFileSync(join(dir, "notes.txt"), "");
    assert.equal(nextMigrationNumber(dir), "0013");
    const before = loadSchemaObject({ Item: { properties: { n: { type: "string" } } } });
    const after = loadSchemaObject({ Item: { properties: { n: { type: "integer" } } } });
    const rows = [{ id: "a", rev: 1, deleted: false, data: { id: "a", n: "seven" } }];
    const check = await checkSchema({ forEachRow: (entity: string, visit: (row: any) => void) => { if (entity === "Item") rows.forEach(visit); } }, before, after);
    const first = refusalText(check, dir);
    assert.match(first, /"else":"refuse"/);
    assert.match(first, new RegExp(`${dir.replace(/[/\\]/g, "[/\\\\]")}[/\\\\]0013-<what-it-does>\\.json`));
    const again = refusalText(check, dir, true);
    assert.doesNotMatch(again, /"else":"refuse"/);
    assert.match(again, /"else":"null"/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
