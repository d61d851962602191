// Webhook endpoints as data (docs/webhooks.md): what one is, what a create or a change may say,
// and how it is shown. Keeping them is book.ts's; sending to them is delivery.ts's.

import { ApiError, invalidField, invalidJson } from "../errors.ts";
import { parseFilter } from "../query/filter.ts";
import type { Schema } from "../schema/load.ts";
import { isPlainObject } from "../schema/load.ts";
import { USER_EVENT_TYPES, type Attempt, type ChangeType, type EndpointView, type WebhookEventType } from "../views.ts";

/** The record changes an endpoint gets when it names no events. */
export const EVENT_TYPES: readonly ChangeType[] = ["create", "update", "delete", "restore"];
/** Every event an endpoint may ask for: record changes, and codes for people signing up and in (docs/users.md). */
const ALL_EVENT_TYPES: readonly WebhookEventType[] = [...EVENT_TYPES, ...USER_EVENT_TYPES];
export const MAX_DESCRIPTION_CHARS = 500;
/** Endpoints a store keeps: each is read by every delivery step, and all are kept in one value. */
export const MAX_WEBHOOKS = 100;

/** An endpoint as kept in the store (Store.meta "webhooks"), secret included. */
export interface StoredEndpoint extends Pick<EndpointView, "id" | "url" | "entities" | "events" | "q" | "description" | "enabled" | "disabled_reason" | "created_date" | "updated_date"> {
  readonly secret: string;
  /** The event id it was created after: its first delivery is the first event after it. */
  readonly start: string;
  /** POST …/replay: the event id to send from again, numbered so that each replay is applied once. */
  readonly replay: { readonly since: string; readonly number: number } | null;
}

/** What one endpoint's deliverer keeps about it (Store.meta "webhook:<id>"), written as it goes. */
export interface Progress {
  /** The last event delivered (or passed over by the filters), as an event id. */
  readonly position: string;
  /** The position is a sync of a change feed catch-up that goes on after it (absent: false; delivery.ts). */
  readonly isCatchingUp?: boolean;
  /** The replay last applied (StoredEndpoint.replay.number). */
  readonly replayed: number;
  /** Failed attempts at the event now being sent, and when the next is due; null when none failed. */
  readonly failing: EndpointView["failing"];
  /** The last attempts, newest first. */
  readonly deliveries: readonly Attempt[];
}

export function viewOf(endpoint: StoredEndpoint, progress: Progress | undefined): EndpointView {
  const failing = progress?.failing ?? null;
  const { secret: _secret, start, replay: _replay, ...shown } = endpoint;
  return {
    ...shown,
    state: !endpoint.enabled ? "disabled" : failing ? "retrying" : "active",
    position: progress?.position ?? start,
    failing: endpoint.enabled ? failing : null,
    last_attempt: progress?.deliveries[0] ?? null,
  };
}

const FORM = `Send {"url": "https://…", "entities": ["Task"], "events": ["create", "update", "delete", "restore"], "q": {<filter>}, "description": "…", "enabled": true}; only url is required.`;
const FIELDS = ["url", "entities", "events", "q", "description", "enabled"] as const;

/** The fields a create or a change sets, checked against the schema; url is checked by target.ts. */
export interface EndpointFields {
  url?: unknown;
  entities?: readonly string[] | null;
  events?: readonly WebhookEventType[];
  q?: Record<string, unknown> | null;
  description?: string;
  enabled?: boolean;
}

export function readEndpointFields(body: unknown, schema: Schema, isCreate: boolean): EndpointFields {
  if (!isPlainObject(body)) throw invalidJson(`The body must be a JSON object. ${FORM}`);
  const other = Object.keys(body).find((name) => !(FIELDS as readonly string[]).includes(name));
  if (other !== undefined) throw new ApiError(400, "unknown_field", `Unknown field "${other}". ${FORM}`, { field: other, fields: FIELDS });
  if (isCreate && body.url === undefined) throw invalidField("url", `is required: where to POST each change. ${FORM}`);
  const fields: EndpointFields = {};
  if (body.url !== undefined) fields.url = body.url;
  if (body.entities !== undefined) fields.entities = entitiesOf(body.entities, schema);
  if (body.events !== undefined) fields.events = eventsOf(body.events);
  if (body.description !== undefined) {
    if (typeof body.description !== "string" || body.description.length > MAX_DESCRIPTION_CHARS) throw invalidField("description", `must be text of at most ${MAX_DESCRIPTION_CHARS} characters.`);
    fields.description = body.description;
  }
  if (body.enabled !== undefined) {
    if (typeof body.enabled !== "boolean") throw invalidField("enabled", `must be true or false (got ${JSON.stringify(body.enabled)}).`);
    fields.enabled = body.enabled;
  }
  if (body.q !== undefined) fields.q = body.q === null ? null : (body.q as Record<string, unknown>);
  return fields;
}

/** q must be a filter every entity followed understands (as the change feed's q is checked). */
export function checkFilter(q: Record<string, unknown> | null, entities: readonly string[] | null, schema: Schema): void {
  if (q === null) return;
  if (!isPlainObject(q)) throw invalidJson(`q must be a filter object, such as {"status":"done"}, or null.`, { field: "q" });
  for (const entity of entities ?? [...schema.entities.keys()]) parseFilter(schema.entities.get(entity)!, q, { mayUseCreatedBy: true });
}

function entitiesOf(value: unknown, schema: Schema): readonly string[] | null {
  if (value === null) return null;
  const names = [...schema.entities.keys()];
  if (!Array.isArray(value) || value.length === 0 || value.some((name) => typeof name !== "string")) {
    throw invalidField("entities", `must be a non-empty array of entity names, such as ${JSON.stringify(names.slice(0, 2))}, or null for every entity.`);
  }
  const unknown = value.find((name) => !schema.entities.has(name));
  if (unknown !== undefined) throw invalidField("entities", `names ${JSON.stringify(unknown)}, which is not declared; the entities are ${names.join(", ")}.`, { entities: names });
  return [...new Set(value as string[])];
}

function eventsOf(value: unknown): readonly WebhookEventType[] {
  if (!Array.isArray(value) || value.length === 0 || value.some((type) => !(ALL_EVENT_TYPES as readonly unknown[]).includes(type))) {
    throw invalidField("events", `must be a non-empty array of ${ALL_EVENT_TYPES.map((type) => `"${type}"`).join(", ")} (got ${JSON.stringify(value)}).`);
  }
  return ALL_EVENT_TYPES.filter((type) => value.includes(type));
}
