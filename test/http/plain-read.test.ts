// A plain read by id whose view is cached is answered in one step (http/plain-read.ts), past the
// general request path. It must answer byte for byte what the general path answers, and every
// request it does not recognise as plain must still get the general path's answer: 304, CORS
// headers, 401, 403, 429, a named route's answer.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { exchangeRaw, type RawResponse } from "../support/raw-http.ts";
import { PUBLISHABLE, SECRET, startTestServer, TASK, type TestServer } from "../support/server.ts";

const T = "/api/entities/Task";

/** GETs of `path` on one connection with exactly these headers (wrk's shape: Host and the key). */
async function rawReads(server: TestServer, path: string, headers: string[], times: number): Promise<RawResponse[]> {
  const host = new URL(server.url).host;
  const request = (last: boolean) => [`GET ${path} HTTP/1.1`, `Host: ${host}`, ...headers, ...(last ? ["Connection: close"] : []), "", ""].join("\r\n");
  const bytes = Array.from({ length: times }, (_, i) => request(i === times - 1)).join("");
  const { responses, rest } = await exchangeRaw(server.url, bytes);
  assert.equal(rest, "");
  assert.equal(responses.length, times);
  return responses;
}

/** An answer without the headers that differ from one answer to the next. */
function comparable(response: RawResponse) {
  const { date, connection, "keep-alive": keepAlive, ...headers } = response.headers;
  return { status: response.status, headers, text: response.text };
}

describe("plain reads by id on the default server", () => {
  let server: TestServer;
  let id: string;
  before(async () => {
    server = await startTestServer({ schema: { Task: TASK, Locked: { ...TASK, name: "Locked", access: { publishable: [] } } } });
    const created = await server.call("POST", T, { body: { title: "ΟΔΟΣ, café", priority: 7, tags: ["ünïcode"] } });
    assert.equal(created.status, 201, created.text);
    id = created.body.id;
  });
  after(() => server.close());

  test("a cached read answers byte for byte what the first, uncached read answered, for each kind of key", async () => {
    for (const key of [SECRET, PUBLISHABLE]) {
      const [first, ...cached] = await rawReads(server, `${T}/${id}`, [`X-Api-Key: ${key}`], 4);
      assert.equal(first!.status, 200, first!.text);
      assert.equal(first!.body.title, "ΟΔΟΣ, café");
      assert.equal(first!.headers["content-length"], String(Buffer.byteLength(first!.text)));
      assert.equal("created_by_id" in first!.body, key === SECRET, "each kind of key sees its own view");
      for (const answer of cached) assert.deepEqual(comparable(answer), comparable(first!));
    }
  });

  test("headers a plain read does not carry still get the general path's answer on a cached record", async () => {
    const warm = await rawReads(server, `${T}/${id}`, [`X-Api-Key: ${SECRET}`], 2);
    const etag = warm[0]!.headers.etag!;
    const record = warm[0]!.text;

    const notModified = await server.call("GET", `${T}/${id}`, { headers: { "If-None-Match": etag } });
    assert.equal(notModified.status, 304);
    assert.equal(notModified.headers.get("etag"), etag);

    const fromPage = await server.call("GET", `${T}/${id}`, { headers: { Origin: "https://app.example" } });
    assert.equal(fromPage.status, 200);
    assert.equal(fromPage.headers.get("access-control-allow-origin"), "*");
    assert.match(fromPage.headers.get("access-control-expose-headers") ?? "", /ETag/i);

    const bearer = await server.call("GET", `${T}/${id}`, { apiKey: null, headers: { Authorization: `Bearer ${SECRET}` } });
    assert.equal(bearer.status, 200);
    assert.equal(bearer.text, record);
    const clash = await server.call("GET", `${T}/${id}`, { headers: { Authorization: `Bearer ${PUBLISHABLE}` } });
    assert.equal(clash.status, 401, "X-Api-Key and a bearer token naming different keys");

    const [twice] = await rawReads(server, `${T}/${id}`, [`X-Api-Key: ${SECRET}`, `X-Api-Key: ${SECRET}`], 1);
    assert.equal(twice!.status, 401, "two X-Api-Key headers are one joined value, which names no key");
    const [padded] = await rawReads(server, `${T}/${id}`, [`X-Api-Key:   ${SECRET}  `], 1);
    assert.equal(padded!.text, record, "a key is trimmed");
    const [wrong] = await rawReads(server, `${T}/${id}`, ["X-Api-Key: sk_not_a_key"], 1);
    assert.equal(wrong!.status, 401);
    assert.equal(wrong!.body.error.code, "unauthorized");
    const [none] = await rawReads(server, `${T}/${id}`, [], 1);
    assert.equal(none!.status, 401);

    const head = await server.call("HEAD", `${T}/${id}`);
    assert.equal(head.status, 200);
    assert.equal(head.text, "");
    assert.equal(head.headers.get("etag"), etag);
    const encoded = await server.call("GET", `${T}/${id.replace(/^./, (c) => `%${c.charCodeAt(0).toString(16)}`)}`);
    assert.equal(encoded.text, record, "a percent-encoded id is decoded by the router");
    const unknown = await server.call("GET", `/api/entities/Nothing/${id}`);
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.code, "entity_not_found");
  });

  test("a cached read that carries a body is answered, and the next request on its connection too", async () => {
    const [record] = await rawReads(server, `${T}/${id}`, [`X-Api-Key: ${SECRET}`], 1);
    const host = new URL(server.url).host;
    const withBody = [`GET ${T}/${id} HTTP/1.1`, `Host: ${host}`, `X-Api-Key: ${SECRET}`, "Content-Length: 5", "", "hello"].join("\r\n");
    const next = [`GET ${T}/${id} HTTP/1.1`, `Host: ${host}`, `X-Api-Key: ${SECRET}`, "Connection: close", "", ""].join("\r\n");
    const { responses, rest } = await exchangeRaw(server.url, withBody + next);
    assert.equal(rest, "");
    assert.deepEqual(
      responses.map((answer) => [answer.status, answer.text]),
      [
        [200, record!.text],
        [200, record!.text],
      ],
      "the body is read past, not taken for the next request",
    );
  });

  test("a publishable key that may not read an entity is refused a record a secret key has cached", async () => {
    const created = await server.call("POST", "/api/entities/Locked", { body: { title: "locked" } });
    assert.equal(created.status, 201, created.text);
    for (let i = 0; i < 2; i++) assert.equal((await server.call("GET", `/api/entities/Locked/${created.body.id}`)).status, 200);
    const [refused] = await rawReads(server, `/api/entities/Locked/${created.body.id}`, [`X-Api-Key: ${PUBLISHABLE}`], 1);
    assert.equal(refused!.status, 403);
    assert.equal(refused!.body.error.code, "forbidden");
  });

  test("a record imported with the name of a route is not read in its place", async () => {
    const imported = await server.call("POST", `${T}/import`, { body: [{ id: "count", title: "named count", created_date: "2026-01-01T00:00:00.000Z" }] });
    assert.equal(imported.status, 201, imported.text);
    for (const answer of await rawReads(server, `${T}/count`, [`X-Api-Key: ${SECRET}`], 2)) {
      assert.equal(answer.status, 200);
      assert.equal(typeof answer.body.count, "number", answer.text);
    }
  });
});

describe("plain reads by id on servers configured otherwise", () => {
  test("with a list of origins, a cached read still says Vary: Origin", async () => {
    const server = await startTestServer({ cors: "https://app.example" });
    try {
      const created = await server.call("POST", T, { body: { title: "varied" } });
      for (const answer of await rawReads(server, `${T}/${created.body.id}`, [`X-Api-Key: ${SECRET}`], 3)) {
        assert.equal(answer.status, 200);
        assert.equal(answer.headers.vary, "Origin");
      }
    } finally {
      await server.close();
    }
  });

  test("with a rate limit, cached reads by a publishable key are limited too", async () => {
    const server = await startTestServer({ rateLimit: 1 });
    try {
      const created = await server.call("POST", T, { body: { title: "limited" } });
      const statuses = (await rawReads(server, `${T}/${created.body.id}`, [`X-Api-Key: ${PUBLISHABLE}`], 6)).map((answer) => answer.status);
      assert.equal(statuses[0], 200);
      assert.ok(statuses.includes(429), `six reads at once under a limit of 1 a second: ${statuses.join(", ")}`);
      const secret = await rawReads(server, `${T}/${created.body.id}`, [`X-Api-Key: ${SECRET}`], 6);
      assert.deepEqual(secret.map((answer) => answer.status), [200, 200, 200, 200, 200, 200], "secret keys are never limited");
    } finally {
      await server.close();
    }
  });
});
