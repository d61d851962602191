// W9's subscribers (bench/run.mjs): a child process holding N SSE streams of Task's change feed on
// raw sockets, and a probe that creates one record every PROBE_MS on a connection of its own. Each
// stream notes when each probe's event arrives; the delay from the probe's answer to that arrival
// is the delivery latency. Streams are not parsed, only scanned for event and probe markers, so
// that the subscribers take as little CPU from the server as they can.
//
//   node bench/feed-subscribers.mjs <port> <key> <streams>
// Prints "ready" once every stream is open; on "start" (stdin) starts probing and counting; on
// "stop" prints one JSON line of what it measured, and exits.

import net from "node:net";
import { buildRequest } from "./load.mjs";

const PROBE_MS = 20;
const PROBE_PREFIX = Buffer.from('"w9probe-');
const EVENT_MARK = Buffer.from("\nevent: ");
const QUOTE = 0x22;

const [port, key, count] = [Number(process.argv[2]), process.argv[3], Number(process.argv[4])];
const request = buildRequest("GET", "/api/entities/Task/changes", { headers: { "X-Api-Key": key, Accept: "text/event-stream" } });

let counting = false;
let deliveries = 0;
let bytes = 0;
let ended = 0;
let refused = 0;
const answeredAt = new Map();
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
        if (!chunk.subarray(0, 12).toString("latin1").includes(" 200")) refused++;
        resolve();
      }
      if (!counting) return;
      bytes += chunk.length;
      deliveries += countMarks(chunk, EVENT_MARK);
      const now = performance.now();
      for (let at = chunk.indexOf(PROBE_PREFIX); at >= 0; at = chunk.indexOf(PROBE_PREFIX, at + 1)) {
        let n = 0;
        let i = at + PROBE_PREFIX.length;
        for (; i < chunk.length && chunk[i] !== QUOTE; i++) n = n * 10 + (chunk[i] - 0x30);
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
      let unanswered = 0;
      for (let i = 0; i < arrivals.length; i += 2) {
        const answered = answeredAt.get(arrivals[i]);
        if (answered === undefined) unanswered++;
        // An event may reach a stream before the probe has read its own answer: no delay then.
        else latencies.push(Math.max(0, arrivals[i + 1] - answered));
      }
      latencies.sort((a, b) => a - b);
      const probes = answeredAt.size;
      process.stdout.write(
        JSON.stringify({ seconds, deliveries, bytes, probes, probeArrivals: latencies.length, expectedArrivals: probes * (count - refused), unanswered, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), max: latencies.at(-1) ?? NaN, ended, refused }) + "\n",
      );
      process.exit(0);
    }
  });
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
