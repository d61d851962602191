// A mount is one URL prefix the entity routes are served under, with the request shapes and the
// presenter of its clients: /api/entities/<E> for tabula's own API (docs/api.md), and
// /api/apps/<appId>/entities/<E> for @base44/sdk 0.8.x (docs/base44-sdk.md). Operations (routes.ts) are
// shared; what differs is read here and presented by presenters.ts.

import { ApiError, filterRequired, invalidJson } from "../errors.ts";
import type { FieldUpdate } from "../records/batch.ts";
import type { EntityDef } from "../schema/fields.ts";
import { isPlainObject } from "../schema/load.ts";
import { parseFilter } from "../query/filter.ts";
import type { FilterNode } from "../query/filter-tree.ts";
import { accessOf, DEFAULT_LIMIT, MAX_LIMIT_PUBLISHABLE, MAX_LIMIT_SECRET, NATIVE_LIST, parseCountParams, type ListDialect } from "./list-params.ts";
import { nativePresenter, sdkPresenter, type Presenter } from "./presenters.ts";
import type { RequestContext } from "./context.ts";

export interface Mount {
  /** What the mount serves, for the OpenAPI document's tags and summaries. */
  readonly name: "native" | "sdk";
  /** The route pattern of an entity's collection; it ends with /:entity. */
  readonly collection: string;
  readonly presenter: Presenter;
  /** How the collection's GET reads its list parameters. */
  readonly list: ListDialect;
  /** How GET <collection>/v2/list reads them; null where the route is not served. */
  readonly pages: ListDialect | null;
  /** Refuses a request whose path names an app this server is not (--app-id). */
  checkPath(ctx: RequestContext): void;
  deleteManyFilter(ctx: RequestContext, entity: EntityDef): FilterNode | null;
  updateManyRequest(ctx: RequestContext, entity: EntityDef): { filter: FilterNode | null; update: FieldUpdate };
  upsertRequest(ctx: RequestContext): { match: unknown; records: unknown; keyName: string };
}

export const nativeMount: Mount = {
  name: "native",
  collection: "/api/entities/:entity",
  presenter: nativePresenter,
  list: NATIVE_LIST,
  pages: null,
  checkPath: () => {},
  deleteManyFilter: (ctx, entity) => parseCountParams(entity, ctx.query, ctx.caller),
  updateManyRequest(ctx, entity) {
    const example = `{"q": {"status": "todo"}, "set": {"status": "done"}}`;
    const body = bodyObject(ctx, example);
    if (body.q === undefined) throw filterRequired("update-many");
    const filter = parseFilter(entity, body.q, accessOf(ctx.caller, entity));
    for (const name of Object.keys(body)) {
      if (!["q", "set", "inc", "unset"].includes(name)) throw invalidJson(`Unknown member "${name}": the body takes q, set, inc and unset, as in ${example}.`);
    }
    return { filter, update: { set: body.set, inc: body.inc, unset: body.unset, names: { set: "set", inc: "inc", unset: "unset" } } };
  },
  upsertRequest(ctx) {
    const body = bodyObject(ctx, `{"match": ["<field>"], "records": [...]}`);
    return { match: body.match, records: body.records, keyName: "match" };
  },
};

const SDK_UPDATE_OPERATORS = ["$set", "$inc", "$unset"];

/** The SDK's prefix; with `appId`, another app id in the path is 404 app_not_found. */
export function sdkMount(appId: string | null): Mount {
  return {
    name: "sdk",
    collection: "/api/apps/:appId/entities/:entity",
    presenter: sdkPresenter,
    // The SDK documents list() and filter() as returning up to 5,000 records by default.
    list: {
      parameters: ["q", "search", "sort", "sort_by", "fields", "limit", "cursor", "skip", "count", "deleted"],
      sortParameters: ["sort", "sort_by"],
      defaultLimit: (caller) => (caller.kind === "secret" ? MAX_LIMIT_SECRET : MAX_LIMIT_PUBLISHABLE),
      cursorsForEverySort: true,
    },
    pages: {
      parameters: ["q", "search", "sort", "sort_by", "fields", "limit", "cursor", "deleted"],
      sortParameters: ["sort", "sort_by"],
      defaultLimit: () => DEFAULT_LIMIT,
      cursorsForEverySort: true,
    },
    checkPath(ctx) {
      const given = ctx.params.appId!;
      if (appId !== null && given !== appId) {
        throw new ApiError(404, "app_not_found", `This server serves the app "${appId}", not "${given}"; use /api/apps/${appId}/entities/<Entity> (or the appId given to createClient must be "${appId}").`, { appId: given });
      }
    },
    // deleteMany(query) sends the filter itself as the JSON body.
    deleteManyFilter(ctx, entity) {
      if (ctx.body === undefined) throw filterRequired("delete-many");
      return parseFilter(entity, ctx.body, accessOf(ctx.caller, entity));
    },
    updateManyRequest(ctx, entity) {
      const example = `{"query": {"status": "todo"}, "data": {"$set": {"status": "done"}}}`;
      const body = bodyObject(ctx, example);
      if (body.query === undefined) throw filterRequired("update-many");
      const filter = parseFilter(entity, body.query, accessOf(ctx.caller, entity));
      const data = body.data;
      if (!isPlainObject(data)) throw invalidJson(`"data" must be an object of update operators, as in ${example}.`);
      for (const name of Object.keys(data)) {
        if (!SDK_UPDATE_OPERATORS.includes(name)) {
          throw invalidJson(`Update operator "${name}" is not supported; use ${SDK_UPDATE_OPERATORS.join(", ")}, as in ${example}.`, { operator: name });
        }
      }
      return { filter, update: { set: data.$set, inc: data.$inc, unset: data.$unset, names: { set: "$set", inc: "$inc", unset: "$unset" } } };
    },
    upsertRequest(ctx) {
      const body = bodyObject(ctx, `{"records": [...], "key": "<field>"}`);
      // The SDK's key is one field name or a list of them.
      return { match: typeof body.key === "string" ? [body.key] : body.key, records: body.records, keyName: "key" };
    },
  };
}

function bodyObject(ctx: RequestContext, example: string): Record<string, unknown> {
  if (ctx.body === undefined) throw invalidJson(`This request needs a JSON body, such as ${example}.`);
  if (!isPlainObject(ctx.body)) throw invalidJson(`The body must be an object such as ${example}.`);
  return ctx.body;
}
