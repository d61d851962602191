// load.ts as tables: declarations that load and what they become, declarations that are refused
// and what the message names (file, entity, field), and the folder and single-file forms.

import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { loadSchemaObject, loadSchemaPath, SchemaError } from "../../src/schema/load.ts";
import { TASK } from "../support/server.ts";

/** The SchemaError `run` throws. */
function refusal(run: () => unknown): SchemaError {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof SchemaError, `a SchemaError, not ${String(error)}`);
    return error;
  }
  assert.fail("expected the schema to be refused");
}

/** The entities a schema's declarations made: every schema also has the built-in User (docs/users.md). */
function declaredNames(schema: { entities: ReadonlyMap<string, { isBuiltIn?: true }> }): string[] {
  return [...schema.entities].filter(([, entity]) => !entity.isBuiltIn).map(([name]) => name);
}

describe("loadSchemaObject: what a declaration becomes", () => {
  test("the example Task (docs/entities.md) loads with every field, in declaration order, typed as declared", () => {
    const task = loadSchemaObject({ Task: TASK }).entities.get("Task")!;
    assert.equal(task.name, "Task");
    assert.deepEqual(task.fieldNames, Object.keys(TASK.properties));
    assert.deepEqual([...task.fields.keys()], Object.keys(TASK.properties));
    assert.deepEqual(task.textFields, ["title", "status", "due_date", "start_at", "email"]);
    // [field, type, format, required, enum, default, items type]
    const expected: Array<[string, string, string | undefined, boolean, unknown, unknown, string | undefined]> = [
      ["title", "string", undefined, true, undefined, undefined, undefined],
      ["status", "string", undefined, false, ["todo", "doing", "done"], "todo", undefined],
      ["priority", "integer", undefined, false, undefined, undefined, undefined],
      ["estimate", "number", undefined, false, undefined, undefined, undefined],
      ["done", "boolean", undefined, false, undefined, undefined, undefined],
      ["due_date", "string", "date", false, undefined, undefined, undefined],
      ["start_at", "string", "date-time", false, undefined, undefined, undefined],
      ["email", "string", "email", false, undefined, undefined, undefined],
      ["tags", "array", undefined, false, undefined, undefined, "string"],
      ["meta", "object", undefined, false, undefined, undefined, undefined],
    ];
    for (const [name, type, format, required, values, fallback, items] of expected) {
      const field = task.fields.get(name)!;
      assert.equal(field.name, name);
      assert.equal(field.type, type, name);
      assert.equal(field.format, format, name);
      assert.equal(field.required, required, name);
      assert.deepEqual(field.enum, values, name);
      assert.deepEqual(field.default, fallback, name);
      assert.equal(field.items?.type, items, name);
    }
  });

  // [what, key, declaration, entity name it loads as]
  const names: Array<[string, string, Record<string, unknown>, string]> = [
    ["the name comes from \"name\"", "whatever", { name: "Task", properties: {} }, "Task"],
    ["without \"name\", from the key", "Note", { properties: { a: { type: "string" } } }, "Note"],
    ["names keep their case", "project", { properties: {} }, "project"],
    ["names may hold - and _", "Project-Note_2", { properties: {} }, "Project-Note_2"],
  ];
  for (const [what, key, declaration, name] of names) {
    test(what, () => {
      const schema = loadSchemaObject({ [key]: declaration });
      assert.deepEqual(declaredNames(schema), [name]);
      assert.equal(schema.entities.get(name)!.name, name);
    });
  }

  test("entities differing only in case are two entities", () => {
    const schema = loadSchemaObject({ Task: { properties: {} }, task: { properties: {} } });
    assert.deepEqual(declaredNames(schema), ["Task", "task"]);
  });

  // [what, field declaration, check of the loaded field]
  const fields: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
    ["a nullable type [\"string\", \"null\"] is a string", { type: ["string", "null"] }, { type: "string" }],
    ["a uri string", { type: "string", format: "uri" }, { type: "string", format: "uri" }],
    ["an integer enum", { type: "integer", enum: [1, 2] }, { type: "integer", enum: [1, 2] }],
    ["a boolean default", { type: "boolean", default: false }, { type: "boolean", default: false }],
    ["an array default", { type: "array", items: { type: "string" }, default: ["a"] }, { default: ["a"] }],
    ["an object default", { type: "object", default: { a: 1 } }, { default: { a: 1 } }],
    ["a null default", { type: "string", default: null }, { default: null }],
    ["bounds on a number", { type: "number", minimum: 0, maximum: 1 }, { minimum: 0, maximum: 1 }],
    ["lengths on a string", { type: "string", minLength: 1, maxLength: 5 }, { minLength: 1, maxLength: 5 }],
    ["annotations are allowed", { type: "string", title: "T", description: "d", examples: ["x"], $comment: "c" }, { type: "string" }],
  ];
  for (const [what, declaration, check] of fields) {
    test(what, () => {
      const field = loadSchemaObject({ E: { properties: { f: declaration } } }).entities.get("E")!.fields.get("f")!;
      for (const [name, value] of Object.entries(check)) assert.deepEqual((field as unknown as Record<string, unknown>)[name], value, name);
    });
  }

  test("a pattern becomes a regular expression", () => {
    const field = loadSchemaObject({ E: { properties: { code: { type: "string", pattern: "^[A-Z]+$" } } } }).entities.get("E")!.fields.get("code")!;
    assert.ok(field.pattern instanceof RegExp);
    assert.equal(field.pattern.test("ABC"), true);
  });

  test("typed array items carry their format and enum", () => {
    const field = loadSchemaObject({ E: { properties: { seen: { type: "array", items: { type: "string", format: "date-time", enum: ["2026-01-01T00:00:00Z"] } } } } })
      .entities.get("E")!
      .fields.get("seen")!;
    assert.equal(field.items?.format, "date-time");
    assert.deepEqual(field.items?.enum, ["2026-01-01T00:00:00Z"]);
  });
});

describe("loadSchemaObject: refused declarations name the entity and the field", () => {
  // [what, declaration of entity "Thing", the field named (or null), what else the message must say]
  const refused: Array<[string, unknown, string | null, RegExp]> = [
    ["an unknown type", { properties: { size: { type: "float" } } }, "size", /unknown type "float"/],
    ["a missing type", { properties: { size: {} } }, "size", /unknown type/],
    ["two real types", { properties: { size: { type: ["string", "number"] } } }, "size", /unknown type/],
    ["a redeclared id", { properties: { id: { type: "string" } } }, "id", /platform field/],
    ["a redeclared created_date", { properties: { created_date: { type: "string" } } }, "created_date", /platform field/],
    ["a redeclared updated_date", { properties: { updated_date: { type: "string" } } }, "updated_date", /platform field/],
    ["a redeclared created_by_id", { properties: { created_by_id: { type: "string" } } }, "created_by_id", /platform field/],
    ["an unknown format", { properties: { at: { type: "string", format: "time" } } }, "at", /format/],
    ["a format on a number", { properties: { at: { type: "number", format: "date" } } }, "at", /format/],
    ["items on a string", { properties: { tags: { type: "string", items: { type: "string" } } } }, "tags", /items/],
    ["items of an unknown type", { properties: { tags: { type: "array", items: { type: "text" } } } }, "tags", /unknown type "text"/],
    ["an empty enum", { properties: { level: { type: "string", enum: [] } } }, "level", /enum/],
    ["an enum that is not an array", { properties: { level: { type: "string", enum: "a" } } }, "level", /enum/],
    ["an enum on an array", { properties: { level: { type: "array", enum: [["a"]] } } }, "level", /enum/],
    ["an enum value of the wrong type", { properties: { level: { type: "integer", enum: [1, "high"] } } }, "level", /"high"/],
    ["a default of the wrong type", { properties: { level: { type: "integer", default: "1" } } }, "level", /default/],
    ["a default outside the enum", { properties: { level: { type: "string", enum: ["a"], default: "b" } } }, "level", /default/],
    ["a default with a bad date", { properties: { due: { type: "string", format: "date", default: "soon" } } }, "due", /default/],
    ["a minimum on a string", { properties: { n: { type: "string", minimum: 1 } } }, "n", /minimum/],
    ["a maxLength that is not an integer", { properties: { n: { type: "string", maxLength: 1.5 } } }, "n", /maxLength/],
    ["an invalid pattern", { properties: { n: { type: "string", pattern: "([" } } }, "n", /pattern/],
    ["an unsupported field keyword", { properties: { n: { type: "string", unique: true } } }, "n", /"unique"/],
    ["a field name with a dot", { properties: { "a.b": { type: "string" } } }, "a.b", /field names/],
    ["a field name with a space", { properties: { "a b": { type: "string" } } }, "a b", /field names/],
    ["a field declaration that is not an object", { properties: { n: "string" } }, "n", /object/],
    ["a required field that is not declared", { properties: { a: { type: "string" } }, required: ["b"] }, "b", /required/],
    ["required that is not an array", { properties: { a: { type: "string" } }, required: "a" }, null, /required/],
    ["properties that are not an object", { properties: [] }, null, /properties/],
    ["a type other than object", { type: "array", properties: {} }, null, /"type"/],
    ["additionalProperties true", { additionalProperties: true, properties: {} }, null, /additionalProperties/],
    ["an unsupported entity keyword", { properties: {}, indexes: [] }, null, /"indexes"/],
    ["a declaration that is not an object", [], null, /object/],
    ["a bad name", { name: "My Thing", properties: {} }, null, /name/],
  ];
  for (const [what, declaration, field, says] of refused) {
    test(`${what} is refused`, () => {
      const error = refusal(() => loadSchemaObject({ Thing: declaration }));
      assert.match(error.message, /Thing|My Thing/, "names the entity");
      if (field !== null) assert.ok(error.message.includes(`"${field}"`), `names the field: ${error.message}`);
      assert.match(error.message, says);
    });
  }

  test("a schema with no entities is refused", () => {
    refusal(() => loadSchemaObject({}));
  });

  test("the second of two declarations with the same name is refused", () => {
    const error = refusal(() => loadSchemaObject({ A: { name: "Task", properties: {} }, B: { name: "Task", properties: {} } }));
    assert.match(error.message, /"Task" is already declared/);
  });
});

describe("loadSchemaPath", () => {
  let root: string;
  let count = 0;
  before(async () => (root = await mkdtemp(join(tmpdir(), "tabula-load-"))));
  after(() => rm(root, { recursive: true, force: true }));

  /** A new folder holding `files` (objects are written as JSON). */
  async function folder(files: Record<string, unknown>): Promise<string> {
    const dir = join(root, `schema-${++count}`);
    await mkdir(dir);
    for (const [name, content] of Object.entries(files)) {
      await writeFile(join(dir, name), typeof content === "string" ? content : JSON.stringify(content));
    }
    return dir;
  }

  test("a folder of <Entity>.json loads every file, named by \"name\" or by the file name", async () => {
    const dir = await folder({
      "Task.json": TASK,
      "Note.json": { properties: { body: { type: "string" } } },
      "readme.txt": "not a declaration",
    });
    const schema = loadSchemaPath(dir);
    assert.deepEqual(declaredNames(schema).sort(), ["Note", "Task"]);
    assert.equal(schema.entities.get("Note")!.file, join(dir, "Note.json"));
    assert.equal(schema.entities.get("Task")!.fieldNames.length, 10);
  });

  test("one JSON file of { <Entity>: declaration } loads every entity", async () => {
    const dir = await folder({ "schema.json": { Task: TASK, Note: { properties: { body: { type: "string" } } } } });
    const schema = loadSchemaPath(join(dir, "schema.json"));
    assert.deepEqual(declaredNames(schema), ["Task", "Note"]);
  });

  test("one entity's <Entity>.json on its own loads that entity, named by \"name\" or by the file name", async () => {
    const dir = await folder({ "Task.json": TASK, "Note.json": { type: "object", properties: { body: { type: "string" } } } });
    const task = loadSchemaPath(join(dir, "Task.json"));
    assert.deepEqual(declaredNames(task), ["Task"]);
    assert.equal(task.entities.get("Task")!.fieldNames.length, 10);
    assert.deepEqual(declaredNames(loadSchemaPath(join(dir, "Note.json"))), ["Note"]);
  });

  test("a schema file whose entities are named name, type and properties is still a map of them", async () => {
    const declaration = { properties: { body: { type: "string" } } };
    const dir = await folder({ "schema.json": { name: declaration, type: declaration, properties: declaration } });
    assert.deepEqual(declaredNames(loadSchemaPath(join(dir, "schema.json"))), ["name", "type", "properties"]);
  });

  // [what, files, path inside the folder ("" for the folder), what the message must say (the path is added)]
  const refused: Array<[string, Record<string, unknown>, string, RegExp[]]> = [
    ["a missing folder", {}, "missing", [/does not exist/]],
    ["an empty folder", {}, "", [/no <Entity>\.json/]],
    ["a folder with only other files", { "notes.txt": "x" }, "", [/no <Entity>\.json/]],
    ["a file that is not JSON", { "Task.json": "{ not json" }, "Task.json", [/not valid JSON/]],
    ["a schema file that is an array", { "schema.json": [TASK] }, "schema.json", [/JSON object/]],
    ["an unknown type in a folder file", { "Task.json": { properties: { size: { type: "float" } } } }, "", [/Task\.json/, /"Task"/, /"size"/, /float/]],
    ["a platform field in a folder file", { "Note.json": { name: "Note", properties: { created_by_id: { type: "string" } } } }, "", [/Note\.json/, /"Note"/, /"created_by_id"/]],
    ["a bad field in a single schema file", { "schema.json": { Task: TASK, Note: { properties: { id: { type: "string" } } } } }, "schema.json", [/"Note"/, /"id"/]],
  ];
  for (const [what, files, inside, says] of refused) {
    test(`${what} is refused, naming the path`, async () => {
      const dir = await folder(files);
      const path = inside === "" ? dir : join(dir, inside);
      const error = refusal(() => loadSchemaPath(path));
      assert.ok(error.message.includes(path), `names ${path}: ${error.message}`);
      for (const pattern of says) assert.match(error.message, pattern);
    });
  }

  test("two files declaring the same entity name both appear in the message", async () => {
    const dir = await folder({ "A.json": { name: "Task", properties: {} }, "B.json": { name: "Task", properties: {} } });
    const error = refusal(() => loadSchemaPath(dir));
    assert.ok(error.message.includes(join(dir, "A.json")), error.message);
    assert.ok(error.message.includes(join(dir, "B.json")), error.message);
  });
});

test("every schema has the built-in User; a User of the app's own adds fields to it", () => {
  const plain = loadSchemaObject({ Task: { properties: { title: { type: "string" } } } });
  const builtIn = plain.entities.get("User")!;
  assert.equal(builtIn.isBuiltIn, true);
  assert.deepEqual(builtIn.fieldNames, ["email", "full_name", "role", "disabled"]);
  assert.deepEqual(builtIn.unique, [["email"]]);
  assert.equal(builtIn.publishableAccess.size, 0, "publishable keys reach no user records by default");
  const own = loadSchemaObject({ User: { properties: { department: { type: "string" } } } }).entities.get("User")!;
  assert.equal(own.isBuiltIn, undefined);
  assert.deepEqual(own.fieldNames, ["email", "full_name", "role", "disabled", "department"]);
  assert.throws(() => loadSchemaObject({ Task: { properties: { created_by: { type: "string" } } } }), /platform field/);
});

test("a syntax error names the file, line and column; every problem of a schema is named at once", async () => {
  const dir = await mkdtemp(join(tmpdir(), "tabula-schema-problems-"));
  try {
    await writeFile(join(dir, "Task.json"), '{\n  "properties": {\n    "title": { "type": "string" }\n    "done": { "type": "boolean" }\n  }\n}');
    await writeFile(join(dir, "Note.json"), JSON.stringify({ properties: { body: { type: "text" }, tags: { type: "array", items: { type: "nope" } } } }));
    await writeFile(join(dir, "Order.json"), JSON.stringify({ properties: { total: { type: "number" } } }));
    let message = "";
    assert.throws(() => loadSchemaPath(dir), (error: Error) => ((message = error.message), true));
    assert.match(message, /The schema has 3 problems/);
    assert.match(message, new RegExp(`${join(dir, "Task.json").replace(/[/\\]/g, "[/\\\\]")}:4:5: not valid JSON`));
    assert.match(message, /Note\.json: entity "Note", field "body"/);
    assert.match(message, /Note\.json: entity "Note", field "tags"/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
