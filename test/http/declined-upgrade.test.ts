// A request asking for an upgrade tabula does not make (src/http/declined-upgrade.ts) is served as
// HTTP/1.1, as RFC 9110 §7.8 allows: Upgrade: h2c, which curl --http2 sends over http://, and a
// WebSocket anywhere but the realtime socket's path. Its connection goes on as any other.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { RawConnection } from "../support/raw-connection.ts";
import { SECRET, startTestServer, type TestServer } from "../support/server.ts";

const T = "/api/entities/Task";
/** What curl --http2 adds to a request over http://. */
const H2C = "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n";

let server: TestServer;
before(async () => {
  server = await startTestServer();
  assert.equal((await server.call("POST", T, { body: { title: "first" } })).status, 201);
});
after(() => server.close());

test("GET with Upgrade: h2c is answered 200 as HTTP/1.1, and the connection serves the next requests", async () => {
  const connection = await RawConnection.open(server.url);
  connection.write(`GET ${T} HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${SECRET}\r\n${H2C}\r\n`);
  const [listed] = await connection.responses(1);
  assert.equal(listed!.status, 200, listed!.text);
  assert.deepEqual(listed!.body.map((task: { title: string }) => task.title), ["first"]);
  assert.equal(listed!.headers.upgrade, undefined, "no switch offered");
  assert.equal(listed!.headers.connection, "keep-alive");
  assert.doesNotMatch(connection.received, /101 Switching Protocols/);
  // A write with its body, upgrade asked again, then a request that closes.
  const body = JSON.stringify({ title: "over h2c" });
  connection.write(`POST ${T} HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${SECRET}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n${H2C}\r\n${body}`);
  connection.write("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  await connection.whenClosed();
  const [, created, health] = await connection.responses(3);
  assert.equal(created!.status, 201, created!.text);
  assert.equal(created!.body.title, "over h2c");
  assert.equal(health!.status, 200);
  assert.deepEqual((await server.call("GET", `${T}/${created!.body.id}`)).body.title, "over h2c");
});

test("an h2c request behind an answered one is not cut by that answer's keep-alive timeout (5 s) while it waits", async () => {
  // A long poll of 7 s, pipelined behind a GET whose answer set the connection's idle timeout. Its
  // filter matches no record: on PostgreSQL a poll from the head may still be handed this file's
  // creates, made readable once another test's transaction older than them ends (docs/postgresql.md).
  const connection = await RawConnection.open(server.url);
  const nothing = encodeURIComponent(JSON.stringify({ title: "no record is titled so" }));
  connection.write(`GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET ${T}/changes?wait=7&q=${nothing} HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${SECRET}\r\n${H2C}\r\n`);
  const [health, poll] = await connection.responses(2);
  assert.equal(health!.status, 200);
  assert.equal(poll!.status, 200, poll!.text);
  assert.deepEqual(poll!.body.changes, []);
  connection.end();
});

test("upgrades are served as HTTP/1.1 when pipelined behind other requests, in order, and a WebSocket asked for anywhere but the socket's path too", async () => {
  const cases: Array<[label: string, raw: string, statuses: number[]]> = [
    ["h2c behind a GET", `GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET ${T} HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${SECRET}\r\n${H2C}\r\n`, [200, 200]],
    ["h2c behind a write", `POST ${T} HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${SECRET}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}GET ${T} HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${SECRET}\r\n${H2C}\r\n`, [400, 200]],
    ["a WebSocket at /health", "GET /health HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", [200]],
    ["h2c without a key", `GET ${T} HTTP/1.1\r\nHost: x\r\n${H2C}\r\n`, [401]],
  ];
  for (const [label, raw, statuses] of cases) {
    const connection = await RawConnection.open(server.url);
    connection.write(raw);
    const answers = await connection.responses(statuses.length);
    assert.deepEqual(answers.map((answer) => answer.status), statuses, label);
    assert.doesNotMatch(connection.received, /101 Switching Protocols/, label);
    connection.end();
  }
});
