// Every endpoint on one screen (SPEC §4, CONTRACT §4). Handlers are synchronous: the server has
// read the body before calling them, and a write's rows must be stored in the same tick they were
// built from the current state (see Store.write).

import { filterRequired, forbidden, invalidJson } from "../errors.ts";
import type { Caller } from "../records/caller.ts";
import { bulkCreate, bulkUpdate, deleteMany, updateMany, upsert } from "../records/batch.ts";
import type { Change, Records } from "../records/records.ts";
import { recordJson, recordJsonWith, recordsJson } from "../records/serialize.ts";
import type { EntityDef } from "../schema/fields.ts";
import { isPlainObject } from "../schema/load.ts";
import type { Row } from "../store/store.ts";
import { parseFilter } from "../query/filter.ts";
import { checkIfMatch, etagOf, isNotModified } from "./conditional.ts";
import { accessOf, nextPageQuery, parseCountParams, parseListParams } from "./list-params.ts";
import { jsonReply, type Reply } from "./response.ts";
import { requireBody } from "./request.ts";
import { Router, type Params } from "./router.ts";

export interface RequestContext {
  readonly records: Records;
  readonly caller: Caller;
  readonly params: Params;
  readonly query: URLSearchParams;
  /** A request header by its lower-case name. */
  header(name: string): string | undefined;
  /** The parsed JSON body of a write; undefined when it had none. */
  readonly body: unknown;
  /** Scheme, host and path of this request, for Link headers. */
  readonly url: string;
  readonly documents: { readonly entities: string; readonly openApi: string };
}

export interface Outcome {
  readonly reply: Reply;
  /** Rows to store before answering. */
  readonly change?: Change<unknown>;
}

export type Handler = (ctx: RequestContext) => Outcome;

const E = "/api/entities/:entity";

export function buildRouter(): Router<Handler> {
  return new Router<Handler>()
    .add("GET", "/api/entities", (ctx) => ({ reply: jsonReply(200, ctx.documents.entities) }))
    .add("GET", "/api/openapi.json", (ctx) => ({ reply: jsonReply(200, ctx.documents.openApi) }))
    .add("GET", E, listRecords)
    .add("POST", E, createRecord)
    .add("DELETE", E, deleteManyRecords)
    .add("GET", `${E}/count`, countRecords)
    .add("POST", `${E}/bulk`, bulkCreateRecords)
    .add("PUT", `${E}/bulk`, bulkUpdateRecords)
    .add("POST", `${E}/upsert`, upsertRecords)
    .add("PATCH", `${E}/update-many`, updateManyRecords)
    .add("GET", `${E}/:id`, readRecord)
    .add("PUT", `${E}/:id`, updateRecord)
    .add("PATCH", `${E}/:id`, updateRecord)
    .add("DELETE", `${E}/:id`, deleteRecord)
    .add("PUT", `${E}/:id/restore`, restoreRecord);
}

function listRecords(ctx: RequestContext): Outcome {
  const entity = ctx.records.entity(ctx.params.entity!);
  const plan = parseListParams(entity, ctx.query, ctx.caller);
  const answer = ctx.records.list(entity, plan.request);
  const headers: Record<string, string> = {};
  const next = nextPageQuery(plan, answer, ctx.query);
  if (next !== null) {
    const cursor = new URLSearchParams(next).get("cursor");
    if (cursor) headers["X-Next-Cursor"] = cursor;
    headers.Link = `<${ctx.url}?${next}>; rel="next"`;
  }
  if (answer.total !== null) headers["X-Total-Count"] = String(answer.total);
  return { reply: jsonReply(200, recordsJson(entity, answer.rows, ctx.caller, plan.fields), headers) };
}

function countRecords(ctx: RequestContext): Outcome {
  const entity = ctx.records.entity(ctx.params.entity!);
  const count = ctx.records.count(entity, parseCountParams(entity, ctx.query, ctx.caller));
  return { reply: jsonReply(200, `{"count":${count}}`) };
}

function readRecord(ctx: RequestContext): Outcome {
  const entity = ctx.records.entity(ctx.params.entity!);
  const row = ctx.records.read(entity, ctx.params.id!);
  if (isNotModified(ctx.header("if-none-match"), row)) return { reply: { status: 304, headers: { ETag: etagOf(row) }, body: null } };
  return { reply: recordReply(200, ctx, entity, row) };
}

function createRecord(ctx: RequestContext): Outcome {
  const entity = ctx.records.entity(ctx.params.entity!);
  const change = ctx.records.create(entity, requireBody(ctx.body, `{"${entity.fieldNames[0] ?? "field"}": ...}`), ctx.caller);
  const location = `/api/entities/${encodeURIComponent(entity.name)}/${change.result.id}`;
  return { reply: recordReply(201, ctx, entity, change.result, location), change };
}

function updateRecord(ctx: RequestContext): Outcome {
  const entity = ctx.records.entity(ctx.params.entity!);
  const row = ctx.records.read(entity, ctx.params.id!);
  checkIfMatch(ctx.header("if-match"), row);
  const change = ctx.records.update(entity, row, requireBody(ctx.body, `{"<field>": <new value>}`));
  return { reply: recordReply(200, ctx, entity, change.result), change };
}

function deleteRecord(ctx: RequestContext): Outcome {
  const entity = ctx.records.entity(ctx.params.entity!);
  const row = ctx.records.read(entity, ctx.params.id!);
  checkIfMatch(ctx.header("if-match"), row);
  const change = ctx.records.remove(entity, row);
  const body = JSON.stringify({ id: row.id, deleted: true });
  return { reply: jsonReply(200, body, { ETag: etagOf(change.result) }), change };
}

function restoreRecord(ctx: RequestContext): Outcome {
  requireSecret(ctx, "restore records");
  const entity = ctx.records.entity(ctx.params.entity!);
  const change = ctx.records.restore(entity, ctx.params.id!);
  const { row, restored } = change.result;
  const body = recordJsonWith(entity, row, ctx.caller, { restored });
  return { reply: jsonReply(200, body, { ETag: etagOf(row) }), change };
}

function bulkCreateRecords(ctx: RequestContext): Outcome {
  const entity = ctx.records.entity(ctx.params.entity!);
  const change = bulkCreate(ctx.records, entity, requireBody(ctx.body, "[{...}, {...}]"), ctx.caller);
  return { reply: jsonReply(201, recordsJson(entity, change.result, ctx.caller, null)), change };
}

function bulkUpdateRecords(ctx: RequestContext): Outcome {
  const entity = ctx.records.entity(ctx.params.entity!);
  const change = bulkUpdate(ctx.records, entity, requireBody(ctx.body, `[{"id": "...", "<field>": <new value>}]`));
  return { reply: jsonReply(200, recordsJson(entity, change.result, ctx.caller, null)), change };
}

function upsertRecords(ctx: RequestContext): Outcome {
  const entity = ctx.records.entity(ctx.params.entity!);
  const change = upsert(ctx.records, entity, requireBody(ctx.body, `{"match": ["<field>"], "records": [...]}`), ctx.caller);
  const body = `[${change.result.map(({ row, created }) => recordJsonWith(entity, row, ctx.caller, { created })).join(",")}]`;
  return { reply: jsonReply(200, body), change };
}

function updateManyRecords(ctx: RequestContext): Outcome {
  requireSecret(ctx, "use update-many");
  const entity = ctx.records.entity(ctx.params.entity!);
  const example = `{"q": {"status": "todo"}, "set": {"status": "done"}}`;
  const body = requireBody(ctx.body, example);
  if (!isPlainObject(body)) throw invalidJson(`The body must be an object such as ${example}.`);
  if (body.q === undefined) throw filterRequired("update-many");
  const change = updateMany(ctx.records, entity, parseFilter(entity, body.q, accessOf(ctx.caller)), body.set);
  return { reply: jsonReply(200, JSON.stringify(change.result)), change };
}

function deleteManyRecords(ctx: RequestContext): Outcome {
  requireSecret(ctx, "use delete-many");
  const entity = ctx.records.entity(ctx.params.entity!);
  const filter = parseCountParams(entity, ctx.query, ctx.caller);
  const change = deleteMany(ctx.records, entity, filter);
  return { reply: jsonReply(200, JSON.stringify(change.result)), change };
}

function recordReply(status: number, ctx: RequestContext, entity: EntityDef, row: Row, location?: string): Reply {
  const etag = etagOf(row);
  return jsonReply(status, recordJson(entity, row, ctx.caller), location === undefined ? { ETag: etag } : { ETag: etag, Location: location });
}

function requireSecret(ctx: RequestContext, action: string): void {
  if (ctx.caller.kind !== "secret") throw forbidden(`A publishable key cannot ${action}; use a secret key.`);
}
