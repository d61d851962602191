// Browsers (docs/api.md): a key in Authorization: Bearer, and CORS as a browser meets it, a
// preflight first, then the request with Origin, whose answer's headers the page may read.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { PUBLISHABLE, SECRET, startTestServer, type TestServer } from "../support/server.ts";

const T = "/api/entities/Task";
const APP = "http://localhost:5173";
const EXPOSED = ["ETag", "Location", "Link", "X-Next-Cursor", "X-Total-Count", "Idempotent-Replayed"];

/** A preflight, as a browser sends it before a cross-origin POST with a key and JSON. */
function preflight(server: TestServer, origin: string, path = T): Promise<Response> {
  return fetch(server.url + path, {
    method: "OPTIONS",
    headers: { Origin: origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type,x-api-key" },
  });
}

function list(header: string | null): string[] {
  return (header ?? "").split(",").map((item) => item.trim().toLowerCase()).filter(Boolean);
}

describe("Authorization: Bearer", () => {
  let server: TestServer;
  before(async () => (server = await startTestServer()));
  after(() => server.close());

  test("a key sent as Authorization: Bearer is taken as X-Api-Key is, kind included", async () => {
    const created = await server.call("POST", T, { apiKey: null, headers: { Authorization: `Bearer ${SECRET}` }, body: { title: "by bearer" } });
    assert.equal(created.status, 201, created.text);
    assert.equal(typeof created.body.created_by_id, "string");
    const read = await server.call("GET", `${T}/${created.body.id}`, { apiKey: null, headers: { Authorization: `bearer  ${PUBLISHABLE}` } });
    assert.equal(read.status, 200, read.text);
    assert.equal(read.body.title, "by bearer");
    assert.equal("created_by_id" in read.body, false, "a publishable key never sees created_by_id");
    const restore = await server.call("PUT", `${T}/${created.body.id}/restore`, { apiKey: null, headers: { Authorization: `Bearer ${PUBLISHABLE}` } });
    assert.equal(restore.status, 403, "the publishable kind holds through Bearer too");
  });

  test("the same key in both headers is accepted; two different keys are 401 unauthorized", async () => {
    const same = await server.call("GET", T, { headers: { Authorization: `Bearer ${SECRET}` } });
    assert.equal(same.status, 200, same.text);
    const different = await server.call("GET", T, { headers: { Authorization: `Bearer ${PUBLISHABLE}` } });
    assert.equal(different.status, 401, different.text);
    assert.equal(different.body.error.code, "unauthorized");
    assert.match(different.body.error.message, /different keys/);
  });

  test("an unknown Bearer key, or another scheme alone, is 401 unauthorized saying how to send a key", async () => {
    const unknown = await server.call("GET", T, { apiKey: null, headers: { Authorization: "Bearer sk_nobody" } });
    assert.equal(unknown.status, 401);
    assert.equal(unknown.body.error.code, "unauthorized");
    const basic = await server.call("GET", T, { apiKey: null, headers: { Authorization: "Basic dXNlcjpwYXNz" } });
    assert.equal(basic.status, 401);
    assert.match(basic.body.error.message, /Authorization: Bearer/);
    const basicBeside = await server.call("GET", T, { headers: { Authorization: "Basic dXNlcjpwYXNz" } });
    assert.equal(basicBeside.status, 200, "a proxy's Basic credentials beside X-Api-Key are left alone");
  });
});

describe("CORS with the default policy (any origin)", () => {
  let server: TestServer;
  before(async () => (server = await startTestServer()));
  after(() => server.close());

  test("a preflight is answered 204 without a key, with the methods, headers and max age a browser needs", async () => {
    const answer = await preflight(server, APP);
    assert.equal(answer.status, 204);
    assert.equal(answer.headers.get("access-control-allow-origin"), "*");
    for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE"]) assert.ok(list(answer.headers.get("access-control-allow-methods")).includes(method.toLowerCase()), method);
    const allowed = list(answer.headers.get("access-control-allow-headers"));
    for (const name of ["x-api-key", "authorization", "content-type", "if-match", "if-none-match", "idempotency-key"]) assert.ok(allowed.includes(name), name);
    assert.equal(answer.headers.get("access-control-max-age"), "7200");
    assert.equal(await answer.text(), "");
  });

  test("a preflight asking for a client's own headers allows them beside tabula's (browser test: @base44/sdk's X-App-Id)", async () => {
    const answer = await fetch(server.url + T, {
      method: "OPTIONS",
      headers: { Origin: APP, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization,x-app-id,x-origin-url,x-api-key" },
    });
    assert.equal(answer.status, 204);
    const allowed = list(answer.headers.get("access-control-allow-headers"));
    for (const name of ["x-app-id", "x-origin-url", "x-api-key", "authorization", "if-match", "idempotency-key"]) assert.ok(allowed.includes(name), name);
    assert.equal(allowed.filter((name) => name === "x-api-key").length, 1, "a header tabula names is not named twice");
    const odd = await fetch(server.url + T, {
      method: "OPTIONS",
      headers: { Origin: APP, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "x-ok, bad header, x(no), ,x-also-ok" },
    });
    assert.deepEqual(list(odd.headers.get("access-control-allow-headers")).slice(-2), ["x-ok", "x-also-ok"], "only header names are echoed");
  });

  test("the request after the preflight gets Access-Control-Allow-Origin and exposes the headers a page reads", async () => {
    const created = await fetch(server.url + T, {
      method: "POST",
      headers: { Origin: APP, "X-Api-Key": PUBLISHABLE, "Content-Type": "application/json" },
      body: JSON.stringify({ title: "from a page" }),
    });
    assert.equal(created.status, 201);
    assert.equal(created.headers.get("access-control-allow-origin"), "*");
    const exposed = list(created.headers.get("access-control-expose-headers"));
    for (const name of EXPOSED) assert.ok(exposed.includes(name.toLowerCase()), name);
    const record = (await created.json()) as Record<string, unknown>;
    assert.equal(record.title, "from a page");
    assert.equal("created_by_id" in record, false);
  });

  test("refusals carry the CORS headers too, so a page can read the error", async () => {
    const refused = await fetch(server.url + T, { headers: { Origin: APP } });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get("access-control-allow-origin"), "*");
    const body = (await refused.json()) as { error: { code: string } };
    assert.equal(body.error.code, "unauthorized");
  });

  test("a request without Origin gets no CORS headers, and OPTIONS without a requested method is no preflight", async () => {
    const plain = await server.call("GET", T);
    assert.equal(plain.headers.get("access-control-allow-origin"), null);
    assert.equal(plain.headers.get("vary"), null);
    const options = await fetch(server.url + T, { method: "OPTIONS", headers: { Origin: APP, "X-Api-Key": SECRET } });
    assert.equal(options.status, 405);
  });
});

describe("CORS with a list of origins", () => {
  let server: TestServer;
  before(async () => (server = await startTestServer({ cors: `${APP}, https://app.example.com/` })));
  after(() => server.close());

  test("a listed origin is echoed with Vary: Origin; another gets no Allow-Origin", async () => {
    const listed = await preflight(server, "https://app.example.com");
    assert.equal(listed.status, 204);
    assert.equal(listed.headers.get("access-control-allow-origin"), "https://app.example.com");
    assert.match(listed.headers.get("vary") ?? "", /Origin/);
    const read = await fetch(server.url + T, { headers: { Origin: APP, "X-Api-Key": SECRET } });
    assert.equal(read.headers.get("access-control-allow-origin"), APP);
    assert.match(read.headers.get("vary") ?? "", /Origin/);
    const other = await fetch(server.url + T, { headers: { Origin: "https://evil.example", "X-Api-Key": SECRET } });
    assert.equal(other.status, 200);
    assert.equal(other.headers.get("access-control-allow-origin"), null);
    assert.match(other.headers.get("vary") ?? "", /Origin/);
  });
});

describe("CORS off", () => {
  let server: TestServer;
  before(async () => (server = await startTestServer({ cors: "off" })));
  after(() => server.close());

  test("--cors off sends no CORS headers and answers no preflight", async () => {
    const answer = await preflight(server, APP);
    assert.equal(answer.status, 401, "an OPTIONS like any request under /api/: no key, no answer");
    assert.equal(answer.headers.get("access-control-allow-origin"), null);
    const read = await fetch(server.url + T, { headers: { Origin: APP, "X-Api-Key": SECRET } });
    assert.equal(read.status, 200);
    assert.equal(read.headers.get("access-control-allow-origin"), null);
  });
});

test("a malformed cors origin stops start-up, naming the option and the origin", async () => {
  await assert.rejects(startTestServer({ cors: "https://ok.example,app.example.com" }), /: the cors option takes .*"app\.example\.com"/);
});
