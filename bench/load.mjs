// The load generator of bench/run.mjs: N keep-alive HTTP/1.1 connections on raw sockets, one
// request in flight on each, cycling through prebuilt request buffers for a fixed time.
//
// Why not autocannon or http.Agent: on a 2-core machine the generator shares the CPU with the
// server it measures, so every microsecond it spends per request is taken from the server. Sending
// prebuilt bytes and reading only the status line and Content-Length costs a fraction of what
// http.request (or undici) costs per request, needs no dependency, and gave the steadiest figures
// across repeated runs. tabula and the bare server always send Content-Length (no chunked bodies),
// which is all this parser understands; anything else fails loudly.

import net from "node:net";

const HEADER_END = Buffer.from("\r\n\r\n");
const CONTENT_LENGTH = /\r\ncontent-length:\s*(\d+)/i;
const STOP_GRACE_MS = 5_000;

/** One HTTP/1.1 request as bytes, ready to be written to a keep-alive socket. */
export function buildRequest(method, path, { host = "127.0.0.1", headers = {}, body = null } = {}) {
  const payload = body === null ? null : Buffer.from(typeof body === "string" ? body : JSON.stringify(body));
  const lines = [`${method} ${path} HTTP/1.1`, `Host: ${host}`, "Connection: keep-alive"];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (payload) lines.push("Content-Type: application/json", `Content-Length: ${payload.length}`);
  const head = Buffer.from(lines.join("\r\n") + "\r\n\r\n", "latin1");
  return payload ? Buffer.concat([head, payload]) : head;
}

/**
 * Runs `requests` (cycled, each connection starting at a different offset) on `connections`
 * sockets for warmupMs + durationMs, recording only answers completed after the warm-up.
 * Returns { count, seconds, rate, p50, p99, statuses, bytes } with latencies in milliseconds.
 *
 * `onAnswer(sentAt, answeredAt, status)`, when given, hears of every answer, the warm-up's too
 * (bench/backup-pause.mjs sorts them by what they overlapped).
 *
 * With `limit`, sends exactly that many requests instead, `requests` may be a function of the
 * request's number (built when it is sent), and `seconds` is the time spent in requests only.
 */
export async function runLoad({ port, host = "127.0.0.1", requests, connections, durationMs = Infinity, warmupMs = 1000, limit, onAnswer }) {
  if (typeof requests !== "function" && requests.length === 0) throw new Error("runLoad: no requests");
  const requestAt = typeof requests === "function" ? requests : (i) => requests[i % requests.length];
  const latencies = [];
  const statuses = new Map();
  let bytes = 0;
  let next = 0;
  const start = performance.now();
  const measureFrom = start + warmupMs;
  const stopAt = measureFrom + durationMs;
  let isStopping = false;
  const sockets = new Set();

  const runConnection = () =>
    new Promise((resolve, reject) => {
      const socket = net.connect({ port, host, noDelay: true });
      sockets.add(socket);
      let pending = null; // bytes of the answer being read
      let sentAt = 0;
      const send = () => {
        if (isStopping || performance.now() >= stopAt || (limit !== undefined && next >= limit)) {
          socket.end();
          return resolve();
        }
        const request = requestAt(next++);
        sentAt = performance.now();
        socket.write(request);
      };
      socket.on("connect", send);
      socket.on("error", reject);
      socket.on("close", () => (pending === null || isStopping ? resolve() : reject(new Error("connection closed mid-answer"))));
      socket.on("data", (chunk) => {
        pending = pending === null ? chunk : Buffer.concat([pending, chunk]);
        const headerEnd = pending.indexOf(HEADER_END);
        if (headerEnd === -1) return;
        const head = pending.toString("latin1", 0, headerEnd);
        const length = CONTENT_LENGTH.exec(head);
        const status = Number(head.slice(9, 12));
        // 304 and 204 carry no body and may omit Content-Length.
        const total = headerEnd + 4 + (length ? Number(length[1]) : status === 304 || status === 204 ? 0 : NaN);
        if (Number.isNaN(total)) return reject(new Error(`answer without Content-Length: ${head.split("\r\n")[0]}`));
        if (pending.length < total) return;
        if (pending.length > total) return reject(new Error("more bytes than one answer: pipelining is not expected"));
        pending = null;
        const now = performance.now();
        onAnswer?.(sentAt, now, status);
        if (now >= measureFrom && now < stopAt) {
          latencies.push(now - sentAt);
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          bytes += total;
        }
        send();
      });
    });

  // An answer still missing this long after the end is abandoned rather than waited for.
  const grace = setTimeout(() => {
    isStopping = true;
    for (const socket of sockets) socket.destroy();
  }, limit === undefined ? warmupMs + durationMs + STOP_GRACE_MS : 2 ** 31 - 1);
  try {
    await Promise.all(Array.from({ length: connections }, runConnection));
  } finally {
    clearTimeout(grace);
  }
  const sorted = Float64Array.from(latencies).sort();
  const seconds = limit === undefined ? durationMs / 1000 : latencies.reduce((sum, ms) => sum + ms, 0) / 1000;
  return {
    count: sorted.length,
    seconds,
    rate: sorted.length / seconds,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    statuses: Object.fromEntries(statuses),
    bytes,
  };
}

function percentile(sorted, fraction) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))];
}
