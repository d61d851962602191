// A change feed's read of the store still running when the server stops fails as the store closes
// under it (on PostgreSQL: the pool ends, CONNECTION_ENDED). That is no news for the operator:
// the feed says nothing and tries no more. The same failure while serving is a warning and a retry.

import assert from "node:assert/strict";
import { test } from "node:test";
import { ChangeFeed, DEFAULT_FEED_LIMITS } from "../../src/feed/change-feed.ts";
import { loadSchemaObject } from "../../src/schema/load.ts";
import { FEED_START, type FeedRead, type FeedSource, type FeedState } from "../../src/store/store.ts";
import { TASK } from "../support/server.ts";

/** A store whose reads wait until failed by hand, and that can announce a commit. */
function slowSource(): { source: FeedSource; announce: () => void; failReads: (error: Error) => void; reads: () => number } {
  const state: FeedState = { head: FEED_START, horizon: FEED_START, oldest: null, issued: FEED_START };
  const waiting: Array<(error: Error) => void> = [];
  let listener = () => {};
  let reads = 0;
  const source: FeedSource = {
    feedState: () => state,
    readChanges: () => {
      reads++;
      return new Promise<FeedRead>((_, reject) => waiting.push(reject));
    },
    readLatest: () => ({ events: [], through: FEED_START }),
    onFeed: (onFeed) => (listener = onFeed),
  };
  return { source, announce: () => listener(), failReads: (error) => waiting.splice(0).forEach((reject) => reject(error)), reads: () => reads };
}

const turns = () => new Promise((resolve) => setTimeout(resolve, 20));

test("a read failing after the feed closed is not warned about nor retried", async () => {
  const { source, announce, failReads, reads } = slowSource();
  const warnings: string[] = [];
  const feed = await ChangeFeed.open(source, loadSchemaObject({ Task: TASK }), { ...DEFAULT_FEED_LIMITS }, (message) => warnings.push(message));
  announce();
  await turns();
  assert.equal(reads(), 1, "the announced commit is read");
  feed.close();
  failReads(new Error("write CONNECTION_ENDED 127.0.0.1:5432"));
  await turns();
  assert.deepEqual(warnings, []);
});

test("a read failing while the feed serves is warned about, and retried", async () => {
  const { source, announce, failReads, reads } = slowSource();
  const warnings: string[] = [];
  const feed = await ChangeFeed.open(source, loadSchemaObject({ Task: TASK }), { ...DEFAULT_FEED_LIMITS }, (message) => warnings.push(message));
  try {
    announce();
    await turns();
    failReads(new Error("write CONNECTION_ENDED 127.0.0.1:5432"));
    await turns();
    assert.equal(warnings.length, 1, warnings.join("\n"));
    assert.match(warnings[0]!, /could not read the store \(retrying in \d+ ms\): write CONNECTION_ENDED/);
    assert.equal(reads(), 1, "the retry waits its time");
  } finally {
    feed.close();
    failReads(new Error("closed"));
  }
});
