// What one client may hold of the listener (src/http/connection-limits.ts, docs/operating.md): a
// body that stops arriving and a head that trickles are answered 408 and closed (and logged so), a
// body that keeps arriving is not cut however slowly it comes, and over maxConnections a new
// connection is closed while those open are served. The timeouts are shortened to a second; every bound asserted on
// time is a lower one (a timer never fires early), or a wide upper one.

import assert from "node:assert/strict";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { test } from "node:test";
import { RawConnection } from "../support/raw-connection.ts";
import { SECRET, startTestServer, type TestServer } from "../support/server.ts";
import { SseClient } from "../support/sse.ts";
import { RawSocket } from "../support/socket-io.ts";

const T = "/api/entities/Task";
/** The shortened timeouts: the tests' pauses are a tenth of them. */
const TIMEOUT_MS = 1_000;
const PAUSE_MS = 100;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A POST of `body` to Task, its head alone. */
const postHead = (body: string) => `POST ${T} HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${SECRET}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;

async function withServer(options: Parameters<typeof startTestServer>[0], run: (server: TestServer) => Promise<void>): Promise<void> {
  const server = await startTestServer(options);
  try {
    await run(server);
  } finally {
    await server.close();
  }
}

test("a body of which no byte arrives for bodyTimeoutMs is answered 408 request_timeout, its connection closed, and its write never made", () =>
  withServer({ bodyTimeoutMs: TIMEOUT_MS }, async (server) => {
    // 100,000 bytes announced, 10 sent.
    const body = JSON.stringify({ title: "silent" }).padEnd(100_000, " ");
    const connection = await RawConnection.open(server.url);
    const sentAt = performance.now();
    connection.write(postHead(body) + body.slice(0, 10));
    const [answer] = await connection.responses(1);
    const waited = performance.now() - sentAt;
    assert.equal(answer!.status, 408, answer!.text);
    assert.equal(answer!.body.error.code, "request_timeout");
    assert.match(answer!.body.error.message, /No byte of the body arrived for 1 s/);
    assert.deepEqual(answer!.body.error.details, { timeoutMs: TIMEOUT_MS });
    assert.equal(answer!.headers.connection, "close");
    assert.ok(waited >= TIMEOUT_MS * 0.9, `answered after ${waited.toFixed(0)} ms, not before the timeout`);
    // The rest of the body, sent after the answer, is read and dropped: it never completes the
    // refused write, nor is anything after it taken for a request.
    connection.end(body.slice(10) + `GET /health HTTP/1.1\r\nHost: x\r\n\r\n`);
    await connection.whenClosed();
    assert.equal((await connection.responses(1)).length, 1);
    assert.doesNotMatch(connection.received, /HTTP\/1\.1 200/, "the pipelined GET is not answered");
    await sleep(PAUSE_MS);
    assert.deepEqual((await server.call("GET", T)).body, [], "the refused write is not stored");
  }));

test("a body cut by bodyTimeoutMs is logged and counted as the 408 it was answered, not as a client that hung up (499)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tabula-body-timeout-log-"));
  const logFd = openSync(join(dir, "access.log"), "w");
  try {
    let metrics = "";
    await withServer({ bodyTimeoutMs: TIMEOUT_MS, log: "json", logFd }, async (server) => {
      const body = JSON.stringify({ title: "silent" }).padEnd(1_000, " ");
      const connection = await RawConnection.open(server.url);
      connection.write(postHead(body) + body.slice(0, 10));
      const [answer] = await connection.responses(1);
      assert.equal(answer!.status, 408, answer!.text);
      connection.end();
      await connection.whenClosed();
      // The handler hears of the closed connection a moment after the answer: its line follows.
      for (let tries = 0; !/tabula_http_requests_total\{[^}]*method="POST"/.test(metrics); tries++) {
        assert.ok(tries < 300, `no POST counted:\n${metrics}`);
        await sleep(10);
        metrics = (await server.call("GET", "/metrics")).text;
      }
    });
    // Closing the server has written every line.
    const lines = readFileSync(join(dir, "access.log"), "utf8").trim().split("\n").map((line) => JSON.parse(line) as { method: string; path: string; status: number });
    assert.deepEqual(lines.filter((line) => line.method === "POST").map((line) => [line.path, line.status]), [[T, 408]]);
    const posts = metrics.split("\n").filter((line) => line.startsWith("tabula_http_requests_total{") && line.includes('method="POST"'));
    assert.equal(posts.length, 1, posts.join("\n"));
    assert.match(posts[0]!, /status="408"\} 1$/);
  } finally {
    closeSync(logFd);
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a body that keeps arriving, a byte at a time, is not cut however long its whole takes", () =>
  withServer({ bodyTimeoutMs: TIMEOUT_MS }, async (server) => {
    // 30 bytes, one every PAUSE_MS: three times the timeout in all.
    const body = JSON.stringify({ title: "slow" }).padEnd(30, " ");
    const connection = await RawConnection.open(server.url);
    connection.write(postHead(body));
    for (const byte of body) {
      await sleep(PAUSE_MS);
      connection.write(byte);
    }
    const [answer] = await connection.responses(1);
    assert.equal(answer!.status, 201, answer!.text);
    assert.equal(answer!.body.title, "slow");
    assert.equal(answer!.headers.connection, "keep-alive", "the connection goes on");
    connection.end();
    assert.deepEqual((await server.call("GET", T)).body.map((task: { title: string }) => task.title), ["slow"]);
  }));

test("a body the server is not reading yet (waiting its turn for the bodies' budget) is not cut, however long it waits", () =>
  withServer({ bodyTimeoutMs: TIMEOUT_MS }, async (server) => {
    // Chunked, each holds --max-body (10 MiB) of the 16 MiB budget: the second waits for the first,
    // its body unread once node:http's buffer for it is full.
    const chunked = `POST ${T} HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${SECRET}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
    const first = await RawConnection.open(server.url);
    first.write(chunked + chunk(`{"title":"first"`));
    await sleep(PAUSE_MS * 2);
    const second = await RawConnection.open(server.url);
    second.write(chunked + chunk(`{"title":"second"${" ".repeat(100_000)}}`));
    // The first keeps arriving for three times the timeout; meanwhile the second sends nothing more.
    for (let i = 0; i < (3 * TIMEOUT_MS) / PAUSE_MS; i++) {
      await sleep(PAUSE_MS);
      first.write(chunk(" "));
    }
    first.write(chunk("}") + chunk(""));
    const [firstAnswer] = await first.responses(1);
    assert.equal(firstAnswer!.status, 201, firstAnswer!.text);
    assert.equal(second.received, "", "the second is not answered while it waits");
    second.write(chunk(""));
    const [secondAnswer] = await second.responses(1);
    assert.equal(secondAnswer!.status, 201, secondAnswer!.text);
    assert.equal(secondAnswer!.body.title, "second");
    first.end();
    second.end();
  }));

test("a heavy write whose client does not read its answer holds the bodies' budget a second at most", () =>
  withServer({ maxBodyBytes: 64 * 1024 * 1024 }, async (server) => {
    // 24 MiB of records, over the whole 16 MiB budget: admitted alone. Its answer (as long) cannot
    // fit in the sockets' buffers, so while its client reads nothing it is never sent whole.
    const records = JSON.stringify(Array.from({ length: 2400 }, (_, i) => ({ title: `${i} ${"x".repeat(10_000)}` })));
    const unread = await RawConnection.open(server.url);
    unread.socket.pause();
    unread.write(`POST ${T}/bulk HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${SECRET}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(records)}\r\n\r\n${records}`);
    // Answered once the first is written (the 2,400 records are counted) and its share given back.
    while ((await server.call("GET", `${T}/count`)).body.count !== 2400) await sleep(PAUSE_MS);
    const heavy = await Promise.race([
      server.call("POST", `${T}/bulk`, { body: [{ title: `heavy ${"y".repeat(100_000)}` }] }),
      // Unref'd: once the write is answered, this timer must not keep the test's process alive.
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error("the next heavy write waited 20 s for an answer nobody reads")), 20 * TIMEOUT_MS).unref()),
    ]);
    assert.equal(heavy.status, 201, heavy.text);
    assert.equal((await server.call("GET", `${T}/count`)).body.count, 2401);
    unread.socket.destroy();
  }));

test("a head that trickles in is answered 408 request_timeout after headersTimeoutMs and closed, and so is a connection that sends nothing", () =>
  withServer({ headersTimeoutMs: TIMEOUT_MS }, async (server) => {
    const idle = await RawConnection.open(server.url);
    const trickled = await RawConnection.open(server.url);
    const sentAt = performance.now();
    trickled.write("GET /health HTTP/1.1\r\nHost: x\r\n");
    const trickle = setInterval(() => trickled.write("X-A: a\r\n"), PAUSE_MS);
    try {
      const [answer] = await trickled.responses(1);
      const waited = performance.now() - sentAt;
      assert.equal(answer!.status, 408, answer!.text);
      assert.equal(answer!.body.error.code, "request_timeout");
      assert.equal(answer!.headers.connection, "close");
      assert.ok(waited >= TIMEOUT_MS * 0.9, `answered after ${waited.toFixed(0)} ms, not before the timeout`);
    } finally {
      clearInterval(trickle);
    }
    trickled.end();
    await trickled.whenClosed();
    await idle.whenClosed();
    // A head sent whole is not cut, however long its answer takes to be asked for.
    assert.equal((await server.call("GET", "/health")).status, 200);
  }));

test("over maxConnections a new connection is closed at once, while those open (a stream, a realtime socket, a keep-alive connection) are served", () => {
  const warnings: string[] = [];
  return withServer({ maxConnections: 3, appId: "app1", warn: (message) => warnings.push(message) }, async (server) => {
    const stream = new SseClient(`${server.url}${T}/changes`, { "X-Api-Key": SECRET });
    await stream.opened;
    assert.equal(stream.status, 200);
    const socket = await RawSocket.connect(server.url, SECRET);
    const keptAlive = await RawConnection.open(server.url);
    keptAlive.write("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    assert.equal((await keptAlive.responses(1))[0]!.status, 200);
    try {
      // The fourth: closed before a byte of it is read, so its request gets no answer.
      const fourth = await RawConnection.open(server.url);
      fourth.write("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
      // Meanwhile the three are served.
      keptAlive.write(postHead(JSON.stringify({ title: "while full" })) + JSON.stringify({ title: "while full" }));
      await fourth.whenClosed();
      assert.equal(fourth.received, "", "no answer on the refused connection");
      const [, created] = await keptAlive.responses(2);
      assert.equal(created!.status, 201, created!.text);
      assert.deepEqual((await stream.waitFor(1)).map((event) => event.json.data.title), ["while full"]);
      assert.deepEqual(await socket.join("entities:app1:Task"), { ok: true });
      assert.equal(warnings.length, 1);
      assert.match(warnings[0]!, /^3 connections are open, as many as the maxConnections option allows: new ones are closed/);
      // One closed, a new connection is served (once the server has seen the close).
      keptAlive.end();
      await keptAlive.whenClosed();
      const deadline = Date.now() + 30_000;
      for (;;) {
        const next = await RawConnection.open(server.url);
        next.write("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        await next.whenClosed();
        if (next.received.startsWith("HTTP/1.1 200 ")) break;
        assert.ok(Date.now() < deadline, "a connection is served again once one has closed");
        await sleep(PAUSE_MS);
      }
    } finally {
      stream.close();
      socket.ws.terminate();
    }
  });
});

/** An address of this machine that is not loopback, as another machine's connections come from; undefined in a sandbox with none. */
const outsideAddress = Object.values(networkInterfaces()).flat().find((address) => address?.family === "IPv4" && !address.internal)?.address;

test("one client address holds at most maxConnectionsPerClient: its next is closed at once; this machine's own (loopback) and those behind trustProxy are not counted", { skip: outsideAddress === undefined && "no non-loopback IPv4 address on this machine" }, async () => {
  const warnings: string[] = [];
  await withServer({ maxConnectionsPerClient: 2, warn: (message) => warnings.push(message) }, async (server) => {
    const held = [await RawConnection.open(server.url, outsideAddress), await RawConnection.open(server.url, outsideAddress)];
    for (const connection of held) connection.write("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    for (const connection of held) assert.equal((await connection.responses(1))[0]!.status, 200);
    const third = await RawConnection.open(server.url, outsideAddress);
    third.write("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    await third.whenClosed();
    assert.equal(third.received, "", "no answer on the refused connection");
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0], `${outsideAddress} holds 2 connections, as many as the maxConnectionsPerClient option allows one client: its new ones are closed as soon as they are accepted.`);
    // This machine's own connections (a proxy beside it, a test suite) are not counted.
    const local: RawConnection[] = [];
    for (let i = 0; i < 3; i++) {
      const connection = await RawConnection.open(server.url);
      connection.write("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
      assert.equal((await connection.responses(1))[0]!.status, 200, "held open, and the next one still served");
      local.push(connection);
    }
    for (const connection of local) connection.end();
    // One of the two closed, the client is served again.
    held[0]!.end();
    await held[0]!.whenClosed();
    const deadline = Date.now() + 30_000;
    for (;;) {
      const next = await RawConnection.open(server.url, outsideAddress);
      next.write("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
      await next.whenClosed();
      if (next.received.startsWith("HTTP/1.1 200 ")) break;
      assert.ok(Date.now() < deadline, "the client is served again once one of its connections has closed");
      await sleep(PAUSE_MS);
    }
    held[1]!.end();
  });
  // Behind a proxy every connection is the proxy's: the proxy limits its clients.
  await withServer({ maxConnectionsPerClient: 2, trustProxy: true }, async (server) => {
    const connections = await Promise.all([0, 1, 2].map(() => RawConnection.open(server.url, outsideAddress)));
    for (const connection of connections) connection.write("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    for (const connection of connections) assert.equal((await connection.responses(1))[0]!.status, 200);
  });
});

test("maxConnections below 1 is refused before listening", async () => {
  await assert.rejects(startTestServer({ maxConnections: 0 }), /The most connections \(the maxConnections option\) must be a whole number, at least 1 \(got 0\)/);
});
