// A plain read by id: GET /api/entities/<Entity>/<id>, with a key in X-Api-Key and nothing that
// could change its answer (a query, If-None-Match, Origin, Authorization). When the record's view
// is cached, App answers it in one step, past the request path that every other request takes
// (server.ts): tabula's own part of such a read fell from 1.1 µs to 0.6 µs in-process, and the
// server did 2–4% more reads a second under wrk (docs/benchmarks.md, "2026-11-26, fourth").
//
// Whatever this module does not recognise takes the general path, which answers it the same or
// refuses it with the error it deserves; so the checks here only ever say "not plain". Nor can a
// name the router serves elsewhere (GET <collection>/count) be answered here: only the get route
// caches views, and it never sees such a name.

import type { IncomingMessage } from "node:http";
import { nativeMount } from "./mounts.ts";
import { isHeaderName } from "./request.ts";

export interface PlainRead {
  readonly entity: string;
  readonly id: string;
  /** X-Api-Key's value, trimmed as KeyRing.authenticate trims it. */
  readonly key: string;
}

const COLLECTIONS = nativeMount.collection.slice(0, -"/:entity".length) + "/";

/** The route a plain read counts under in metrics and logs: the native get by id's template. */
export const PLAIN_READ_ROUTE = `${nativeMount.collection}/:id`;

export function plainReadOf(req: IncomingMessage): PlainRead | null {
  if (req.method !== "GET") return null;
  const url = req.url!;
  if (!url.startsWith(COLLECTIONS)) return null;
  const slash = url.indexOf("/", COLLECTIONS.length);
  // One entity name, one id, nothing after, and nothing for the router to decode.
  if (slash <= COLLECTIONS.length || slash === url.length - 1 || url.indexOf("/", slash + 1) !== -1) return null;
  if (url.indexOf("?") !== -1 || url.indexOf("%") !== -1) return null;
  // One pass over the headers, not one per name: what a plain read may not carry ends it at once.
  const raw = req.rawHeaders;
  let hasHost = false;
  let key: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    switch (name.length) {
      case 4:
        if (isHeaderName(name, "host")) hasHost = true;
        break;
      case 6:
        if (isHeaderName(name, "origin")) return null;
        break;
      case 9:
        // Two X-Api-Key headers join into one value that names no key: the general path refuses it.
        if (isHeaderName(name, "x-api-key")) {
          if (key !== undefined) return null;
          key = raw[i + 1]!.trim();
        }
        break;
      case 13:
        if (isHeaderName(name, "if-none-match") || isHeaderName(name, "authorization")) return null;
        break;
    }
  }
  if (!hasHost || !key) return null;
  return { entity: url.slice(COLLECTIONS.length, slash), id: url.slice(slash + 1), key };
}
