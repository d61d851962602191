// The webhook client's reading of answers (src/webhooks/connection.ts, docs/webhooks.md "Lag"):
// each framing a receiver may use (Content-Length, chunked, none, until close), informational
// answers, keep-alive reuse and its end, a connection let go while idle, and what is not HTTP.
// Receivers here are raw node:net servers writing exact bytes; each request is checked with the
// standardwebhooks package.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer as createTlsServer } from "node:tls";
import { after, describe, test } from "node:test";
import { Webhook } from "standardwebhooks";
import { createSender, newSecret, type Sender } from "../../src/webhooks/send.ts";

interface Request {
  readonly head: string;
  readonly body: string;
  readonly connection: number;
}

/** A receiver answering each request with `answer(n)` (the n-th request, from 0), written as given. */
async function rawReceiver(answer: (n: number, socket: Socket) => string | null) {
  const requests: Request[] = [];
  let connections = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    const connection = connections++;
    sockets.add(socket);
    let pending = "";
    socket.setEncoding("latin1");
    socket.on("data", (text: string) => {
      pending += text;
      for (;;) {
        const end = pending.indexOf("\r\n\r\n");
        if (end === -1) return;
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(pending.slice(0, end))![1]);
        if (pending.length < end + 4 + length) return;
        requests.push({ head: pending.slice(0, end), body: Buffer.from(pending.slice(end + 4, end + 4 + length), "latin1").toString("utf8"), connection });
        pending = pending.slice(end + 4 + length);
        const reply = answer(requests.length - 1, socket);
        if (reply !== null) socket.write(reply);
      }
    });
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/in?x=1`;
  // The client keeps its connections: they are cut for the server to close.
  const close = () => {
    for (const socket of sockets) socket.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { url, requests, close };
}

describe("the webhook client", () => {
  const senders: Sender[] = [];
  const sender = () => {
    const made = createSender({ allowPrivate: true }, 1000);
    senders.push(made);
    return made;
  };
  after(() => {
    for (const made of senders) made.close();
  });

  test("sends a Standard Webhooks request, as one POST with its headers, that standardwebhooks verifies", async () => {
    const receiver = await rawReceiver(() => "HTTP/1.1 204 No Content\r\n\r\n");
    const secret = newSecret();
    const body = JSON.stringify({ type: "create", data: { title: "ünïcode ✓" } });
    const attempt = await sender().send(receiver.url, secret, "evt_1", body);
    assert.deepEqual([attempt.status, attempt.error, attempt.event_id], [204, null, "evt_1"]);
    const [request] = receiver.requests;
    const lines = request!.head.split("\r\n");
    assert.equal(lines[0], "POST /in?x=1 HTTP/1.1");
    const headers = Object.fromEntries(lines.slice(1).map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]));
    assert.equal(headers.host, new URL(receiver.url).host);
    assert.equal(headers["content-type"], "application/json");
    assert.equal(request!.body, body);
    assert.deepEqual(new Webhook(secret).verify(request!.body, headers), JSON.parse(body));
    await receiver.close();
  });

  test("reads every framing of an answer and keeps the connection when it may", async () => {
    const answers = [
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n",
      "HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nbroke\r\n6;ext=1\r\nn, sad\r\n0\r\nX-Trailer: 1\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nyes\r\n0\r\n\r\n",
      "HTTP/1.1 201 Created\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
    ];
    const receiver = await rawReceiver((n) => answers[n]!);
    const send = sender();
    const results = [];
    for (let n = 0; n < answers.length; n++) results.push(await send.send(receiver.url, newSecret(), `evt_${n}`, "{}"));
    assert.deepEqual(results.map((attempt) => [attempt.status, attempt.error]), [[200, null], [202, null], [500, "HTTP 500: broken, sad"], [200, null], [201, null], [200, null]]);
    // One connection until the receiver said close.
    assert.deepEqual(receiver.requests.map((request) => request.connection), [0, 0, 0, 0, 0, 1]);
    await receiver.close();
  });

  test("a body that ends with the connection is read to its end, and the connection not kept", async () => {
    const receiver = await rawReceiver((n, socket) => {
      if (n === 0) {
        socket.end("HTTP/1.0 503 Service Unavailable\r\n\r\nback soon");
        return null;
      }
      return "HTTP/1.1 204 No Content\r\n\r\n";
    });
    const send = sender();
    const first = await send.send(receiver.url, newSecret(), "evt_1", "{}");
    assert.deepEqual([first.status, first.error], [503, "HTTP 503: back soon"]);
    const second = await send.send(receiver.url, newSecret(), "evt_2", "{}");
    assert.deepEqual([second.status, second.error], [204, null]);
    assert.deepEqual(receiver.requests.map((request) => request.connection), [0, 1]);
    await receiver.close();
  });

  test("a kept connection closed without a byte of answer (let go of while idle): the request goes again, once, on a new one", async () => {
    const receiver = await rawReceiver((n, socket) => {
      // The second request, on the kept connection, meets it closing, as a receiver's idle timeout may.
      if (n === 1) {
        socket.destroy();
        return null;
      }
      return "HTTP/1.1 204 No Content\r\n\r\n";
    });
    const send = sender();
    assert.equal((await send.send(receiver.url, newSecret(), "evt_1", "{}")).error, null);
    const again = await send.send(receiver.url, newSecret(), "evt_2", "{}");
    assert.deepEqual([again.status, again.error], [204, null]);
    assert.deepEqual(receiver.requests.map((request) => [request.connection, /webhook-id: (\S+)/.exec(request.head)![1]]), [[0, "evt_1"], [0, "evt_2"], [1, "evt_2"]]);
    await receiver.close();
  });

  test("what is not HTTP, or a receiver that closes without answering, is a failed attempt", async () => {
    const receiver = await rawReceiver((n, socket) => {
      if (n === 0) return "SSH-2.0-OpenSSH\r\n\r\n";
      socket.destroy();
      return null;
    });
    const send = sender();
    const garbage = await send.send(receiver.url, newSecret(), "evt_1", "{}");
    assert.equal(garbage.status, null);
    assert.match(garbage.error!, /^EPROTO: the answer is not HTTP\/1\.x/);
    const closed = await send.send(receiver.url, newSecret(), "evt_2", "{}");
    assert.equal(closed.status, null);
    assert.match(closed.error!, /^ECONNRESET: /);
    await receiver.close();
  });

  test("https: the receiver's certificate is checked (a self-signed one is refused before anything is sent)", async (t) => {
    const folder = mkdtempSync(join(tmpdir(), "tabula-webhook-tls-"));
    try {
      execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", join(folder, "key.pem"), "-out", join(folder, "cert.pem"), "-days", "1", "-subj", "/CN=127.0.0.1"], { stdio: "ignore" });
    } catch {
      rmSync(folder, { recursive: true, force: true });
      return t.skip("openssl is not installed");
    }
    let requests = 0;
    const server = createTlsServer({ key: readFileSync(join(folder, "key.pem")), cert: readFileSync(join(folder, "cert.pem")) }, (socket) => {
      socket.on("data", () => requests++);
      socket.on("error", () => {});
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const attempt = await sender().send(`https://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, newSecret(), "evt_1", "{}");
    assert.equal(attempt.status, null);
    assert.match(attempt.error!, /^DEPTH_ZERO_SELF_SIGNED_CERT: /);
    assert.equal(requests, 0);
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(folder, { recursive: true, force: true });
  });
});
