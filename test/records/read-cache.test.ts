// The views of records cached for reads by id (records/read-cache.ts): one per record and kind of
// key, found again whole after any mix of keeps and deletes, at most MAX_CACHED_VIEWS in all, the
// one kept longest ago evicted first, and an eviction never takes out a newer view of its record.

import assert from "node:assert/strict";
import { test } from "node:test";
import { MAX_CACHED_VIEWS, viewOf, ViewCache, type RecordView } from "../../src/records/read-cache.ts";
import { etagOf } from "../../src/records/serialize.ts";
import type { Caller } from "../../src/keys/caller.ts";
import type { Row } from "../../src/store/store.ts";

const SECRET: Caller = { keyId: "key_s", kind: "secret" };
const PUBLISHABLE: Caller = { keyId: "key_p", kind: "publishable" };

function rowOf(id: string, rev: number): Row {
  return { id, rev, deleted: false, data: { id } };
}

function viewFor(id: string, rev: number, json = `{"id":"${id}","rev":${rev}}`): RecordView {
  return viewOf(rowOf(id, rev), json);
}

test("a view holds its JSON, its length in UTF-8 bytes and the version's ETag, and each kind of key has its own", () => {
  const cache = new ViewCache();
  const row = rowOf("a", 1295);
  const secret = viewOf(row, `{"id":"a","title":"ΟΔΟΣ","created_by_id":"key_s"}`);
  assert.equal(secret.bytes, 53, "49 characters, four of them Greek letters of two bytes each");
  assert.equal(secret.etag, '"zz"');
  assert.equal(etagOf(row), '"zz"');
  cache.keep("a", SECRET, secret);
  assert.deepEqual(cache.find("a", SECRET), secret);
  assert.equal(cache.find("a", PUBLISHABLE), undefined, "a publishable key never gets the secret key's view");
  const publishable = viewOf(row, `{"id":"a","title":"plain"}`);
  assert.equal(publishable.bytes, publishable.json.length);
  cache.keep("a", PUBLISHABLE, publishable);
  assert.deepEqual(cache.find("a", PUBLISHABLE), publishable);
  assert.deepEqual(cache.find("a", SECRET), secret);
  assert.equal(cache.size, 2, "one view per record and kind of key");
  assert.equal(cache.find("b", SECRET), undefined);
  assert.equal(cache.find("", SECRET), undefined);
  cache.delete("a");
  assert.equal(cache.find("a", SECRET), undefined, "a delete takes the views of both kinds of key");
  assert.equal(cache.find("a", PUBLISHABLE), undefined);
  assert.equal(cache.size, 0);
});

test("ids that begin alike, or differ only in length, each find their own view", () => {
  const cache = new ViewCache();
  const ids = ["a", "ab", "abc", "b", "ba", "A", "a.b", "a~b", "é", "ΟΔΟΣ", "x".repeat(255)];
  ids.forEach((id, i) => cache.keep(id, SECRET, viewFor(id, i + 1)));
  ids.forEach((id, i) => assert.deepEqual(cache.find(id, SECRET), viewFor(id, i + 1), id));
  assert.equal(cache.find("abcd", SECRET), undefined);
  assert.equal(cache.find("x".repeat(254), SECRET), undefined);
  const renewed = viewFor("ab", 99, `{"id":"ab","title":"new"}`);
  cache.keep("ab", SECRET, renewed);
  assert.deepEqual(cache.find("ab", SECRET), renewed, "a view kept again replaces the one before");
  assert.equal(cache.size, ids.length);
});

test("a view that cannot be told apart by its first two characters is not kept: ids over 255 characters, ETags over 63", () => {
  const cache = new ViewCache();
  const long = "x".repeat(256);
  cache.keep(long, SECRET, viewFor(long, 1));
  assert.equal(cache.find(long, SECRET), undefined);
  cache.keep("w", SECRET, { ...viewFor("w", 1), etag: `"${"e".repeat(62)}"` });
  assert.equal(cache.find("w", SECRET), undefined);
  assert.equal(cache.size, 0);
  cache.delete(long);
});

test("after thousands of keeps and deletes in random order, the cache holds exactly what a Map would", () => {
  const cache = new ViewCache();
  const model = new Map<string, RecordView>();
  // A seeded generator, so that a failure comes back the same.
  let seed = 12345;
  const random = (n: number): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % n);
  for (let step = 0; step < 40_000; step++) {
    const id = `r${random(6000)}`;
    const caller = random(4) === 0 ? PUBLISHABLE : SECRET;
    if (random(3) === 0) {
      cache.delete(id);
      model.delete(`${caller.kind}:${id}`);
      model.delete(`${caller.kind === "secret" ? "publishable" : "secret"}:${id}`);
    } else {
      const view = viewFor(id, step + 1);
      cache.keep(id, caller, view);
      model.set(`${caller.kind}:${id}`, view);
    }
  }
  assert.equal(cache.size, model.size);
  assert.ok(model.size > 2000, `${model.size} views: enough to grow the table past its first 1,024 slots`);
  for (let i = 0; i < 6000; i++) {
    for (const caller of [SECRET, PUBLISHABLE]) {
      assert.deepEqual(cache.find(`r${i}`, caller), model.get(`${caller.kind}:r${i}`), `r${i} for a ${caller.kind} key`);
    }
  }
  cache.clear();
  assert.equal(cache.size, 0);
  assert.equal(cache.find("r1", SECRET), undefined);
});

test("the view kept longest ago is evicted first, and never a newer view of its record kept since", () => {
  const first = new ViewCache();
  const others = new ViewCache();
  const third = new ViewCache();
  const view = viewOf(rowOf("x", 1), "{}");
  // Views kept before this test, by this process, are evicted by these.
  for (let i = 0; i < MAX_CACHED_VIEWS; i++) others.keep(`id${i}`, SECRET, view);
  assert.equal(others.size, MAX_CACHED_VIEWS);
  first.keep("old", SECRET, view);
  first.keep("renewed", SECRET, viewFor("renewed", 1));
  // The record changed: the store deleted its view, and a read kept its new version.
  first.delete("renewed");
  const newer = viewFor("renewed", 2);
  first.keep("renewed", SECRET, newer);
  assert.equal(others.size, MAX_CACHED_VIEWS - 3, "each of the three evicted one of the views kept longest ago");
  for (let i = 3; i < MAX_CACHED_VIEWS; i++) third.keep(`id${i}`, SECRET, view);
  assert.equal(others.size, 0);
  assert.ok(first.find("old", SECRET));
  third.keep("one more", SECRET, view);
  assert.equal(first.find("old", SECRET), undefined, "evicted: it was kept first");
  third.keep("and another", SECRET, view);
  assert.deepEqual(first.find("renewed", SECRET), newer, "the eviction of its stale view left the newer one alone");
  third.keep("a third", SECRET, view);
  assert.equal(first.find("renewed", SECRET), undefined, "evicted in its own turn");
  assert.equal(third.size, MAX_CACHED_VIEWS, "the others, all kept since, are all kept");
});
