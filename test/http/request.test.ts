// Request bodies at the edge (issue 16): a client that hangs up, bytes that are not UTF-8, and
// bodies over --max-body, which are answered 413 while the client is still sending.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { once } from "node:events";
import { request } from "node:http";
import { connect } from "node:net";
import { test } from "node:test";
import { promisify } from "node:util";
import { SECRET, startTestServer } from "../support/server.ts";

const T = "/api/entities/Task";

/** Everything written to stderr while `run` runs (console.error included). */
async function captureStderr(run: () => Promise<void>): Promise<string> {
  const printed: string[] = [];
  const write = process.stderr.write;
  process.stderr.write = ((chunk: string | Uint8Array) => {
    printed.push(String(chunk));
    return true;
  }) as typeof process.stderr.write;
  try {
    await run();
  } finally {
    process.stderr.write = write;
  }
  return printed.join("");
}

test("a client that hangs up in the middle of its body is not a server error: nothing is printed", async () => {
  const server = await startTestServer();
  const printed = await captureStderr(async () => {
    const { hostname, port } = new URL(server.url);
    const socket = connect(Number(port), hostname);
    // Expect: 100-continue makes the server say when it has taken up the request.
    socket.write(`POST ${T} HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${SECRET}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n`);
    const [interim] = (await once(socket, "data")) as [Buffer];
    assert.match(interim.toString("latin1"), /^HTTP\/1\.1 100 Continue/);
    socket.write(`{"title":"half`);
    socket.destroy();
    // close() resolves once the server has destroyed the connection; the socket's 'close' (which
    // aborts the request) follows in the same loop iteration's close phase, and the handler's
    // reaction is a few ticks and promise hops after it: all done before a second setImmediate.
    await server.close();
    for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
  });
  assert.equal(printed, "");
});

test("a body with bytes that are not UTF-8 inside a JSON string is invalid_json, naming the byte offset, and nothing is stored", async () => {
  const server = await startTestServer();
  try {
    const cases: Array<[label: string, bytes: Buffer, offset: number]> = [
      ["a lone 0xFF", Buffer.concat([Buffer.from(`{"title":"a`), Buffer.from([0xff]), Buffer.from(`b"}`)]), 11],
      ["a truncated sequence", Buffer.concat([Buffer.from(`{"title":"é`), Buffer.from([0xe2, 0x82]), Buffer.from(`"}`)]), 12],
      ["an overlong slash", Buffer.concat([Buffer.from(`{"title":"`), Buffer.from([0xc0, 0xaf]), Buffer.from(`"}`)]), 10],
      ["a UTF-16 surrogate", Buffer.concat([Buffer.from(`{"title":"`), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from(`"}`)]), 10],
    ];
    for (const [label, bytes, offset] of cases) {
      const response = await fetch(server.url + T, { method: "POST", headers: { "X-Api-Key": SECRET, "Content-Type": "application/json" }, body: bytes });
      const text = await response.text();
      assert.equal(response.status, 400, `${label}: ${text}`);
      const body = JSON.parse(text);
      assert.equal(body.error.code, "invalid_json", label);
      assert.equal(body.error.details.offset, offset, label);
      assert.ok(!text.includes("\ufffd"), `${label}: no replacement character in the answer`);
    }
    assert.deepEqual((await server.call("GET", T)).body, []);
    const valid = await server.call("POST", T, { body: { title: "é € 😀 \ufffd" } });
    assert.equal(valid.status, 201, "valid UTF-8, a written U+FFFD included, is still accepted");
    assert.equal(valid.body.title, "é € 😀 \ufffd");
  } finally {
    await server.close();
  }
});

const SIXTEEN_MIB = 16 * 1024 * 1024;

/**
 * POSTs `total` bytes in 64 KiB chunks, minding backpressure, declared by Content-Length or
 * chunked; settles once the connection has closed, with the answer and every error the client met.
 */
function streamUpload(url: string, total: number, isChunked: boolean): Promise<{ status: number; text: string; errors: string[] }> {
  return new Promise((resolve) => {
    const errors: string[] = [];
    let status = 0;
    let text = "";
    const headers: Record<string, string | number> = { "X-Api-Key": SECRET, "Content-Type": "application/json" };
    if (!isChunked) headers["Content-Length"] = total;
    const req = request(url + T, { method: "POST", headers }, (res) => {
      status = res.statusCode!;
      res.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
    });
    req.on("error", (error: NodeJS.ErrnoException) => errors.push(error.code ?? error.message));
    const closed = new Promise<void>((done) => req.once("close", done)); // events.once would reject on "error"
    void closed.then(() => resolve({ status, text, errors }));
    void (async () => {
      const chunk = Buffer.alloc(64 * 1024, " ");
      for (let sent = 0; sent < total && !req.destroyed; sent += chunk.length) {
        if (!req.write(chunk)) await Promise.race([new Promise((done) => req.once("drain", done)), closed]);
      }
      req.end();
    })();
  });
}

test("a 16 MiB upload over --max-body gets its 413 while still sending: the client sees the JSON error and no EPIPE or reset", { timeout: 60_000 }, async () => {
  const server = await startTestServer(); // --max-body at its default, 10 MiB
  try {
    for (const isChunked of [false, true]) {
      const label = isChunked ? "chunked" : "with Content-Length";
      const answer = await streamUpload(server.url, SIXTEEN_MIB, isChunked);
      assert.deepEqual(answer.errors, [], label);
      assert.equal(answer.status, 413, `${label}: ${answer.text}`);
      assert.equal(JSON.parse(answer.text).error.code, "payload_too_large", label);
    }
    assert.deepEqual((await server.call("GET", T)).body, []);
  } finally {
    await server.close();
  }
});

// Issue 39 item 4: node:http, seeing a whole answer with Connection: close while writes were still
// queued, dropped its socket, and the callbacks of those writes never ran: a client awaiting its
// upload waited forever. On a fresh server (its first request), where the race was lost every time.
test("a fresh server's first request, 16 MiB sent chunked a 1 MiB write at a time, each awaited: every write completes, then the 413 ends and the connection closes", { timeout: 60_000 }, async () => {
  const server = await startTestServer();
  try {
    const req = request(server.url + T, { method: "POST", headers: { "X-Api-Key": SECRET, "Content-Type": "application/json", "Transfer-Encoding": "chunked" } });
    const errors: string[] = [];
    req.on("error", (error: NodeJS.ErrnoException) => errors.push(error.code ?? error.message));
    const answer = new Promise<{ status: number; text: string }>((resolve) =>
      req.once("response", (res) => {
        let text = "";
        res.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
        res.once("end", () => resolve({ status: res.statusCode!, text }));
      }),
    );
    const closed = new Promise<void>((resolve) => req.once("close", resolve));
    const chunk = Buffer.alloc(1024 * 1024, " ");
    let written = 0;
    const upload = (async () => {
      for (let i = 0; i < 16; i++) {
        await new Promise<void>((resolve) => req.write(chunk, () => resolve()));
        written += chunk.length;
      }
      await new Promise<void>((resolve) => req.end(() => resolve()));
      return "sent";
    })();
    const stalled = new Promise<string>((resolve) => setTimeout(() => resolve("stalled"), 20_000).unref());
    assert.equal(await Promise.race([upload, stalled]), "sent", `the upload stalled after ${written} bytes`);
    const { status, text } = await answer;
    await closed;
    assert.equal(status, 413, text);
    assert.equal(JSON.parse(text).error.code, "payload_too_large");
    assert.deepEqual(errors, []);
    assert.deepEqual((await server.call("GET", T)).body, []);
  } finally {
    await server.close();
  }
});

test("curl, which stops sending at the answer, reads the whole 413 at once, chunked or with Content-Length", { timeout: 60_000 }, async () => {
  const server = await startTestServer();
  try {
    for (const isChunked of [false, true]) {
      const args = ["-sS", "-w", "\\n%{http_code}", "-H", `X-Api-Key: ${SECRET}`, "-H", "Content-Type: application/json", "--data-binary", "@-", server.url + T];
      if (isChunked) args.unshift("-H", "Transfer-Encoding: chunked");
      const child = execFile("curl", args, { timeout: 30_000 }, () => {});
      let stdout = "";
      child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
      child.stdin!.on("error", () => {}); // curl may stop reading its input once it has the answer
      child.stdin!.end(Buffer.alloc(SIXTEEN_MIB, " "));
      const [code] = (await once(child, "close")) as [number];
      const [body, status] = stdout.split("\n");
      assert.equal(code, 0, `curl exited ${code}: ${stdout}`);
      assert.equal(status, "413");
      assert.equal(JSON.parse(body!).error.code, "payload_too_large");
    }
  } finally {
    await server.close();
  }
});

test("Python's urllib posting 16 MiB over --max-body reads the 413 (not Broken pipe)", { timeout: 60_000 }, async () => {
  const server = await startTestServer();
  // urllib sends the whole body before it reads a byte of the answer, and asks for Connection: close.
  const script = [
    "import json, sys, urllib.request, urllib.error",
    "url, key = sys.argv[1], sys.argv[2]",
    `req = urllib.request.Request(url, data=b" " * ${SIXTEEN_MIB}, method="POST", headers={"X-Api-Key": key, "Content-Type": "application/json"})`,
    "try:",
    "    urllib.request.urlopen(req, timeout=30)",
    "    print('accepted')",
    "except urllib.error.HTTPError as e:",
    "    print(e.code, json.loads(e.read())['error']['code'])",
    "except Exception as e:",
    "    print('failed', repr(e))",
  ].join("\n");
  try {
    const { stdout } = await promisify(execFile)("python3", ["-c", script, server.url + T, SECRET], { timeout: 45_000 });
    assert.equal(stdout.trim(), "413 payload_too_large");
  } finally {
    await server.close();
  }
});
