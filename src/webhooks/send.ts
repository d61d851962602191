// One delivery attempt (docs/webhooks.md): a POST signed as the Standard Webhooks specification
// says, to an address checked at connection (target.ts), cut at ATTEMPT_TIMEOUT_MS and after
// MAX_ANSWER_BYTES of answer read (connection.ts), never following a redirect. It reports what
// happened; what to do about it (retry, disable) is delivery.ts's.

import type { Attempt } from "../views.ts";
import { createHmac, randomBytes } from "node:crypto";
import { isIP } from "node:net";
import { performance } from "node:perf_hooks";
import { ConnectionPool, type Connection } from "./connection.ts";
import { checkedLookup, hostOf, refusalOf, type TargetPolicy } from "./target.ts";

/** A receiver has this long to answer (its status line and headers) before the attempt fails. */
export const ATTEMPT_TIMEOUT_MS = 10_000;
/** What the delivery log keeps of an error. */
const MAX_NOTE_CHARS = 200;
export const SECRET_PREFIX = "whsec_";
/** How an attempt's error begins when the address check refused the connection (target.ts). */
export const REFUSED_PREFIX = "refused: ";

/** A new endpoint secret: 32 random bytes, base64 after the whsec_ prefix (as standardwebhooks reads it). */
export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString("base64");
}

/** webhook-signature: v1, then the base64 HMAC-SHA256 of "id.timestamp.body" keyed by the secret's bytes. */
export function signatureOf(secret: string, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac("sha256", keyOf(secret)).update(`${id}.${timestamp}.${body}`).digest("base64")}`;
}

/** The last secret's bytes: a deliverer signs every event with the same one. */
let lastKey = { secret: "", bytes: Buffer.alloc(0) };

function keyOf(secret: string): Buffer {
  if (lastKey.secret !== secret) lastKey = { secret, bytes: Buffer.from(secret.slice(SECRET_PREFIX.length), "base64") };
  return lastKey.bytes;
}

/** One event to send: its webhook-id and body. */
export interface Delivery {
  readonly id: string;
  readonly body: string;
}

/** The attempts an endpoint's delivery log keeps (GET …/deliveries). */
export const MAX_KEPT_ATTEMPTS = 100;

/**
 * What a batch has done since the last report: how many deliveries succeeded, and the attempts
 * made, oldest first, or only the last MAX_KEPT_ATTEMPTS of them (all the delivery log keeps). When
 * one failed, it is the last attempt, and the batch has ended.
 */
export interface BatchReport {
  readonly delivered: number;
  readonly attempts: Attempt[];
}

/** Deliveries in flight to one endpoint, sent one after another (send.ts's sendInOrder). */
export interface Batch {
  /** Resolves once the batch has ended: every delivery made, one failed, or cancelled. */
  readonly ended: Promise<void>;
  /** No delivery is started after the one in flight. */
  cancel(): void;
}

export interface Sender {
  /**
   * Sends `deliveries` to one endpoint in their order, each once the one before it succeeded, and
   * stops at the first that fails. `onReport` hears what it did, in order, a few attempts at a time.
   */
  sendInOrder(url: string, secret: string, deliveries: readonly Delivery[], onReport: (report: BatchReport) => void): Batch;
  /** One attempt (a ping). */
  send(url: string, secret: string, id: string, body: string): Promise<Attempt>;
  close(): void;
}

/**
 * Sends attempts over keep-alive connections (one at a time per endpoint, so one connection each),
 * each opened through the checked lookup. This runs on the sending thread (send-thread.ts), and in
 * the client's own tests.
 */
export function createSender(policy: TargetPolicy, timeoutMs = ATTEMPT_TIMEOUT_MS): Sender {
  const pool = new ConnectionPool(checkedLookup(policy));
  /** Each endpoint URL's request line and fixed headers, made once. */
  const heads = new Map<string, { url: URL; head: string }>();
  const send = (urlText: string, secret: string, id: string, body: string) => {
    let target = heads.get(urlText);
    if (!target) {
      if (heads.size >= MAX_KEPT_HEADS) heads.clear();
      heads.set(urlText, (target = headOf(new URL(urlText))));
    }
    return attempt(target, secret, id, body, policy, pool, timeoutMs);
  };
  return {
    send,
    sendInOrder(url, secret, deliveries, onReport) {
      let isCancelled = false;
      const ended = (async () => {
        for (const { id, body } of deliveries) {
          if (isCancelled) return;
          const made = await send(url, secret, id, body);
          onReport({ delivered: made.error === null ? 1 : 0, attempts: [made] });
          if (made.error !== null) return;
        }
      })();
      return { ended, cancel: () => void (isCancelled = true) };
    },
    close: () => pool.close(),
  };
}

/** Request heads kept (an endpoint's URL may change; more endpoints than this are rare). */
const MAX_KEPT_HEADS = 1000;

function headOf(url: URL): { url: URL; head: string } {
  const auth = url.username ? `Authorization: Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString("base64")}\r\n` : "";
  // The URL parser has percent-encoded the path and host: neither can hold a space or a line break.
  return { url, head: `POST ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nUser-Agent: tabula-webhooks\r\nContent-Type: application/json\r\n${auth}` };
}

function attempt({ url, head }: { url: URL; head: string }, secret: string, id: string, body: string, policy: TargetPolicy, pool: ConnectionPool, timeoutMs: number): Promise<Attempt> {
  const started = performance.now();
  const at = new Date().toISOString();
  const done = (status: number | null, error: string | null): Attempt => ({ event_id: id, at, status, latency_ms: Math.round(performance.now() - started), error: error === null ? null : error.slice(0, MAX_NOTE_CHARS) });
  // An address written in the URL is connected to without a lookup: checked here instead.
  const host = hostOf(url);
  if (isIP(host) !== 0) {
    const refusal = refusalOf(host, policy);
    if (refusal) return Promise.resolve(done(null, `${REFUSED_PREFIX}${refusal}`));
  }
  const timestamp = Math.floor(Date.now() / 1000);
  const request = `${head}Content-Length: ${Buffer.byteLength(body)}\r\nwebhook-id: ${id}\r\nwebhook-timestamp: ${timestamp}\r\nwebhook-signature: ${signatureOf(secret, id, timestamp, body)}\r\n\r\n${body}`;
  return new Promise((resolve) => {
    let isSettled = false;
    let status: number | null = null;
    let location: string | null = null;
    const settle = (error: string | null) => {
      if (isSettled) return;
      isSettled = true;
      resolve(done(status, error));
    };
    const exchange = {
      onHead(answered: number, answeredLocation: string | null) {
        [status, location] = [answered, answeredLocation];
        // A 2xx is the delivery, whatever follows it: the rest is read (to the cap) only to keep the connection.
        if (answered >= 200 && answered < 300) settle(null);
      },
      onBody(note: string) {
        clearTimeout(timer);
        settle(failureOf(status!, location, note));
      },
      onError(error: NodeJS.ErrnoException, isStale: boolean) {
        // A kept connection the receiver had let go of: the request is written again on a new one.
        if (isStale) {
          connection = pool.fresh(url);
          connection.send(request, exchange);
          return;
        }
        clearTimeout(timer);
        settle(error.code === "EWEBHOOKTARGET" ? `${REFUSED_PREFIX}${error.message}` : `${error.code ?? "error"}: ${error.message}`);
      },
    };
    let connection: Connection = pool.take(url);
    // Whatever the receiver does (no answer, an endless one), the attempt ends here.
    const timer = setTimeout(() => {
      connection.destroy();
      settle(status === null ? `no answer within ${timeoutMs} ms` : `${failureOf(status, location, "")} (its body cut at ${timeoutMs} ms)`);
    }, timeoutMs);
    connection.send(request, exchange);
  });
}

function failureOf(status: number, location: string | null, note: string): string | null {
  if (status >= 200 && status < 300) return null;
  // A redirect is a failure: following it would let a receiver point tabula anywhere.
  if (status >= 300 && status < 400) return `redirect to ${location ?? "(no Location)"} not followed`;
  return `HTTP ${status}${note.trim() === "" ? "" : `: ${note.trim()}`}`;
}
