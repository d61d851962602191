// The change feed through HTTP (docs/change-feed.md, issue 19): JSON pages and long polls, SSE streams that
// resume after a dropped connection without missing or repeating a write, one event per record of
// every write path, q and entities narrowing, shaping and access for publishable keys, the catch-up
// of a resume point older than the kept window, order under concurrent writers, a slow consumer cut
// off, --max-streams, ?key=, the embedding API's iterator. Runs on every store.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { PUBLISHABLE, SECRET, startTestServer, TASK, type TestServer } from "../support/server.ts";
import { SseClient, type SseEvent } from "../support/sse.ts";
import { feedNow } from "../support/feed-now.ts";

const NOTE = { name: "Note", properties: { text: { type: "string" } }, access: { publishable: ["create"] } };
const SCHEMA = { Task: TASK, Note: NOTE };

/** Follows a feed as an SSE client with the secret key. */
function follow(server: TestServer, path: string, headers: Record<string, string> = {}): SseClient {
  return new SseClient(server.url + path, { "X-Api-Key": SECRET, ...headers });
}

async function create(server: TestServer, body: Record<string, unknown>, entity = "Task"): Promise<string> {
  const answer = await server.call("POST", `/api/entities/${entity}`, { body });
  assert.equal(answer.status, 201, answer.text);
  return answer.body.id as string;
}

/**
 * A stream opened "from now" is read from here on: a marker is written and awaited, and what came
 * before it dropped. On PostgreSQL "now" is where the feed has got to, so writes of earlier tests
 * may come first while another test's older transaction is open (docs/postgresql.md); they come
 * before the marker, whose transaction began after theirs ended.
 */
async function fromHere(server: TestServer, stream: SseClient): Promise<void> {
  const marker = await create(server, { title: "marker" });
  await stream.until(() => stream.events.some((event) => event.json?.id === marker), "the marker");
  stream.events.splice(0);
}

/** The state a client builds from events: id → latest data, deleted ones marked. */
function stateOf(events: ReadonlyArray<{ type: string; id: string; data: any; deleted?: boolean }>): Map<string, string> {
  const state = new Map<string, string>();
  for (const event of events) {
    const deleted = event.type === "delete" || event.deleted === true;
    state.set(event.id, `${deleted ? "deleted " : ""}${JSON.stringify(event.data)}`);
  }
  return state;
}

function eventIdOrder(a: string, b: string): number {
  const [as, ai] = a.split(".").map(Number);
  const [bs, bi] = b.split(".").map(Number);
  return as! - bs! || ai! - bi!;
}

describe("the change feed", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ schema: SCHEMA, heartbeatMs: 100 });
  });
  after(() => server.close());

  test("JSON: each write is one event, in commit order, with what it did and the version it wrote; next resumes", async () => {
    const start = await server.call("GET", "/api/entities/Task/changes");
    assert.equal(start.status, 200, start.text);
    assert.deepEqual(start.body.changes, [], "without since, the feed starts from now");
    const since = start.body.next as string;
    const id = await create(server, { title: "a" });
    assert.equal((await server.call("PATCH", `/api/entities/Task/${id}`, { body: { status: "done" } })).status, 200);
    assert.equal((await server.call("DELETE", `/api/entities/Task/${id}`)).status, 200);
    assert.equal((await server.call("PUT", `/api/entities/Task/${id}/restore`)).status, 200);
    const page = await server.call("GET", `/api/entities/Task/changes?since=${since}`);
    assert.equal(page.status, 200, page.text);
    const changes = page.body.changes as any[];
    assert.deepEqual(changes.map((change) => change.type), ["create", "update", "delete", "restore"]);
    assert.ok(changes.every((change) => change.entity === "Task" && change.id === id));
    assert.equal(changes[0].data.status, "todo");
    assert.equal(changes[1].data.status, "done");
    assert.equal(changes[1].data.created_by_id, changes[0].data.created_by_id, "a secret key sees created_by_id");
    assert.equal(changes[1].timestamp, changes[1].data.updated_date);
    for (const change of changes) assert.match(change.event_id, /^\d+\.\d+$/);
    assert.deepEqual([...changes.map((c) => c.event_id)].sort(eventIdOrder), changes.map((c) => c.event_id));
    assert.ok(changes.every((change) => change.seq === Number(change.event_id.split(".")[0])));
    assert.equal(page.body.next, changes.at(-1).event_id);
    assert.match(page.body.oldest, /^\d+\.\d+$/);
    // next resumes after the last change; limit pages.
    assert.deepEqual((await server.call("GET", `/api/entities/Task/changes?since=${page.body.next}`)).body.changes, []);
    const two = await server.call("GET", `/api/entities/Task/changes?since=${since}&limit=2`);
    assert.deepEqual(two.body.changes.map((c: any) => c.type), ["create", "update"]);
    const rest = await server.call("GET", `/api/entities/Task/changes?since=${two.body.next}`);
    assert.deepEqual(rest.body.changes.map((c: any) => c.type), ["delete", "restore"]);
  });

  test("bulk create, bulk update, upsert, update-many and delete-many give one event per record, in the batch's order", async () => {
    const since = await feedNow((path) => server.call("GET", path), "/api/changes");
    const bulk = await server.call("POST", "/api/entities/Task/bulk", { body: [{ title: "b1" }, { title: "b2" }, { title: "b3" }] });
    const ids = bulk.body.map((row: any) => row.id) as string[];
    await server.call("PUT", "/api/entities/Task/bulk", { body: [{ id: ids[2], priority: 3 }, { id: ids[0], priority: 1 }] });
    await server.call("POST", "/api/entities/Task/upsert", { body: { match: ["title"], records: [{ title: "b2", priority: 2 }, { title: "b4" }] } });
    await server.call("PATCH", "/api/entities/Task/update-many", { body: { q: { title: { $in: ["b1", "b2"] } }, set: { status: "doing" } } });
    await server.call("DELETE", `/api/entities/Task?q=${encodeURIComponent(JSON.stringify({ title: { $in: ["b3", "b4"] } }))}`);
    const { changes } = (await server.call("GET", `/api/changes?since=${since}&limit=1000`)).body;
    const seen = changes.map((c: any) => `${c.type} ${c.data.title}`);
    assert.deepEqual(seen.slice(0, 3), ["create b1", "create b2", "create b3"]);
    assert.deepEqual(seen.slice(3, 5), ["update b3", "update b1"]);
    assert.deepEqual(seen.slice(5, 7), ["update b2", "create b4"]);
    assert.deepEqual(seen.slice(7, 9).sort(), ["update b1", "update b2"]);
    assert.deepEqual(seen.slice(9).sort(), ["delete b3", "delete b4"]);
    assert.equal(seen.length, 11);
    // One batch, one seq; the index orders its records.
    assert.deepEqual(changes.slice(0, 3).map((c: any) => c.event_id.split(".")[1]), ["0", "1", "2"]);
    assert.equal(new Set(changes.slice(0, 3).map((c: any) => c.seq)).size, 1);
  });

  test("a long poll waits for the next write and answers at once when it comes", async () => {
    const since = await feedNow((path) => server.call("GET", path), "/api/entities/Task/changes");
    const startedAt = Date.now();
    const polled = server.call("GET", `/api/entities/Task/changes?since=${since}&wait=20`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const id = await create(server, { title: "awaited" });
    let answer = await polled;
    assert.equal(answer.status, 200, answer.text);
    // On PostgreSQL the head may lag this file's earlier creates (readable once a transaction older
    // than them, another test's, ends: docs/postgresql.md): those may come first, then this one.
    for (let polls = 1; !answer.body.changes.some((c: any) => c.id === id) && polls < 5; polls++) {
      assert.ok(answer.body.changes.every((c: any) => Date.parse(c.timestamp) < startedAt), `only writes from before the poll come before it: ${answer.text}`);
      answer = await server.call("GET", `/api/entities/Task/changes?since=${answer.body.next}&wait=20`);
    }
    assert.deepEqual(answer.body.changes.map((c: any) => c.id).slice(-1), [id]);
    assert.ok(Date.now() - startedAt < 10_000, "it answered with the write, not at the end of its wait");
    // Nothing new: an empty page once the wait is over, with next where it was.
    const empty = await server.call("GET", `/api/entities/Task/changes?since=${answer.body.next}&wait=0.2`);
    assert.deepEqual(empty.body.changes, []);
    assert.equal(empty.body.next, answer.body.next);
  });

  test("SSE: a dropped stream resumes with Last-Event-ID, missing and repeating nothing", async () => {
    const first = follow(server, "/api/entities/Task/changes");
    await first.opened;
    assert.equal(first.status, 200);
    await fromHere(server, first);
    assert.match(String(first.headers["content-type"]), /^text\/event-stream/);
    assert.equal(first.headers["x-accel-buffering"], "no");
    assert.equal(first.headers["cache-control"], "no-cache");
    const before = [await create(server, { title: "s1" }), await create(server, { title: "s2" })];
    const received = await first.waitFor(2);
    assert.deepEqual(received.map((e) => [e.event, e.json.id]), before.map((id) => ["create", id]));
    assert.equal(received[0]!.id, received[0]!.json.event_id);
    first.close();
    const between = [await create(server, { title: "s3" }), await create(server, { title: "s4" })];
    await server.call("DELETE", `/api/entities/Task/${before[0]}`);
    const second = follow(server, "/api/entities/Task/changes", { "Last-Event-ID": first.lastId! });
    await second.opened;
    const after = await create(server, { title: "s5" });
    const resumed = await second.waitFor(4);
    assert.deepEqual(resumed.map((e) => [e.event, e.json.id]), [["create", between[0]], ["create", between[1]], ["delete", before[0]], ["create", after]]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(second.events.length, 4, "nothing twice");
    assert.ok(second.comments.includes("heartbeat"), "a comment keeps the stream open");
    second.close();
  });

  test("q narrows by the version written, checked like a list's q; entities= narrows /api/changes", async () => {
    const since = await feedNow((path) => server.call("GET", path), "/api/changes");
    const stream = follow(server, `/api/entities/Task/changes?since=${since}&q=${encodeURIComponent(JSON.stringify({ status: "done" }))}`);
    const todo = await create(server, { title: "q1" });
    const done = await create(server, { title: "q2", status: "done" });
    await server.call("PATCH", `/api/entities/Task/${todo}`, { body: { status: "done" } });
    await create(server, { text: "n1" }, "Note");
    const events = await stream.waitFor(2);
    assert.deepEqual(events.map((e) => [e.event, e.json.id]), [["create", done], ["update", todo]]);
    stream.close();
    const refused = await server.call("GET", `/api/entities/Task/changes?q=${encodeURIComponent(JSON.stringify({ nope: 1 }))}`);
    const listRefused = await server.call("GET", `/api/entities/Task?q=${encodeURIComponent(JSON.stringify({ nope: 1 }))}`);
    assert.equal(refused.status, 400);
    assert.deepEqual(refused.body.error.code, listRefused.body.error.code);
    const notes = await server.call("GET", `/api/changes?since=${since}&entities=Note`);
    assert.deepEqual(notes.body.changes.map((c: any) => c.data.text), ["n1"]);
    const both = await server.call("GET", `/api/changes?since=${since}&entities=Note,Task`);
    assert.equal(both.body.changes.length, 4);
    assert.equal((await server.call("GET", "/api/changes?entities=Nope")).body.error.code, "entity_not_found");
  });

  test("a publishable key never sees created_by_id, and follows only entities it may read", async () => {
    const since = await feedNow((path) => server.call("GET", path), "/api/changes");
    await create(server, { title: "p1" });
    await create(server, { text: "secret note" }, "Note");
    const page = await server.call("GET", `/api/changes?since=${since}`, { apiKey: PUBLISHABLE });
    assert.equal(page.status, 200, page.text);
    assert.deepEqual(page.body.changes.map((c: any) => c.entity), ["Task"], "Note does not allow publishable reads");
    assert.equal("created_by_id" in page.body.changes[0].data, false);
    const denied = await server.call("GET", "/api/entities/Note/changes", { apiKey: PUBLISHABLE });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.error.details.operation, "read");
    assert.equal((await server.call("GET", "/api/changes?entities=Note", { apiKey: PUBLISHABLE })).status, 403);
    const stream = new SseClient(`${server.url}/api/changes?since=${since}`, { "X-Api-Key": PUBLISHABLE });
    const [event] = await stream.waitFor(1);
    assert.equal(event!.json.entity, "Task");
    assert.equal("created_by_id" in event!.json.data, false);
    stream.close();
  });

  test("EventSource cannot send headers: the feed's routes take ?key=, and only they", async () => {
    const stream = new SseClient(`${server.url}/api/entities/Task/changes?key=${PUBLISHABLE}`);
    await stream.opened;
    assert.equal(stream.status, 200);
    await fromHere(server, stream);
    const id = await create(server, { title: "by key" });
    assert.equal((await stream.waitFor(1))[0]!.json.id, id);
    stream.close();
    const list = await server.call("GET", `/api/entities/Task?key=${SECRET}`, { apiKey: null });
    assert.equal(list.status, 401);
    const wrong = await server.call("GET", `/api/changes?key=nope`, { apiKey: null });
    assert.equal(wrong.status, 401);
  });

  test("a resume point that is malformed or was never issued is 400 invalid_cursor", async () => {
    for (const since of ["abc", "1.2.3", "-1", "99999999999"]) {
      const answer = await server.call("GET", `/api/changes?since=${since}`);
      assert.equal(answer.status, 400, since);
      assert.equal(answer.body.error.code, "invalid_cursor", since);
      assert.equal(answer.body.error.details.parameter, "since");
    }
    const stream = follow(server, "/api/changes", { "Last-Event-ID": "99999999999.0" });
    await stream.opened;
    assert.equal(stream.status, 400);
    assert.equal(JSON.parse(stream.body).error.details.parameter, "Last-Event-ID");
    for (const [query, parameter] of [["limit=0", "limit"], ["limit=1001", "limit"], ["wait=31", "wait"], ["wait=x", "wait"], ["sort_by=id", "sort_by"]]) {
      const answer = await server.call("GET", `/api/changes?${query}`);
      assert.equal(answer.status, 400, query);
      assert.equal(answer.body.error.details.parameter, parameter, query);
    }
  });

  test("32 concurrent writers: a stream gets every write once, in increasing event ids", async () => {
    const stream = follow(server, "/api/entities/Task/changes");
    await stream.opened;
    await fromHere(server, stream);
    const writers = Array.from({ length: 32 }, async (_, w) => {
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) ids.push(await create(server, { title: `w${w}-${i}` }));
      return ids;
    });
    const written = (await Promise.all(writers)).flat();
    const events = await stream.waitFor(written.length);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(stream.events.length, written.length, "nothing twice");
    assert.deepEqual(events.map((e) => e.json.id).sort(), [...written].sort());
    const ids = events.map((e) => e.id!);
    assert.deepEqual([...ids].sort(eventIdOrder), ids, "in commit order");
    stream.close();
  });

  test("many streams of three shapes under concurrent writers: each gets its own events, shaped for its key, once and in order", async () => {
    // The hub hands a stretch of events out once per group of equal subscriptions, and coalesces
    // the writes that come while it waits between hand-outs: no group may get another's bytes.
    const q = encodeURIComponent(JSON.stringify({ status: "done" }));
    const shapes = [
      { apiKey: SECRET, path: "/api/entities/Task/changes" },
      { apiKey: PUBLISHABLE, path: "/api/entities/Task/changes" },
      { apiKey: SECRET, path: `/api/entities/Task/changes?q=${q}` },
    ];
    const streams = Array.from({ length: 60 }, (_, i) => ({ shape: i % 3, client: new SseClient(server.url + shapes[i % 3]!.path, { "X-Api-Key": shapes[i % 3]!.apiKey }) }));
    await Promise.all(streams.map(({ client }) => client.opened));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const writers = Array.from({ length: 16 }, async (_, w) => {
      const written: Array<{ id: string; isDone: boolean }> = [];
      for (let i = 0; i < 6; i++) {
        const isDone = (w + i) % 2 === 0;
        written.push({ id: await create(server, { title: `s${w}-${i}`, status: isDone ? "done" : "todo" }), isDone });
      }
      return written;
    });
    const written = (await Promise.all(writers)).flat();
    const expected = [written.map((w) => w.id).sort(), written.map((w) => w.id).sort(), written.filter((w) => w.isDone).map((w) => w.id).sort()];
    for (const { shape, client } of streams) await client.waitFor(expected[shape]!.length);
    await new Promise((resolve) => setTimeout(resolve, 100));
    for (const { shape, client } of streams) {
      const events = client.events;
      assert.deepEqual(events.map((e) => e.json.id).sort(), expected[shape], `shape ${shape}: its events, each once`);
      assert.deepEqual(events.map((e) => e.id!), [...events.map((e) => e.id!)].sort(eventIdOrder), `shape ${shape}: in commit order`);
      const isPublishable = shape === 1;
      for (const event of events) assert.equal("created_by_id" in event.json.data, !isPublishable, `shape ${shape}: created_by_id only for a secret key`);
      if (shape === 2) assert.ok(events.every((e) => e.json.data.status === "done"), "q narrows");
      client.close();
    }
  });

  test("the SDK's prefix serves the same feed", async () => {
    const since = (await server.call("GET", "/api/apps/demo/changes")).body.next;
    const id = await create(server, { title: "sdk" });
    const all = await server.call("GET", `/api/apps/demo/changes?since=${since}`);
    const task = await server.call("GET", `/api/apps/demo/entities/Task/changes?since=${since}`);
    assert.deepEqual(all.body.changes.map((c: any) => c.id), [id]);
    assert.deepEqual(task.body, all.body);
  });

  test("server.changes() iterates over writes, for tests that wait for one", async () => {
    const iterator = server.changes({ entities: ["Task"] });
    const next = iterator.next();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const id = await create(server, { title: "iterated" });
    const { value } = await next;
    assert.equal(value!.type, "create");
    assert.equal(value!.id, id);
    assert.equal(value!.data.title, "iterated");
    await iterator.return!(undefined);
  });
});

describe("the change feed's kept window", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ schema: SCHEMA, changesKeep: 5 });
  });
  after(() => server.close());

  test("a resume point older than the window catches up with each record's latest version, deletes included, then goes on live", async () => {
    // A client that never leaves, from the start.
    const always = follow(server, "/api/changes?since=0");
    await always.opened;
    // Each write waits until that client has its event: with a window of 5 events, a hub that fell
    // further behind (PostgreSQL's reads after each commit's notification, on a loaded host) would
    // find the window moved past it and cut every live stream off (event: overflow), rightly.
    const seen = async <T>(write: () => Promise<T>): Promise<T> => {
      const before = always.events.length;
      const result = await write();
      await always.waitFor(before + 1);
      return result;
    };
    const [a, b, c] = [await seen(() => create(server, { title: "a" })), await seen(() => create(server, { title: "b" })), await seen(() => create(server, { title: "c" }))];
    const away = (await server.call("GET", "/api/changes")).body.next as string;
    await seen(() => server.call("PATCH", `/api/entities/Task/${a}`, { body: { title: "a2" } }));
    await seen(() => server.call("DELETE", `/api/entities/Task/${b}`));
    const d = await seen(() => create(server, { title: "d" }));
    for (let i = 0; i < 6; i++) await seen(() => server.call("PATCH", `/api/entities/Task/${d}`, { body: { priority: i } }));
    await seen(() => server.call("DELETE", `/api/entities/Task/${d}`));
    // PostgreSQL cuts the window back after the commit that outgrew it, not within it, and only up
    // to the oldest transaction running in the cluster (another test file's): at worst at its 10 s timer.
    let page = await server.call("GET", `/api/changes?since=${away}&limit=1000`);
    for (let tries = 0; eventIdOrder(away, page.body.oldest) >= 0 && tries < 120; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      page = await server.call("GET", `/api/changes?since=${away}&limit=1000`);
    }
    assert.equal(page.status, 200, page.text);
    assert.notEqual(page.body.oldest, null);
    assert.ok(eventIdOrder(away, page.body.oldest) < 0, "the resume point is older than the window");
    const synced = page.body.changes as any[];
    assert.ok(synced.every((change) => change.type === "sync"));
    assert.deepEqual(synced.map((change) => [change.id, change.deleted]), [[a, false], [b, true], [d, true]]);
    assert.equal(synced[0].data.title, "a2");
    assert.equal(synced.find((change) => change.id === c), undefined, "c was not written since");
    // The catch-up over SSE, then live.
    const late = follow(server, "/api/changes", { "Last-Event-ID": away });
    await late.waitFor(3);
    assert.deepEqual(late.events.map((e) => e.event), ["sync", "sync", "sync"]);
    const e = await seen(() => create(server, { title: "e" }));
    await late.waitFor(4);
    assert.deepEqual([late.events[3]!.event, late.events[3]!.json.id], ["create", e]);
    // Its state is the state of the client that never left (for what was written since `away`).
    const total = 3 + 1 + 1 + 1 + 6 + 1 + 1;
    await always.waitFor(total);
    const since = always.events.filter((event) => eventIdOrder(event.id!, away) > 0).map((event) => ({ ...event.json, type: event.event }));
    assert.deepEqual(stateOf(late.events.map((event) => ({ ...event.json, type: event.event }))), stateOf(since));
    // It may resume again from any id it received: here, from the first sync event.
    const again = await server.call("GET", `/api/changes?since=${late.events[0]!.id}&limit=1000`);
    assert.deepEqual(again.body.changes.map((change: any) => change.id), [b, d, e]);
    always.close();
    late.close();
  });

  test("since=0 catches up from the start: every record's latest version", async () => {
    const page = await server.call("GET", "/api/changes?since=0&limit=1000");
    const live = (await server.call("GET", "/api/entities/Task?limit=1000&deleted=include")).body as any[];
    const byId = new Map(page.body.changes.map((change: any) => [change.id, change]));
    assert.equal(byId.size, live.length);
    for (const record of live) assert.deepEqual((byId.get(record.id) as any).data, record);
  });
});

describe("the change feed's bounds", () => {
  test("a consumer that stops reading is cut off with event: overflow, and resumes from its last id", async () => {
    const server = await startTestServer({ schema: SCHEMA, streamBufferBytes: 64 * 1024 });
    try {
      const stream = follow(server, "/api/entities/Task/changes");
      await stream.opened;
      const first = await create(server, { title: "first" });
      await stream.waitFor(1);
      stream.pause();
      const big = "x".repeat(4000);
      for (let round = 0; round < 40; round++) {
        await server.call("POST", "/api/entities/Task/bulk", { body: Array.from({ length: 50 }, (_, i) => ({ title: `${round}-${i}`, meta: { big } })) });
      }
      stream.resume();
      await stream.waitForEnd(20_000);
      const last = stream.events.at(-1)!;
      assert.equal(last.event, "overflow");
      assert.equal(last.json.type, "overflow");
      const delivered = stream.events.filter((event) => event.event === "create");
      assert.ok(delivered.length < 2001, `cut off before the end (${delivered.length} delivered)`);
      assert.equal(delivered[0]!.json.id, first);
      // Resuming from the last id delivers the rest, once.
      const resumed = await server.call("GET", `/api/entities/Task/changes?since=${stream.lastId}&limit=1000`);
      const rest = resumed.body.changes as any[];
      assert.ok(rest.length > 0);
      assert.ok(eventIdOrder(rest[0].event_id, stream.lastId!) > 0);
    } finally {
      await server.close();
    }
  });

  test("--max-streams: a stream over the bound is 503 too_many_streams with Retry-After; SIGTERM (close) ends streams", async () => {
    const server = await startTestServer({ schema: SCHEMA, maxStreams: 2 });
    let closed = false;
    try {
      const streams = [follow(server, "/api/changes"), follow(server, "/api/entities/Task/changes")];
      await Promise.all(streams.map((stream) => stream.opened));
      const third = follow(server, "/api/changes");
      await third.opened;
      assert.equal(third.status, 503);
      assert.equal(JSON.parse(third.body).error.code, "too_many_streams");
      assert.ok(Number(third.headers["retry-after"]) > 0);
      const poll = await server.call("GET", "/api/changes?wait=1");
      assert.equal(poll.status, 503, "a long poll is held like a stream");
      assert.equal((await server.call("GET", "/api/changes")).status, 200, "a read that does not wait is not held");
      streams[0]!.close();
      await new Promise((resolve) => setTimeout(resolve, 100));
      const fourth = follow(server, "/api/changes");
      await fourth.opened;
      assert.equal(fourth.status, 200, "a closed stream frees its place");
      const startedAt = Date.now();
      await server.close();
      closed = true;
      await Promise.all([streams[1]!.waitForEnd(), fourth.waitForEnd()]);
      assert.ok(Date.now() - startedAt < 5000, "closing does not wait for the streams to end by themselves");
    } finally {
      if (!closed) await server.close();
    }
  });
});

export type { SseEvent };
