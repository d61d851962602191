// WebSocket frames as RFC 6455 says (src/realtime/websocket.ts), seen from clients: the `ws` package,
// and raw bytes over a TCP socket for what `ws` never sends (unmasked frames, a continuation with
// nothing to continue, RSV bits, bad close codes). Then 10,000 connections opened and closed, with
// no connection, handle or memory left behind.

import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { after, before, describe, test } from "node:test";
import WebSocket from "ws";
import { SECRET, startTestServer, type TestServer } from "../support/server.ts";
import { RawSocket, SOCKET_PATH, socketUrl } from "../support/socket-io.ts";

const MIB = 1 << 20;

/** A gauge of GET /metrics. */
async function gauge(server: TestServer, name: string): Promise<number> {
  const { text } = await server.call("GET", "/metrics");
  const line = text.split("\n").find((row) => row.startsWith(`${name} `));
  assert.ok(line, `${name} in /metrics`);
  return Number(line.split(" ")[1]);
}

async function gaugeBecomes(server: TestServer, name: string, expected: number): Promise<void> {
  const deadline = Date.now() + 5_000;
  while ((await gauge(server, name)) !== expected) {
    if (Date.now() > deadline) assert.fail(`${name} is ${await gauge(server, name)}, not ${expected}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A client frame with the mask bit set (mask 0x00000000 unless given), or without it when `mask` is null. */
function clientFrame(firstByte: number, payload: Buffer, mask: Buffer | null = Buffer.from([1, 2, 3, 4])): Buffer {
  const head = payload.length < 126 ? Buffer.from([firstByte, payload.length]) : Buffer.from([firstByte, 126, payload.length >> 8, payload.length & 0xff]);
  if (mask === null) return Buffer.concat([head, payload]);
  head[1]! |= 0x80;
  const masked = Buffer.from(payload.map((byte, i) => byte ^ mask[i & 3]!));
  return Buffer.concat([head, mask, masked]);
}

/** A server frame (never masked, payload under 64 KiB): opcode and payload. */
function parseFrames(bytes: Buffer): Array<{ opcode: number; payload: Buffer }> {
  const frames = [];
  let at = 0;
  while (at + 2 <= bytes.length) {
    let length = bytes[at + 1]! & 0x7f;
    let start = at + 2;
    if (length === 126) {
      length = bytes.readUInt16BE(at + 2);
      start += 2;
    }
    if (start + length > bytes.length) break;
    frames.push({ opcode: bytes[at]! & 0x0f, payload: bytes.subarray(start, start + length) });
    at = start + length;
  }
  return frames;
}

/** A raw TCP connection through the handshake, whose received bytes are kept. */
class RawConnection {
  received = Buffer.alloc(0);
  readonly ended: Promise<void>;
  constructor(readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => (this.received = Buffer.concat([this.received, chunk])));
    this.ended = new Promise((resolve) => socket.on("close", () => resolve()));
    socket.on("error", () => {});
  }

  static async open(server: TestServer, key = "dGhlIHNhbXBsZSBub25jZQ=="): Promise<RawConnection> {
    const socket = connect(server.port, "127.0.0.1");
    const connection = new RawConnection(socket);
    socket.write(
      `GET ${SOCKET_PATH}?EIO=4&transport=websocket&token=${SECRET} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
    await connection.until((bytes) => bytes.includes("\r\n\r\n") && parseFrames(connection.frameBytes()).length > 0);
    return connection;
  }

  get head(): string {
    return this.received.subarray(0, this.received.indexOf("\r\n\r\n") + 4).toString("latin1");
  }

  frameBytes(): Buffer {
    return this.received.subarray(this.received.indexOf("\r\n\r\n") + 4);
  }

  frames(): Array<{ opcode: number; payload: Buffer }> {
    return parseFrames(this.frameBytes());
  }

  async until(isDone: (bytes: Buffer) => boolean): Promise<void> {
    const deadline = Date.now() + 5_000;
    while (!isDone(this.received)) {
      if (Date.now() > deadline) assert.fail(`not received within 5 s: ${JSON.stringify(this.received.toString("latin1"))}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Writes `bytes`, then waits for the server's close frame: its code, and whether TCP then ended. */
  async closeCodeAfter(bytes: Buffer): Promise<number> {
    this.socket.write(bytes);
    await this.until(() => this.frames().some((frame) => frame.opcode === 0x8));
    const close = this.frames().find((frame) => frame.opcode === 0x8)!;
    await this.ended;
    return close.payload.readUInt16BE(0);
  }
}

/** A `ws` client of the socket, open; the Engine.IO open packet is read. */
async function openWs(server: TestServer): Promise<RawSocket> {
  return (await RawSocket.open(server.url, { token: SECRET })).socket;
}

describe("WebSocket frames (RFC 6455)", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ appId: "app1" });
  });
  after(() => server.close());

  test("the handshake answers 101 with the Sec-WebSocket-Accept of RFC 6455's example key, then Engine.IO's open packet", async () => {
    const raw = await RawConnection.open(server);
    assert.match(raw.head, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
    assert.match(raw.head, /\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK\+xOo=\r\n/i);
    assert.doesNotMatch(raw.head, /Sec-WebSocket-Extensions/i, "no extension is agreed");
    const [open] = raw.frames();
    assert.equal(open!.opcode, 0x1);
    assert.match(open!.payload.toString(), /^0\{"sid":/);
    raw.socket.destroy();
  });

  const rawCases: Array<[string, Buffer, number]> = [
    ["an unmasked client frame is closed with 1002", clientFrame(0x81, Buffer.from("40"), null), 1002],
    ["a continuation frame with no message to continue is closed with 1002", clientFrame(0x80, Buffer.from("40")), 1002],
    ["RSV bits without an extension are closed with 1002", clientFrame(0xc1, Buffer.from("40")), 1002],
    ["an unknown opcode is closed with 1002", clientFrame(0x83, Buffer.from("40")), 1002],
    ["a fragmented ping is closed with 1002", clientFrame(0x09, Buffer.from("x")), 1002],
    ["a close frame with code 1005 (never sent) is closed with 1002", clientFrame(0x88, Buffer.from([0x03, 0xed])), 1002],
    ["a close frame whose reason is not UTF-8 is closed with 1007", clientFrame(0x88, Buffer.from([0x03, 0xe8, 0xff])), 1007],
    ["a text frame of bad UTF-8 is closed with 1007", clientFrame(0x81, Buffer.from([0x34, 0x32, 0xc3, 0x28])), 1007],
    ["a frame header announcing more than 1 MiB is closed with 1009 before its bytes come", Buffer.from([0x81, 0xff, 0, 0, 0, 0, 0, 0x20, 0, 0]), 1009],
  ];
  for (const [name, bytes, code] of rawCases) {
    test(name, async () => {
      const raw = await RawConnection.open(server);
      assert.equal(await raw.closeCodeAfter(bytes), code);
    });
  }

  test("a fragmented message, with a ping between its fragments, is read whole", async () => {
    const socket = await openWs(server);
    socket.send("40");
    assert.match(await socket.next(), /^40\{"sid"/);
    const message = `421${JSON.stringify(["join", "entities:app1:Task"])}`;
    const pong = new Promise((resolve) => socket.ws.once("pong", resolve));
    socket.ws.send(message.slice(0, 5), { fin: false });
    socket.ws.ping("between");
    socket.ws.send(message.slice(5, 12), { fin: false });
    socket.ws.send(message.slice(12), { fin: true });
    assert.equal(String(await pong), "between");
    assert.equal(await socket.next(), '431[{"ok":true}]');
    await socket.close();
  });

  test("a ping is answered with a pong carrying its payload", async () => {
    const socket = await openWs(server);
    const pong = new Promise<Buffer>((resolve) => socket.ws.once("pong", resolve));
    socket.ws.ping(Buffer.from("are you there"));
    assert.equal((await pong).toString(), "are you there");
    await socket.close();
  });

  test("a message over 1 MiB is closed with 1009, whole or in fragments", async () => {
    const whole = await openWs(server);
    whole.ws.send("4" + "x".repeat(MIB));
    assert.equal((await whole.closed).code, 1009);
    const fragmented = await openWs(server);
    fragmented.ws.send("4" + "x".repeat(MIB / 2), { fin: false });
    fragmented.ws.send("x".repeat(MIB / 2), { fin: true });
    assert.equal((await fragmented.closed).code, 1009);
    // 1 MiB exactly is taken (an Engine.IO noop here).
    const exact = await openWs(server);
    exact.ws.send("6" + "x".repeat(MIB - 1));
    exact.ws.send("3");
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(exact.ws.readyState, WebSocket.OPEN);
    await exact.close();
  });

  test("bad UTF-8 in a text message is closed with 1007", async () => {
    const socket = await openWs(server);
    socket.ws.send(Buffer.from([0x34, 0x32, 0xed, 0xa0, 0x80]), { binary: false });
    assert.equal((await socket.closed).code, 1007);
  });

  test("the closing handshake echoes the client's code", async () => {
    const socket = await openWs(server);
    socket.ws.close(4001, "done here");
    assert.equal((await socket.closed).code, 4001);
  });

  test("an abrupt close lets go of the connection and its rooms", async () => {
    const socket = await RawSocket.connect(server.url, SECRET);
    assert.deepEqual(await socket.join("entities:app1:Task"), { ok: true });
    await gaugeBecomes(server, "tabula_realtime_rooms", 1);
    socket.ws.terminate();
    await gaugeBecomes(server, "tabula_realtime_sockets", 0);
    await gaugeBecomes(server, "tabula_realtime_rooms", 0);
  });

  test("requests that are not the socket's WebSocket are answered in JSON and closed", async () => {
    const answers: Array<[string, WebSocket.ClientOptions, number, RegExp]> = [
      ["/elsewhere?EIO=4&transport=websocket", {}, 404, /not_found/],
      [`${SOCKET_PATH}?EIO=3&transport=websocket`, {}, 400, /Engine\.IO 4/],
      [`${SOCKET_PATH}?EIO=4&transport=polling`, {}, 400, /WebSocket alone/],
      [`${SOCKET_PATH}?EIO=4&transport=websocket`, { protocolVersion: 8 }, 426, /version 13/],
    ];
    for (const [path, options, status, body] of answers) {
      const ws = new WebSocket(`${server.url.replace("http", "ws")}${path}`, options);
      const refused = await new Promise<{ status: number; text: string }>((resolve) =>
        ws.once("unexpected-response", (_, res) => {
          let text = "";
          res.on("data", (chunk) => (text += chunk));
          res.on("end", () => resolve({ status: res.statusCode!, text }));
        }),
      );
      ws.on("error", () => {});
      assert.equal(refused.status, status, path);
      assert.match(refused.text, body);
      assert.equal(JSON.parse(refused.text).error.code !== undefined, true);
    }
    // Engine.IO's polling transport is a plain GET: refused with 400 too.
    const polling = await server.call("GET", `${SOCKET_PATH}?EIO=4&transport=polling`);
    assert.equal(polling.status, 400);
    assert.match(polling.body.error.message, /transports: \["websocket"\]/);
    // Any other upgrade (h2c) is served as HTTP/1.1: test/http/declined-upgrade.test.ts.
  });
});

describe("10,000 connections opened and closed", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ appId: "app1", memory: true });
  });
  after(() => server.close());

  test("leave no connection, room, handle or memory behind", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const handles = () => (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles().length;
    // Half close cleanly, half drop the connection; every other one joins a room first. Each holds
    // one of --max-streams (1,000 here) while open: one not given back would refuse the 1,001st.
    const cycle = async (i: number) => {
      const socket = await RawSocket.connect(server.url, SECRET);
      if (i % 2 === 0) assert.deepEqual(await socket.join("entities:app1:Task"), { ok: true });
      if (i % 4 < 2) await socket.close();
      else {
        socket.ws.terminate();
        await socket.closed;
      }
    };
    const run = async (cycles: number) => {
      for (let i = 0; i < cycles; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => cycle(i + j)));
      await gaugeBecomes(server, "tabula_realtime_sockets", 0);
      await gaugeBecomes(server, "tabula_realtime_rooms", 0);
      // The server's side of each TCP connection closes a moment after the client's.
      await new Promise((resolve) => setTimeout(resolve, 200));
    };
    await run(1_000);
    gc();
    const [handlesBefore, heapBefore] = [handles(), process.memoryUsage().heapUsed];
    await run(10_000);
    gc();
    const [handlesAfter, heapAfter] = [handles(), process.memoryUsage().heapUsed];
    assert.ok(handlesAfter <= handlesBefore + 2, `handles: ${handlesBefore} before, ${handlesAfter} after`);
    assert.ok(heapAfter - heapBefore < 8 * MIB, `heap grew by ${((heapAfter - heapBefore) / MIB).toFixed(1)} MiB`);
  });
});

test("socketUrl is the socket's", () => assert.equal(socketUrl("http://h:1"), `ws://h:1${SOCKET_PATH}?EIO=4&transport=websocket`));
