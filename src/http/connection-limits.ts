// What one client may hold of the listener, and for how long (docs/operating.md, "Connections"):
// --max-connections at once; a request's head within HEADERS_TIMEOUT_MS; its body never silent for
// BODY_TIMEOUT_MS (nginx's client_body_timeout) and whole within REQUEST_TIMEOUT_MS. client-error.ts
// words the 408 and closes the connection.

import type { IncomingMessage, Server, ServerOptions as HttpOptions, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { performance } from "node:perf_hooks";
import { ApiError } from "../errors.ts";
import { settingName } from "../option-names.ts";
import { refuseUnfinishedRequest } from "./client-error.ts";
import { clientOf } from "./rate-limit.ts";
import { hasBody } from "./request.ts";

/**
 * Connections held at once; one more is closed as soon as it is accepted, before a byte of it is
 * read. An idle one costs a socket and a parser, one reading a small body up to 64 KiB of it (larger
 * bodies share body-budget.ts's 16 MiB): 2,000 stay within about 150 MiB, what a VM of 1 GiB can
 * spare beside its records. Twice --max-streams' default, so that the streams and realtime
 * sockets it allows leave as many connections for requests.
 */
export const DEFAULT_MAX_CONNECTIONS = 2_000;
/**
 * What one client address may hold of --max-connections by default: a tenth, at least 100 (or all
 * of them, when they are fewer), so that one client trickling request heads on every connection
 * cannot keep everyone else out, while an office behind one address keeps room for a few tabs a person.
 */
export function defaultConnectionsPerClient(maxConnections: number): number {
  return Math.min(maxConnections, Math.max(100, Math.floor(maxConnections / 10)));
}
/**
 * A request's line and headers arrive within this of its first byte, or of the connection's opening
 * (an idle new connection is closed so). node's default, 60 s checked every 30 s, let a trickled
 * head hold its connection for 90 s.
 */
export const HEADERS_TIMEOUT_MS = 30_000;
/** A body of which no byte arrives for this long, while the server reads it, is answered 408. */
export const BODY_TIMEOUT_MS = 60_000;
/**
 * A whole request, however steadily its body arrives: node's default, kept whatever node's next
 * default is. --max-body's 10 MiB arrive in it at 35 KB/s.
 */
export const REQUEST_TIMEOUT_MS = 300_000;
/** How often node:http looks for requests past their head's or their whole's time: a trickled head is cut within 35 s. */
const TIMEOUT_CHECK_MS = 5_000;
/** How many looks at a body's progress per BODY_TIMEOUT_MS: a silent body is cut within a sixth of it past the limit. */
const BODY_CHECKS = 6;

export interface ConnectionLimits {
  readonly maxConnections: number;
  /** Connections one client address (an IPv6 one by its /64) holds at once; Infinity behind --trust-proxy. */
  readonly maxConnectionsPerClient: number;
  /** Tests shorten the timeouts. */
  readonly headersTimeoutMs: number;
  readonly bodyTimeoutMs: number;
}

/** node:http's own timeouts, for createServer. */
export function httpTimeoutsOf(limits: ConnectionLimits): Pick<HttpOptions, "headersTimeout" | "requestTimeout" | "connectionsCheckingInterval"> {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: Math.max(REQUEST_TIMEOUT_MS, limits.headersTimeoutMs),
    connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_MS, Math.ceil(limits.headersTimeoutMs / 4)),
  };
}

/**
 * Caps the connections (node closes one over --max-connections at accept: cheaper than any answer,
 * and a client sees it as it sees a full backlog) and watches every body as it arrives. `warn` is
 * told when connections are being closed so, at most once a minute.
 */
export function limitConnections(http: Server, limits: ConnectionLimits, warn: (message: string) => void): void {
  http.maxConnections = limits.maxConnections;
  let warnedAt = -Infinity;
  http.on("drop", () => {
    const now = performance.now();
    if (now - warnedAt < 60_000) return;
    warnedAt = now;
    const open = limits.maxConnections === 1 ? "1 connection is open" : `${limits.maxConnections} connections are open`;
    warn(`${open}, as many as ${settingName("maxConnections")} allows: new ones are closed as soon as they are accepted.`);
  });
  http.on("request", (req: IncomingMessage, res: ServerResponse) => watchBody(req, res, limits.bodyTimeoutMs));
  if (Number.isFinite(limits.maxConnectionsPerClient)) limitEachClient(http, limits.maxConnectionsPerClient, warn);
}

/**
 * Closes a connection as soon as it is accepted when its client address already holds `max`
 * (rate-limit.ts's clientOf: an IPv6 client by its /64). Not behind --trust-proxy, where every
 * connection is the proxy's and the proxy limits its clients; nor for this machine's own
 * connections (loopback: a proxy on the same machine, a test suite), which no one outside can make.
 */
function limitEachClient(http: Server, max: number, warn: (message: string) => void): void {
  const held = new Map<string, number>();
  let warnedAt = -Infinity;
  http.on("connection", (socket: Socket) => {
    const client = clientOf(socket.remoteAddress ?? "unknown");
    if (isLoopback(client)) return;
    const count = held.get(client) ?? 0;
    if (count >= max) {
      socket.destroy();
      const now = performance.now();
      if (now - warnedAt < 60_000) return;
      warnedAt = now;
      return warn(`${client} holds ${max} connections, as many as ${settingName("maxConnectionsPerClient")} allows one client: its new ones are closed as soon as they are accepted.`);
    }
    held.set(client, count + 1);
    socket.once("close", () => {
      const left = held.get(client)! - 1;
      if (left === 0) held.delete(client);
      else held.set(client, left);
    });
  });
}

/**
 * Answers 408 a body of which no byte has arrived for `timeoutMs`, counting only the time the server
 * was reading it: not while node:http has stopped reading the socket (a body nobody reads yet has
 * filled its buffer, or answers are waiting to be sent), nor while the event loop was too busy to
 * look. Bytes are counted on the socket, where node:http's parser takes them. A body answered
 * before its end is linger.ts's to read out.
 */
function watchBody(req: IncomingMessage, res: ServerResponse, timeoutMs: number): void {
  if (!hasBody(req)) return;
  const socket = req.socket;
  const stepMs = Math.max(1, Math.floor(timeoutMs / BODY_CHECKS));
  let bytesRead = socket.bytesRead;
  let heardAt = performance.now();
  let lookedAt = heardAt;
  const look = () => {
    if (req.complete || res.headersSent || socket.destroyed) return;
    const now = performance.now();
    if (socket.bytesRead !== bytesRead || socket.isPaused() || now - lookedAt > 2 * stepMs) heardAt = now;
    bytesRead = socket.bytesRead;
    lookedAt = now;
    if (now - heardAt < timeoutMs) return void timer.refresh();
    refuseUnfinishedRequest(req, bodyTimedOut(timeoutMs));
  };
  const timer = setTimeout(look, stepMs).unref();
  res.once("close", () => clearTimeout(timer));
}

/** 127.0.0.0/8 (clientOf writes ::ffff:127.x as IPv4) or ::1 (clientOf: the first /64, which holds nothing routable). */
function isLoopback(client: string): boolean {
  return client.startsWith("127.") || client === "0:0:0:0:0:0:0:0/64";
}

function bodyTimedOut(timeoutMs: number): ApiError {
  return new ApiError(408, "request_timeout", `No byte of the body arrived for ${timeoutMs / 1000} s; send the request again, and its body without pausing.`, { timeoutMs });
}
