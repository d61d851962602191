// --rate-limit (docs/api.md, issue 20 item 3): publishable keys get N requests a second per client
// address, a burst of N, then 429 rate_limited with Retry-After; secret keys never; X-Forwarded-For
// only with --trust-proxy; memory bounded however many addresses come.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { RateLimiter } from "../../src/http/rate-limit.ts";
import { PUBLISHABLE, SECRET, startTestServer, type TestServer } from "../support/server.ts";

const LIMIT = 5;

describe("the rate limiter's buckets", () => {
  test("a burst of N, then one token every 1/N s; the wait is whole seconds, at least 1", () => {
    let now = 0;
    const limiter = new RateLimiter(LIMIT, () => now);
    for (let i = 0; i < LIMIT; i++) assert.equal(limiter.take("a"), 0, `request ${i + 1} of the burst`);
    assert.equal(limiter.take("a"), 1);
    assert.equal(limiter.take("b"), 0, "another address has a bucket of its own");
    now += 1000 / LIMIT; // one token back
    assert.equal(limiter.take("a"), 0);
    assert.equal(limiter.take("a"), 1);
    now += 10_000; // refilled to N, never beyond
    for (let i = 0; i < LIMIT; i++) assert.equal(limiter.take("a"), 0);
    assert.equal(limiter.take("a"), 1);
  });

  test("memory stays bounded: buckets idle for a second are full, and forgotten", () => {
    let now = 0;
    const limiter = new RateLimiter(LIMIT, () => now);
    for (let i = 0; i < 100_000; i++) {
      now = i; // a new address every millisecond
      limiter.take(`10.0.${i >> 8}.${i & 255}`);
      assert.ok(limiter.size <= 1001, `${limiter.size} buckets at ${i}`);
    }
    // A forgotten bucket was full: its address gets its whole burst again.
    now += 2000;
    for (let i = 0; i < LIMIT; i++) assert.equal(limiter.take("10.0.0.0"), 0);
  });
});

describe("--rate-limit through HTTP", () => {
  let server: TestServer;
  let proxied: TestServer;
  before(async () => {
    server = await startTestServer({ rateLimit: LIMIT });
    proxied = await startTestServer({ rateLimit: LIMIT, trustProxy: true });
  });
  after(async () => {
    await server.close();
    await proxied.close();
  });

  /** Statuses of `n` requests sent at once: they arrive together, however slow the host. */
  async function burst(target: TestServer, n: number, headers: Record<string, string> = {}): Promise<number[]> {
    const answers = await Promise.all(Array.from({ length: n }, () => target.call("GET", "/api/entities/Task", { apiKey: PUBLISHABLE, headers })));
    return answers.map((answer) => answer.status);
  }

  /** A burst of 3N: the first N pass, most of the rest are refused (the bucket refills N a second meanwhile). */
  function assertLimited(statuses: number[], what: string): void {
    const passed = statuses.filter((status) => status === 200).length;
    assert.ok(passed >= LIMIT, `${what}: ${passed} passed of ${statuses.length}`);
    assert.ok(statuses.filter((status) => status === 429).length >= LIMIT, `${what}: ${JSON.stringify(statuses)}`);
    assert.equal(passed + statuses.filter((status) => status === 429).length, statuses.length);
  }

  test("a publishable key gets N requests, then 429 rate_limited with Retry-After; the secret key is never limited", async () => {
    assertLimited(await burst(server, 3 * LIMIT), "a burst");
    // Writes at once: those over the limit are refused whole, with the code, header and details.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const writes = await Promise.all(Array.from({ length: 3 * LIMIT }, (_, i) => server.call("POST", "/api/entities/Task", { apiKey: PUBLISHABLE, body: { title: `write ${i}` } })));
    const refused = writes.filter((answer) => answer.status === 429);
    assert.ok(refused.length >= LIMIT, writes.map((answer) => answer.status).join(","));
    for (const answer of refused) {
      assert.equal(answer.body.error.code, "rate_limited");
      assert.match(answer.body.error.message, /more than 5 requests per second with a publishable key/);
      assert.equal(answer.headers.get("retry-after"), "1");
      assert.equal(answer.body.error.details.limitPerSecond, LIMIT);
    }
    // Nothing of a refused write is stored.
    const count = await server.call("GET", "/api/entities/Task/count", { apiKey: SECRET });
    assert.equal(count.body.count, writes.filter((answer) => answer.status === 201).length);
    for (let i = 0; i < 3 * LIMIT; i++) assert.equal((await server.call("GET", "/api/entities/Task", { apiKey: SECRET })).status, 200);
    // A second later the publishable key has its burst again.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    assert.equal((await server.call("GET", "/api/entities/Task", { apiKey: PUBLISHABLE })).status, 200);
  });

  test("X-Forwarded-For counts only with --trust-proxy, and then its last address is the client", async () => {
    // Without --trust-proxy every request here comes from 127.0.0.1, whatever it claims.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const claims = await Promise.all(
      Array.from({ length: 3 * LIMIT }, (_, i) => server.call("GET", "/api/entities/Task", { apiKey: PUBLISHABLE, headers: { "X-Forwarded-For": `10.1.1.${i}` } })),
    );
    assertLimited(claims.map((answer) => answer.status), "claiming other addresses does not escape the limit");
    // With it, each forwarded address has its own bucket; the proxy's own entry (the last) counts.
    assertLimited(await burst(proxied, 3 * LIMIT, { "X-Forwarded-For": "spoofed, 10.2.2.2" }), "one forwarded client");
    assert.equal((await proxied.call("GET", "/api/entities/Task", { apiKey: PUBLISHABLE, headers: { "X-Forwarded-For": "10.3.3.3" } })).status, 200);
  });

  test("an IPv6 client counts by its /64: another address of the same /64 is the same client; an IPv4-mapped one is its IPv4", async () => {
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const fromOwnSubnet = await Promise.all(
      Array.from({ length: 3 * LIMIT }, (_, i) => proxied.call("GET", "/api/entities/Task", { apiKey: PUBLISHABLE, headers: { "X-Forwarded-For": `2001:db8:1:2::${(i + 1).toString(16)}` } })),
    );
    assertLimited(fromOwnSubnet.map((answer) => answer.status), "one /64, many addresses");
    assert.equal((await proxied.call("GET", "/api/entities/Task", { apiKey: PUBLISHABLE, headers: { "X-Forwarded-For": "2001:db8:1:3::1" } })).status, 200, "the next /64 is another client");
    const mapped = await Promise.all(
      Array.from({ length: 3 * LIMIT }, (_, i) => proxied.call("GET", "/api/entities/Task", { apiKey: PUBLISHABLE, headers: { "X-Forwarded-For": i % 2 === 0 ? "10.4.4.4" : "::ffff:10.4.4.4" } })),
    );
    assertLimited(mapped.map((answer) => answer.status), "10.4.4.4 in both spellings");
  });

  test("a rate limit that is not a whole number of at least 1 stops the start", async () => {
    for (const rateLimit of [0, -1, 2.5]) await assert.rejects(startTestServer({ rateLimit }), /rate limit must be a whole number/);
  });
});
