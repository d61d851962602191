// Discovery (issue 8): GET /api/entities lists the loaded entities with their declarations, and
// GET /api/openapi.json serves the OpenAPI document with every entity's paths. Both need a key.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { Validator } from "@seriousme/openapi-schema-validator";
import { PUBLISHABLE, startTestServer, type TestServer } from "../support/server.ts";

const EXAMPLES = fileURLToPath(new URL("../../examples/entities", import.meta.url));

const ENTITY_PATHS = ["", "/count", "/bulk", "/upsert", "/update-many", "/{id}", "/{id}/restore"];

let server: TestServer;
before(async () => (server = await startTestServer({ schema: EXAMPLES })));
after(() => server.close());

test("GET /api/entities lists every entity with its declared fields, types, enums, defaults and required names", async () => {
  const answer = await server.call("GET", "/api/entities");
  assert.equal(answer.status, 200);
  assert.match(answer.headers.get("content-type") ?? "", /^application\/json/);
  assert.ok(Array.isArray(answer.body), "a bare array, like every list");
  const byName = new Map((answer.body as Array<{ name: string }>).map((entity) => [entity.name, entity as any]));
  assert.deepEqual([...byName.keys()].sort(), ["Note", "Task"]);

  const task = byName.get("Task");
  assert.equal(task.type, "object");
  assert.deepEqual(task.required, ["title"]);
  assert.deepEqual(Object.keys(task.properties).sort(), ["done", "due_date", "email", "estimate", "meta", "priority", "start_at", "status", "tags", "title"]);
  assert.deepEqual(task.properties.status.enum, ["todo", "doing", "done"]);
  assert.equal(task.properties.status.default, "todo");
  assert.equal(task.properties.priority.type, "integer");
  assert.equal(task.properties.due_date.format, "date");
  assert.equal(task.properties.tags.type, "array");

  // Note.json has no "name": the entity is named after its file.
  const note = byName.get("Note");
  assert.deepEqual(note.required, ["body"]);
  assert.equal(note.properties.pinned.default, false);
});

test("GET /api/entities never lists platform fields as declared fields", async () => {
  const answer = await server.call("GET", "/api/entities");
  for (const entity of answer.body as Array<{ name: string; properties: Record<string, unknown> }>) {
    for (const field of ["id", "created_date", "updated_date", "created_by_id"]) {
      assert.equal(field in entity.properties, false, `${entity.name} must not declare ${field}`);
    }
  }
});

test("GET /api/openapi.json serves a valid OpenAPI 3.1 document with the paths of every entity", async () => {
  const answer = await server.call("GET", "/api/openapi.json");
  assert.equal(answer.status, 200);
  assert.match(answer.headers.get("content-type") ?? "", /^application\/json/);
  const doc = answer.body;
  assert.equal(doc.openapi, "3.1.0");
  for (const entity of ["Task", "Note"]) {
    for (const suffix of ENTITY_PATHS) {
      assert.ok(doc.paths[`/api/entities/${entity}${suffix}`], `paths has /api/entities/${entity}${suffix}`);
    }
    assert.ok(doc.components.schemas[entity], `components.schemas has ${entity}`);
  }
  assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), ["bearer", "publishableKey", "secretKey"]);
  const result = await new Validator().validate(doc);
  assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
});

test("the discovery documents answer a publishable key too, and the same bytes each time", async () => {
  for (const path of ["/api/entities", "/api/openapi.json"]) {
    const bySecret = await server.call("GET", path);
    const byPublishable = await server.call("GET", path, { apiKey: PUBLISHABLE });
    assert.equal(byPublishable.status, 200, path);
    assert.equal(byPublishable.text, bySecret.text, path);
  }
});

test("the discovery documents need a key", async () => {
  for (const path of ["/api/entities", "/api/openapi.json"]) {
    const answer = await server.call("GET", path, { apiKey: null });
    assert.equal(answer.status, 401, path);
    assert.equal(answer.body.error.code, "unauthorized", path);
    assert.equal(answer.text.includes("openapi"), false, `${path} leaks nothing without a key`);
  }
});

test("writing to a discovery path answers 405 with Allow", async () => {
  for (const path of ["/api/entities", "/api/openapi.json"]) {
    const answer = await server.call("POST", path, { body: {} });
    assert.equal(answer.status, 405, path);
    assert.equal(answer.body.error.code, "method_not_allowed", path);
    assert.match(answer.headers.get("allow") ?? "", /GET/, path);
  }
});
