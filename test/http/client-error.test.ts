// Requests node:http's parser refuses, and CONNECT (issue 16): each is answered with the JSON error
// envelope and Connection: close, after every answer owed to the requests before it on the same
// connection (pipelining), and then the connection closes.

import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "node:http";
import { after, before, test } from "node:test";
import { exchangeRaw, type RawResponse } from "../support/raw-http.ts";
import { SECRET, startTestServer, type TestServer } from "../support/server.ts";

const T = "/api/entities/Task";
let server: TestServer;
before(async () => (server = await startTestServer()));
after(() => server.close());

const LONG = "a".repeat(17 * 1024);
const post = (title: string) => {
  const body = JSON.stringify({ title });
  return `POST ${T} HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${SECRET}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
};

function assertJsonError(response: RawResponse | undefined, status: number, code: string, label: string): void {
  assert.ok(response, `${label}: an answer`);
  assert.equal(response.status, status, `${label}: ${response.text}`);
  assert.match(response.headers["content-type"] ?? "", /^application\/json/, label);
  assert.equal(response.body?.error?.code, code, `${label}: ${response.text}`);
  assert.equal(typeof response.body.error.message, "string", label);
}

test("requests the HTTP parser refuses are answered with the JSON error envelope and Connection: close", async () => {
  const cases: Array<[label: string, raw: string, status: number, code: string]> = [
    ["an unknown method", "FOO / HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid_request"],
    ["a lower-case method", `get ${T} HTTP/1.1\r\nHost: x\r\n\r\n`, 400, "invalid_request"],
    ["bad chunked encoding", `POST ${T} HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${SECRET}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`, 400, "invalid_request"],
    ["a Content-Length that is no number", `POST ${T} HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n`, 400, "invalid_request"],
    ["two Content-Lengths", `POST ${T} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}`, 400, "invalid_request"],
    ["Content-Length with Transfer-Encoding", `POST ${T} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`, 400, "invalid_request"],
    ["bare LF line ends", "GET /health HTTP/1.1\nHost: x\n\n", 400, "invalid_request"],
    ["a NUL in a header", "GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n", 400, "invalid_request"],
    ["no Host", "GET /health HTTP/1.1\r\n\r\n", 400, "invalid_request"],
    ["Expect: foo", "GET /health HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\n", 417, "expectation_failed"],
    ["a header over 16 KB", `GET /health HTTP/1.1\r\nHost: x\r\nX-A: ${LONG}\r\n\r\n`, 431, "headers_too_large"],
    ["a URL over 16 KB", `GET /health?${LONG} HTTP/1.1\r\nHost: x\r\n\r\n`, 431, "headers_too_large"],
  ];
  for (const [label, raw, status, code] of cases) {
    const { responses, rest } = await exchangeRaw(server.url, raw);
    assert.equal(responses.length, 1, `${label}: one answer`);
    assertJsonError(responses[0], status, code, label);
    assert.equal(responses[0]!.headers.connection, "close", label);
    assert.equal(rest, "", `${label}: nothing after the answer`);
  }
  assert.deepEqual((await server.call("GET", T)).body, [], "none of them stored anything");
});

// Issue 39 item 6: the refusal of a HEAD carried its JSON body, which node's client, expecting
// none, read as a broken next answer (HPE_CLOSED_CONNECTION).
test("a HEAD the parser refuses is answered 400 with the headers alone: no body, and node's client reads it", async () => {
  const cases: Array<[label: string, raw: string]> = [
    ["a bad request target", "HEAD 127.0.0.1:80 HTTP/1.1\r\nHost: x\r\n\r\n"],
    ["a NUL in a header", "HEAD /health HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n"],
    ["after a pipelined GET", "GET /health HTTP/1.1\r\nHost: x\r\n\r\nHEAD 127.0.0.1:80 HTTP/1.1\r\nHost: x\r\n\r\n"],
  ];
  for (const [label, raw] of cases) {
    // parseResponses reads Content-Length bytes of body, which a HEAD's answer does not have: the
    // refusal is left in `rest`, whole, after the GET's answer when there is one.
    const { responses, rest } = await exchangeRaw(server.url, raw);
    assert.deepEqual(responses.map((response) => response.status), label.includes("GET") ? [200] : [], label);
    const [head, body] = rest.split("\r\n\r\n");
    assert.match(head!, /^HTTP\/1\.1 400 /, label);
    assert.match(head!, /\r\nConnection: close(\r\n|$)/i, label);
    assert.match(head!, /\r\nContent-Type: application\/json/i, label);
    // The head of a HEAD's answer is the GET's: its Content-Length says what the body would hold.
    assert.ok(Number(/\r\nContent-Length: (\d+)/i.exec(head!)?.[1]) > 0, `${label}: ${head}`);
    assert.equal(body, "", `${label}: no body after the head`);
  }
  const { port } = new URL(server.url);
  const answer = await new Promise<string>((resolve) => {
    const req = request({ host: "127.0.0.1", port, method: "HEAD", path: "127.0.0.1:80" }, (res) => {
      res.resume();
      res.once("end", () => resolve(`status ${res.statusCode}`));
    });
    req.once("error", (error: NodeJS.ErrnoException) => resolve(`error ${error.code ?? error.message}`));
    req.end();
  });
  assert.equal(answer, "status 400");
  // And a GET's refusal keeps its body.
  const { responses } = await exchangeRaw(server.url, "GET 127.0.0.1:80 HTTP/1.1\r\nHost: x\r\n\r\n");
  assertJsonError(responses[0], 400, "invalid_request", "GET");
});

test("CONNECT is answered 405 method_not_allowed with Allow, in JSON", async () => {
  const { responses } = await exchangeRaw(server.url, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
  assert.equal(responses.length, 1);
  assertJsonError(responses[0], 405, "method_not_allowed", "CONNECT");
  assert.match(responses[0]!.headers.allow ?? "", /GET/);
  assert.equal(responses[0]!.headers.connection, "close");
});

test("pipelined writes followed by a request the parser refuses: each write gets its own answer first, then the refusal", async () => {
  const cases: Array<[label: string, bad: string]> = [
    ["an unknown method", "FOO / HTTP/1.1\r\nHost: x\r\n\r\n"],
    ["a bad chunk in the next write's body", `POST ${T} HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${SECRET}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n`],
    ["a header over 16 KB", `GET /health HTTP/1.1\r\nHost: x\r\nX-A: ${LONG}\r\n\r\n`],
  ];
  for (const [label, bad] of cases) {
    const titles = [`${label} 1`, `${label} 2`];
    const { responses, rest } = await exchangeRaw(server.url, titles.map(post).join("") + bad);
    assert.deepEqual(responses.map((response) => response.status), [201, 201, label.includes("16 KB") ? 431 : 400], label);
    assert.deepEqual(responses.slice(0, 2).map((response) => response.body.title), titles, `${label}: the writes' own answers, in order`);
    assertJsonError(responses[2], responses[2]!.status, responses[2]!.status === 431 ? "headers_too_large" : "invalid_request", label);
    assert.equal(rest, "", label);
    for (const response of responses.slice(0, 2)) {
      assert.equal((await server.call("GET", `${T}/${response.body.id}`)).status, 200, `${label}: the answered write is stored`);
    }
  }
});

test("pipelined writes on a data folder, then a request the parser refuses: the refusal still follows the writes' answers (issue 18)", async () => {
  // Writes wait for their fsync together, so the second answer is ready before its turn; written
  // out the moment the first lets go of the socket, it held the socket a tick after its last byte,
  // and the refusal was taken for its answer and dropped: the client got [201, 201] and a close.
  const dir = await mkdtemp(join(tmpdir(), "tabula-client-error-"));
  const onDisk = await startTestServer({ memory: false, data: dir });
  try {
    for (const count of [2, 3, 8]) {
      const titles = Array.from({ length: count }, (_, i) => `on disk ${count}.${i}`);
      const { responses, rest } = await exchangeRaw(onDisk.url, titles.map(post).join("") + "FOO / HTTP/1.1\r\nHost: x\r\n\r\n");
      assert.deepEqual(responses.map((response) => response.status), [...titles.map(() => 201), 400], `${count} writes`);
      assertJsonError(responses[count], 400, "invalid_request", `${count} writes`);
      assert.equal(rest, "");
    }
  } finally {
    await onDisk.close();
    await rm(dir, { recursive: true, force: true });
  }
});
