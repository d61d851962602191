// Request metrics by route, method and status: a series held by a hot path (the plain read's, in
// server.ts) and requests observed by name count into the same series and the same histogram.
// GET /metrics itself is tested through a server in test/http/metrics.test.ts.

import assert from "node:assert/strict";
import { test } from "node:test";
import { Exposition } from "../../src/metrics/exposition.ts";
import { RequestMetrics } from "../../src/metrics/request-metrics.ts";
import { parseExposition } from "../support/prometheus.ts";

const ROUTE = "/api/entities/:entity/:id";

function scrape(metrics: RequestMetrics) {
  const out = new Exposition();
  metrics.writeTo(out);
  return parseExposition(out.toString());
}

test("a held series and requests observed by name count into one series and one histogram", () => {
  const metrics = new RequestMetrics();
  metrics.observe("GET", ROUTE, 200, 0.0001);
  const held = metrics.series("GET", ROUTE, 200);
  held.observe(0.002);
  held.observe(0.0003);
  metrics.observe("GET", ROUTE, 404, 0.0008);
  metrics.observe("PATCH", ROUTE, 200, 0.02);
  assert.equal(metrics.series("GET", ROUTE, 200) !== held, true, "a new handle each time, to the same series");
  metrics.series("GET", ROUTE, 200).observe(0.0004);

  const exposition = scrape(metrics);
  const total = (method: string, status: string) => exposition.value("tabula_http_requests_total", { route: ROUTE, method, status });
  assert.equal(total("GET", "200"), 4);
  assert.equal(total("GET", "404"), 1);
  assert.equal(total("PATCH", "200"), 1);
  const bucket = (le: string) => exposition.value("tabula_http_request_duration_seconds_bucket", { route: ROUTE, method: "GET", le });
  assert.deepEqual([bucket("0.0005"), bucket("0.001"), bucket("0.0025"), bucket("+Inf")], [3, 4, 5, 5]);
  assert.equal(exposition.value("tabula_http_request_duration_seconds_count", { route: ROUTE, method: "GET" }), 5);
  assert.ok(Math.abs(exposition.value("tabula_http_request_duration_seconds_sum", { route: ROUTE, method: "GET" })! - 0.0036) < 1e-12);
});
