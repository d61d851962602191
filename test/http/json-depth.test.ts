// JSON nested deeper than MAX_JSON_DEPTH (issue 16): refused as the client's mistake on every
// path that takes JSON, before anything recursive runs, where it used to overflow the stack (500).

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findOverreach, findTooDeep, MAX_JSON_DEPTH, stringifyDeep } from "../../src/json-depth.ts";
import { Records } from "../../src/records/records.ts";
import { loadSchemaObject } from "../../src/schema/load.ts";
import { FileStore } from "../../src/store/file/file-store.ts";
import { startTestServer, TASK, type Answer, type TestServer } from "../support/server.ts";

const T = "/api/entities/Task";
let server: TestServer;
let id: string;
before(async () => {
  server = await startTestServer();
  id = (await server.call("POST", T, { body: { title: "x" } })).body.id;
});
after(() => server.close());

/** JSON text of `depth` objects nested under "a", around 1. */
const nestedObject = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
/** JSON text of `depth` nested arrays. */
const nestedArray = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;

function assertRefused(answer: Answer, code: string, label: string): void {
  assert.equal(answer.status, 400, `${label}: ${answer.text.slice(0, 300)}`);
  assert.equal(answer.body.error.code, code, label);
  assert.equal(answer.body.error.details.maxDepth, MAX_JSON_DEPTH, label);
  assert.match(answer.body.error.message, new RegExp(`${MAX_JSON_DEPTH}`), `${label}: the message names the limit`);
}

test("bodies nested deeper than the limit are invalid_json on every write, and nothing is stored", async () => {
  const deepMeta = nestedObject(20_000);
  const cases: Array<[label: string, method: string, path: string, body: string]> = [
    ["create, meta 20,000 deep", "POST", T, `{"title":"x","meta":${deepMeta}}`],
    ["create, title 5,000 arrays deep", "POST", T, `{"title":${nestedArray(5_000)}}`],
    ["bulk create", "POST", `${T}/bulk`, `[{"title":"x","meta":${deepMeta}}]`],
    ["upsert", "POST", `${T}/upsert`, `{"match":["title"],"records":[{"title":"x","meta":${deepMeta}}]}`],
    ["update", "PATCH", `${T}/${id}`, `{"meta":${deepMeta}}`],
    ["bulk update", "PUT", `${T}/bulk`, `[{"id":"${id}","meta":${deepMeta}}]`],
    ["update-many set", "PATCH", `${T}/update-many`, `{"q":{"title":"x"},"set":{"meta":${deepMeta}}}`],
    ["update-many q", "PATCH", `${T}/update-many`, `{"q":{"meta":{"$eq":${deepMeta}}},"set":{"priority":1}}`],
    ["one level over the limit", "POST", T, `{"title":"x","meta":${nestedObject(MAX_JSON_DEPTH)}}`],
  ];
  for (const [label, method, path, body] of cases) assertRefused(await server.call(method, path, { body }), "invalid_json", label);
  const stored = await server.call("GET", T);
  assert.deepEqual(stored.body.map((record: any) => [record.title, "meta" in record, "priority" in record]), [["x", false, false]]);
});

test("a body nested exactly to the limit is accepted", async () => {
  // The body object is one level, meta the remaining ones.
  const answer = await server.call("POST", T, { body: `{"title":"at the limit","meta":${nestedObject(MAX_JSON_DEPTH - 1)}}` });
  assert.equal(answer.status, 201, answer.text.slice(0, 300));
});

test("a q nested deeper than the limit is invalid_filter on list, count and delete-many", async () => {
  const deep = encodeURIComponent(`{"meta":{"$eq":${nestedArray(MAX_JSON_DEPTH)}}}`);
  for (const [method, path] of [["GET", T], ["GET", `${T}/count`], ["DELETE", T]] as const) {
    assertRefused(await server.call(method, `${path}?q=${deep}`), "invalid_filter", `${method} ${path}`);
  }
  const shallow = encodeURIComponent(`{"meta":{"$eq":${nestedArray(MAX_JSON_DEPTH - 2)}}}`);
  assert.equal((await server.call("GET", `${T}?q=${shallow}`)).status, 200);
});

test("brackets inside strings do not count, whatever the escapes before them", () => {
  const deep = "[".repeat(MAX_JSON_DEPTH + 1);
  const table: Array<[text: string, expected: number]> = [
    [JSON.stringify({ title: deep }), -1],
    // an escaped quote does not end a string; an escaped backslash before a quote does
    [JSON.stringify({ title: `say "${deep}"`, tags: ["\\", `"${deep}`] }), -1],
    [`{"a":"\\\\"${"[".repeat(MAX_JSON_DEPTH)}`, `{"a":"\\\\"`.length + MAX_JSON_DEPTH - 1],
    [`["\\"",${"[".repeat(MAX_JSON_DEPTH)}`, `["\\"",`.length + MAX_JSON_DEPTH - 1],
    [`"unterminated ${deep}`, -1],
    [`${'{"a":'.repeat(MAX_JSON_DEPTH)}1`, -1],
    [`${'{"a":'.repeat(MAX_JSON_DEPTH + 1)}1`, 5 * MAX_JSON_DEPTH],
  ];
  for (const [text, expected] of table) assert.equal(findTooDeep(text), expected, text);
});

test("findOverreach counts each object's keys by its colons outside strings, and finds the first object past the limit where it opens", () => {
  const table: Array<[string, number, ReturnType<typeof findOverreach>]> = [
    ['{"a":1,"b":2}', 2, null],
    ['{"a":1,"b":2,"c":3}', 2, { kind: "keys", at: 0 }],
    ['{"a":{"x":1,"y":2},"b":2}', 2, null],
    ['[{"a":1},{"b":1,"c":2,"d":3}]', 2, { kind: "keys", at: 9 }],
    ['{"a:b:c":"d:e","f":"\\":"}', 2, null],
    ['[1,2,3,4,5]', 2, null],
    ['{"a":[{"k":1}],"b":[{"k":1}],"c":[]}', 2, { kind: "keys", at: 0 }],
  ];
  for (const [text, maxKeys, expected] of table) assert.deepEqual(findOverreach(text, maxKeys), expected, text);
  // Items by their commas, in arrays below the top level (a batch's length is bounded by its route).
  const items: Array<[string, ReturnType<typeof findOverreach>]> = [
    ["[1,2,3,4]", null],
    ['[{"a":[1,2,3]}]', null],
    ['[{"a":[1,2,3,4]}]', { kind: "items", at: 6 }],
    ['{"a":"1,2,3,4,5","b":[[1,2],[3]]}', null],
  ];
  for (const [text, expected] of items) assert.deepEqual(findOverreach(text, Infinity, 3), expected, text);
  assert.deepEqual(findOverreach("[".repeat(MAX_JSON_DEPTH + 1), Infinity), { kind: "depth", at: MAX_JSON_DEPTH });
});

test("a record stored deeper than the limit (by an older build, or a seed) can still be updated and deleted", async () => {
  let meta: unknown = 1;
  for (let i = 0; i < 10_000; i++) meta = { a: meta }; // deeper than JSON.stringify's stack reaches
  // Written straight into a data folder, as an older build could (a seed that deep is refused).
  const dir = mkdtempSync(join(tmpdir(), "tabula-deep-"));
  const store = await FileStore.open({ dir, valueIndexed: new Map(), warn: () => {} });
  const row = new Records(loadSchemaObject({ Task: TASK }), store).newRow({ title: "deep", meta }, { keyId: "key_old", kind: "secret" }, Date.now());
  await store.commit({ puts: [{ entity: "Task", row }] });
  await store.close();
  const seeded = await startTestServer({ memory: false, data: dir });
  try {
    const [{ id: deepId }] = (await seeded.call("GET", `${T}?fields=title`)).body;
    const patched = await seeded.call("PATCH", `${T}/${deepId}`, { body: { priority: 1 } });
    assert.equal(patched.status, 200, patched.text.slice(0, 300));
    assert.equal(patched.body.priority, 1);
    assert.ok(patched.text.endsWith(`${"}".repeat(10_000)},"created_date":"${patched.body.created_date}","updated_date":"${patched.body.updated_date}","created_by_id":"${patched.body.created_by_id}"}`));
    const deleted = await seeded.call("DELETE", `${T}/${deepId}`);
    assert.equal(deleted.status, 200, deleted.text.slice(0, 300));
    assert.deepEqual(deleted.body, { id: deepId, deleted: true });
  } finally {
    await seeded.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a seed nested deeper than the limit stops start-up, naming entity and index", async () => {
  let meta: unknown = 1;
  for (let i = 0; i < MAX_JSON_DEPTH; i++) meta = { a: meta }; // the record adds one level: one too many
  await assert.rejects(startTestServer({ seed: { Task: [{ title: "fine" }, { title: "deep", meta }] } }), /Task\[1\] nests arrays and objects deeper than 64 levels/);
  const atLimit = await startTestServer({ seed: { Task: [{ title: "deep", meta: (meta as { a: unknown }).a }] } });
  await atLimit.close();
});

test("stringifyDeep writes what JSON.stringify writes", () => {
  const values: unknown[] = [1, 'a"\n', null, true, [], {}, [1, [2, [3]], {}], { a: 1, b: undefined, c: [null, "é😀"], d: { e: -5e-8 } }];
  for (const value of values) assert.equal(stringifyDeep(value), JSON.stringify(value));
});
