// jsonc.ts as tables: JSONC texts and the values they read as (comment markers and commas inside
// strings survive; comments and trailing commas go), texts that stay refused, and a .jsonc schema
// file whose syntax error is named at its own line and column (docs/entities.md).

import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { jsoncToJson, parseJsonc } from "../../src/schema/jsonc.ts";
import { loadSchemaPath } from "../../src/schema/load.ts";

describe("parseJsonc: what a JSONC text reads as", () => {
  const cases: Array<[string, string, unknown]> = [
    ["plain JSON reads as JSON.parse reads it", '{"a": [1, 2.5, true, null, "x"]}', { a: [1, 2.5, true, null, "x"] }],
    ["a line comment goes", '{\n  // the title\n  "a": 1 // one\n}', { a: 1 }],
    ["a block comment goes, across lines", '{ /* one\n two */ "a": /* inline */ 1 }', { a: 1 }],
    ["a comment at the very end, with no line break after it", '{"a": 1}\n// end', { a: 1 }],
    ["a trailing comma in an object goes", '{"a": 1, "b": 2,}', { a: 1, b: 2 }],
    ["a trailing comma in an array goes", '{"a": [1, 2, ],}', { a: [1, 2] }],
    ["a trailing comma before a comment and a line break goes", '{\n  "a": [\n    "x", // last\n  ],\n}', { a: ["x"] }],
    ["// inside a string stays", '{"url": "https://example.com/a//b"}', { url: "https://example.com/a//b" }],
    ["/* */ inside a string stays", '{"glob": "src/**/*.ts /* not a comment */"}', { glob: "src/**/*.ts /* not a comment */" }],
    ["a comma before } inside a string stays", '{"text": "a,}", "list": ["b,]"]}', { text: "a,}", list: ["b,]"] }],
    ["an escaped quote does not end a string", '{"q": "say \\"// hi\\", then /* go */",}', { q: 'say "// hi", then /* go */' }],
    ["an escaped backslash before the closing quote ends it", '{"path": "C:\\\\", // drive\n "b": 1}', { path: "C:\\", b: 1 }],
    ["a byte order mark is read as whitespace", '\uFEFF{"a": 1}', { a: 1 }],
    ["line breaks of Windows editors", '{\r\n  // c\r\n  "a": 1,\r\n}\r\n', { a: 1 }],
  ];
  for (const [name, text, expected] of cases) {
    test(name, () => assert.deepEqual(parseJsonc(text), expected));
  }
});

describe("jsoncToJson: positions stay the text's own", () => {
  test("the JSON is as long as the text, with the same line breaks at the same places", () => {
    const text = '{\r\n  /* a\n  b */ "x": "é//", // c\n  "y": [1,],\n}';
    const json = jsoncToJson(text);
    assert.equal(json.length, text.length);
    for (let i = 0; i < text.length; i++) if (text[i] === "\n" || text[i] === "\r") assert.equal(json[i], text[i]);
    assert.equal(json.slice(json.indexOf('"x"'), json.indexOf('"x"') + 12), '"x": "é//", ');
  });

  const refused: Array<[string, string]> = [
    ["a lone comma in an array", "[,]"],
    ["a comma with no value", '{"a": ,}'],
    ["two commas", "[1,,]"],
    ["an unclosed block comment", '{"a": 1 /* never closed'],
    ["an unclosed string", '{"a": "never closed, // }'],
    ["a comma with nothing before it", '{,"a": 1}'],
  ];
  for (const [name, text] of refused) {
    test(`still refused: ${name}`, () => assert.throws(() => parseJsonc(text), SyntaxError));
  }
});

test("a .jsonc schema file with comments and trailing commas loads; its syntax error names file:line:column", async () => {
  const dir = await mkdtemp(join(tmpdir(), "tabula-jsonc-"));
  try {
    await writeFile(
      join(dir, "task.jsonc"),
      '// A task, as Base44 writes it\n{\n  "name": "Task", /* the entity */\n  "type": "object",\n  "properties": {\n    "title": { "type": "string", "description": "// not a comment, /* nor this */", },\n    "tags": { "type": "array", "items": { "type": "string" }, },\n  },\n  "required": ["title",],\n}\n',
    );
    await writeFile(join(dir, "Note.json"), '{ "properties": { "body": { "type": "string" } } } // a .json file takes comments too\n');
    const schema = loadSchemaPath(dir);
    const task = schema.entities.get("Task")!;
    assert.deepEqual(task.fieldNames, ["title", "tags"]);
    assert.equal(task.fields.get("title")!.required, true);
    assert.ok(schema.entities.has("Note"), "the entity named by its file, with no name in it");
    assert.equal(schema.entities.has("task"), false);

    // The fault (a missing comma) is on line 5, column 5, after a block comment that spans lines 2-3.
    await writeFile(join(dir, "task.jsonc"), '{\n  /* one\n     two */ "type": "object",\n  "properties": {} // none yet\n    "name": "Task",\n}\n');
    let message = "";
    assert.throws(() => loadSchemaPath(dir), (error: Error) => ((message = error.message), true));
    assert.match(message, new RegExp(`${join(dir, "task.jsonc").replace(/[/\\]/g, "[/\\\\]")}:5:5: not valid JSONC`));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("one .jsonc file given on its own is the schema of its entity, named by the file when it has no name", async () => {
  const dir = await mkdtemp(join(tmpdir(), "tabula-jsonc-file-"));
  try {
    const file = join(dir, "Order.jsonc");
    await writeFile(file, '{\n  "type": "object", // one entity\n  "properties": { "total": { "type": "number" }, },\n}');
    assert.deepEqual([...loadSchemaPath(file).entities.keys()].filter((name) => name !== "User"), ["Order"]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
