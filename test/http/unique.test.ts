// Unique values (docs/entities.md, issue 20 item 1): "unique": [["email"], ["sku", "warehouse"]] holds on
// every write path (create, update, bulk create and update, upsert, update-many, restore), answered
// 409 unique_violation naming the fields and the record that holds the values, with nothing stored.
// Records lacking a field never clash; deleted records hold no values. Runs on every store.

import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { loadSchemaObject, SchemaError } from "../../src/schema/load.ts";
import { randomText } from "../support/random.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

const ITEM = {
  name: "Item",
  properties: { email: { type: "string" }, sku: { type: "string" }, warehouse: { type: "string" }, note: { type: "string" }, qty: { type: "integer" } },
  unique: [["email"], ["sku", "warehouse"]],
};
const PATH = "/api/entities/Item";

describe("unique values on every write path", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ schema: { Item: ITEM } });
  });
  after(() => server.close());

  async function create(body: Record<string, unknown>) {
    const answer = await server.call("POST", PATH, { body });
    assert.equal(answer.status, 201, answer.text);
    return answer.body.id as string;
  }

  function assertViolation(answer: { status: number; body: any; text: string }, fields: string[], id: string) {
    assert.equal(answer.status, 409, answer.text);
    assert.equal(answer.body.error.code, "unique_violation");
    assert.deepEqual(answer.body.error.details.fields, fields);
    // The documented name is existing_id; id is kept beside it for older clients.
    assert.equal(answer.body.error.details.existing_id, id);
    assert.equal(answer.body.error.details.id, id);
    assert.match(answer.body.error.message, new RegExp(`Item record \\(${id}\\) already has ${fields[0]} = `));
  }

  async function count(q: Record<string, unknown>) {
    return (await server.call("GET", `${PATH}/count?q=${encodeURIComponent(JSON.stringify(q))}`)).body.count as number;
  }

  test("create: a second record with a taken email is refused; records lacking it never clash", async () => {
    const ann = await create({ email: "ann@x.io" });
    assertViolation(await server.call("POST", PATH, { body: { email: "ann@x.io", note: "dup" } }), ["email"], ann);
    assert.equal(await count({ note: "dup" }), 0);
    await create({ note: "no email 1" });
    await create({ note: "no email 2" });
    // Compound: the same sku in another warehouse is fine, in the same one it clashes; half of it never does.
    const a1 = await create({ sku: "S1", warehouse: "A" });
    await create({ sku: "S1", warehouse: "B" });
    await create({ sku: "S1" });
    await create({ sku: "S1" });
    assertViolation(await server.call("POST", PATH, { body: { sku: "S1", warehouse: "A" } }), ["sku", "warehouse"], a1);
  });

  test("update and bulk update: taking a held value is refused; keeping one's own, or a swap within one batch, is not", async () => {
    const bob = await create({ email: "bob@x.io" });
    const cy = await create({ email: "cy@x.io" });
    assertViolation(await server.call("PATCH", `${PATH}/${cy}`, { body: { email: "bob@x.io" } }), ["email"], bob);
    assert.equal((await server.call("PATCH", `${PATH}/${cy}`, { body: { email: "cy@x.io", note: "same" } })).status, 200);
    // bob gives up his address in the batch that gives it to cy.
    const swap = await server.call("PUT", `${PATH}/bulk`, { body: [{ id: bob, email: "bob2@x.io" }, { id: cy, email: "bob@x.io" }] });
    assert.equal(swap.status, 200, swap.text);
    const refused = await server.call("PUT", `${PATH}/bulk`, { body: [{ id: bob, note: "first" }, { id: bob, email: "bob@x.io" }] });
    assertViolation(refused, ["email"], cy);
    assert.equal((await server.call("GET", `${PATH}/${bob}`)).body.note, undefined, "nothing of the refused batch was stored");
  });

  test("bulk create is all or nothing, against stored records and within itself", async () => {
    const dee = await create({ email: "dee@x.io" });
    assertViolation(await server.call("POST", `${PATH}/bulk`, { body: [{ email: "new1@x.io" }, { email: "dee@x.io" }] }), ["email"], dee);
    const twice = await server.call("POST", `${PATH}/bulk`, { body: [{ email: "twin@x.io" }, { email: "twin@x.io" }] });
    assert.equal(twice.status, 409, twice.text);
    assert.equal(twice.body.error.code, "unique_violation");
    assert.equal(await count({ email: { $in: ["new1@x.io", "twin@x.io"] } }), 0);
  });

  test("upsert and update-many may not give two records one value", async () => {
    const eve = await create({ email: "eve@x.io", sku: "E", warehouse: "W" });
    // Matched by sku+warehouse (updating eve) is fine; a new record taking eve's email is not.
    assert.equal((await server.call("POST", `${PATH}/upsert`, { body: { match: ["sku", "warehouse"], records: [{ sku: "E", warehouse: "W", email: "eve@x.io", qty: 1 }] } })).status, 200);
    assertViolation(await server.call("POST", `${PATH}/upsert`, { body: { match: ["sku", "warehouse"], records: [{ sku: "F", warehouse: "W", email: "eve@x.io" }] } }), ["email"], eve);
    await create({ note: "many", qty: 1 });
    await create({ note: "many", qty: 2 });
    const many = await server.call("PATCH", `${PATH}/update-many`, { body: { q: { note: "many" }, set: { email: "shared@x.io" } } });
    assert.equal(many.status, 409, many.text);
    assert.equal(await count({ email: "shared@x.io" }), 0);
  });

  test("a deleted record holds no value; restoring it over a taken one is refused", async () => {
    const old = await create({ email: "fay@x.io" });
    assert.equal((await server.call("DELETE", `${PATH}/${old}`)).status, 200);
    const fresh = await create({ email: "fay@x.io" });
    assertViolation(await server.call("PUT", `${PATH}/${old}/restore`), ["email"], fresh);
    assert.equal((await server.call("GET", `${PATH}/${old}`)).status, 404, "still deleted");
  });

  // A PostgreSQL unique index once held whole values, and refused a text that did not compress
  // below about 2,700 bytes (a 500): it now holds a digest of long ones, and equality stays that of
  // the values. Random texts, as a repeated character would compress.
  test("long values: the same 100,000 characters clash, naming the first holder; values apart only past a long prefix are all stored", async () => {
    const prefix = randomText(99_999, 1);
    const first = await create({ email: `${prefix}1` });
    assertViolation(await server.call("POST", PATH, { body: { email: `${prefix}1`, note: "long dup" } }), ["email"], first);
    const other = await create({ email: "other@x.io" });
    assertViolation(await server.call("PATCH", `${PATH}/${other}`, { body: { email: `${prefix}1`, note: "long dup" } }), ["email"], first);
    assert.equal(await count({ note: "long dup" }), 0);
    // Lengths either side of what a key holds whole, and characters a digest must take byte for byte.
    const short = randomText(1_030, 2);
    const apart = [`${prefix}2`, prefix, `${prefix}\\`, `${prefix}\\\\`, `\\x41${prefix}`, `${prefix}😀`, `${prefix}\u0001`, short.slice(0, 1_000), short, `${short}n`];
    for (const email of apart) {
      const id = await create({ email });
      assert.equal((await server.call("GET", `${PATH}/${id}`)).body.email, email);
    }
    for (const email of apart.slice(-3)) assert.equal((await server.call("POST", PATH, { body: { email } })).status, 409);
    // A compound set: one long part, or two.
    const sku = randomText(100_000, 3);
    const a = await create({ sku, warehouse: "A" });
    await create({ sku, warehouse: "B" });
    assertViolation(await server.call("POST", PATH, { body: { sku, warehouse: "A" } }), ["sku", "warehouse"], a);
    const warehouse = randomText(5_000, 4);
    const both = await create({ sku: `${sku}x`, warehouse });
    await create({ sku: `${sku}x`, warehouse: `${warehouse}w` });
    assertViolation(await server.call("POST", `${PATH}/bulk`, { body: [{ sku: `${sku}x`, warehouse }] }), ["sku", "warehouse"], both);
  });

  test("GET /api/entities shows the declaration's unique sets", async () => {
    const [item] = (await server.call("GET", "/api/entities")).body;
    assert.deepEqual(item.unique, [["email"], ["sku", "warehouse"]]);
  });
});

describe("declaring unique", () => {
  const cases: Array<[unknown, RegExp]> = [
    [[["nope"]], /"unique" names "nope", which is not a declared field/],
    [[[]], /each entry must be a non-empty list/],
    [["email"], /each entry must be a non-empty list/],
    [{ email: true }, /"unique" must be a list of field lists/],
    [[["email", "email"]], /names a field twice/],
  ];
  for (const [unique, message] of cases) {
    test(`${JSON.stringify(unique)} is refused at start-up, naming entity and value`, () => {
      assert.throws(() => loadSchemaObject({ Item: { ...ITEM, unique } }), (error: unknown) => error instanceof SchemaError && /entity "Item"/.test(error.message) && message.test(error.message));
    });
  }

  test("over stored duplicates, the file store stops the start-up, naming entity, fields and ids, and how to find them all", async () => {
    const data = await mkdtemp(join(tmpdir(), "tabula-unique-"));
    try {
      const loose = { ...ITEM, unique: [] };
      const first = await startTestServer({ schema: { Item: loose }, memory: false, data });
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await first.call("POST", PATH, { body: { email: "same@x.io" } })).body.id);
      await first.close();
      await assert.rejects(
        startTestServer({ schema: { Item: ITEM }, memory: false, data }),
        (error: Error) =>
          /Item declares "unique": \["email"\], but live records already share such values/.test(error.message) &&
          ids.slice(1).every((id) => error.message.includes(id)) &&
          /POST \/api\/entities\/Item\/aggregate \{"groupBy": "email", "having": \{"count": \{"\$gt": 1\}\}\}/.test(error.message),
      );
    } finally {
      await rm(data, { recursive: true, force: true });
    }
  });

  // Issue 39 item 3: the check counted deleted records, and the first holder's deletion left the
  // second holder unguarded.
  for (const deleted of ["the later duplicate", "the first holder"] as const) {
    test(`over duplicates of which ${deleted} was deleted, the file store starts and guards the live one`, async () => {
      const data = await mkdtemp(join(tmpdir(), "tabula-unique-"));
      try {
        const loose = { ...ITEM, unique: [] };
        const first = await startTestServer({ schema: { Item: loose }, memory: false, data });
        const a = (await first.call("POST", PATH, { body: { email: "same@x.io" } })).body.id as string;
        const b = (await first.call("POST", PATH, { body: { email: "same@x.io" } })).body.id as string;
        const [gone, kept] = deleted === "the first holder" ? [a, b] : [b, a];
        assert.equal((await first.call("DELETE", `${PATH}/${gone}`)).status, 200);
        await first.close();
        const second = await startTestServer({ schema: { Item: ITEM }, memory: false, data });
        try {
          const refused = await second.call("POST", PATH, { body: { email: "same@x.io" } });
          assert.equal(refused.status, 409, refused.text);
          assert.equal(refused.body.error.details.existing_id, kept);
          const restore = await second.call("PUT", `${PATH}/${gone}/restore`);
          assert.equal(restore.status, 409, restore.text);
          assert.equal(restore.body.error.details.existing_id, kept);
        } finally {
          await second.close();
        }
      } finally {
        await rm(data, { recursive: true, force: true });
      }
    });
  }
});
