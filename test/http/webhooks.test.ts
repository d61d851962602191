// Webhooks (docs/webhooks.md), on every store: endpoints as data (secret key only, the secret shown
// once), deliveries signed by the Standard Webhooks specification (verified by the standardwebhooks
// package), in order and at least once through failures, timeouts and a receiver that is down,
// filters, disabling, replay, the delivery log, metrics, and the catch-up of a receiver down past
// the change feed's window.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { dropPgSchema, freshPgSchema, pgTestUrl } from "../support/postgres.ts";
import { PUBLISHABLE, startTestServer, TEST_STORE, type TestServer } from "../support/server.ts";
import { isBefore, WebhookReceiver, type Received } from "../support/webhook-receiver.ts";

const NOTE = { name: "Note", type: "object", properties: { text: { type: "string" } }, required: ["text"] };
const TASK = { name: "Task", type: "object", properties: { title: { type: "string" }, status: { type: "string", enum: ["todo", "done"] } }, required: ["title"] };
/** The schedule's delays times this: 0.5 ms, 30 ms, 180 ms, 720 ms, 1.8 s, 3.6 s, 3.6 s. */
const RETRY_SCALE = 0.0001;
/** Linux's idle scheduling policy, as /proc/<pid>/task/<tid>/stat gives it. */
const SCHED_IDLE = 5;
const ATTEMPT_TIMEOUT_MS = 300;

function startServer(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  return startTestServer({ schema: { Task: TASK, Note: NOTE }, webhooksAllowPrivate: true, webhookRetryScale: RETRY_SCALE, webhookTimeoutMs: ATTEMPT_TIMEOUT_MS, ...options });
}

async function createEndpoint(server: TestServer, receiver: WebhookReceiver, fields: Record<string, unknown> = {}) {
  const created = await server.call("POST", "/api/webhooks", { body: { url: receiver.url, ...fields } });
  assert.equal(created.status, 201, created.text);
  receiver.secret = created.body.secret;
  return created.body as { id: string; secret: string; [field: string]: unknown };
}

async function createTask(server: TestServer, title: string, status = "todo"): Promise<string> {
  const made = await server.call("POST", "/api/entities/Task", { body: { title, status } });
  assert.equal(made.status, 201, made.text);
  return made.body.id as string;
}

/** The first arrival of each webhook-id, in arrival order, delivered or not. */
/** chrt (util-linux) is here and may set the idle policy (a container may refuse it). */
function canSetIdlePolicy(): boolean {
  return spawnSync("chrt", ["--idle", "0", "true"]).status === 0;
}

function firstArrivals(received: readonly Received[]): Received[] {
  const seen = new Set<string>();
  return received.filter((request) => !seen.has(request.id) && seen.add(request.id));
}

function assertInOrder(all: readonly Received[]): void {
  const received = all.filter((request) => request.event.type !== "ping");
  const firsts = firstArrivals(received).map((request) => request.id);
  for (let i = 1; i < firsts.length; i++) assert.ok(isBefore(firsts[i - 1]!, firsts[i]!), `${firsts[i - 1]} then ${firsts[i]}: out of order`);
  // A duplicate is the same event again: same id, same body.
  const bodies = new Map<string, string>();
  for (const request of received) {
    const body = JSON.stringify(request.event);
    assert.equal(bodies.get(request.id) ?? body, body, `webhook-id ${request.id} came with two bodies`);
    bodies.set(request.id, body);
  }
}

describe("webhook endpoints as data", () => {
  let server: TestServer;
  let receiver: WebhookReceiver;
  before(async () => {
    server = await startServer();
    receiver = await WebhookReceiver.start();
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });

  test("a created endpoint answers its secret once; reads and lists never show it", async () => {
    const made = await createEndpoint(server, receiver, { entities: ["Task"], events: ["create"], description: "search index" });
    assert.match(made.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.match(made.id, /^wh_[0-9a-f]{16}$/);
    assert.deepEqual({ ...made, secret: undefined, created_date: undefined, updated_date: undefined, position: undefined }, {
      id: made.id, url: receiver.url, entities: ["Task"], events: ["create"], q: null, description: "search index", enabled: true,
      state: "active", disabled_reason: null, failing: null, last_attempt: null, secret: undefined, created_date: undefined, updated_date: undefined, position: undefined,
    });
    const read = await server.call("GET", `/api/webhooks/${made.id}`);
    assert.equal(read.status, 200);
    assert.equal(read.body.secret, undefined);
    assert.equal(read.body.description, "search index");
    const list = await server.call("GET", "/api/webhooks");
    assert.equal(list.status, 200);
    assert.ok(list.body.some((endpoint: { id: string }) => endpoint.id === made.id));
    assert.ok(!list.text.includes("whsec_"), "a secret in the list");
    assert.equal(list.headers.get("cache-control"), "no-store");
  });

  test("a publishable key gets 403 on every webhook route", async () => {
    const made = await createEndpoint(server, receiver);
    for (const [method, path] of [["GET", "/api/webhooks"], ["POST", "/api/webhooks"], ["GET", `/api/webhooks/${made.id}`], ["PATCH", `/api/webhooks/${made.id}`], ["DELETE", `/api/webhooks/${made.id}`], ["POST", `/api/webhooks/${made.id}/test`], ["GET", `/api/webhooks/${made.id}/deliveries`], ["POST", `/api/webhooks/${made.id}/replay?since=0`]] as const) {
      const answer = await server.call(method, path, { apiKey: PUBLISHABLE, ...(method === "POST" || method === "PATCH" ? { body: { url: receiver.url } } : {}) });
      assert.equal(answer.status, 403, `${method} ${path}`);
      assert.equal(answer.body.error.code, "forbidden");
      assert.ok(!answer.text.includes("whsec_"));
    }
  });

  test("bad fields are refused, naming the field", async () => {
    const cases: Array<[unknown, number, string, string | null]> = [
      [{}, 400, "invalid_field", "url"],
      [{ url: receiver.url, entities: ["Nope"] }, 400, "invalid_field", "entities"],
      [{ url: receiver.url, entities: [] }, 400, "invalid_field", "entities"],
      [{ url: receiver.url, events: ["create", "explode"] }, 400, "invalid_field", "events"],
      [{ url: receiver.url, enabled: "yes" }, 400, "invalid_field", "enabled"],
      [{ url: receiver.url, q: { nope: 1 } }, 400, "unknown_field", null],
      [{ url: receiver.url, q: { status: { $near: 1 } } }, 400, "invalid_filter", null],
      [{ url: receiver.url, color: "red" }, 400, "unknown_field", null],
      [{ url: "ftp://example.com/x" }, 400, "invalid_webhook_url", null],
      [{ url: "not a url" }, 400, "invalid_webhook_url", null],
      [[1], 400, "invalid_json", null],
    ];
    for (const [body, status, code, field] of cases) {
      const answer = await server.call("POST", "/api/webhooks", { body });
      assert.equal(answer.status, status, JSON.stringify(body));
      assert.equal(answer.body.error.code, code, JSON.stringify(body));
      if (field) assert.equal(answer.body.error.details.field, field);
    }
  });

  test("PATCH changes the fields given; DELETE removes the endpoint, then 404 webhook_not_found", async () => {
    const made = await createEndpoint(server, receiver, { entities: ["Task"] });
    const patched = await server.call("PATCH", `/api/webhooks/${made.id}`, { body: { events: ["delete"], q: { status: "done" }, enabled: false } });
    assert.equal(patched.status, 200, patched.text);
    assert.deepEqual([patched.body.events, patched.body.q, patched.body.enabled, patched.body.state, patched.body.url], [["delete"], { status: "done" }, false, "disabled", receiver.url]);
    const refused = await server.call("PATCH", `/api/webhooks/${made.id}`, { body: { entities: ["Note"] } });
    assert.equal(refused.status, 400, "q names status, which Note lacks");
    const deleted = await server.call("DELETE", `/api/webhooks/${made.id}`);
    assert.deepEqual([deleted.status, deleted.body], [200, { id: made.id, deleted: true }]);
    for (const [method, path] of [["GET", `/api/webhooks/${made.id}`], ["DELETE", `/api/webhooks/${made.id}`], ["POST", `/api/webhooks/${made.id}/test`], ["GET", `/api/webhooks/${made.id}/deliveries`]] as const) {
      const answer = await server.call(method, path);
      assert.equal(answer.status, 404, `${method} ${path}`);
      assert.equal(answer.body.error.code, "webhook_not_found");
    }
  });
});

describe("webhook delivery", () => {
  let server: TestServer;
  let receiver: WebhookReceiver;
  before(async () => {
    server = await startServer();
    receiver = await WebhookReceiver.start();
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });

  test("POST …/test sends a signed ping and answers what the receiver did", async () => {
    const made = await createEndpoint(server, receiver, { entities: ["Note"] });
    const ping = await server.call("POST", `/api/webhooks/${made.id}/test`);
    assert.equal(ping.status, 200, ping.text);
    assert.deepEqual([ping.body.status, ping.body.error], [204, null]);
    assert.match(ping.body.event_id, /^ping_[0-9a-f]{16}$/);
    const arrived = receiver.received.find((request) => request.id === ping.body.event_id)!;
    assert.equal(arrived.event.type, "ping");
    assert.equal(arrived.event.data.endpoint, made.id);
    assert.deepEqual(receiver.refused, []);
    await server.call("DELETE", `/api/webhooks/${made.id}`);
  });

  test("deliveries leave from a thread of their own, under the idle scheduling policy (Linux, with chrt) or at niceness 19: the requests' thread keeps the cores", { skip: process.platform !== "linux" }, async () => {
    // The fields after the command's closing parenthesis: state is the first, nice the 17th, policy the 39th.
    const threads = () =>
      readdirSync("/proc/self/task").map((tid) => {
        const fields = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
        const after = fields.slice(fields.lastIndexOf(")") + 2).split(" ");
        return { nice: Number(after[16]), policy: Number(after[38]) };
      });
    const made = await createEndpoint(server, receiver, { entities: ["Note"] });
    const created = await server.call("POST", "/api/entities/Note", { body: { text: "sent from the sending thread" } });
    await receiver.until((r) => r.delivered.some((request) => request.event.data?.id === created.body.id), 10_000, "the note");
    assert.ok(threads().some((thread) => thread.nice === 19), `a thread at niceness 19 among ${JSON.stringify(threads())}`);
    // chrt (util-linux) sets the policy a few milliseconds after the thread starts.
    if (canSetIdlePolicy()) {
      const isIdle = () => threads().some((thread) => thread.nice === 19 && thread.policy === SCHED_IDLE);
      for (const deadline = Date.now() + 10_000; !isIdle() && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.ok(isIdle(), `a thread at niceness 19 under SCHED_IDLE among ${JSON.stringify(threads())}`);
    }
    await server.call("DELETE", `/api/webhooks/${made.id}`);
  });

  test("through 500s, timeouts and a receiver that is down, every event arrives in commit order, duplicates only with the same webhook-id", async () => {
    const made = await createEndpoint(server, receiver, { entities: ["Task"] });
    const ids: string[] = [];
    const write = async (n: number) => {
      for (let i = 0; i < n; i++) ids.push(await createTask(server, `task ${ids.length}`));
    };
    await write(3);
    await receiver.until((r) => r.delivered.length >= 3, 10_000, "3 deliveries");
    receiver.behaviour = 500;
    await write(3);
    await receiver.until((r) => r.received.filter((request) => request.answered === 500).length >= 3, 10_000, "three 500s");
    receiver.behaviour = "hang";
    await write(2);
    await receiver.until((r) => r.received.filter((request) => request.answered === 0).length >= 2, 10_000, "two hangs");
    await receiver.down();
    await write(3);
    // Up again only once an attempt met it down: on a busy machine the retry after the hangs may come late.
    const isRefused = (attempt: { status: number | null; error: string | null }) => attempt.status === null && !attempt.error?.startsWith("no answer");
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
      const attempts = await server.call("GET", `/api/webhooks/${made.id}/deliveries`);
      if (attempts.body.some(isRefused)) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const failing = await server.call("GET", `/api/webhooks/${made.id}`);
    assert.equal(failing.body.state, "retrying");
    assert.ok(failing.body.failing.attempts >= 3, JSON.stringify(failing.body.failing));
    receiver.behaviour = 200;
    await receiver.up();
    // Fixing the endpoint (here: a PATCH) tries the failing event again at once.
    await server.call("PATCH", `/api/webhooks/${made.id}`, { body: { description: "back" } });
    await write(2);
    await receiver.until((r) => ids.every((id) => r.delivered.some((request) => request.event.id === id)), 15_000, "every create delivered");
    const delivered = receiver.delivered.filter((request) => request.event.entity === "Task");
    assert.deepEqual([...new Set(delivered.map((request) => request.event.id))], ids, "each record's create, in commit order");
    assertInOrder(receiver.received);
    assert.ok(receiver.received.length > ids.length, "failed attempts were sent again");
    for (const request of delivered) {
      assert.equal(request.event.type, "create");
      assert.equal(request.id, request.event.event_id, "webhook-id is the change event's id");
      assert.equal(request.event.data.created_by_id !== undefined, true, "shaped as for a secret key");
    }
    assert.deepEqual(receiver.refused, []);
    // The receiver counts a delivery as it answers; tabula logs the attempt once it has read that
    // answer (on PostgreSQL, a write of its own), so the log may lag the receiver by a moment.
    let deliveries = await server.call("GET", `/api/webhooks/${made.id}/deliveries`);
    for (const deadline = Date.now() + 10_000; deliveries.body[0]?.error !== null && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      deliveries = await server.call("GET", `/api/webhooks/${made.id}/deliveries`);
    }
    assert.equal(deliveries.status, 200);
    assert.ok(deliveries.body.length <= 100);
    assert.equal(deliveries.body[0].error, null);
    const kinds = new Set(deliveries.body.map((attempt: { status: number | null; error: string | null }) => (attempt.status === 500 ? "500" : attempt.error?.startsWith("no answer") ? "timeout" : attempt.status === null ? "down" : "ok")));
    assert.deepEqual([...kinds].sort(), ["500", "down", "ok", "timeout"]);
    const state = await server.call("GET", `/api/webhooks/${made.id}`);
    assert.deepEqual([state.body.state, state.body.failing], ["active", null]);
    await server.call("DELETE", `/api/webhooks/${made.id}`);
  });

  test("entities, events and q narrow what is sent; q is checked on the version written", async () => {
    receiver.behaviour = 204;
    const made = await createEndpoint(server, receiver, { entities: ["Task"], events: ["update", "delete"], q: { status: "done" } });
    const from = receiver.received.length;
    const id = await createTask(server, "narrowed", "done");
    await server.call("POST", "/api/entities/Note", { body: { text: "not followed" } });
    await server.call("PATCH", `/api/entities/Task/${id}`, { body: { status: "todo" } });
    await server.call("PATCH", `/api/entities/Task/${id}`, { body: { status: "done", title: "done now" } });
    await server.call("DELETE", `/api/entities/Task/${id}`);
    await receiver.until((r) => r.received.slice(from).some((request) => request.event.type === "delete"), 10_000, "the delete");
    const got = deliveredSince(receiver, from).map((request) => [request.event.type, request.event.data.title]);
    assert.deepEqual(got, [["update", "done now"], ["delete", "done now"]]);
    await server.call("DELETE", `/api/webhooks/${made.id}`);
  });

  test("after the last retry, or on 410 Gone, the endpoint is disabled with its reason; enabling resumes from its position", async (t) => {
    receiver.behaviour = 503;
    // A schedule of about 2 s in all.
    const server = await startServer({ webhookRetryScale: 0.00002 });
    t.after(() => server.close());
    const made = await createEndpoint(server, receiver, { entities: ["Note"] });
    const first = await server.call("POST", "/api/entities/Note", { body: { text: "never taken" } });
    // 8 attempts: the first and 7 retries.
    const disabled = await waitFor(server, made.id, (endpoint) => endpoint.state === "disabled", 20_000);
    assert.match(disabled.disabled_reason, /^8 attempts at event \S+ failed/);
    assert.equal(receiver.received.filter((request) => request.event.data?.id === first.body.id).length, 8);
    receiver.behaviour = 204;
    const enabled = await server.call("PATCH", `/api/webhooks/${made.id}`, { body: { enabled: true } });
    assert.deepEqual([enabled.body.state, enabled.body.disabled_reason], ["active", null]);
    await receiver.until((r) => r.delivered.some((request) => request.event.data?.id === first.body.id), 10_000, "the note after enabling");

    receiver.behaviour = 410;
    await server.call("POST", "/api/entities/Note", { body: { text: "gone" } });
    const gone = await waitFor(server, made.id, (endpoint) => endpoint.state === "disabled", 10_000);
    assert.match(gone.disabled_reason, /410 Gone/);
    receiver.behaviour = 204;
  });

  test("replay?since= sends the events after it again, with the same webhook-ids", async () => {
    receiver.behaviour = 204;
    const made = await createEndpoint(server, receiver, { entities: ["Note"] });
    const from = receiver.received.length;
    for (const text of ["a", "b", "c"]) await server.call("POST", "/api/entities/Note", { body: { text } });
    await receiver.until((r) => deliveredSince(r, from).length >= 3, 10_000, "three notes");
    const sent = deliveredSince(receiver, from);
    const replay = await server.call("POST", `/api/webhooks/${made.id}/replay?since=${sent[0]!.id}`);
    assert.deepEqual([replay.status, replay.body], [202, { id: made.id, since: sent[0]!.id }]);
    await receiver.until((r) => deliveredSince(r, from).length >= 5, 10_000, "two notes again");
    assert.deepEqual(deliveredSince(receiver, from).slice(3).map((request) => request.id), sent.slice(1).map((request) => request.id));
    const bad = await server.call("POST", `/api/webhooks/${made.id}/replay?since=999999999.0`);
    assert.deepEqual([bad.status, bad.body.error.code], [400, "invalid_cursor"]);
    // The sending thread reports attempts a few at a time, and the lag reads 0 once the deliverer
    // has read the feed again and found nothing after the last event it sent (on PostgreSQL a query
    // after the receiver's answer): both are waited for, not read at once.
    const counted = new RegExp(`tabula_webhook_deliveries_total\\{endpoint="${made.id}",result="delivered"\\} 5\\n`);
    const caughtUp = new RegExp(`tabula_webhook_lag_seconds\\{endpoint="${made.id}"\\} 0\\n`);
    const deadline = Date.now() + 10_000;
    let text = (await server.call("GET", "/metrics")).text;
    while (!(counted.test(text) && caughtUp.test(text)) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      text = (await server.call("GET", "/metrics")).text;
    }
    assert.match(text, counted);
    assert.match(text, caughtUp);
    await server.call("DELETE", `/api/webhooks/${made.id}`);
  });
});

describe("a receiver down past the change feed's window", () => {
  /**
   * A window of five events, and an attempt's time limit that a loaded host never reaches: these
   * tests count each attempt, and a 204 answered after ATTEMPT_TIMEOUT_MS would be sent again.
   */
  function startCatchUpServer(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
    return startServer({ changesKeep: 5, webhookTimeoutMs: 10_000, ...options });
  }

  /**
   * An endpoint of Task, created disabled, then four tasks created, updated five times each, and
   * the first deleted: 25 events, five times a window of changesKeep 5, so that its position is
   * long gone from the window. Enabled only once the writes are done, every read it makes is of the
   * catch-up (a read made during the writes may get the window's first events: correct, but not
   * these tests).
   */
  async function writePastTheWindow(server: TestServer, receiver: WebhookReceiver): Promise<{ id: string; ids: string[] }> {
    const made = await createEndpoint(server, receiver, { entities: ["Task"], enabled: false });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await createTask(server, `t${i}`));
    for (let round = 0; round < 5; round++) for (const id of ids) await server.call("PATCH", `/api/entities/Task/${id}`, { body: { title: `t${ids.indexOf(id)} round ${round}` } });
    await server.call("DELETE", `/api/entities/Task/${ids[0]}`);
    const position = (await server.call("GET", `/api/webhooks/${made.id}`)).body.position as string;
    // The window is cut back after the writes. On PostgreSQL only below the oldest transaction still
    // open anywhere in the cluster (another test file's, maybe), so the cut may come a moment later:
    // wait until a reader at the endpoint's position gets the catch-up's syncs, as the endpoint will.
    for (const deadline = Date.now() + 15_000; ; ) {
      const page = await server.call("GET", `/api/changes?since=${encodeURIComponent(position)}&limit=1`);
      assert.equal(page.status, 200, page.text);
      if (page.body.changes[0]?.type === "sync") {
        assert.ok(isBefore(position, page.body.oldest), `position ${position} inside the window (oldest ${page.body.oldest})`);
        break;
      }
      assert.ok(Date.now() < deadline, `the window was not cut past the endpoint's position within 15 s: ${page.text}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return { id: made.id, ids };
  }

  /** One sync per record, its latest version, in the order those versions were written. */
  function syncsOwed(ids: readonly string[]): unknown[] {
    return [[ids[1], false, "t1 round 4"], [ids[2], false, "t2 round 4"], [ids[3], false, "t3 round 4"], [ids[0], true, "t0 round 4"]];
  }

  /** The syncs delivered, each once: a receiver drops a repeat by its webhook-id. */
  function syncsOf(receiver: WebhookReceiver): unknown[] {
    return firstArrivals(receiver.delivered)
      .filter((request) => request.event.type === "sync")
      .map((request) => [request.event.id, request.event.deleted, request.event.data.title]);
  }

  async function enable(server: TestServer, id: string): Promise<void> {
    assert.equal((await server.call("PATCH", `/api/webhooks/${id}`, { body: { enabled: true } })).status, 200);
  }

  test("gets one sync per record written meanwhile, in commit order of their versions, then every event", async () => {
    const server = await startCatchUpServer();
    const receiver = await WebhookReceiver.start();
    try {
      await receiver.down();
      const { id, ids } = await writePastTheWindow(server, receiver);
      await enable(server, id);
      // The deliverer finds the receiver down, then it comes back: the retries deliver the catch-up.
      for (const deadline = Date.now() + 10_000; (await server.call("GET", `/api/webhooks/${id}/deliveries`)).body.length === 0; ) {
        assert.ok(Date.now() < deadline, "no attempt within 10 s");
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await receiver.up();
      await receiver.until((r) => syncsOf(r).length >= 4, 15_000, "four syncs");
      assert.deepEqual(syncsOf(receiver), syncsOwed(ids));
      assert.equal(receiver.delivered.filter((request) => request.event.type !== "sync").length, 0, "no event before the syncs");
      const later = await createTask(server, "after");
      await receiver.until((r) => r.delivered.some((request) => request.event.id === later), 10_000, "the create after");
      assert.equal(receiver.delivered.at(-1)!.event.type, "create");
      assertInOrder(receiver.received);
    } finally {
      await server.close();
      await receiver.close();
    }
  });

  // The syncs lie inside the window (they are the records' latest versions): resumed from one as
  // from any event, the catch-up gave way to the window's events, the rest of the records never got
  // their sync, and a sync's webhook-id came again on an update.
  test("a catch-up cut short by a failed attempt goes on with syncs: the retry sends the same sync again", async () => {
    const server = await startCatchUpServer();
    const receiver = await WebhookReceiver.start();
    try {
      const { id, ids } = await writePastTheWindow(server, receiver);
      receiver.next = [204, 500];
      await enable(server, id);
      await receiver.until((r) => r.delivered.some((request) => request.event.id === ids[0]), 15_000, "the last record's sync");
      assert.deepEqual(
        receiver.received.map((request) => [request.event.type, request.event.id, request.answered]),
        [["sync", ids[1], 204], ["sync", ids[2], 500], ["sync", ids[2], 204], ["sync", ids[3], 204], ["sync", ids[0], 204]],
      );
      assertInOrder(receiver.received);
    } finally {
      await server.close();
      await receiver.close();
    }
  });

  test("a catch-up cut short by a restart goes on with syncs", { skip: TEST_STORE === "memory" && "the memory store keeps nothing across a restart" }, async () => {
    const place = await lastingPlace();
    const receiver = await WebhookReceiver.start();
    let server = await startCatchUpServer(place.options);
    try {
      const { id, ids } = await writePastTheWindow(server, receiver);
      receiver.next = [204];
      receiver.behaviour = 500;
      await enable(server, id);
      await receiver.until((r) => r.received.length >= 2, 15_000, "the first sync taken, the second refused");
      await server.close();
      receiver.behaviour = 204;
      server = await startCatchUpServer(place.options);
      await receiver.until((r) => r.delivered.some((request) => request.event.id === ids[0]), 15_000, "the last record's sync");
      assert.deepEqual(syncsOf(receiver), syncsOwed(ids));
      assert.equal(receiver.delivered.filter((request) => request.event.type !== "sync").length, 0, "only syncs");
      assertInOrder(receiver.received);
    } finally {
      await server.close();
      await receiver.close();
      await place.remove();
    }
  });
});

/** Where a server keeps its records across a restart on the test store: a data folder, or a PostgreSQL schema. */
async function lastingPlace(): Promise<{ options: Parameters<typeof startTestServer>[0]; remove(): Promise<void> }> {
  if (TEST_STORE === "postgres") {
    const url = pgTestUrl()!;
    const pgSchema = freshPgSchema();
    return { options: { store: url, pgSchema }, remove: () => dropPgSchema(url, pgSchema) };
  }
  const data = await mkdtemp(join(tmpdir(), "tabula-webhook-restart-"));
  return { options: { memory: false, data }, remove: () => rm(data, { recursive: true, force: true }) };
}

function deliveredSince(receiver: WebhookReceiver, from: number): Received[] {
  return receiver.received.slice(from).filter((request) => request.answered >= 200 && request.answered < 300);
}

async function waitFor(server: TestServer, id: string, check: (endpoint: any) => boolean, ms: number): Promise<any> {
  const deadline = Date.now() + ms;
  for (;;) {
    const endpoint = (await server.call("GET", `/api/webhooks/${id}`)).body;
    if (check(endpoint)) return endpoint;
    if (Date.now() > deadline) assert.fail(`endpoint ${id} did not get there within ${ms} ms: ${JSON.stringify(endpoint)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
