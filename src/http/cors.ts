// CORS (docs/api.md), so that a browser app on another origin can call tabula with a publishable
// key: the preflight, and the headers every answer to a cross-origin request carries. The policy
// comes from --cors: "*" (the default), a list of origins, or "off". Requests without an Origin
// header (servers, curl, the benchmark) are answered exactly as without CORS.

import type { IncomingMessage, ServerResponse } from "node:http";
import { headerOf } from "./request.ts";
import type { Reply } from "./response.ts";
import { settingName } from "../option-names.ts";

export type CorsPolicy = { readonly anyOrigin: true } | { readonly anyOrigin: false; readonly origins: ReadonlySet<string> };

/** How long a browser may keep a preflight's answer (Chromium keeps it at most 2 hours). */
export const CORS_MAX_AGE_S = 7200;
const ALLOWED_METHODS = "GET, HEAD, POST, PUT, PATCH, DELETE";
const ALLOWED_HEADERS = "X-Api-Key, Authorization, Content-Type, If-Match, If-None-Match, Idempotency-Key";
const ALLOWED_HEADER_NAMES = new Set(ALLOWED_HEADERS.toLowerCase().split(", "));
const HEADER_NAME_RE = /^[!#$%&'*+.^_`|~0-9a-z-]+$/i;
// Headers a page's script may read beyond the few every browser shows.
const EXPOSED_HEADERS = "ETag, Location, Link, X-Next-Cursor, X-Total-Count, Idempotent-Replayed, Retry-After";
const ORIGIN_RE = /^https?:\/\/[^\s/?#]+$/i;

/** The policy of a --cors value, or null for "off"; a malformed origin throws, naming it. */
export function parseCorsPolicy(text: string): CorsPolicy | null {
  const value = text.trim();
  if (value === "off") return null;
  if (value === "*") return { anyOrigin: true };
  const origins = value.split(",").map((origin) => origin.trim().replace(/\/$/, ""));
  const bad = origins.find((origin) => !ORIGIN_RE.test(origin));
  if (bad !== undefined) {
    throw new Error(`${settingName("cors")} takes *, off, or origins separated by commas such as https://app.example.com,http://localhost:5173 (got "${bad}").`);
  }
  return { anyOrigin: false, origins: new Set(origins.map((origin) => origin.toLowerCase())) };
}

/** Whether the request is a preflight: OPTIONS naming the method it asks for. */
export function isPreflight(req: IncomingMessage): boolean {
  return req.method === "OPTIONS" && headerOf(req, "access-control-request-method") !== undefined;
}

/** The answer to a preflight: which methods and headers may follow, and for how long. */
export function preflightReply(req: IncomingMessage): Reply {
  const allowedHeaders = allowHeadersFor(headerOf(req, "access-control-request-headers"));
  return {
    status: 204,
    headers: { "Access-Control-Allow-Methods": ALLOWED_METHODS, "Access-Control-Allow-Headers": allowedHeaders, "Access-Control-Max-Age": String(CORS_MAX_AGE_S) },
    body: null,
  };
}

/**
 * tabula's own headers, and any other the preflight asks for. Clients add headers of their own
 * (@base44/sdk sets X-App-Id and X-Origin-URL in a browser, tracing libraries add theirs), and a
 * browser refuses the whole request if one is not allowed. Allowing them gives a page nothing:
 * tabula ignores headers it does not know, and only the key decides what a request may do.
 * No Vary: an answer to OPTIONS is never cached (RFC 9110 §9.3.7).
 */
function allowHeadersFor(requested: string | undefined): string {
  if (requested === undefined) return ALLOWED_HEADERS;
  const names = new Set<string>();
  for (const item of requested.split(",")) {
    const name = item.trim().toLowerCase();
    if (HEADER_NAME_RE.test(name) && !ALLOWED_HEADER_NAMES.has(name)) names.add(name);
  }
  return names.size === 0 ? ALLOWED_HEADERS : `${ALLOWED_HEADERS}, ${[...names].join(", ")}`;
}

/** Adds the CORS headers an answer to this request needs, if it comes from an allowed origin. */
export function addCorsHeaders(policy: CorsPolicy, req: IncomingMessage, res: ServerResponse): void {
  const origin = headerOf(req, "origin");
  if (policy.anyOrigin) {
    if (origin === undefined) return;
    res.setHeader("Access-Control-Allow-Origin", "*");
  } else {
    // The answer depends on Origin, so a cache must keep one copy per origin, allowed or not.
    res.setHeader("Vary", "Origin");
    if (origin === undefined || !policy.origins.has(origin.toLowerCase())) return;
    res.setHeader("Access-Control-Allow-Origin", origin);
  }
  res.setHeader("Access-Control-Expose-Headers", EXPOSED_HEADERS);
}

/**
 * Whether a WebSocket may be opened from this request's Origin: browsers apply no CORS to
 * WebSockets, so the server does (RFC 6455 §10.2). No Origin (a server, curl) is allowed; a page
 * on the server's own origin too, even with --cors off; any other as --cors says.
 */
export function isOriginAllowed(policy: CorsPolicy | null, req: IncomingMessage): boolean {
  const origin = headerOf(req, "origin")?.toLowerCase();
  if (origin === undefined || policy?.anyOrigin) return true;
  if (policy !== null && policy.origins.has(origin)) return true;
  const host = headerOf(req, "host")?.toLowerCase();
  return host !== undefined && (origin === `http://${host}` || origin === `https://${host}`);
}
