// A plain read by id: GET /api/entities/<Entity>/<id>, with a key in X-Api-Key or a signed-in
// user's token alone in Authorization, and nothing that could change its answer (a query,
// If-None-Match, Origin). When the record's view
// is cached, App answers it in one step, past the request path that every other request takes
// (app.ts), which costs about half of tabula's own part of a read by id.
//
// Whatever this module does not recognise takes the general path, which answers it the same or
// refuses it with the error it deserves; so the checks here only ever say "not plain". Nor can a
// name the router serves elsewhere (GET <collection>/count) be answered here: only the get route
// caches views, and it never sees such a name.

import type { IncomingMessage } from "node:http";
import { nativeMount } from "./mounts.ts";
import { headerOf, isUserToken } from "./request.ts";

export interface PlainRead {
  readonly entity: string;
  readonly id: string;
  /** X-Api-Key's value, trimmed as KeyRing.authenticate trims it; or a signed-in user's token alone (docs/users.md). */
  readonly key: string;
  readonly isUserToken: boolean;
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
  if (headerOf(req, "host") === undefined || headerOf(req, "if-none-match") !== undefined || headerOf(req, "origin") !== undefined) return null;
  const authorization = headerOf(req, "authorization");
  // Two X-Api-Key headers join into one value that names no key: the general path refuses it.
  const key = headerOf(req, "x-api-key")?.trim();
  if (authorization === undefined) return key ? { entity: url.slice(COLLECTIONS.length, slash), id: url.slice(slash + 1), key, isUserToken: false } : null;
  // A user's token alone, as the SDK sends it once someone signed in; with a key beside it, the general path.
  if (key !== undefined || !authorization.startsWith("Bearer ")) return null;
  const token = authorization.slice("Bearer ".length);
  if (!isUserToken(token)) return null;
  return { entity: url.slice(COLLECTIONS.length, slash), id: url.slice(slash + 1), key: token, isUserToken: true };
}
