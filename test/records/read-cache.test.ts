// The views of records cached for reads by id (records/read-cache.ts): one per kind of key, at
// most MAX_CACHED_VIEWS records in all, the one cached longest ago evicted first, and an eviction
// never takes out a newer entry the store made after deleting the one evicted.

import assert from "node:assert/strict";
import { test } from "node:test";
import { cachedView, cacheView, MAX_CACHED_VIEWS, viewOf } from "../../src/records/read-cache.ts";
import { etagOf } from "../../src/records/serialize.ts";
import type { Caller } from "../../src/records/caller.ts";
import type { ReadCache, Row } from "../../src/store/store.ts";

const SECRET: Caller = { keyId: "key_s", kind: "secret" };
const PUBLISHABLE: Caller = { keyId: "key_p", kind: "publishable" };

function rowOf(id: string, rev: number): Row {
  return { id, rev, deleted: false, data: { id } };
}

test("a view holds its JSON, its length in UTF-8 bytes and the version's ETag, and each kind of key has its own", () => {
  const cache: ReadCache = new Map();
  const row = rowOf("a", 1295);
  const secret = viewOf(row, `{"id":"a","title":"ΟΔΟΣ","created_by_id":"key_s"}`);
  assert.equal(secret.bytes, 53, "49 characters, four of them Greek letters of two bytes each");
  assert.equal(secret.etag, '"zz"');
  assert.equal(etagOf(row), '"zz"');
  assert.deepEqual(secret.headers, { ETag: '"zz"' });
  cacheView(cache, "a", SECRET, secret);
  assert.equal(cachedView(cache, "a", SECRET), secret);
  assert.equal(cachedView(cache, "a", PUBLISHABLE), undefined, "a publishable key never gets the secret key's view");
  const publishable = viewOf(row, `{"id":"a","title":"ΟΔΟΣ"}`);
  cacheView(cache, "a", PUBLISHABLE, publishable);
  assert.equal(cachedView(cache, "a", PUBLISHABLE), publishable);
  assert.equal(cachedView(cache, "a", SECRET), secret);
  assert.equal(cache.size, 1, "one entry per record");
  assert.equal(cachedView(cache, "b", SECRET), undefined);
});

test("the record cached longest ago is evicted first, and never an entry made after the store deleted the evicted one", () => {
  const first: ReadCache = new Map();
  const others: ReadCache = new Map();
  const view = viewOf(rowOf("x", 1), "{}");
  cacheView(first, "old", SECRET, view);
  cacheView(first, "renewed", SECRET, view);
  // The record changed: the store deleted its entry, and a read cached its new version.
  first.delete("renewed");
  const newer = viewOf(rowOf("renewed", 2), "{}");
  cacheView(first, "renewed", SECRET, newer);
  // Fill the rest of the ring: the next entry evicts "old", then the stale slot of "renewed".
  for (let i = 3; i < MAX_CACHED_VIEWS; i++) cacheView(others, `id${i}`, SECRET, view);
  assert.ok(first.has("old"));
  cacheView(others, "one more", SECRET, view);
  assert.equal(first.has("old"), false, "evicted: it was cached first");
  cacheView(others, "and another", SECRET, view);
  assert.equal(cachedView(first, "renewed", SECRET), newer, "the stale slot's eviction left the newer entry alone");
  assert.equal(others.size, MAX_CACHED_VIEWS - 1);
  cacheView(others, "a third", SECRET, view);
  assert.equal(first.has("renewed"), false, "evicted in its own turn");
  assert.equal(others.size, MAX_CACHED_VIEWS, "the others, all cached since, are all kept");
});
