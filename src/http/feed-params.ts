// The change feed's request (docs/change-feed.md) → a subscription and a resume point: which entities
// (the route's, or entities= on /api/changes, within what the key may read), q (checked like a
// list's, against each entity), since or Last-Event-ID, limit and wait.

import { ApiError, entityNotFound, invalidParameter } from "../errors.ts";
import { parseEventId } from "../feed/events.ts";
import type { FeedSubscription } from "../feed/change-feed.ts";
import { parseFilterText } from "../query/filter.ts";
import type { Caller } from "../keys/caller.ts";
import type { EntityDef } from "../schema/fields.ts";
import type { Schema } from "../schema/load.ts";
import { compileFilter, type Predicate } from "../query/predicate.ts";
import type { FeedPosition, FeedState } from "../store/store.ts";
import { accessOf } from "./list-params.ts";
import { hasRules } from "../rules/grants.ts";

export const DEFAULT_FEED_LIMIT = 100;
export const MAX_FEED_LIMIT = 1000;
/** A long poll waits at most this long (docs/change-feed.md: wait ≤ 30 seconds). */
export const MAX_FEED_WAIT_S = 30;

const STREAM_PARAMETERS = ["q", "since", "key"];
const JSON_PARAMETERS = ["q", "since", "limit", "wait", "key"];

export interface FeedRequest {
  readonly sub: FeedSubscription;
  /** Where to start: after the resume point given, else after the newest event (from now). */
  readonly since: FeedPosition;
  readonly stream: boolean;
  readonly limit: number;
  readonly waitMs: number;
}

/**
 * Reads a feed request. `entity` is the route's entity (its read access was checked by the
 * route); null on /api/changes, which reads entities= or every entity the key may read.
 */
export function parseFeedRequest(schema: Schema, entity: EntityDef | null, caller: Caller, query: URLSearchParams, header: (name: string) => string | undefined, state: FeedState): FeedRequest {
  const stream = (header("accept") ?? "").includes("text/event-stream");
  const allowed = [...(stream ? STREAM_PARAMETERS : JSON_PARAMETERS), ...(entity ? [] : ["entities"])];
  for (const name of new Set(query.keys())) {
    if (!allowed.includes(name)) {
      throw invalidParameter(name, `Unknown parameter "${name}": ${stream ? "a change feed stream" : "a change feed read"} takes ${allowed.join(", ")}.${stream ? "" : " (limit and wait are for JSON reads, without Accept: text/event-stream.)"}`);
    }
  }
  const entities = entity ? [entity] : entitiesOf(schema, caller, query.get("entities"));
  const sub = subscriptionOf(entities, caller, query.get("q"));
  const lastEventId = stream ? header("last-event-id") : undefined;
  const sinceText = lastEventId ?? query.get("since");
  const since = sinceText === null ? state.head : parseEventId(sinceText, lastEventId !== undefined ? "Last-Event-ID" : "since", state);
  return { sub, since, stream, limit: limitOf(query.get("limit")), waitMs: waitOf(query.get("wait")) };
}

/** entities=A,B: each declared and readable by the key; none given: every entity the key may read. */
function entitiesOf(schema: Schema, caller: Caller, text: string | null): EntityDef[] {
  const mayRead = (entity: EntityDef): boolean => caller.kind === "secret" || entity.publishableAccess.has("read");
  if (text === null) return [...schema.entities.values()].filter(mayRead);
  const names = text.split(",").map((name) => name.trim()).filter((name) => name !== "");
  if (names.length === 0) throw invalidParameter("entities", `entities= names no entity; give names separated by commas, such as entities=${[...schema.entities.keys()].slice(0, 2).join(",")}, or leave it out for every entity.`);
  return names.map((name) => {
    const entity = schema.entities.get(name);
    if (!entity) throw entityNotFound(name, [...schema.entities.keys()]);
    if (!mayRead(entity)) {
      throw new ApiError(403, "forbidden", `A publishable key may not read ${name} records, so it cannot follow their changes: its declaration's "access" does not allow "read". Leave ${name} out of entities=, or use a secret key.`, { entity: name, operation: "read", keyKind: caller.kind });
    }
    return entity;
  });
}

/** What `caller` follows of `entities`: their events that `q` and its read rules match; `prefix` sets apart streams whose bytes differ (Socket.IO rooms). */
export function subscriptionOf(entities: readonly EntityDef[], caller: Caller, q: string | null, prefix = ""): FeedSubscription {
  let filters: Map<string, Predicate> | null = null;
  if (q !== null) {
    for (const entity of entities) {
      const node = parseFilterText(entity, q, accessOf(caller, entity));
      if (node !== null) (filters ??= new Map()).set(entity.name, compileFilter(node));
    }
  }
  const names = entities.map((entity) => entity.name).sort();
  // The feed applies rules as they stand for the caller's user at each event (change-feed.ts);
  // streams of one key share their bytes, unless rules make what each user is sent its own.
  const isRuled = caller.kind !== "secret" && entities.some(hasRules);
  const reader = isRuled ? `\nuser:${caller.user?.id ?? ""}` : "";
  const key = `${prefix}${caller.kind}${reader}\n${names.join(",")}\n${q ?? ""}`;
  return { caller, entities: new Set(names), filters, key, ...(isRuled ? { shown: new Set<string>() } : {}) };
}

function limitOf(text: string | null): number {
  if (text === null) return DEFAULT_FEED_LIMIT;
  const limit = Number(text);
  if (!/^\d+$/.test(text) || limit < 1 || limit > MAX_FEED_LIMIT) {
    throw invalidParameter("limit", `limit must be a whole number from 1 to ${MAX_FEED_LIMIT} (got "${text}").`);
  }
  return limit;
}

function waitOf(text: string | null): number {
  if (text === null) return 0;
  const seconds = Number(text);
  if (text.trim() === "" || !Number.isFinite(seconds) || seconds < 0 || seconds > MAX_FEED_WAIT_S) {
    throw invalidParameter("wait", `wait is how many seconds a read waits for a change when there is none: a number from 0 to ${MAX_FEED_WAIT_S} (got "${text}").`);
  }
  return Math.round(seconds * 1000);
}
