// W9's and W10's subscribers (bench/run.mjs): a child process holding N SSE streams of Task's change
// feed, or N Socket.IO connections in Task's room (the wire of @base44/sdk's subscribe(), spoken by
// hand: a WebSocket handshake, then masked "40" and a join), on raw sockets, and a probe that creates
// one record every PROBE_MS on a connection of its own. Each stream notes when each probe's event
// arrives; the delay from the probe's answer to that arrival is the delivery latency (and, as an
// event may leave before the answer does, the delay from the probe's request too). Streams are
// not parsed, only scanned for event and probe markers (and Engine.IO pings, answered), so that the
// subscribers take as little CPU from the server as they can.
//
//   node bench/feed-subscribers.mjs <port> <key> <streams> [sse|socket.io]
// Prints "ready" once every stream is open; on "start" (stdin) starts probing and counting; on
// "stop" prints one JSON line of what it measured, and exits.

import net from "node:net";
import { buildRequest } from "./load.mjs";

const PROBE_MS = 20;
const PROBE_PREFIX = Buffer.from("w9probe-");

const [port, key, count] = [Number(process.argv[2]), process.argv[3], Number(process.argv[4])];
const isSocketIo = process.argv[5] === "socket.io";
const EVENT_MARK = Buffer.from(isSocketIo ? '["update_model",' : "\nevent: ");
const request = isSocketIo
  ? `GET /ws-user-apps/socket.io/?EIO=4&transport=websocket&token=${key} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
    `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`
  : buildRequest("GET", "/api/entities/Task/changes", { headers: { "X-Api-Key": key, Accept: "text/event-stream" } });
/** A server's Engine.IO ping: a whole text frame holding "2". */
const PING_FRAME = Buffer.from([0x81, 0x01, 0x32]);

/** A client text frame, masked as RFC 6455 requires (with a zero mask: the bytes stay as they are). */
function maskedFrame(text) {
  const payload = Buffer.from(text);
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length, 0, 0, 0, 0]), payload]);
}
const JOIN = Buffer.concat([maskedFrame("40"), maskedFrame(`42${JSON.stringify(["join", "entities:bench:Task"])}`)]);
const PONG = maskedFrame("3");

let counting = false;
let deliveries = 0;
let bytes = 0;
let ended = 0;
let refused = 0;
const answeredAt = new Map();
const sentAt = new Map();
/** [probe number, arrival time] of every probe event every stream received while counting. */
const arrivals = [];

function countMarks(chunk, mark) {
  let n = 0;
  for (let at = chunk.indexOf(mark); at >= 0; at = chunk.indexOf(mark, at + mark.length)) n++;
  return n;
}

function openStream() {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    let head = true;
    socket.setNoDelay(true);
    socket.on("connect", () => socket.write(request));
    socket.on("data", (chunk) => {
      if (head) {
        head = false;
        if (!chunk.subarray(0, 12).toString("latin1").includes(isSocketIo ? " 101" : " 200")) refused++;
        else if (isSocketIo) socket.write(JOIN);
        resolve();
      }
      if (isSocketIo && chunk.indexOf(PING_FRAME) >= 0) socket.write(PONG);
      if (!counting) return;
      bytes += chunk.length;
      deliveries += countMarks(chunk, EVENT_MARK);
      const now = performance.now();
      for (let at = chunk.indexOf(PROBE_PREFIX); at >= 0; at = chunk.indexOf(PROBE_PREFIX, at + 1)) {
        let n = 0;
        let i = at + PROBE_PREFIX.length;
        for (; i < chunk.length && chunk[i] >= 0x30 && chunk[i] <= 0x39; i++) n = n * 10 + (chunk[i] - 0x30);
        if (i < chunk.length) arrivals.push(n, now);
      }
    });
    socket.on("close", () => {
      ended++;
      if (head) resolve();
    });
    socket.on("error", reject);
  });
}

/** One create at a time, every PROBE_MS, on a keep-alive connection; notes when each was answered. */
function probe() {
  const socket = net.connect(port, "127.0.0.1");
  socket.setNoDelay(true);
  let n = 0;
  let pending = Buffer.alloc(0);
  let timer = null;
  const send = () => {
    n++;
    sentAt.set(n, performance.now());
    socket.write(buildRequest("POST", "/api/entities/Task", { headers: { "X-Api-Key": key }, body: { title: `w9probe-${n}`, status: "todo", priority: 1 } }));
  };
  socket.on("data", (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    const end = pending.indexOf("\r\n\r\n");
    if (end < 0) return;
    const length = Number(/content-length:\s*(\d+)/i.exec(pending.subarray(0, end).toString("latin1"))?.[1] ?? 0);
    if (pending.length < end + 4 + length) return;
    answeredAt.set(n, performance.now());
    pending = pending.subarray(end + 4 + length);
    timer = setTimeout(send, PROBE_MS);
  });
  socket.on("connect", send);
  return () => {
    clearTimeout(timer);
    socket.destroy();
  };
}

const percentile = (sorted, p) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]);

async function main() {
  // Opened a hundred at a time, so that the server's accept queue is not flooded.
  for (let opened = 0; opened < count; opened += 100) await Promise.all(Array.from({ length: Math.min(100, count - opened) }, openStream));
  // A join is answered with nothing: give the last ones a moment to land before counting starts.
  if (isSocketIo) await new Promise((resolve) => setTimeout(resolve, 500));
  process.stdout.write(`ready ${count - refused}\n`);
  let stopProbe = null;
  let startedAt = 0;
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (text) => {
    if (text.includes("start")) {
      counting = true;
      startedAt = performance.now();
      stopProbe = probe();
    }
    if (text.includes("stop")) {
      const seconds = (performance.now() - startedAt) / 1000;
      stopProbe?.();
      const latencies = [];
      const fromSent = [];
      let unanswered = 0;
      for (let i = 0; i < arrivals.length; i += 2) {
        const sent = sentAt.get(arrivals[i]);
        if (sent !== undefined) fromSent.push(arrivals[i + 1] - sent);
        const answered = answeredAt.get(arrivals[i]);
        if (answered === undefined) unanswered++;
        // An event may reach a stream before the probe has read its own answer: no delay then.
        else latencies.push(Math.max(0, arrivals[i + 1] - answered));
      }
      latencies.sort((a, b) => a - b);
      fromSent.sort((a, b) => a - b);
      const probes = answeredAt.size;
      process.stdout.write(
        JSON.stringify({ seconds, deliveries, bytes, probes, probeArrivals: latencies.length, expectedArrivals: probes * (count - refused), unanswered, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), sentP50: percentile(fromSent, 0.5), sentP99: percentile(fromSent, 0.99), max: latencies.at(-1) ?? NaN, ended, refused }) + "\n",
      );
      process.exit(0);
    }
  });
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
