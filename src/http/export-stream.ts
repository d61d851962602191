// GET /api/entities/<E>/export (docs/operating.md): the records as they stood when the request came,
// streamed a page at a time as fast as the client reads (memory stays flat: one page in hand),
// while writes go on. The store holds the snapshot (Store.openExport); here it becomes a body.

import type { ServerResponse } from "node:http";
import type { EntityDef } from "../schema/fields.ts";
import { exportEncoder, type ExportEncoder } from "../records/export-format.ts";
import { tooManyExports } from "../errors.ts";
import type { RecordStore, RowPages } from "../store/store.ts";
import { then, type Maybe } from "../maybe.ts";
import { Turns } from "../turns/loop-share.ts";
import { parseExportParams } from "./list-params.ts";
import { drainedOrClosed, type Reply } from "./response.ts";
import type { RequestContext } from "./context.ts";

/** Exports open per store, held against RecordStore.maxOpenExports. */
const openExports = new WeakMap<RecordStore, number>();

export function readExport(ctx: RequestContext, entity: EntityDef): Maybe<Reply> {
  const { format, filter } = parseExportParams(entity, ctx.query, ctx.caller);
  const encoder = exportEncoder(format, entity, ctx.caller);
  const { store } = ctx.records;
  const release = takeExportSlot(store);
  let opened: Maybe<RowPages>;
  try {
    opened = store.openExport(entity.name, filter);
  } catch (error) {
    release();
    throw error;
  }
  if (opened instanceof Promise) opened.catch(release);
  return then(opened, (rows) => replyOf(entity, format, encoder, { next: () => rows.next(), close: () => (release(), rows.close()) }));
}

/** Holds one of the store's export slots (503 when none is free); answers how to give it back, once. */
function takeExportSlot(store: RecordStore): () => void {
  const open = openExports.get(store) ?? 0;
  if (store.maxOpenExports !== null && open >= store.maxOpenExports) throw tooManyExports(store.maxOpenExports);
  openExports.set(store, open + 1);
  let isHeld = true;
  return () => {
    if (isHeld) openExports.set(store, openExports.get(store)! - 1);
    isHeld = false;
  };
}

/** About how long one run of an export's rows may take to encode before other requests go. */
const ENCODE_SLICE_MS = 5;

function replyOf(entity: EntityDef, format: string, encoder: ExportEncoder, pages: RowPages): Reply {
  return {
    status: 200,
    headers: {
      "Content-Type": encoder.contentType,
      "Content-Disposition": `attachment; filename="${entity.name}.${format}"`,
      "Cache-Control": "no-store",
    },
    body: null,
    stream: (res) => void pump(res, pages, encoder),
    cancel: () => void pages.close(),
  };
}

async function pump(res: ServerResponse, pages: RowPages, encoder: ExportEncoder): Promise<void> {
  const turns = new Turns();
  try {
    if (encoder.head !== "") res.write(encoder.head);
    for (let rows = await turns.idle(pages.next()); rows.length > 0; rows = await turns.idle(pages.next())) {
      // A page is encoded a run of rows at a time, each run as long as about ENCODE_SLICE_MS allows,
      // so that big records (a page of them is megabytes) never hold the event loop for long.
      for (let from = 0, runRows = 1; from < rows.length; ) {
        if (res.destroyed) return;
        const startedAt = performance.now();
        const run = rows.slice(from, from + runRows);
        from += run.length;
        const isDrained = res.write(encoder.page(run));
        const tookMs = performance.now() - startedAt;
        runRows = tookMs < ENCODE_SLICE_MS / 2 ? runRows * 2 : Math.max(1, runRows >> 1);
        if (!isDrained) await turns.idle(drainedOrClosed(res));
        // A memory store's page is at hand at once, and a fast reader's socket drains at once: without
        // waiting for a turn here, the whole export would run before any other request.
        await turns.next();
      }
    }
    res.end(encoder.tail);
  } catch (error) {
    // The head is gone: cutting the body short (no last chunk) is how HTTP says it is incomplete.
    process.stderr.write(`warning: an export of ${res.req.url} stopped: ${(error as Error).message}\n`);
    res.destroy();
  } finally {
    turns.end();
    await pages.close();
  }
}
