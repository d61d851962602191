// GET /metrics (docs/operating.md, issue 21): Prometheus text that a parser holding the format's rules
// accepts, for a secret key only; requests counted by route template (never the raw path) and
// status with a latency histogram, records per entity, open feed streams, and on the file store its
// log, snapshot, fsync latency and compactions. Runs on every store.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { parseExposition, type Exposition } from "../support/prometheus.ts";
import { PUBLISHABLE, SECRET, startTestServer, TASK, TEST_STORE, type TestServer } from "../support/server.ts";
import { SseClient } from "../support/sse.ts";

const NOTE = { name: "Note", properties: { text: { type: "string" } } };
const ONE_ROUTE = "/api/entities/:entity/:id";

describe("GET /metrics", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ schema: { Task: TASK, Note: NOTE } });
  });
  after(() => server.close());

  async function scrape(): Promise<Exposition> {
    const answer = await server.call("GET", "/metrics");
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
    return parseExposition(answer.text);
  }

  test("needs a secret key: none is 401, a publishable key 403, another method 405", async () => {
    assert.equal((await server.call("GET", "/metrics", { apiKey: null })).status, 401);
    const publishable = await server.call("GET", "/metrics", { apiKey: PUBLISHABLE });
    assert.equal(publishable.status, 403);
    assert.equal(publishable.body.error.code, "forbidden");
    const bearer = await fetch(`${server.url}/metrics`, { headers: { Authorization: `Bearer ${SECRET}` } });
    assert.equal(bearer.status, 200, "Prometheus sends the key as a bearer token");
    await bearer.text();
    assert.equal((await server.call("POST", "/metrics")).status, 405);
  });

  test("counts requests by route template, method and status, each with a latency histogram", async () => {
    const created = await server.call("POST", "/api/entities/Task", { body: { title: "counted" } });
    assert.equal(created.status, 201);
    const before = await scrape();
    const ok = (labels: Record<string, string>, exposition = before) => exposition.value("tabula_http_requests_total", labels) ?? 0;
    for (let i = 0; i < 3; i++) assert.equal((await server.call("GET", `/api/entities/Task/${created.body.id}`)).status, 200);
    assert.equal((await server.call("GET", "/api/entities/Task/0123456789abcdef01234567")).status, 404);
    assert.equal((await server.call("GET", "/api/nothing/here")).status, 404);
    assert.equal((await server.call("GET", "/api/entities/Task", { apiKey: "sk_wrong_key_pad" })).status, 401);
    const after = await scrape();
    const delta = (labels: Record<string, string>) => ok(labels, after) - ok(labels, before);
    assert.equal(delta({ route: ONE_ROUTE, method: "GET", status: "200" }), 3);
    assert.equal(delta({ route: ONE_ROUTE, method: "GET", status: "404" }), 1);
    assert.equal(delta({ route: "(none)", method: "GET", status: "404" }), 1, "an unknown path counts under no route, not under its own path");
    assert.equal(delta({ route: "(none)", method: "GET", status: "401" }), 1, "refused before routing");
    assert.equal(delta({ route: "/metrics", method: "GET", status: "200" }), 1, "the scrape before");
    assert.ok(!after.samples.some((sample) => sample.labels.route?.includes(created.body.id)), "no raw path becomes a label");
    // The histogram of the route counts the same requests: 3 found, 1 not.
    const count = (exposition: Exposition) => exposition.value("tabula_http_request_duration_seconds_count", { route: ONE_ROUTE, method: "GET" }) ?? 0;
    assert.equal(count(after) - count(before), 4);
    assert.ok(after.value("tabula_http_request_duration_seconds_sum", { route: ONE_ROUTE, method: "GET" })! > 0);
    assert.equal(after.types.get("tabula_http_request_duration_seconds"), "histogram");
    assert.equal(after.types.get("tabula_http_requests_total"), "counter");
  });

  test("records per entity, live and deleted, for every declared entity", async () => {
    const ids: string[] = [];
    for (const text of ["a", "b", "c"]) ids.push((await server.call("POST", "/api/entities/Note", { body: { text } })).body.id);
    assert.equal((await server.call("DELETE", `/api/entities/Note/${ids[0]}`)).status, 200);
    const exposition = await scrape();
    assert.equal(exposition.value("tabula_records", { entity: "Note", state: "live" }), 2);
    assert.equal(exposition.value("tabula_records", { entity: "Note", state: "deleted" }), 1);
    assert.equal(exposition.types.get("tabula_records"), "gauge");
    assert.equal(exposition.value("tabula_info", {}), 1);
    assert.equal(exposition.samples.find((sample) => sample.name === "tabula_info")!.labels.store, TEST_STORE);
    assert.ok(exposition.value("process_resident_memory_bytes")! > 1024 * 1024);
  });

  test("open change feed streams", async () => {
    const stream = new SseClient(`${server.url}/api/entities/Task/changes`, { "X-Api-Key": SECRET });
    await stream.opened;
    assert.equal((await scrape()).value("tabula_feed_streams"), 1);
    stream.close();
    await stream.waitForEnd();
    // The server hears of the closed connection a moment after the client closes it.
    for (let tries = 0; (await scrape()).value("tabula_feed_streams") !== 0; tries++) {
      assert.ok(tries < 100, "the closed stream is still counted");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  });

  test("the file store's log and snapshot bytes, fsync latency and compactions; no such families elsewhere", async () => {
    const before = await scrape();
    assert.equal((await server.call("POST", "/api/entities/Task", { body: { title: "synced" } })).status, 201);
    const after = await scrape();
    if (TEST_STORE !== "file") {
      for (const family of ["tabula_log_bytes", "tabula_fsync_duration_seconds", "tabula_compactions_total"]) assert.equal(after.types.get(family), undefined, family);
      return;
    }
    assert.equal(after.types.get("tabula_fsync_duration_seconds"), "histogram");
    assert.ok(after.value("tabula_fsync_duration_seconds_count")! > before.value("tabula_fsync_duration_seconds_count")!, "the create's durable write is counted");
    assert.ok(after.value("tabula_log_bytes")! > before.value("tabula_log_bytes")!);
    assert.ok(after.value("tabula_snapshot_bytes")! >= 0);
    assert.equal(after.value("tabula_compactions_total", { result: "failed" }), 0);
    assert.equal(typeof after.value("tabula_compactions_total", { result: "done" }), "number");
  });
});

describe("the exposition parser refuses what the format forbids", () => {
  const cases: Array<[string, string]> = [
    ["a sample before its TYPE", "x_total 1\n# TYPE x_total counter\n"],
    ["a family's lines apart", "# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na{k=\"v\"} 2\n"],
    ["a bad escape", '# TYPE a gauge\na{k="\\t"} 1\n'],
    ["a series twice", "# TYPE a gauge\na 1\na 2\n"],
    ["buckets not cumulative", '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n'],
    ["no +Inf bucket", '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n'],
  ];
  for (const [name, text] of cases) test(name, () => assert.throws(() => parseExposition(text), /Not the Prometheus text format/));
});
