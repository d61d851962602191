// The two pumps that write many pages to one response, an export (http/export-stream.ts) and a
// change feed's catch-up (feed/change-feed.ts), give the event loop a turn after every page. On
// the memory and file stores a page is at hand at once, and a reader as fast as the socket drains
// at once (Node then reports the write done on the next tick): without that turn, a pump ran a
// whole 228 MB export in ticks and microtasks, and GET /health waited 2.3 s behind it
// (bench/export.mjs). Over real sockets whether that happens depends on the kernel's buffers, so
// these tests give each pump a response that drains at once and check that a macrotask (a
// setImmediate queued before the pump starts: another request's turn) runs before the pump ends.

import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import { test } from "node:test";
import { SseSink } from "../../src/http/sse-sink.ts";
import { ChangeFeed, DEFAULT_FEED_LIMITS } from "../../src/feed/change-feed.ts";
import { readExport } from "../../src/http/export-stream.ts";
import type { RequestContext } from "../../src/http/context.ts";
import { Records } from "../../src/records/records.ts";
import { loadSchemaObject } from "../../src/schema/load.ts";
import { MemoryStore } from "../../src/store/memory/memory-store.ts";
import { FEED_START } from "../../src/store/store.ts";
import { TASK } from "../support/server.ts";

const RECORDS = 5000;
const CALLER = { keyId: "key_test", kind: "secret" } as const;

/** A response whose every write is taken at once: `drainEachWrite` says the socket is full and then drains on the next tick. */
class InstantResponse extends EventEmitter {
  writes = 0;
  ended = false;
  destroyed = false;
  readonly writableLength = 0;
  readonly req = { url: "/test" };

  constructor(private readonly drainEachWrite: boolean) {
    super();
  }

  write(): boolean {
    this.writes++;
    if (!this.drainEachWrite) return true;
    process.nextTick(() => this.emit("drain"));
    return false;
  }

  end(): void {
    this.ended = true;
    this.emit("finish");
  }

  destroy(): void {
    this.destroyed = true;
  }
}

async function storeWithRecords(): Promise<{ store: MemoryStore; records: Records }> {
  const schema = loadSchemaObject({ Task: TASK });
  const store = new MemoryStore(new Map());
  const records = new Records(schema, store);
  const entity = records.entity("Task");
  const puts = Array.from({ length: RECORDS }, (_, i) => records.create(entity, { title: `t${i}` }, CALLER).puts[0]!);
  await records.commit({ entity, puts, result: null }, undefined);
  return { store, records };
}

/** How many writes the pump had made when a macrotask queued before it got its turn. */
function writesAtFirstTurn(res: InstantResponse): Promise<number> {
  return new Promise((resolve) => setImmediate(() => resolve(res.writes)));
}

test("an export's pump lets other work run between its pages", async () => {
  const { records } = await storeWithRecords();
  const ctx = { records, caller: CALLER, query: new URLSearchParams() } as unknown as RequestContext;
  const reply = await readExport(ctx, records.entity("Task"));
  const res = new InstantResponse(true);
  const turn = writesAtFirstTurn(res);
  reply.stream!(res as unknown as ServerResponse);
  const writesThen = await turn;
  await new Promise<void>((resolve) => (res.ended ? resolve() : res.once("finish", () => resolve())));
  // A page is written in runs of rows, each encoded within a few milliseconds: at least a write a page.
  assert.ok(res.writes >= RECORDS / 1000, `${res.writes} writes: at least one per page of 1,000 records`);
  assert.ok(writesThen < res.writes, `another macrotask ran only after all ${res.writes} writes`);
});

test("a change feed's catch-up lets other work run between its pages", async () => {
  const { store, records } = await storeWithRecords();
  const feed = await ChangeFeed.open(store, records.schema, DEFAULT_FEED_LIMITS, () => {});
  const res = new InstantResponse(false);
  const turn = writesAtFirstTurn(res);
  feed.openStream(new SseSink(res as unknown as ServerResponse, records.schema), { caller: CALLER, entities: new Set(["Task"]), filters: null, key: "test" }, FEED_START);
  const writesThen = await turn;
  // The catch-up is over once the writes stop growing.
  for (let last = -1; last !== res.writes; ) {
    last = res.writes;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  feed.close();
  assert.ok(res.writes >= RECORDS / 500, `${res.writes} writes: the catch-up reads 500 events a step`);
  assert.ok(writesThen < res.writes, `another macrotask ran only after all ${res.writes} writes`);
});
