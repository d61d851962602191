// The OpenAPI document must be valid OpenAPI 3.1 (official JSON schema), its Schema Objects valid
// strict JSON Schema 2020-12, and it must describe what docs/api.md and docs/errors.md promise.

import { test } from "node:test";
import assert from "node:assert/strict";
import { Validator } from "@seriousme/openapi-schema-validator";
import Ajv2020 from "ajv/dist/2020.js";
import { nativeMount, sdkMount } from "../../src/http/mounts.ts";
import { buildOpenApi, describeEntity } from "../../src/http/openapi.ts";
import { loadSchemaObject } from "../../src/schema/load.ts";
import { TASK } from "../support/server.ts";

// The example Task of docs/entities.md, and a second entity with bounds, a pattern, typed items and a default.
const DECLARATIONS = {
  Task: TASK,
  "Project-Note": {
    properties: {
      code: { type: "string", pattern: "^[A-Z]{3}$", minLength: 3, maxLength: 3 },
      kind: { type: "string", enum: ["a", "b"], default: "a" },
      score: { type: "number", minimum: 0, maximum: 10 },
      seen_on: { type: "array", items: { type: "string", format: "date-time" } },
      link: { type: "string", format: "uri" },
    },
    required: ["code", "kind"],
  },
};

const ENTITY_OPERATIONS = [
  ["list", "get", ""], ["create", "post", ""], ["deleteMany", "delete", ""], ["count", "get", "/count"],
  ["get", "get", "/{id}"], ["update", "put", "/{id}"], ["patch", "patch", "/{id}"], ["delete", "delete", "/{id}"],
  ["restore", "put", "/{id}/restore"], ["bulkCreate", "post", "/bulk"], ["bulkUpdate", "put", "/bulk"],
  ["upsert", "post", "/upsert"], ["updateMany", "patch", "/update-many"], ["aggregate", "post", "/aggregate"],
  ["distinct", "get", "/distinct/{field}"],
] as const;

type Json = Record<string, any>;

function buildDocument(declarations: Record<string, unknown> = DECLARATIONS): Json {
  return buildOpenApi(loadSchemaObject(declarations), "9.8.7", [nativeMount, sdkMount(null)]) as Json;
}

function operations(doc: Json): [path: string, method: string, operation: Json][] {
  return Object.entries(doc.paths as Json).flatMap(([path, item]) =>
    Object.entries(item as Json).filter(([method]) => method !== "parameters").map(([method, op]) => [path, method, op as Json] as [string, string, Json]),
  );
}

// JSON pointers of every Schema Object outside components.schemas, which are compiled as well.
function schemaPointers(value: unknown, pointer = ""): string[] {
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([key, child]) => {
    const childPointer = `${pointer}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
    if (key === "schema") return [childPointer];
    if (childPointer === "/components/schemas") return [];
    return schemaPointers(child, childPointer);
  });
}

function compileStrict(doc: Json) {
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
  for (const format of ["date", "date-time", "email", "uri", "uri-reference"]) ajv.addFormat(format, true);
  ajv.addVocabulary(Object.keys(doc)); // the document's own top-level keys are not JSON Schema keywords
  ajv.addSchema(doc, "doc");
  return (pointer: string) => ajv.compile({ $ref: `doc#${pointer}` });
}

test("the document is valid OpenAPI 3.1 by the official schema, with every $ref resolving", async () => {
  const result = await new Validator().validate(buildDocument());
  assert.deepEqual(result.errors, undefined);
  assert.equal(result.valid, true);
});

test("the validator refuses a broken document, so the check above can fail", async () => {
  const doc = buildDocument();
  doc.paths["/api/entities/Task"].get.responses = "nope";
  assert.equal((await new Validator().validate(doc)).valid, false);
  const dangling = buildDocument();
  dangling.paths["/api/entities/Task"].post.requestBody.content["application/json"].schema = { $ref: "#/components/schemas/Nope" };
  assert.equal((await new Validator().validate(dangling)).valid, false);
});

test("every Schema Object compiles as strict JSON Schema 2020-12", () => {
  const doc = buildDocument();
  const compile = compileStrict(doc);
  const pointers = [...Object.keys(doc.components.schemas).map((name) => `/components/schemas/${name}`), ...schemaPointers(doc)];
  assert.ok(pointers.length > 50, `found only ${pointers.length} schemas`);
  for (const pointer of pointers) assert.doesNotThrow(() => compile(pointer), pointer);
});

test("info, servers and security follow docs/api.md (Bearer)", () => {
  const doc = buildDocument();
  assert.equal(doc.openapi, "3.1.0");
  assert.deepEqual([doc.info.title, doc.info.version], ["tabula", "9.8.7"]);
  assert.ok(doc.servers === undefined || JSON.stringify(doc.servers) === '[{"url":"/"}]');
  for (const scheme of ["secretKey", "publishableKey"]) {
    assert.deepEqual({ ...doc.components.securitySchemes[scheme], description: undefined }, { type: "apiKey", in: "header", name: "X-Api-Key", description: undefined });
    assert.ok(doc.components.securitySchemes[scheme].description.length > 40);
  }
  assert.deepEqual(doc.components.securitySchemes.bearer.scheme, "bearer");
  assert.deepEqual(doc.security, [{ secretKey: [] }, { publishableKey: [] }, { bearer: [] }]);
  assert.deepEqual(doc.paths["/health"].get.security, []);
  for (const operationId of ["restoreTask", "updateManyTask", "deleteManyTask"]) {
    const [, , op] = operations(doc).find(([, , op]) => op.operationId === operationId)!;
    assert.deepEqual(op.security, [{ secretKey: [] }], operationId);
  }
});

test("every entity has every path and operation, with the expected operationIds", () => {
  const doc = buildDocument();
  for (const entity of ["Task", "Project-Note"]) {
    for (const [verb, method, suffix] of ENTITY_OPERATIONS) {
      const item = doc.paths[`/api/entities/${entity}${suffix}`];
      assert.ok(item, `missing path /api/entities/${entity}${suffix}`);
      assert.equal(item[method]?.operationId, `${verb}${entity}`);
    }
  }
  for (const path of ["/health", "/api/entities", "/api/openapi.json"]) assert.ok(doc.paths[path]?.get, path);
});

test("operationIds are unique, even when entity names make them collide", () => {
  const ids = operations(buildDocument()).map(([, , op]) => op.operationId);
  assert.equal(new Set(ids).size, ids.length);
  const clashing = operations(buildDocument({ Task: { properties: {} }, ManyTask: { properties: {} }, Entities: { properties: {} } }));
  const clashingIds = clashing.map(([, , op]) => op.operationId);
  assert.equal(new Set(clashingIds).size, clashingIds.length);
  assert.ok(clashingIds.includes("deleteManyTask") && clashingIds.includes("deleteManyTask_2"));
  assert.ok(clashingIds.includes("listEntities") && clashingIds.includes("listEntities_2"));
});

test("the Error schema lists every code of docs/errors.md, and every error response uses it", () => {
  const doc = buildDocument();
  const error = doc.components.schemas.Error;
  assert.deepEqual(error.required, ["error"]);
  assert.deepEqual(error.properties.error.required, ["code", "message", "details"]);
  const codes: string[] = error.properties.error.properties.code.enum;
  for (const code of ["unknown_field", "idempotency_key_reused", "idempotency_key_in_use", "filter_required", "batch_too_large", "not_found", "internal"]) {
    assert.ok(codes.includes(code), code);
  }
  for (const [path, method, op] of operations(doc)) {
    for (const [status, answer] of Object.entries(op.responses as Json)) {
      if (Number(status) < 400) continue;
      const target = doc.components.responses[answer.$ref.split("/").pop()];
      assert.deepEqual(target.content["application/json"].schema, { $ref: "#/components/schemas/Error" }, `${method} ${path} ${status}`);
    }
  }
});

test("list takes every list parameter, each described, and answers with the paging headers", () => {
  const list = buildDocument().paths["/api/entities/Task"].get;
  const names = list.parameters.map((parameter: Json) => parameter.name);
  assert.deepEqual(names, ["q", "search", "sort_by", "fields", "limit", "cursor", "skip", "count", "deleted"]);
  for (const parameter of list.parameters) assert.ok(parameter.description.length > 20, parameter.name);
  const q = list.parameters[0];
  for (const word of ["$contains", "$in", "$or", "$exists", "$regex", "$not", "$nor", "$all", "$size", "$elemMatch", "any of its values", "Dotted names", "invalid_filter", '{"status":"todo"}', '{"priority":{"$gte":3}}']) {
    assert.ok(q.description.includes(word), word);
  }
  assert.deepEqual(Object.keys(list.responses[200].headers), ["X-Next-Cursor", "Link", "X-Total-Count"]);
  assert.deepEqual(list.responses[200].content["application/json"].schema, { type: "array", items: { $ref: "#/components/schemas/Task" } });
});

test("statuses and headers of each write follow docs/api.md", () => {
  const paths = buildDocument().paths;
  const headersOf = (op: Json, status: string) => Object.keys(op.responses[status].headers ?? {});
  const task = "/api/entities/Task";
  assert.deepEqual(headersOf(paths[task].post, "201"), ["Location", "ETag", "Idempotent-Replayed"]);
  assert.deepEqual(headersOf(paths[`${task}/{id}`].patch, "200"), ["ETag", "Idempotent-Replayed"]);
  assert.ok(paths[`${task}/{id}`].get.responses["304"]);
  assert.ok(paths[`${task}/{id}`].put.responses["412"] && paths[`${task}/{id}`].delete.responses["412"]);
  assert.ok(paths[`${task}/bulk`].post.responses["201"] && paths[`${task}/bulk`].put.responses["200"]);
  assert.equal(paths[task].delete.parameters[0].required, true);
  const writes: [string, string][] = [[task, "post"], [task, "delete"], [`${task}/{id}`, "put"], [`${task}/{id}`, "patch"], [`${task}/{id}`, "delete"],
    [`${task}/{id}/restore`, "put"], [`${task}/bulk`, "post"], [`${task}/bulk`, "put"], [`${task}/upsert`, "post"], [`${task}/update-many`, "patch"]];
  for (const [path, method] of writes) {
    const refs = paths[path][method].parameters.map((parameter: Json) => parameter.$ref);
    assert.ok(refs.includes("#/components/parameters/IdempotencyKey"), `${method} ${path}`);
  }
});

test("component schemas accept and refuse records as the server does", () => {
  const doc = buildDocument();
  const compile = compileStrict(doc);
  const cases: [schema: string, value: unknown, isValid: boolean][] = [
    ["TaskInput", { title: "Write", status: "doing", tags: ["a"], due_date: "2026-01-01", meta: { x: 1 } }, true],
    ["TaskInput", { status: "done" }, false], // title is required
    ["TaskInput", { title: "Write", bogus: 1 }, false], // undeclared field
    ["TaskInput", { title: "Write", id: "6740a1b2c3d4e5f601234567" }, false], // platform field
    ["TaskInput", { title: "Write", status: null, priority: null }, true], // null clears an optional field
    ["TaskInput", { title: "Write", status: "later" }, false],
    ["TaskInput", { title: "Write", priority: 1.5 }, false],
    ["TaskChanges", { priority: 2 }, true],
    ["TaskChanges", { title: null }, false], // a required field cannot be cleared
    ["Project-NoteInput", { code: "ABC" }, true], // kind has a default
    ["Project-NoteInput", { code: "abc" }, false],
    ["Project-NoteInput", { code: "ABC", score: 11 }, false],
    ["Task", { id: "6740a1b2c3d4e5f601234567", title: "Write", created_date: "2026-11-22T12:00:00.000Z", updated_date: "2026-11-22T12:00:00.000Z", created_by_id: "k1" }, true],
    ["Task", { id: "6740a1b2c3d4e5f601234567" }, true], // `fields` may leave only the id
    ["Task", { title: "no id" }, false],
    ["Error", { error: { code: "unknown_field", message: "m", details: {} } }, true],
    ["Error", { error: { code: "made_up", message: "m", details: {} } }, false],
    ["ManyResult", { count: 1, ids: ["6740a1b2c3d4e5f601234567"] }, true],
    ["DeleteResult", { id: "6740a1b2c3d4e5f601234567", deleted: true }, true],
    ["CountResult", { count: -1 }, false],
  ];
  for (const entity of loadSchemaObject(DECLARATIONS).entities.values()) cases.push(["EntityDeclaration", describeEntity(entity), true]);
  for (const [schema, value, isValid] of cases) {
    assert.equal(compile(`/components/schemas/${schema}`)(value), isValid, `${schema} ${JSON.stringify(value)}`);
  }
});

test("optional fields of write bodies are nullable the 3.1 way, and records carry platform fields", () => {
  const doc = buildDocument();
  assert.ok(!JSON.stringify(doc).includes('"nullable"'), "OpenAPI 3.0's nullable is not 3.1");
  const input = doc.components.schemas.TaskInput;
  assert.deepEqual(input.properties.status, { type: ["string", "null"], enum: ["todo", "doing", "done", null], default: "todo" });
  assert.deepEqual(input.properties.title, { type: "string" });
  assert.deepEqual([input.required, input.additionalProperties], [["title"], false]);
  assert.equal(doc.components.schemas.TaskChanges.required, undefined);
  const task = doc.components.schemas.Task;
  assert.match(task.properties.created_by_id.description, /secret keys/);
  assert.deepEqual(task.properties.created_date, { ...task.properties.created_date, type: "string", format: "date-time" });
  assert.deepEqual(task.properties.tags, { type: "array", items: { type: "string" } });
});

test("aggregate takes the SDK's EntityAggregateSpec, its field names typed by the entity", () => {
  const doc = buildDocument();
  const compile = compileStrict(doc);
  const body = compile("/paths/~1api~1entities~1Task~1aggregate/post/requestBody/content/application~1json/schema");
  const cases: [spec: unknown, isValid: boolean][] = [
    [{}, true],
    [{ groupBy: "status", sum: "estimate", sort: "-count" }, true],
    [{ groupBy: ["status", "done", "tags", "created_by_id"], dateBucket: { field: "created_date", unit: "week" }, count: false, avg: ["priority"], min: "due_date", max: ["title"], countDistinct: "tags", having: { count: { $gt: 1 } }, limit: 1000 }, true],
    [{ groupBy: ["status", "done", "tags", "priority", "title"] }, false],
    [{ groupBy: "meta" }, false],
    [{ sum: "title" }, false],
    [{ min: "done" }, false],
    [{ dateBucket: { field: "title", unit: "day" } }, false],
    [{ dateBucket: { field: "due_date", unit: "hour" } }, false],
    [{ limit: 1001 }, false],
    [{ group: "status" }, false],
  ];
  for (const [spec, isValid] of cases) assert.equal(body(spec), isValid, JSON.stringify(spec));
  const answer = compile("/components/schemas/AggregateResult");
  assert.equal(answer({ rows: [{ status: "todo", count: 2 }], truncated: false }), true);
  assert.equal(answer({ rows: [] }), false);
});

test("distinct names its field in the path and pages with cursor headers", () => {
  const doc = buildDocument();
  const item = doc.paths["/api/entities/Task/distinct/{field}"];
  assert.deepEqual(item.parameters[0].schema.enum, ["title", "status", "priority", "estimate", "done", "due_date", "start_at", "email", "tags", "id", "created_date", "updated_date", "created_by_id"]);
  assert.deepEqual(item.get.parameters.map((parameter: Json) => parameter.name), ["q", "limit", "cursor"]);
  assert.deepEqual(item.get.parameters[1].schema, { type: "integer", minimum: 1, maximum: 1000, default: 100 });
  assert.deepEqual(Object.keys(item.get.responses[200].headers), ["X-Next-Cursor", "Link"]);
});
