// The change feed's wire forms (docs/change-feed.md): event ids ("seq.index"), an event as the JSON object
// clients get (shaped for the caller's key kind, as records are), and as a Server-Sent Event.

import { invalidCursor } from "../errors.ts";
import type { Caller } from "../keys/caller.ts";
import { recordJson } from "../records/serialize.ts";
import type { EntityDef } from "../schema/fields.ts";
import { FEED_START, positionOf, type FeedEvent, type FeedPosition, type FeedState } from "../store/store.ts";

/** `since=12` resumes after every event of batch 12: as if after an index no batch reaches. */
const WHOLE_BATCH = Number.MAX_SAFE_INTEGER;
const EVENT_ID_RE = /^(\d{1,16})(?:\.(\d{1,10}))?$/;

export function eventIdOf(position: FeedPosition): string {
  return position.index === WHOLE_BATCH ? String(position.seq) : `${position.seq}.${position.index}`;
}

/**
 * The resume point `text` names (`parameter`: since or Last-Event-ID), checked against what the
 * store has issued: a malformed id, or one from the future, is invalid_cursor.
 */
export function parseEventId(text: string, parameter: string, state: FeedState): FeedPosition {
  const match = EVENT_ID_RE.exec(text.trim());
  const how = `Resume from an event id this feed sent (its "id:" line, or a reply's "next"), or from 0 to catch up from the start.`;
  if (!match) throw invalidCursor(`${parameter} "${text}" is not an event id: those are <seq>.<index>, such as 12.0. ${how}`, parameter);
  const position = { seq: Number(match[1]), index: match[2] === undefined ? WHOLE_BATCH : Number(match[2]) };
  if (!Number.isSafeInteger(position.seq)) throw invalidCursor(`${parameter} "${text}" is not an event id of this feed. ${how}`, parameter);
  const { issued } = state;
  const isFuture = position.seq > issued.seq || (position.seq === issued.seq && position.index !== WHOLE_BATCH && position.index > issued.index);
  if (isFuture) throw invalidCursor(`${parameter} "${text}" was never issued by this store: its newest event is ${eventIdOf(issued)}. Was the id taken from another server? ${how}`, parameter);
  return position.seq === 0 && position.index === WHOLE_BATCH ? FEED_START : position;
}

/** The event as clients see it: {"type","entity","id","data","timestamp","seq",...,"event_id"}. */
export function changeJson(entity: EntityDef, event: FeedEvent, caller: Caller): string {
  const { row, type } = event;
  const deleted = type === "sync" ? `,"deleted":${row.deleted}` : "";
  return (
    `{"type":"${type}","entity":${JSON.stringify(entity.name)},"id":${JSON.stringify(row.id)},"data":${recordJson(entity, row, caller, false)},` +
    `"timestamp":${JSON.stringify(row.data.updated_date ?? null)},"seq":${row.seq ?? 0}${deleted},"event_id":"${eventIdOf(positionOf(row))}"}`
  );
}

/** One Server-Sent Event: its id resumes the stream after it. */
export function sseFrame(event: FeedEvent, json: string): string {
  return `id: ${eventIdOf(positionOf(event.row))}\nevent: ${event.type}\ndata: ${json}\n\n`;
}
