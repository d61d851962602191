// Presenters: how each URL prefix answers the typed Results of the operations. The native one
// follows docs/api.md (bare arrays, paging in headers, { count, ids }); the SDK one differs only
// where @base44/sdk's types expect another shape (docs/base44-sdk.md), and borrows the rest.

import { etagOf, recordJson, recordJsonWith, recordsJson } from "../records/serialize.ts";
import type { Caller } from "../keys/caller.ts";
import type { Row } from "../store/store.ts";
import { jsonReply, type Reply } from "./response.ts";
import { MAX_PAGE_CHARS } from "./list-params.ts";
import type { NextPage, PageItems, Result } from "./results.ts";

/** What a presenter needs of the request besides the result. */
export interface PresentContext {
  readonly caller: Caller;
  /** Scheme, host and path of this request, for Link headers. */
  readonly url: string;
  /** The request's path: a create's Location is the collection's path plus the new id. */
  readonly path: string;
}

type ResultOf<T extends Result["type"]> = Extract<Result, { type: T }>;

export type Presenter = { readonly [T in Result["type"]]: (result: ResultOf<T>, ctx: PresentContext) => Reply };

export function present(presenter: Presenter, result: Result, ctx: PresentContext): Reply {
  return (presenter[result.type] as (result: Result, ctx: PresentContext) => Reply)(result, ctx);
}

export const nativePresenter: Presenter = {
  record: ({ entity, row, created }, ctx) => {
    const json = recordJson(entity, row, ctx.caller);
    if (!created) return jsonReply(200, json, { ETag: etagOf(row) });
    return jsonReply(201, json, { ETag: etagOf(row), Location: `${ctx.path.replace(/\/$/, "")}/${row.id}` });
  },
  view: ({ view }) => jsonReply(200, view.json, { ETag: view.etag }, view.bytes),
  notModified: ({ etag }) => ({ status: 304, headers: { ETag: etag }, body: null }),
  restored: ({ entity, row, restored }, ctx) => jsonReply(200, recordJsonWith(entity, row, ctx.caller, { restored }), { ETag: etagOf(row) }),
  deleted: ({ row }) => jsonReply(200, JSON.stringify({ id: row.id, deleted: true }), { ETag: etagOf(row) }),
  records: ({ entity, rows, fields, created, next, total, isPage }, ctx) => {
    const headers: Record<string, string> = pagingHeaders(next, ctx);
    if (total !== null) headers["X-Total-Count"] = String(total);
    return jsonReply(created ? 201 : 200, recordsJson(entity, rows, ctx.caller, fields, isPage ? MAX_PAGE_CHARS : Infinity), headers);
  },
  imported: ({ entity, rows }, ctx) => jsonReply(201, recordsJson(entity, rows, ctx.caller, null)),
  page: ({ items, nextCursor }, ctx) =>
    jsonReply(200, `{"items":${itemsJson(items, ctx.caller)},"next_cursor":${JSON.stringify(nextCursor)},"has_more":${nextCursor !== null}}`),
  values: ({ values, next }, ctx) => jsonReply(200, JSON.stringify(values), pagingHeaders(next, ctx)),
  count: ({ count }) => jsonReply(200, `{"count":${count}}`),
  upserted: ({ entity, results }, ctx) =>
    jsonReply(200, `[${results.map(({ row, created }) => recordJsonWith(entity, row, ctx.caller, { created })).join(",")}]`),
  updatedMany: ({ ids }) => jsonReply(200, JSON.stringify({ count: ids.length, ids })),
  deletedMany: ({ ids }) => jsonReply(200, JSON.stringify({ count: ids.length, ids })),
  aggregated: ({ rows, truncated }) => jsonReply(200, JSON.stringify({ rows, truncated })),
  reply: ({ reply }) => reply,
};

/** @base44/sdk 0.8.x: DeleteResult, DeleteManyResult, UpdateManyResult, EntityUpsertResult and ImportResult. */
export const sdkPresenter: Presenter = {
  ...nativePresenter,
  // ImportResult: a refusal is an error answer (the SDK rejects with Base44Error), so status is "success".
  imported: ({ entity, rows }, ctx) =>
    jsonReply(201, `{"status":"success","details":${JSON.stringify(`Imported ${rows.length} ${entity.name} record${rows.length === 1 ? "" : "s"}.`)},"output":${recordsJson(entity, rows, ctx.caller, null)}}`),
  deleted: ({ row }) => jsonReply(200, JSON.stringify({ id: row.id, deleted: true, success: true }), { ETag: etagOf(row) }),
  deletedMany: ({ ids }) => jsonReply(200, JSON.stringify({ success: true, deleted: ids.length })),
  // Every match is updated in one batch, so nothing is left for another call.
  updatedMany: ({ ids }) => jsonReply(200, JSON.stringify({ success: true, updated: ids.length, has_more: false })),
  upserted: ({ entity, results }, ctx) => {
    // "The written records, created and updated, as they now exist": a record two items wrote
    // appears once, at its first place, in its last version.
    const latest = new Map<string, Row>();
    const createdIds = new Set<string>();
    for (const { row, created } of results) {
      latest.set(row.id, row);
      if (created) createdIds.add(row.id);
    }
    const records = recordsJson(entity, [...latest.values()], ctx.caller, null);
    return jsonReply(200, `{"created":${createdIds.size},"updated":${latest.size - createdIds.size},"records":${records}}`);
  },
};

function pagingHeaders(next: NextPage | null, ctx: PresentContext): Record<string, string> {
  if (next === null) return {};
  const link = `<${ctx.url}?${next.query}>; rel="next"`;
  return next.cursor === null ? { Link: link } : { "X-Next-Cursor": next.cursor, Link: link };
}

function itemsJson(items: PageItems, caller: Caller): string {
  return "values" in items ? JSON.stringify(items.values) : recordsJson(items.entity, items.rows, caller, items.fields, MAX_PAGE_CHARS);
}
