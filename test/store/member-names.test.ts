// Reading member names out of stored data JSON without parsing it (store/member-names.ts), and telling
// whether that JSON is a record's answer as it stands (records/serialize.ts): cases where a
// scanner could be fooled (quotes, backslashes, braces inside strings, nesting, nulls).

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { forEachMemberName, MemberNames } from "../../src/store/member-names.ts";
import { isRecordJson } from "../../src/records/serialize.ts";
import type { EntityDef } from "../../src/schema/fields.ts";

function namesOf(json: string): string[] | false {
  const names: string[] = [];
  return forEachMemberName(json, (text, from, to) => names.push(text.slice(from, to))) && names;
}

describe("member names of data JSON", () => {
  const cases: Array<[string, unknown]> = [
    ["flat", { id: "a", title: "x", n: 1.5, b: true, z: null }],
    ["empty", {}],
    ["quotes, backslashes and braces in strings", { id: 'a"b', title: 'say "hi" \\ {"x":1} [', tail: "\\" }],
    ["nested objects and arrays", { id: "a", meta: { "a,b": [1, { c: "}" }], d: [] }, tags: ["x,y", "]"], last: 0 }],
    ["non-ASCII", { id: "é", título: "ñ ✓" }],
  ];
  for (const [name, value] of cases) {
    test(name, () => {
      assert.deepEqual(namesOf(JSON.stringify(value)), Object.keys(value as object));
      const gathered = new MemberNames();
      assert.equal(gathered.add(JSON.stringify(value)), true);
      assert.equal(gathered.add(JSON.stringify(value)), true);
      assert.deepEqual(gathered.names, Object.keys(value as object));
    });
  }
  test("a name with an escape is left to JSON.parse", () => {
    assert.equal(namesOf(JSON.stringify({ 'a"b': 1 })), false);
    assert.equal(namesOf("[1]"), false);
  });
});

describe("stored JSON that is the record's answer", () => {
  const entity = { fieldNames: ["title", "status", "priority"] } as unknown as EntityDef;
  const cases: Array<[string, unknown, boolean]> = [
    ["in record order", { id: "a", title: "t", status: "todo", created_date: "d", updated_date: "d", created_by_id: "k" }, true],
    ["fields left out", { id: "a", priority: 3, created_date: "d" }, true],
    ["no id first", { title: "t", id: "a" }, false],
    ["declared fields out of order", { id: "a", status: "todo", title: "t" }, false],
    ["a null declared field (left out of answers)", { id: "a", title: null }, false],
    ["a field no longer declared", { id: "a", title: "t", gone: 1 }, false],
    ["platform fields out of order", { id: "a", updated_date: "d", created_date: "d" }, false],
    ["a declared field after the platform fields", { id: "a", created_date: "d", title: "t" }, false],
    ["a string holding a field's name", { id: "a", title: '","gone":1,"' }, true],
  ];
  for (const [name, value, expected] of cases) test(name, () => assert.equal(isRecordJson(entity, JSON.stringify(value)), expected));
});
