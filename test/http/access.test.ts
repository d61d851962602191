// Access per entity and key kind (docs/entities.md, issue 20 item 2): a declaration's "access" says
// what a publishable key may do; everything else is 403 forbidden naming entity, operation and key
// kind. The check is the router's, for every route: this test walks the route table of both
// prefixes, so a new route that forgot it fails here.

import assert from "node:assert/strict";
import { Validator } from "@seriousme/openapi-schema-validator";
import { after, before, describe, test } from "node:test";
import { nativeMount, sdkMount } from "../../src/http/mounts.ts";
import { routesOf } from "../../src/http/routes.ts";
import { loadSchemaObject, SchemaError } from "../../src/schema/load.ts";
import { PUBLISHABLE, startTestServer, TASK, type TestServer } from "../support/server.ts";

const MOUNTS = [nativeMount, sdkMount(null)];

/** A request for `route` on `entity`: its path filled in, and a body of the right shape where it takes one. */
function requestFor(collection: string, path: string, entity: string, id: string) {
  const url = (collection + path).replace(":appId", "demo").replace(":entity", entity).replace(":id", id).replace(":field", "title");
  return url;
}

const BODIES: Record<string, unknown> = {
  create: { title: "x" },
  bulkCreate: [{ title: "x" }],
  bulkUpdate: [{ id: "x", title: "y" }],
  upsert: { match: ["title"], records: [{ title: "x" }] },
  updateMany: { q: { title: "x" }, set: { title: "y" } },
  update: { title: "y" },
  patch: { title: "y" },
  aggregate: { groupBy: "status" },
};

describe("per-entity access for publishable keys", () => {
  let server: TestServer;
  let lockedId: string;
  let readOnlyId: string;
  before(async () => {
    server = await startTestServer({
      schema: {
        Task: TASK,
        Locked: { ...TASK, name: "Locked", access: { publishable: [] } },
        ReadOnly: { ...TASK, name: "ReadOnly", access: { publishable: ["read"] } },
      },
    });
    lockedId = (await server.call("POST", "/api/entities/Locked", { body: { title: "secret-made" } })).body.id;
    readOnlyId = (await server.call("POST", "/api/entities/ReadOnly", { body: { title: "secret-made" } })).body.id;
  });
  after(() => server.close());

  for (const mount of MOUNTS) {
    for (const route of routesOf(mount)) {
      test(`${route.method} ${mount.collection}${route.path} (${route.operation}) is forbidden to a publishable key where "access" allows nothing`, async () => {
        const path = requestFor(mount.collection, route.path, "Locked", lockedId);
        const body = route.method === "GET" || route.method === "DELETE" ? undefined : BODIES[route.operation] ?? {};
        const answer = await server.call(route.method, route.operation === "deleteMany" ? `${path}?q=${encodeURIComponent('{"title":"x"}')}` : path, { apiKey: PUBLISHABLE, body });
        assert.equal(answer.status, 403, answer.text);
        assert.equal(answer.body.error.code, "forbidden");
        assert.match(answer.body.error.message, /Locked/);
        assert.equal(answer.body.error.details.entity, "Locked");
        assert.equal(answer.body.error.details.keyKind, "publishable");
        assert.ok(route.access.includes(answer.body.error.details.operation), answer.text);
      });
    }
  }

  test("the OpenAPI document marks what a publishable key may not use, and /api/entities shows each declaration's access", async () => {
    const doc = (await server.call("GET", "/api/openapi.json")).body;
    const validation = await new Validator().validate(structuredClone(doc));
    assert.equal(validation.valid, true, JSON.stringify(validation.errors));
    const lockedCreate = doc.paths["/api/entities/Locked"].post;
    assert.match(lockedCreate.description, /Not for publishable keys.*create/);
    assert.ok(lockedCreate.responses["403"]);
    assert.match(doc.paths["/api/entities/ReadOnly/{id}"].patch.description, /Not for publishable keys.*update/);
    assert.doesNotMatch(doc.paths["/api/entities/ReadOnly/{id}"].get.description ?? "", /Not for publishable keys/);
    assert.doesNotMatch(doc.paths["/api/entities/Task"].post.description ?? "", /Not for publishable keys/);
    const entities = (await server.call("GET", "/api/entities")).body;
    const byName = Object.fromEntries(entities.map((entity: { name: string }) => [entity.name, entity]));
    assert.deepEqual(byName.ReadOnly.access, { publishable: ["read"] });
    assert.deepEqual(byName.Locked.access, { publishable: [] });
    assert.equal(byName.Task.access, undefined);
  });

  test("read-only for publishable keys: reads answer, every write is 403 naming its operation; secret keys may do all", async () => {
    const get = await server.call("GET", `/api/entities/ReadOnly/${readOnlyId}`, { apiKey: PUBLISHABLE });
    assert.equal(get.status, 200);
    assert.equal((await server.call("GET", "/api/entities/ReadOnly/count", { apiKey: PUBLISHABLE })).body.count, 1);
    assert.equal((await server.call("GET", "/api/apps/demo/entities/ReadOnly", { apiKey: PUBLISHABLE })).status, 200);
    const create = await server.call("POST", "/api/entities/ReadOnly", { apiKey: PUBLISHABLE, body: { title: "no" } });
    assert.equal(create.status, 403);
    assert.equal(create.body.error.details.operation, "create");
    assert.match(create.body.error.message, /may not create ReadOnly records.*allows publishable keys read/);
    const update = await server.call("PATCH", `/api/entities/ReadOnly/${readOnlyId}`, { apiKey: PUBLISHABLE, body: { title: "no" } });
    assert.equal(update.body.error.details.operation, "update");
    const upsert = await server.call("POST", "/api/entities/ReadOnly/upsert", { apiKey: PUBLISHABLE, body: BODIES.upsert });
    assert.equal(upsert.status, 403);
    assert.equal((await server.call("DELETE", `/api/entities/ReadOnly/${readOnlyId}`, { apiKey: PUBLISHABLE })).body.error.details.operation, "delete");
    // Nothing was written, and the secret key may do everything.
    const after = await server.call("GET", `/api/entities/ReadOnly/${readOnlyId}`);
    assert.equal(after.body.title, "secret-made");
    assert.equal((await server.call("PATCH", `/api/entities/ReadOnly/${readOnlyId}`, { body: { title: "by secret" } })).status, 200);
    // An entity without "access" lets publishable keys do all four.
    assert.equal((await server.call("POST", "/api/entities/Task", { apiKey: PUBLISHABLE, body: { title: "open" } })).status, 201);
  });
});

describe("\"access\" declarations are checked at start-up", () => {
  const cases: Array<[unknown, RegExp]> = [
    [{ publishable: ["read", "destroy"] }, /"access"."publishable" lists "destroy", which is no operation; use "read", "create", "update", "delete"/],
    [{ secret: ["read"] }, /secret keys may always do everything/],
    [{ browser: ["read"] }, /the key kind "browser"/],
    [{ publishable: "read" }, /must be an array of operations/],
    [["read"], /"access" must be an object/],
  ];
  for (const [access, message] of cases) {
    test(`${JSON.stringify(access)} is refused, naming entity and value`, () => {
      assert.throws(() => loadSchemaObject({ Task: { ...TASK, access } }), (error: unknown) => error instanceof SchemaError && /entity "Task"/.test(error.message) && message.test(error.message));
    });
  }
});
