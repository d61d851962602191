// validate.ts as tables: which values fit which field declarations, what a write body turns into,
// and the error (code, details.field) of each refusal.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ApiError } from "../../src/errors.ts";
import { loadSchemaObject } from "../../src/schema/load.ts";
import { checkFieldValue, validateChanges, validateCreate } from "../../src/schema/validate.ts";
import { parseDateValue, type EntityDef, type FieldDef } from "../../src/schema/fields.ts";
import { TASK } from "../support/server.ts";

/** The FieldDef of one declared field, loaded the way the server loads it. */
function fieldOf(declaration: Record<string, unknown>): FieldDef {
  const schema = loadSchemaObject({ Probe: { properties: { value: declaration } } });
  return schema.entities.get("Probe")!.fields.get("value")!;
}

const task: EntityDef = loadSchemaObject({ Task: TASK }).entities.get("Task")!;
const note: EntityDef = loadSchemaObject({
  Note: {
    properties: {
      body: { type: "string", default: "(empty)" },
      kind: { type: ["string", "null"], enum: ["a", "b"], default: "a" },
      seen: { type: "array", items: { type: "string", format: "date-time" } },
      code: { type: "string", minLength: 2, maxLength: 3, pattern: "^[A-Z]+$" },
      score: { type: "number", minimum: 0, maximum: 10 },
    },
    required: ["body"],
  },
}).entities.get("Note")!;

/** The ApiError `run` throws. */
function refusal(run: () => unknown): ApiError {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof ApiError, `an ApiError, not ${String(error)}`);
    return error;
  }
  assert.fail("expected a refusal");
}

describe("checkFieldValue", () => {
  // [declaration, value, fits]
  const cases: Array<[Record<string, unknown>, unknown, boolean]> = [
    [{ type: "string" }, "text", true],
    [{ type: "string" }, "", true],
    [{ type: "string" }, 1, false],
    [{ type: "string" }, true, false],
    [{ type: "string" }, ["a"], false],
    [{ type: "string" }, { a: 1 }, false],
    [{ type: "number" }, 1.5, true],
    [{ type: "number" }, -0, true],
    [{ type: "number" }, 1e300, true],
    [{ type: "number" }, "1", false],
    [{ type: "number" }, Infinity, false],
    [{ type: "number" }, NaN, false],
    [{ type: "integer" }, 3, true],
    [{ type: "integer" }, -7, true],
    [{ type: "integer" }, 2.0, true],
    [{ type: "integer" }, 2.5, false],
    [{ type: "integer" }, "2", false],
    [{ type: "boolean" }, true, true],
    [{ type: "boolean" }, false, true],
    [{ type: "boolean" }, 0, false],
    [{ type: "boolean" }, "true", false],
    [{ type: "object" }, {}, true],
    [{ type: "object" }, { nested: { deep: [1] } }, true],
    [{ type: "object" }, [], false],
    [{ type: "object" }, "{}", false],
    [{ type: "array" }, [], true],
    [{ type: "array" }, [1, "a", null, {}], true],
    [{ type: "array" }, "a", false],
    [{ type: "array" }, { 0: "a" }, false],
    [{ type: "array", items: { type: "string" } }, ["a", "b"], true],
    [{ type: "array", items: { type: "string" } }, ["a", 1], false],
    [{ type: "array", items: { type: "string" } }, [null], false],
    [{ type: "array", items: { type: "integer" } }, [1, 2], true],
    [{ type: "array", items: { type: "integer" } }, [1, 2.5], false],
    [{ type: "array", items: { type: "string", enum: ["x", "y"] } }, ["x", "y", "x"], true],
    [{ type: "array", items: { type: "string", enum: ["x", "y"] } }, ["z"], false],
    [{ type: "array", items: { type: "string", format: "date" } }, ["2026-01-01"], true],
    [{ type: "array", items: { type: "string", format: "date" } }, ["2026-01-32"], false],
    [{ type: "array", items: { type: "array", items: { type: "number" } } }, [[1], [2, 3]], true],
    [{ type: "array", items: { type: "array", items: { type: "number" } } }, [[1], ["2"]], false],
    [{ type: "string", enum: ["todo", "done"] }, "todo", true],
    [{ type: "string", enum: ["todo", "done"] }, "Todo", false],
    [{ type: "integer", enum: [1, 2, 3] }, 2, true],
    [{ type: "integer", enum: [1, 2, 3] }, 4, false],
    [{ type: "integer", enum: [1, 2, 3] }, "2", false],
    [{ type: "boolean", enum: [true] }, false, false],
    [{ type: "string", format: "date" }, "2026-11-22", true],
    [{ type: "string", format: "date" }, "2024-02-29", true],
    [{ type: "string", format: "date" }, "2026-02-29", false],
    [{ type: "string", format: "date" }, "2026-04-31", false],
    [{ type: "string", format: "date" }, "2026-00-10", false],
    [{ type: "string", format: "date" }, "2026-1-1", false],
    [{ type: "string", format: "date" }, "20261122", false],
    [{ type: "string", format: "date" }, "2026-11-22T00:00:00Z", false],
    [{ type: "string", format: "date" }, "0050-06-15", true],
    // Year 0 is a leap year (proleptic Gregorian); years 0–99 are not read as 1900–1999.
    [{ type: "string", format: "date" }, "0000-02-29", true],
    [{ type: "string", format: "date" }, "0100-02-29", false],
    [{ type: "string", format: "date" }, "2000-02-29", true],
    [{ type: "string", format: "date" }, "1900-02-29", false],
    [{ type: "string", format: "date" }, "2026-12-31", true],
    [{ type: "string", format: "date" }, "2026-13-01", false],
    [{ type: "string", format: "date" }, "2026-11-00", false],
    [{ type: "string", format: "date" }, "2026-1a-01", false],
    [{ type: "string", format: "date" }, "2026/11/22", false],
    [{ type: "string", format: "date" }, " 2026-11-2", false],
    [{ type: "string", format: "date" }, "2026-11-22\n", false],
    [{ type: "string", format: "date" }, "\uff12\uff10\uff12\uff16-11-22", false],
    [{ type: "string", format: "date-time" }, "2026-13-01T00:00:00Z", false],
    [{ type: "string", format: "date-time" }, "2026-11-22T12:00:00.000Z", true],
    [{ type: "string", format: "date-time" }, "2026-11-22T12:00:00Z", true],
    [{ type: "string", format: "date-time" }, "2026-11-22T12:00Z", true],
    [{ type: "string", format: "date-time" }, "2026-11-22T12:00:00+05:30", true],
    [{ type: "string", format: "date-time" }, "2026-11-22T12:00:00.123-01:00", true],
    [{ type: "string", format: "date-time" }, "2026-11-22T12:00:00.1Z", true],
    // accepted to the nanosecond (Python sends microseconds), stored to the millisecond
    [{ type: "string", format: "date-time" }, "2026-11-22T12:00:00.123456-01:00", true],
    [{ type: "string", format: "date-time" }, "2026-11-22T12:00:00.123456789Z", true],
    [{ type: "string", format: "date-time" }, "2026-11-22T12:00:00.1234567891Z", false],
    [{ type: "string", format: "date-time" }, "2026-11-22", false],
    [{ type: "string", format: "date-time" }, "2026-11-22T12:00:00", false],
    [{ type: "string", format: "date-time" }, "2026-11-22 12:00:00Z", false],
    [{ type: "string", format: "date-time" }, "2026-11-22T24:00:00Z", false],
    [{ type: "string", format: "date-time" }, "2026-11-22T12:60:00Z", false],
    [{ type: "string", format: "date-time" }, "2026-02-30T12:00:00Z", false],
    [{ type: "string", format: "date-time" }, "Sun, 22 Nov 2026 12:00:00 GMT", false],
    [{ type: "string", format: "date-time" }, "1795348800000", false],
    [{ type: "string", format: "email" }, "ada@example.com", true],
    [{ type: "string", format: "email" }, "first.last+tag@mail.example.org", true],
    [{ type: "string", format: "email" }, "ada@example", false],
    [{ type: "string", format: "email" }, "ada.example.com", false],
    [{ type: "string", format: "email" }, "@example.com", false],
    [{ type: "string", format: "email" }, "ada @example.com", false],
    [{ type: "string", format: "email" }, "", false],
    [{ type: "string", format: "uri" }, "https://example.com/a?b=c#d", true],
    [{ type: "string", format: "uri" }, "mailto:ada@example.com", true],
    [{ type: "string", format: "uri" }, "urn:isbn:0451450523", true],
    [{ type: "string", format: "uri" }, "example.com", false],
    [{ type: "string", format: "uri" }, "/relative/path", false],
    [{ type: "string", format: "uri" }, "", false],
    [{ type: "number", minimum: 0, maximum: 10 }, 0, true],
    [{ type: "number", minimum: 0, maximum: 10 }, 10, true],
    [{ type: "number", minimum: 0, maximum: 10 }, -0.1, false],
    [{ type: "number", minimum: 0, maximum: 10 }, 10.1, false],
    [{ type: "string", minLength: 2, maxLength: 3 }, "ab", true],
    [{ type: "string", minLength: 2, maxLength: 3 }, "a", false],
    [{ type: "string", minLength: 2, maxLength: 3 }, "abcd", false],
    // JSON Schema lengths count characters: one emoji is one character, two UTF-16 units.
    [{ type: "string", maxLength: 1 }, "😀", true],
    [{ type: "string", minLength: 2 }, "😀", false],
    [{ type: "string", pattern: "^[A-Z]{3}$" }, "ABC", true],
    [{ type: "string", pattern: "^[A-Z]{3}$" }, "abc", false],
    [{ type: "string", pattern: "b" }, "abc", true],
  ];
  for (const [declaration, value, fits] of cases) {
    test(`${JSON.stringify(declaration)} ${fits ? "accepts" : "refuses"} ${typeof value === "number" ? String(value) : JSON.stringify(value)}`, () => {
      const problem = checkFieldValue(fieldOf(declaration), value);
      if (fits) assert.equal(problem, null);
      else assert.equal(typeof problem, "string", "a refusal says what is wrong");
    });
  }

  test("a refusal of an array item names the item's index", () => {
    assert.match(checkFieldValue(fieldOf({ type: "array", items: { type: "string" } }), ["a", "b", 3])!, /item 2/);
  });

  test("an enum refusal lists the allowed values", () => {
    assert.match(checkFieldValue(fieldOf({ type: "string", enum: ["todo", "done"] }), "later")!, /"todo", "done"/);
  });
});

describe("validateChanges", () => {
  // [body, the changes it makes]: undefined means "clear the field".
  const accepted: Array<[string, Record<string, unknown>, Array<[string, unknown]>]> = [
    ["an empty body", {}, []],
    ["one field", { title: "x" }, [["title", "x"]]],
    ["several fields", { priority: 2, done: true, tags: ["a"] }, [["priority", 2], ["done", true], ["tags", ["a"]]]],
    ["null on an optional field clears it", { email: null }, [["email", undefined]]],
    ["null on an enum field with a default clears it", { status: null }, [["status", undefined]]],
    ["a date-time with an offset is stored in UTC with milliseconds", { start_at: "2026-11-22T14:00:00+02:00" }, [["start_at", "2026-11-22T12:00:00.000Z"]]],
    ["a date-time without seconds is completed", { start_at: "2026-11-22T12:00Z" }, [["start_at", "2026-11-22T12:00:00.000Z"]]],
    ["a date stays as written", { due_date: "2026-11-22" }, [["due_date", "2026-11-22"]]],
  ];
  for (const [what, body, changes] of accepted) {
    test(`${what}`, () => {
      assert.deepEqual([...validateChanges(task, body)], changes);
    });
  }

  test("array items that are date-times are stored in UTC too", () => {
    const changes = validateChanges(note, { seen: ["2026-01-01T01:00:00+01:00", "2026-01-02T00:00:00Z"] });
    assert.deepEqual(changes.get("seen"), ["2026-01-01T00:00:00.000Z", "2026-01-02T00:00:00.000Z"]);
  });

  // [what, body, status, code, details that must be present]
  const refused: Array<[string, unknown, number, string, Record<string, unknown>]> = [
    ["an array body", [{ title: "x" }], 400, "invalid_json", {}],
    ["a null body", null, 400, "invalid_json", {}],
    ["a string body", "title", 400, "invalid_json", {}],
    ["a number body", 3, 400, "invalid_json", {}],
    ["id", { id: "0123456789abcdef01234567" }, 400, "read_only_field", { field: "id" }],
    ["created_date", { created_date: "2026-01-01T00:00:00.000Z" }, 400, "read_only_field", { field: "created_date" }],
    ["updated_date", { updated_date: "2026-01-01T00:00:00.000Z" }, 400, "read_only_field", { field: "updated_date" }],
    ["created_by_id", { created_by_id: "key_x" }, 400, "read_only_field", { field: "created_by_id" }],
    ["a platform field set to null", { title: "x", id: null }, 400, "read_only_field", { field: "id" }],
    ["an undeclared field", { title: "x", colour: "red" }, 400, "unknown_field", { field: "colour", fields: Object.keys(TASK.properties) }],
    ["a differently cased field", { Title: "x" }, 400, "unknown_field", { fields: Object.keys(TASK.properties) }],
    ["a dotted name", { "meta.a": 1 }, 400, "unknown_field", { fields: Object.keys(TASK.properties) }],
    ["null on a required field", { title: null }, 400, "invalid_field", { field: "title" }],
    ["a wrong type", { priority: "high" }, 400, "invalid_field", { field: "priority", value: "high" }],
    ["a bad enum value", { status: "later" }, 400, "invalid_field", { field: "status" }],
    ["a bad date", { due_date: "2026-02-30" }, 400, "invalid_field", { field: "due_date" }],
    ["a bad date-time", { start_at: "yesterday" }, 400, "invalid_field", { field: "start_at" }],
    ["a bad email", { email: "nobody" }, 400, "invalid_field", { field: "email" }],
    ["a bad array item", { tags: ["ok", false] }, 400, "invalid_field", { field: "tags" }],
  ];
  for (const [what, body, status, code, details] of refused) {
    test(`refuses ${what} with ${code}`, () => {
      const error = refusal(() => validateChanges(task, body));
      assert.equal(error.status, status);
      assert.equal(error.code, code);
      for (const [name, value] of Object.entries(details)) assert.deepEqual(error.details[name], value, name);
      if (typeof details.field === "string") assert.match(error.message, new RegExp(`"${details.field}"`), "the message names the field");
    });
  }

  test("the first field at fault is named, whatever the others hold", () => {
    const error = refusal(() => validateChanges(task, { priority: 1, status: "nope", colour: "red" }));
    assert.equal(error.code, "invalid_field");
    assert.equal(error.details.field, "status");
  });

  test("an unknown_field message lists every real field", () => {
    const error = refusal(() => validateChanges(task, { colour: "red" }));
    for (const field of Object.keys(TASK.properties)) assert.ok(error.message.includes(field), field);
  });
});

describe("validateCreate", () => {
  // [what, entity, body, the values to store]
  const accepted: Array<[string, EntityDef, unknown, Record<string, unknown>]> = [
    ["the default fills an omitted field", task, { title: "x" }, { title: "x", status: "todo" }],
    ["a given value beats the default", task, { title: "x", status: "done" }, { title: "x", status: "done" }],
    ["an explicit null is no value, not the default", task, { title: "x", status: null }, { title: "x" }],
    ["null on an optional field stores nothing", task, { title: "x", email: null }, { title: "x", status: "todo" }],
    ["a required field with a default may be omitted", note, {}, { body: "(empty)", kind: "a" }],
    ["values come back in declaration order", task, { tags: ["a"], title: "x", priority: 1 }, { title: "x", status: "todo", priority: 1, tags: ["a"] }],
  ];
  for (const [what, entity, body, values] of accepted) {
    test(what, () => {
      const stored = validateCreate(entity, body);
      assert.deepEqual(stored, values);
      assert.deepEqual(Object.keys(stored), Object.keys(values));
    });
  }

  // [what, body, code, details.field]
  const refused: Array<[string, unknown, string, string | undefined]> = [
    ["an empty body (title is required)", {}, "invalid_field", "title"],
    ["only optional fields", { priority: 1 }, "invalid_field", "title"],
    ["a null required field", { title: null }, "invalid_field", "title"],
    ["a platform field", { title: "x", created_by_id: "key_1" }, "read_only_field", "created_by_id"],
    ["an unknown field", { title: "x", owner: "me" }, "unknown_field", "owner"],
    ["a body that is not an object", [], "invalid_json", undefined],
  ];
  for (const [what, body, code, field] of refused) {
    test(`refuses ${what} with ${code}`, () => {
      const error = refusal(() => validateCreate(task, body));
      assert.equal(error.status, 400);
      assert.equal(error.code, code);
      assert.equal(error.details.field, field);
    });
  }

  test("a required null on an entity whose required field has a default is still refused", () => {
    const error = refusal(() => validateCreate(note, { body: null }));
    assert.equal(error.code, "invalid_field");
    assert.equal(error.details.field, "body");
  });
});

describe("parseDateValue", () => {
  // The regex-and-Date reading it replaced (issue 7), kept here as the reference it must agree with;
  // since issue 16 it takes at most three fractional digits.
  const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;
  const DATE_TIME_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/i;
  const utcDay = (year: number, month: number, day: number) => new Date(0).setUTCFullYear(year, month - 1, day);
  const isRealDay = (m: RegExpExecArray) => {
    const [year, month, day] = [+m[1]!, +m[2]!, +m[3]!];
    return month >= 1 && month <= 12 && day >= 1 && day <= new Date(utcDay(year, month + 1, 0)).getUTCDate();
  };
  function reference(value: string): number {
    const date = DATE_RE.exec(value);
    if (date) return isRealDay(date) ? utcDay(+date[1]!, +date[2]!, +date[3]!) : NaN;
    const time = DATE_TIME_RE.exec(value);
    if (!time || !isRealDay(time) || +time[4]! > 23 || +time[5]! > 59 || +(time[6] ?? 0) > 59) return NaN;
    return Date.parse(value);
  }

  test("agrees with the regex reading on dates, timestamps and near misses (seeded)", () => {
    let state = 7;
    const random = (n: number) => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return state % n;
    };
    const pad = (n: number, width: number) => String(n).padStart(width, "0");
    const noise = "0123456789-T:Z+. a/tz";
    for (let i = 0; i < 20_000; i++) {
      const year = [0, 4, 99, 100, 400, 1900, 1970, 2000, 2024, 2026, 9999][random(11)]!;
      let value = `${pad(year, 4)}-${pad(random(14), 2)}-${pad(random(33), 2)}`;
      if (random(2)) value += `T${pad(random(26), 2)}:${pad(random(62), 2)}${random(2) ? `:${pad(random(62), 2)}.${random(2) ? pad(random(1000), 3) : random(8) ? random(1000) : pad(random(100_000), 4 + random(3))}` : ""}${random(2) ? "Z" : "+02:00"}`;
      if (random(4) === 0) {
        const at = random(value.length);
        value = value.slice(0, at) + noise[random(noise.length)] + value.slice(at + random(2));
      }
      assert.equal(Object.is(parseDateValue(value), reference(value)), true, `${value}: ${parseDateValue(value)} vs ${reference(value)}`);
    }
  });

  test("reads back every stored timestamp (toISOString) as its time", () => {
    for (let ms = new Date(0).setUTCFullYear(0, 0, 1); ms < Date.UTC(9999, 11, 31); ms += 86_400_000 * 37 + 3_723_456) {
      const text = new Date(ms).toISOString();
      assert.equal(parseDateValue(text), ms, text);
    }
  });

  test("a value that is not a string is NaN", () => {
    for (const value of [null, undefined, 20261122, ["2026-11-22"]]) assert.ok(Number.isNaN(parseDateValue(value)));
  });
});
