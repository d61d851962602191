// compileFilter (CONTRACT §6, README "Filters"): which records a parsed filter matches, as tables
// of [filter, record data, matches].

import assert from "node:assert/strict";
import { test } from "node:test";
import { parseFilter } from "../../src/query/filter.ts";
import { compileFilter } from "../../src/query/predicate.ts";
import { loadSchemaObject } from "../../src/schema/load.ts";
import { TASK } from "../support/server.ts";

const DECLARATION = { ...TASK, properties: { ...TASK.properties, level: { type: "integer", enum: [1, 2, 3] } } };
const entity = loadSchemaObject({ Task: DECLARATION }).entities.get("Task")!;

type Case = [filter: Record<string, unknown>, data: Record<string, unknown>, matches: boolean];

function check(table: Case[]): void {
  for (const [filter, data, matches] of table) {
    const predicate = compileFilter(parseFilter(entity, filter, { mayUseCreatedBy: true })!);
    assert.equal(predicate({ id: "1", rev: 1, deleted: false, data }), matches, `${JSON.stringify(filter)} on ${JSON.stringify(data)}`);
  }
}

test("null listed in $in or $nin means no value, on JSON paths and typed fields alike", () =>
  check([
    [{ "meta.sub": { $in: [null] } }, { meta: { sub: { x: 1 } } }, false],
    [{ "meta.sub": { $in: [null] } }, { meta: {} }, true],
    [{ "meta.sub": { $in: [null] } }, { meta: { sub: null } }, true],
    [{ "meta.sub": { $in: [null] } }, {}, true],
    [{ "meta.sub": { $nin: [null] } }, { meta: { sub: { x: 1 } } }, true],
    [{ "meta.sub": { $nin: [null] } }, { meta: {} }, false],
    [{ "meta.sub": { $in: [null, 2] } }, { meta: { sub: 2 } }, true],
    [{ "meta.sub": { $in: [null, 2] } }, { meta: { sub: 3 } }, false],
    [{ "meta.sub": { $in: [2] } }, { meta: { sub: { x: 1 } } }, false],
    [{ "meta.sub": { $nin: [2] } }, { meta: { sub: { x: 1 } } }, true],
    [{ priority: { $in: [null, 3] } }, {}, true],
    [{ priority: { $in: [null, 3] } }, { priority: 3 }, true],
    [{ priority: { $in: [null, 3] } }, { priority: 4 }, false],
    [{ priority: { $nin: [null, 3] } }, { priority: 4 }, true],
    [{ priority: { $nin: [null, 3] } }, {}, false],
    [{ level: { $in: [null] } }, { level: 1 }, false],
    [{ tags: { $in: [null, "a"] } }, { tags: ["b"] }, false],
    [{ tags: { $in: [null, "a"] } }, { tags: ["b", "a"] }, true],
    [{ tags: { $nin: [null] } }, { tags: [] }, true],
  ]));
