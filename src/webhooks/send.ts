// One delivery attempt (docs/webhooks.md): a POST signed as the Standard Webhooks specification
// says, to an address checked at connection (target.ts), cut at ATTEMPT_TIMEOUT_MS and after
// MAX_ANSWER_BYTES of answer read, never following a redirect. It reports what happened; what to
// do about it (retry, disable) is delivery.ts's.

import { createHmac, randomBytes } from "node:crypto";
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import { performance } from "node:perf_hooks";
import { checkedLookup, hostOf, refusalOf, type TargetPolicy } from "./target.ts";

/** A receiver has this long to answer (its status line and headers) before the attempt fails. */
export const ATTEMPT_TIMEOUT_MS = 10_000;
/** What is read of an answer; the connection is cut after it. */
export const MAX_ANSWER_BYTES = 64 * 1024;
/** What the delivery log keeps of an answer's body, or of an error. */
const MAX_NOTE_CHARS = 200;
export const SECRET_PREFIX = "whsec_";

export interface Attempt {
  /** The webhook-id sent: the change event's id (a ping's own). */
  readonly event_id: string;
  readonly at: string;
  /** The answer's HTTP status; null when none came (refused, unreachable, timed out). */
  readonly status: number | null;
  readonly latency_ms: number;
  /** Why it is not a delivery; null when it is one (a 2xx). */
  readonly error: string | null;
}

/** A new endpoint secret: 32 random bytes, base64 after the whsec_ prefix (as standardwebhooks reads it). */
export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString("base64");
}

/** webhook-signature: v1, then the base64 HMAC-SHA256 of "id.timestamp.body" keyed by the secret's bytes. */
export function signatureOf(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), "base64");
  return `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64")}`;
}

export interface Sender {
  send(url: string, secret: string, id: string, body: string): Promise<Attempt>;
  close(): void;
}

/**
 * Sends attempts over keep-alive connections (one at a time per endpoint, so one connection each),
 * each opened through the checked lookup.
 */
export function createSender(policy: TargetPolicy, timeoutMs = ATTEMPT_TIMEOUT_MS): Sender {
  const lookup = checkedLookup(policy);
  const agents = { http: new HttpAgent({ keepAlive: true, lookup } as object), https: new HttpsAgent({ keepAlive: true, lookup } as object) };
  return {
    send: (url, secret, id, body) => attempt(new URL(url), secret, id, body, policy, lookup, agents, timeoutMs),
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

function attempt(url: URL, secret: string, id: string, body: string, policy: TargetPolicy, lookup: ReturnType<typeof checkedLookup>, agents: { http: HttpAgent; https: HttpsAgent }, timeoutMs: number): Promise<Attempt> {
  const started = performance.now();
  const at = new Date().toISOString();
  const done = (status: number | null, error: string | null): Attempt => ({ event_id: id, at, status, latency_ms: Math.round(performance.now() - started), error: error === null ? null : error.slice(0, MAX_NOTE_CHARS) });
  // An address written in the URL is connected to without a lookup: checked here instead.
  const host = hostOf(url);
  if (!policy.allowPrivate && isIP(host) !== 0) {
    const refusal = refusalOf(host);
    if (refusal) return Promise.resolve(done(null, `refused: ${refusal}`));
  }
  const timestamp = Math.floor(Date.now() / 1000);
  const isHttps = url.protocol === "https:";
  const headers = {
    "Content-Type": "application/json",
    "Content-Length": String(Buffer.byteLength(body)),
    "User-Agent": "tabula-webhooks",
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signatureOf(secret, id, timestamp, body),
  };
  return new Promise((resolve) => {
    let isSettled = false;
    let answered: IncomingMessage | null = null;
    let note = "";
    const settle = (status: number | null, error: string | null) => {
      if (isSettled) return;
      isSettled = true;
      resolve(done(status, error));
    };
    const options = {
      method: "POST",
      headers,
      agent: isHttps ? agents.https : agents.http,
      lookup,
      auth: url.username ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` : undefined,
    };
    const req = (isHttps ? httpsRequest : httpRequest)(url, options, (res) => {
      answered = res;
      const status = res.statusCode ?? 0;
      // A 2xx is the delivery, whatever follows it: the rest is read (to the cap) only to keep the connection.
      if (status >= 200 && status < 300) settle(status, null);
      readAnswer(res, (text) => {
        clearTimeout(timer);
        note = text;
        settle(status, failureOf(res, text));
      });
    });
    // Whatever the receiver does (no answer, an endless one), the attempt ends here.
    const timer = setTimeout(() => {
      const status = answered?.statusCode ?? null;
      settle(status, status === null ? `no answer within ${timeoutMs} ms` : `${failureOf(answered!, note)} (its body cut at ${timeoutMs} ms)`);
      req.destroy();
    }, timeoutMs);
    req.on("error", (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      settle(null, error.code === "EWEBHOOKTARGET" ? `refused: ${error.message}` : `${error.code ?? "error"}: ${error.message}`);
    });
    req.end(body);
  });
}

function failureOf(res: IncomingMessage, text: string): string {
  const status = res.statusCode ?? 0;
  // A redirect is a failure: following it would let a receiver point tabula anywhere.
  if (status >= 300 && status < 400) return `redirect to ${res.headers.location ?? "(no Location)"} not followed`;
  return `HTTP ${status}${text.trim() === "" ? "" : `: ${text.trim()}`}`;
}

/** Reads up to MAX_ANSWER_BYTES of an answer, then cuts the connection; `end` gets the body's start. */
function readAnswer(res: IncomingMessage, end: (text: string) => void): void {
  let text = "";
  let bytes = 0;
  let isEnded = false;
  const finish = () => {
    if (isEnded) return;
    isEnded = true;
    end(text);
  };
  res.setEncoding("utf8");
  res.on("data", (chunk: string) => {
    bytes += Buffer.byteLength(chunk);
    if (text.length < MAX_NOTE_CHARS) text += chunk.slice(0, MAX_NOTE_CHARS - text.length);
    if (bytes > MAX_ANSWER_BYTES) {
      res.destroy();
      finish();
    }
  });
  res.on("end", finish);
  res.on("close", finish);
}
