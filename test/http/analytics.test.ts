// The SDK's analytics (docs/base44-sdk.md): POST /api/apps/<appId>/analytics/track/batch, as
// @base44/sdk sends it by default (with axios, or a key-less navigator.sendBeacon), answered 204 and
// not kept; the app id check of --app-id still holds.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { PUBLISHABLE, startTestServer, type TestServer } from "../support/server.ts";

/** What the SDK's flush() sends: { events: [...] }, each event with its name, properties and session. */
const BATCH = {
  events: [
    { event_name: "page_view", properties: { path: "/" }, timestamp: "2026-11-29T12:00:00.000Z", page_url: "http://localhost:5173/", session_id: "s1" },
    { event_name: "heartbeat", properties: {}, timestamp: "2026-11-29T12:00:30.000Z", page_url: "http://localhost:5173/", session_id: "s1" },
  ],
};

describe("analytics track/batch", () => {
  let server: TestServer;
  before(async () => (server = await startTestServer({ appId: "app1" })));
  after(() => server.close());

  // undefined: the secret key (server.call's default).
  const callers: Array<[string, string | null | undefined]> = [
    ["with no key, as a beacon sends it", null],
    ["with the publishable key", PUBLISHABLE],
    ["with the secret key", undefined],
  ];
  for (const [name, apiKey] of callers) {
    test(`is answered 204 with no body, ${name}`, async () => {
      const answer = await server.call("POST", "/api/apps/app1/analytics/track/batch", { body: BATCH, apiKey });
      assert.equal(answer.status, 204, answer.text);
      assert.equal(answer.text, "");
    });
  }

  test("keeps nothing: no entity, no change feed event", async () => {
    await server.call("POST", "/api/apps/app1/analytics/track/batch", { body: BATCH, apiKey: null });
    const entities = await server.call("GET", "/api/entities");
    assert.equal(JSON.stringify(entities.body).includes("analytics"), false);
    const changes = await server.call("GET", "/api/apps/app1/changes");
    assert.equal(changes.status, 200, changes.text);
    assert.deepEqual(changes.body.changes, []);
  });

  test("another app's id is 404 app_not_found, as on every route of the SDK's prefix", async () => {
    const answer = await server.call("POST", "/api/apps/other/analytics/track/batch", { body: BATCH, apiKey: null });
    assert.equal(answer.status, 404, answer.text);
    assert.equal(answer.body.error.code, "app_not_found");
  });

  test("other analytics paths still need a key, and are unknown with one", async () => {
    const keyless = await server.call("POST", "/api/apps/app1/analytics/track", { body: BATCH, apiKey: null });
    assert.equal(keyless.status, 401, keyless.text);
    const known = await server.call("POST", "/api/apps/app1/analytics/track", { body: BATCH });
    assert.equal(known.status, 404, known.text);
  });
});
