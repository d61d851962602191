// A read by id answers from a view of the record cached by id: its JSON for the caller's kind of
// key, that JSON's length in bytes, and its ETag. The store deletes the entry whenever the record
// changes (Store.readCache), so a view found is the record as it stands.
//
// Why by id, beside the JSON kept on each row version (serialize.ts): a read of a record found
// through the table's map touches the map's buckets, the row and its memo, each somewhere else in
// a heap of hundreds of megabytes. On a VM each such cold page costs about a microsecond: about
// 5 µs of a read that cost 45 under load on a slow host (docs/benchmarks.md, "2026-11-25, late").
// A view is made when a record is first read, next to the views of the other records read about
// then, so the records clients keep reading sit together in a few pages.

import type { ReadCache, Row } from "../store/store.ts";
import type { Caller } from "./caller.ts";
import { etagOf } from "./serialize.ts";

/** A record as one kind of key sees it, ready to send. */
export interface RecordView {
  readonly json: string;
  /** The JSON's length in UTF-8 bytes (the Content-Length). */
  readonly bytes: number;
  readonly etag: string;
  /** { ETag }: the headers of a read's answer, made once. */
  readonly headers: Readonly<Record<string, string>>;
}

/** The cache's entry for one record: its views for each kind of key, made as each is first asked for. */
class CachedViews {
  secret: RecordView | undefined = undefined;
  publishable: RecordView | undefined = undefined;

  constructor(
    /** Where it is kept and under which id, so that it can be evicted. */
    readonly cache: ReadCache,
    readonly id: string,
  ) {}
}

/**
 * Views are kept for at most this many records (in all entities), and the record cached longest
 * ago loses its views: about 55 MB for records of 300 bytes read by one kind of key. A table of
 * 100,000 records read at random fits whole. With half as many views one read in three missed,
 * and such reads took about 7 µs more CPU on average on a slow host (docs/benchmarks.md, "2026-11-26").
 */
export const MAX_CACHED_VIEWS = 131_072;
const cachedEntries: Array<CachedViews | undefined> = [];
let nextSlot = 0;

/** The record's view for `caller` cached under `id`, or undefined. */
export function cachedView(cache: ReadCache, id: string, caller: Caller): RecordView | undefined {
  const entry = cache.get(id) as CachedViews | undefined;
  if (entry === undefined) return undefined;
  return caller.kind === "secret" ? entry.secret : entry.publishable;
}

/** Caches `view` as what `caller` sees of the record `id` as it stands. */
export function cacheView(cache: ReadCache, id: string, caller: Caller, view: RecordView): void {
  let entry = cache.get(id) as CachedViews | undefined;
  if (entry === undefined) {
    entry = new CachedViews(cache, id);
    const evicted = cachedEntries[nextSlot];
    // An entry the store has since deleted (its record changed) may have been replaced by a newer one.
    if (evicted !== undefined && evicted.cache.get(evicted.id) === evicted) evicted.cache.delete(evicted.id);
    cachedEntries[nextSlot] = entry;
    nextSlot = (nextSlot + 1) % MAX_CACHED_VIEWS;
    cache.set(id, entry);
  }
  if (caller.kind === "secret") entry.secret = view;
  else entry.publishable = view;
}

export function viewOf(row: Row, json: string): RecordView {
  const etag = etagOf(row);
  return { json, bytes: Buffer.byteLength(json), etag, headers: { ETag: etag } };
}
