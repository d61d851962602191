// Every endpoint on one screen (docs/api.md, docs/base44-sdk.md): the route table, and one operation
// per route. Operations return typed Results (results.ts); each mount (mounts.ts) reads the requests
// and presents the results of its prefix, so both prefixes share every operation. The table also
// feeds the OpenAPI document. An operation answers at once when the store does (a read from
// memory), or later; a write's Change names what it expects of the store, which refuses it if
// another write came first (Store.commit), and the server then runs the operation again.

import { tooManyStreams } from "../errors.ts";
import type { AccessOperation } from "../schema/fields.ts";
import { parseAggregateSpec } from "../records/aggregate-spec.ts";
import { bulkCreate, bulkUpdate, deleteMany, updateMany, upsert } from "../records/batch.ts";
import type { Change } from "../records/records.ts";
import { checkIfMatch, isNotModified } from "./conditional.ts";
import { accessOf, nextDistinctPage, nextPage, parseCountParams, parseDistinctParams, parseListParams, type ListDialect } from "./list-params.ts";
import type { Mount } from "./mounts.ts";
import { present } from "./presenters.ts";
import { jsonReply, type Reply } from "./response.ts";
import { requireBody } from "./request.ts";
import type { Result } from "./results.ts";
import { Router } from "./router.ts";
import { checkEntityAccess, checkGuard, type Handler, type RequestContext } from "./context.ts";
import { then, type Maybe } from "../maybe.ts";
import { eventIdOf } from "../feed/events.ts";
import type { EntityDef } from "../schema/fields.ts";
import { parseFeedRequest } from "./feed-params.ts";
import { SseSink } from "./sse-sink.ts";
import { readExport } from "./export-stream.ts";
import { importRecords } from "../records/import.ts";
import { importFile } from "../records/import-file.ts";
import { narrowedFilter } from "../rules/grants.ts";

/** What an operation found or built, and the rows to store for it. */
interface Done {
  readonly result: Result;
  readonly change?: Change<unknown>;
}

type Operation = (ctx: RequestContext, mount: Mount) => Maybe<Done>;

export type OperationName = keyof typeof OPERATIONS;

export interface EntityRoute {
  readonly method: string;
  /** The path under the mount's collection ("" for the collection itself). */
  readonly path: string;
  readonly operation: OperationName;
  /**
   * What the caller must be allowed to do with the entity (its declaration's "access", docs/entities.md),
   * checked here for every route, so that no route can forget it.
   */
  readonly access: readonly AccessOperation[];
  /** Also takes a file as multipart/form-data (the SDK's importEntities, docs/base44-sdk.md). */
  readonly takesUpload?: true;
  /**
   * Work whose memory grows with the records it touches, refused 503 server_busy while memory is
   * near --max-memory (docs/operating.md, "Memory"). Lists of many records and distinct are heavy by
   * their parameters (readList, readDistinct), and any write by the size of its body (server.ts).
   */
  readonly heavy?: true;
  /** The body holds one record's values, so it is refused past twice --max-record-size before it is parsed. */
  readonly oneRecord?: true;
  /** For a secret key only: what a publishable key is refused (Guard). */
  readonly secret?: string;
  /**
   * Open to every key after all where the entity declares this rule: it then bounds what the route
   * touches to what the caller may change (docs/rules.md).
   */
  readonly unlessRuled?: "update" | "delete";
}

/** Every mount serves these; a mount with `pages` serves v2/list too. */
export const ENTITY_ROUTES: readonly EntityRoute[] = [
  { method: "GET", path: "", operation: "list", access: ["read"] },
  { method: "POST", path: "", operation: "create", access: ["create"], oneRecord: true },
  { method: "DELETE", path: "", operation: "deleteMany", access: ["delete"], heavy: true, secret: "use delete-many", unlessRuled: "delete" },
  { method: "GET", path: "/count", operation: "count", access: ["read"] },
  { method: "POST", path: "/aggregate", operation: "aggregate", access: ["read"], heavy: true },
  { method: "GET", path: "/distinct/:field", operation: "distinct", access: ["read"] },
  { method: "POST", path: "/bulk", operation: "bulkCreate", access: ["create"], heavy: true },
  { method: "POST", path: "/import", operation: "importRecords", access: ["create"], takesUpload: true, heavy: true, secret: "import records with their ids and timestamps" },
  { method: "PUT", path: "/bulk", operation: "bulkUpdate", access: ["update"], heavy: true },
  { method: "POST", path: "/upsert", operation: "upsert", access: ["create", "update"], heavy: true },
  { method: "PATCH", path: "/update-many", operation: "updateMany", access: ["update"], heavy: true, secret: "use update-many", unlessRuled: "update" },
  { method: "GET", path: "/:id", operation: "get", access: ["read"] },
  { method: "PUT", path: "/:id", operation: "update", access: ["update"], oneRecord: true },
  { method: "PATCH", path: "/:id", operation: "patch", access: ["update"], oneRecord: true },
  { method: "DELETE", path: "/:id", operation: "delete", access: ["delete"] },
  { method: "PUT", path: "/:id/restore", operation: "restore", access: ["update"], secret: "restore records" },
  { method: "GET", path: "/changes", operation: "changes", access: ["read"] },
  { method: "GET", path: "/export", operation: "export", access: ["read"], heavy: true },
];

const PAGE_ROUTE: EntityRoute = { method: "GET", path: "/v2/list", operation: "listPage", access: ["read"] };

/** The routes a mount serves, in table order. */
export function routesOf(mount: Mount): EntityRoute[] {
  return mount.pages ? [...ENTITY_ROUTES, PAGE_ROUTE] : [...ENTITY_ROUTES];
}

export function buildRouter(mounts: readonly Mount[]): Router<Handler> {
  const router = new Router<Handler>()
    // X-Api-Key-Kind: a client (the data browser) learns its key's kind without asking for a refusal.
    .add("GET", "/api/entities", (ctx) => ({ reply: jsonReply(200, ctx.documents.entities, { "X-Api-Key-Kind": ctx.caller.kind }) }))
    .add("GET", "/api/openapi.json", (ctx) => ({ reply: jsonReply(200, ctx.documents.openApi) }));
  for (const mount of mounts) {
    // Every entity's changes (entities= narrows), beside the mount's entities: /api/changes.
    router.add("GET", mount.collection.replace("/entities/:entity", "/changes"), (ctx) => {
      mount.checkPath(ctx);
      return then(readChanges(ctx, null), (reply) => ({ reply }));
    });
    for (const route of routesOf(mount)) {
      const operation: Operation = OPERATIONS[route.operation];
      // A secret route's guard is checked after the entity's "access", whose refusal says more.
      const refusal = route.secret === undefined ? undefined : `A publishable key cannot ${route.secret}; use a secret key.`;
      const handler: Handler = (ctx) => {
        mount.checkPath(ctx);
        const entity = ctx.records.entity(ctx.params.entity!);
        checkEntityAccess(ctx.caller, entity, route.access);
        if (refusal !== undefined && !(route.unlessRuled !== undefined && entity.rls?.[route.unlessRuled] !== undefined)) checkGuard(ctx.caller, "secret", refusal);
        return then(operation(ctx, mount), ({ result, change }) => ({ reply: present(mount.presenter, result, ctx), change }));
      };
      router.add(route.method, mount.collection + route.path, Object.assign(handler, { takesUpload: route.takesUpload === true, isHeavy: route.heavy === true, takesOneRecord: route.oneRecord === true }));
    }
  }
  return router;
}

const OPERATIONS = {
  list(ctx, mount) {
    return then(readList(ctx, mount.list), ({ entity, rows, fields, next, total }) => ({
      result: { type: "records", entity, rows, fields, created: false, next, total, isPage: true },
    }));
  },
  async listPage(ctx, mount) {
    const field = ctx.query.get("distinct");
    if (field !== null) {
      // The SDK's list({ distinct }): the native distinct's values and cursor, as a page.
      const query = new URLSearchParams(ctx.query);
      query.delete("distinct");
      const { values, next } = await readDistinct(ctx, field, query);
      return { result: { type: "page", items: { values }, nextCursor: next?.cursor ?? null } };
    }
    const { entity, rows, fields, next } = await readList(ctx, mount.pages!);
    return { result: { type: "page", items: { entity, rows, fields }, nextCursor: next?.cursor ?? null } };
  },
  async count(ctx) {
    const entity = ctx.records.entity(ctx.params.entity!);
    return { result: { type: "count", count: await ctx.records.count(entity, parseCountParams(entity, ctx.query, ctx.caller)) } };
  },
  async aggregate(ctx) {
    const entity = ctx.records.entity(ctx.params.entity!);
    const spec = parseAggregateSpec(entity, ctx.body, accessOf(ctx.caller, entity));
    const narrowed = { ...spec, filter: narrowedFilter(entity, ctx.caller, spec.filter) };
    return { result: { type: "aggregated", ...(await ctx.records.aggregate(entity, narrowed)) } };
  },
  async distinct(ctx) {
    const { values, next } = await readDistinct(ctx, ctx.params.field!, ctx.query);
    return { result: { type: "values", values, next } };
  },
  get(ctx) {
    const entity = ctx.records.entity(ctx.params.entity!);
    return then(ctx.records.view(entity, ctx.params.id!, ctx.caller), (view): Done => {
      if (isNotModified(ctx.header("if-none-match"), view.etag)) return { result: { type: "notModified", etag: view.etag } };
      return { result: { type: "view", view } };
    });
  },
  create(ctx) {
    const entity = ctx.records.entity(ctx.params.entity!);
    const change = ctx.records.create(entity, requireBody(ctx.body, `{"${entity.fieldNames[0] ?? "field"}": ...}`), ctx.caller);
    return { result: { type: "record", entity, row: change.result, created: true }, change };
  },
  update: updateRecord,
  patch: updateRecord,
  async delete(ctx) {
    const entity = ctx.records.entity(ctx.params.entity!);
    const row = await ctx.records.readable(entity, ctx.params.id!, ctx.caller);
    checkIfMatch(ctx.header("if-match"), row);
    const change = ctx.records.remove(entity, row, ctx.caller);
    return { result: { type: "deleted", row: change.result }, change };
  },
  async restore(ctx) {
    const entity = ctx.records.entity(ctx.params.entity!);
    const change = await ctx.records.restore(entity, ctx.params.id!);
    return { result: { type: "restored", entity, ...change.result }, change };
  },
  bulkCreate(ctx) {
    const entity = ctx.records.entity(ctx.params.entity!);
    const change = bulkCreate(ctx.records, entity, requireBody(ctx.body, "[{...}, {...}]"), ctx.caller);
    return { result: { type: "records", entity, rows: change.result, fields: null, created: true, next: null, total: null }, change };
  },
  async importRecords(ctx) {
    const entity = ctx.records.entity(ctx.params.entity!);
    const change = ctx.upload
      ? await importFile(ctx.records, entity, ctx.upload, ctx.caller)
      : await importRecords(ctx.records, entity, requireBody(ctx.body, `[{"id": "...", "created_date": "...", ...}]`), ctx.caller);
    return { result: { type: "imported", entity, rows: change.result }, change };
  },
  async bulkUpdate(ctx) {
    const entity = ctx.records.entity(ctx.params.entity!);
    const change = await bulkUpdate(ctx.records, entity, requireBody(ctx.body, `[{"id": "...", "<field>": <new value>}]`), ctx.caller);
    return { result: { type: "records", entity, rows: change.result, fields: null, created: false, next: null, total: null }, change };
  },
  async upsert(ctx, mount) {
    const entity = ctx.records.entity(ctx.params.entity!);
    const { match, records, keyName } = mount.upsertRequest(ctx);
    const change = await upsert(ctx.records, entity, match, records, ctx.caller, keyName);
    return { result: { type: "upserted", entity, results: change.result }, change };
  },
  async updateMany(ctx, mount) {
    const entity = ctx.records.entity(ctx.params.entity!);
    const { filter, update } = mount.updateManyRequest(ctx, entity);
    const change = await updateMany(ctx.records, entity, filter, update, ctx.caller);
    return { result: { type: "updatedMany", ids: change.result.ids }, change };
  },
  changes(ctx) {
    return then(readChanges(ctx, ctx.records.entity(ctx.params.entity!)), (reply): Done => ({ result: { type: "reply", reply } }));
  },
  export(ctx) {
    return then(readExport(ctx, ctx.records.entity(ctx.params.entity!)), (reply): Done => ({ result: { type: "reply", reply } }));
  },
  async deleteMany(ctx, mount) {
    const entity = ctx.records.entity(ctx.params.entity!);
    const change = await deleteMany(ctx.records, entity, mount.deleteManyFilter(ctx, entity), ctx.caller);
    return { result: { type: "deletedMany", ids: change.result.ids }, change };
  },
} satisfies Record<string, Operation>;

/**
 * The change feed of `entity` (null: of every entity the key may read): an SSE stream with Accept:
 * text/event-stream, else a JSON page `{ changes, next, oldest }`, a long poll with wait.
 */
async function readChanges(ctx: RequestContext, entity: EntityDef | null): Promise<Reply> {
  const { feed } = ctx;
  const request = parseFeedRequest(ctx.records.schema, entity, ctx.caller, ctx.query, (name) => ctx.header(name), await feed.state());
  if (request.stream) {
    if (feed.isFull) throw tooManyStreams(feed.limits.maxStreams);
    const headers = { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache", "X-Accel-Buffering": "no" };
    return { status: 200, headers, body: null, stream: (res) => feed.openStream(new SseSink(res, ctx.records.schema), request.sub, request.since) };
  }
  if (request.waitMs > 0 && feed.isFull) throw tooManyStreams(feed.limits.maxStreams);
  const { events, next, oldest } = await feed.read(request.sub, request.since, request.limit, request.waitMs);
  const changes = events.map((event) => feed.changeJson(event, request.sub)).join(",");
  return jsonReply(200, `{"changes":[${changes}],"next":"${eventIdOf(next)}","oldest":${oldest ? `"${eventIdOf(oldest)}"` : "null"}}`);
}

/** A list of more records than this a page is heavy work (EntityRoute.heavy). */
const HEAVY_LIST_RECORDS = 1000;

/** A page of the entity's records as `dialect` reads the list parameters, and where the next starts. */
function readList(ctx: RequestContext, dialect: ListDialect) {
  const entity = ctx.records.entity(ctx.params.entity!);
  const plan = parseListParams(entity, ctx.query, ctx.caller, dialect);
  if (plan.request.limit > HEAVY_LIST_RECORDS) ctx.admitHeavy();
  return then(ctx.records.list(entity, plan.request), (answer) => ({
    entity,
    rows: answer.rows,
    fields: plan.fields,
    next: nextPage(plan, answer, ctx.query),
    total: answer.total,
  }));
}

/** A page of a field's distinct values (parameters q, limit, cursor), and where the next starts. */
async function readDistinct(ctx: RequestContext, field: string, query: URLSearchParams) {
  const entity = ctx.records.entity(ctx.params.entity!);
  const plan = parseDistinctParams(entity, field, query, ctx.caller);
  // A distinct reads every matching record, whatever its limit: heavy on either prefix.
  ctx.admitHeavy();
  const answer = await ctx.records.distinct(entity, plan.request);
  return { values: answer.values, next: nextDistinctPage(plan, answer) };
}

async function updateRecord(ctx: RequestContext): Promise<Done> {
  const entity = ctx.records.entity(ctx.params.entity!);
  const row = await ctx.records.readable(entity, ctx.params.id!, ctx.caller);
  checkIfMatch(ctx.header("if-match"), row);
  const change = ctx.records.update(entity, row, requireBody(ctx.body, `{"<field>": <new value>}`), ctx.caller);
  return { result: { type: "record", entity, row: change.result, created: false }, change };
}

