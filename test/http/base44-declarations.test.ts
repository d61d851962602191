// Entity declarations as Base44 projects write them (docs/entities.md): richtext, arrays of objects
// declaring their members, objects with required members, served and checked on every store.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../support/server.ts";

const CARD = {
  name: "Card",
  type: "object",
  properties: {
    title: { type: "string", description: "Card title" },
    body: { type: "string", format: "richtext", description: "The card, as HTML" },
    attachments: {
      type: "array",
      description: "File attachments",
      items: { type: "object", properties: { name: { type: "string" }, url: { type: "string", format: "uri" }, size: { type: "integer" } }, required: ["url"] },
    },
    address: { type: "object", properties: { city: { type: "string" }, zip: { type: "string" } } },
  },
  required: ["title"],
};

let server: TestServer;
before(async () => {
  server = await startTestServer({ schema: { Card: CARD } });
});
after(() => server.close());

test("a Base44 declaration with richtext and arrays of objects is served, its members checked", async () => {
  const good = { title: "Launch", body: "<p>Ship <b>it</b></p>", attachments: [{ name: "plan.pdf", url: "https://example.com/plan.pdf", size: 1200, extra: true }], address: { city: "Oslo" } };
  const created = await server.call("POST", "/api/entities/Card", { body: good });
  assert.equal(created.status, 201, created.text);
  assert.deepEqual(created.body.attachments, good.attachments, "members not declared are kept");
  assert.equal(created.body.body, good.body);

  const wrongMember = await server.call("POST", "/api/entities/Card", { body: { title: "x", attachments: [{ url: "https://example.com/a", size: "big" }] } });
  assert.equal(wrongMember.status, 400, wrongMember.text);
  assert.match(wrongMember.text, /attachments.*item 0 member \\"size\\" must be a whole number/);
  const lacking = await server.call("POST", "/api/entities/Card", { body: { title: "x", attachments: [{ name: "no url" }] } });
  assert.equal(lacking.status, 400, lacking.text);
  assert.match(lacking.text, /lacks its member \\"url\\"/);
  const wrongCity = await server.call("PATCH", `/api/entities/Card/${created.body.id}`, { body: { address: { city: 12 } } });
  assert.equal(wrongCity.status, 400, wrongCity.text);
  assert.equal((await server.call("GET", `/api/entities/Card/${created.body.id}`)).body.address.city, "Oslo", "nothing of a refused write is stored");
  const found = await server.call("GET", `/api/entities/Card?q=${encodeURIComponent(JSON.stringify({ "address.city": "Oslo" }))}`);
  assert.deepEqual(found.body.map((card: { id: string }) => card.id), [created.body.id]);
});

test("a member declaration that cannot be read stops the start-up, naming field and member", async () => {
  const bad = { ...CARD, properties: { ...CARD.properties, address: { type: "object", properties: { city: { type: "text" } } } } };
  await assert.rejects(startTestServer({ schema: { Card: bad } }), /field "address", member "city": unknown type "text"/);
  const misplaced = { ...CARD, properties: { ...CARD.properties, title: { type: "string", properties: {} } } };
  await assert.rejects(startTestServer({ schema: { Card: misplaced } }), /"properties" and "required" inside a field are only for object fields/);
});
