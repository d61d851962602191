// Where webhooks may go, continued (docs/webhooks.md, "Safety"), on every store: this machine's own
// addresses, and IPv6 addresses that embed a refused IPv4 address (IPv4-compatible, -mapped and
// -translated, NAT64, 6to4, Teredo), are refused when an endpoint is saved (400 invalid_webhook_url)
// and again at each connection, where a name may resolve to one later. --webhooks-allow-private
// allows them all. webhook-targets.test.ts holds the private ranges.

import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo, LookupFunction } from "node:net";
import { networkInterfaces } from "node:os";
import { after, before, describe, test } from "node:test";
import { startTestServer, type TestServer } from "../support/server.ts";

const TASK = { name: "Task", type: "object", properties: { title: { type: "string" } }, required: ["title"] };
const REFUSED_KIND = "a loopback, private, link-local or metadata address";
/** 203.0.113.7 (TEST-NET-3, public as far as the check goes) in the IPv6 forms that embed it. */
const PUBLIC_V4 = "203.0.113.7";

/** A resolver the test controls: each name answers what `answers` holds for it now. */
function fakeLookup(answers: Map<string, string>): LookupFunction {
  return ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    const address = answers.get(hostname);
    if (address === undefined) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" }));
    const family = address.includes(":") ? 6 : 4;
    if (options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  }) as unknown as LookupFunction;
}

/** [host as written in the URL, the address as the URL parser spells it, what the refusal says of it]. */
const EMBEDDED: ReadonlyArray<readonly [string, string, string]> = [
  ["[::127.0.0.1]", "::7f00:1", `embeds 127.0.0.1 (IPv4-compatible), ${REFUSED_KIND}`],
  ["[::10.1.2.3]", "::a01:203", `embeds 10.1.2.3 (IPv4-compatible), ${REFUSED_KIND}`],
  ["[::ffff:0:7f00:1]", "::ffff:0:7f00:1", `embeds 127.0.0.1 (IPv4-translated), ${REFUSED_KIND}`],
  ["[::ffff:0:169.254.169.254]", "::ffff:0:a9fe:a9fe", `embeds 169.254.169.254 (IPv4-translated), ${REFUSED_KIND}`],
  // IPv4-mapped in other spellings: the URL parser writes each as ::ffff:7f00:1.
  ["[0:0:0:0:0:FFFF:7F00:0001]", "::ffff:7f00:1", `is ${REFUSED_KIND}`],
  ["[::ffff:127.0.0.1]", "::ffff:7f00:1", `is ${REFUSED_KIND}`],
  ["[64:ff9b::7f00:1]", "64:ff9b::7f00:1", `embeds 127.0.0.1 (NAT64), ${REFUSED_KIND}`],
  ["[64:ff9b::a9fe:a9fe]", "64:ff9b::a9fe:a9fe", `embeds 169.254.169.254 (NAT64), ${REFUSED_KIND}`],
  ["[64:ff9b::192.168.0.1]", "64:ff9b::c0a8:1", `embeds 192.168.0.1 (NAT64), ${REFUSED_KIND}`],
  // NAT64 for local use (RFC 8215) reaches the local network, wherever the IPv4 address sits.
  ["[64:ff9b:1::cb00:7107]", "64:ff9b:1::cb00:7107", `is ${REFUSED_KIND}`],
  ["[2002:a9fe:a9fe::]", "2002:a9fe:a9fe::", `embeds 169.254.169.254 (6to4), ${REFUSED_KIND}`],
  ["[2002:7f00:1::1]", "2002:7f00:1::1", `embeds 127.0.0.1 (6to4), ${REFUSED_KIND}`],
  // Teredo: the client's address is the last 32 bits inverted (127.0.0.1 → 80ff:fffe, 10.0.0.1 → f5ff:fffe).
  ["[2001:0:4136:e378:8000:63bf:80ff:fffe]", "2001:0:4136:e378:8000:63bf:80ff:fffe", `embeds 127.0.0.1 (Teredo client), ${REFUSED_KIND}`],
  ["[2001:0:4136:e378:8000:63bf:f5ff:fffe]", "2001:0:4136:e378:8000:63bf:f5ff:fffe", `embeds 10.0.0.1 (Teredo client), ${REFUSED_KIND}`],
  ["[::]", "::", `is ${REFUSED_KIND}`],
  ["0.0.0.0", "0.0.0.0", `is ${REFUSED_KIND}`],
];

/** The same forms around a public IPv4 address: nothing is refused for its form alone. */
const PUBLIC_EMBEDDED = ["[::ffff:cb00:7107]", "[64:ff9b::cb00:7107]", "[2002:cb00:7107::1]", "[2001:0:4136:e378:8000:63bf:34ff:8ef8]"];

const PRIVATE_V4 = [/^10\./, /^127\./, /^169\.254\./, /^172\.(1[6-9]|2\d|3[01])\./, /^192\.168\./, /^100\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7])\./];

/**
 * An address of one of this machine's interfaces other than loopback, preferring one outside the
 * private ranges (a cloud machine's public-facing address), where only the own-address check refuses it.
 */
function ownAddress(): { address: string; name: string; isPrivate: boolean } | null {
  const found = Object.entries(networkInterfaces()).flatMap(([name, addresses]) =>
    (addresses ?? []).filter((entry) => !entry.internal).map(({ address, family }) => ({ address, name, family, isPrivate: family === "IPv4" ? PRIVATE_V4.some((range) => range.test(address)) : /^f[cde]/i.test(address) })),
  );
  const best = found.find((entry) => !entry.isPrivate && entry.family === "IPv4") ?? found.find((entry) => !entry.isPrivate) ?? found[0];
  return best ? { address: best.address, name: best.name, isPrivate: best.isPrivate } : null;
}

/** A receiver listening on every interface (0.0.0.0), as a service a cloud firewall hides would: it counts what reaches it. */
async function startAnyInterfaceReceiver(): Promise<{ server: Server; port: number; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url ?? "");
    req.resume();
    req.on("end", () => res.writeHead(204).end());
  });
  await new Promise<void>((resolve) => server.listen(0, "0.0.0.0", resolve));
  return { server, port: (server.address() as AddressInfo).port, hits };
}

function urlOf(host: string, port: number): string {
  return `http://${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}:${port}/hook`;
}

describe("without --webhooks-allow-private", () => {
  const answers = new Map<string, string>([["turns.example.test", PUBLIC_V4], ["nat64.example.test", "64:ff9b::7f00:1"]]);
  let server: TestServer;
  let receiver: Awaited<ReturnType<typeof startAnyInterfaceReceiver>>;
  before(async () => {
    server = await startTestServer({ schema: { Task: TASK }, webhookLookup: fakeLookup(answers), webhookTimeoutMs: 1000 });
    receiver = await startAnyInterfaceReceiver();
  });
  after(async () => {
    await server.close();
    receiver.server.closeAllConnections();
    await new Promise((resolve) => receiver.server.close(resolve));
  });

  for (const [host, spelled, says] of EMBEDDED) {
    test(`http://${host}/hook is refused when saved: 400 invalid_webhook_url saying ${says}`, async () => {
      const url = `http://${host}/hook`;
      const answer = await server.call("POST", "/api/webhooks", { body: { url } });
      assert.equal(answer.status, 400, answer.text);
      assert.equal(answer.body.error.code, "invalid_webhook_url");
      assert.equal(answer.body.error.details.url, url);
      assert.ok(answer.body.error.message.startsWith(`url's host ${spelled} ${says}. `), answer.body.error.message);
      assert.match(answer.body.error.message, /--webhooks-allow-private/);
      const kept = (await server.call("GET", "/api/webhooks")).body as Array<{ url: string }>;
      assert.ok(!kept.some((endpoint) => new URL(endpoint.url).hostname === new URL(url).hostname), "nothing was kept");
    });
  }

  test("the same forms around a public IPv4 address are accepted", async () => {
    for (const host of PUBLIC_EMBEDDED) {
      const url = `http://${host}/hook`;
      const answer = await server.call("POST", "/api/webhooks", { body: { url, enabled: false } });
      assert.equal(answer.status, 201, `${url}: ${answer.text}`);
      assert.equal(answer.body.url, url);
      await server.call("DELETE", `/api/webhooks/${answer.body.id}`);
    }
  });

  test("a name resolving to an embedded form when saved is refused then", async () => {
    const answer = await server.call("POST", "/api/webhooks", { body: { url: "http://nat64.example.test/hook" } });
    assert.equal(answer.status, 400, answer.text);
    assert.equal(answer.body.error.code, "invalid_webhook_url");
    assert.ok(answer.body.error.message.startsWith(`url's host nat64.example.test resolves to 64:ff9b::7f00:1 embeds 127.0.0.1 (NAT64), ${REFUSED_KIND}. `), answer.body.error.message);
  });

  test("a name that resolves to each form by the time of the connection is refused then: the ping and the delivery log show it", async () => {
    answers.set("turns.example.test", PUBLIC_V4);
    const made = await server.call("POST", "/api/webhooks", { body: { url: `http://turns.example.test:${receiver.port}/hook`, entities: ["Task"], enabled: false } });
    assert.equal(made.status, 201, made.text);
    const pings: Array<{ event_id: string; error: string }> = [];
    for (const [, spelled, says] of EMBEDDED) {
      answers.set("turns.example.test", spelled);
      const ping = await server.call("POST", `/api/webhooks/${made.body.id}/test`);
      assert.equal(ping.status, 200, ping.text);
      assert.equal(ping.body.status, null);
      assert.equal(ping.body.error, `refused: turns.example.test resolves to ${spelled} ${says}`);
      pings.push(ping.body);
    }
    // The delivery log keeps them, newest first (its deliverer starts just after the create, so the first may be missed).
    const log = (await server.call("GET", `/api/webhooks/${made.body.id}/deliveries`)).body as Array<{ event_id: string; error: string }>;
    const kept = pings.slice(-log.length).reverse();
    assert.ok(log.length >= pings.length - 1, `${log.length} attempts kept of ${pings.length}`);
    assert.deepEqual(log.map(({ event_id, error }) => [event_id, error]), kept.map(({ event_id, error }) => [event_id, error]));
    assert.deepEqual(receiver.hits, [], "nothing reached the receiver");
    await server.call("DELETE", `/api/webhooks/${made.body.id}`);
  });

  test("this machine's own interface address is refused when saved and at each connection", async (t) => {
    const own = ownAddress();
    if (!own) return t.skip("this machine has no interface address but loopback: the own-address check is not exercised here");
    if (own.isPrivate) t.diagnostic(`${own.address} is in a private range, refused as such: no public-facing interface address to check the own-address rule alone`);
    const says = own.isPrivate ? /is a loopback, private, link-local or metadata address/ : new RegExp(`is an address of this machine \\(${own.name}\\)`);
    const url = urlOf(own.address, receiver.port);
    const saved = await server.call("POST", "/api/webhooks", { body: { url } });
    assert.equal(saved.status, 400, saved.text);
    assert.equal(saved.body.error.code, "invalid_webhook_url");
    assert.match(saved.body.error.message, says);

    answers.set("turns.example.test", PUBLIC_V4);
    const made = await server.call("POST", "/api/webhooks", { body: { url: `http://turns.example.test:${receiver.port}/hook`, entities: ["Task"] } });
    assert.equal(made.status, 201, made.text);
    answers.set("turns.example.test", own.address);
    const ping = await server.call("POST", `/api/webhooks/${made.body.id}/test`);
    assert.equal(ping.body.status, null);
    assert.match(ping.body.error, new RegExp(`^refused: turns\\.example\\.test resolves to ${own.address.replace(/[.:]/g, "\\$&")} `));
    assert.match(ping.body.error, says);
    // A change is attempted and refused the same way, and shows in the delivery log.
    await server.call("POST", "/api/entities/Task", { body: { title: "not for this machine" } });
    const deadline = Date.now() + 5000;
    let view = (await server.call("GET", `/api/webhooks/${made.body.id}`)).body;
    while (view.state !== "retrying" && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      view = (await server.call("GET", `/api/webhooks/${made.body.id}`)).body;
    }
    assert.equal(view.state, "retrying", "the change was attempted and failed");
    assert.match(view.failing.error, says);
    const log: Array<{ event_id: string; error: string | null }> = (await server.call("GET", `/api/webhooks/${made.body.id}/deliveries`)).body;
    const change = log.find((attempt) => !attempt.event_id.startsWith("ping_"));
    assert.ok(change, "the change's attempt is in the delivery log");
    assert.equal(change.error, view.failing.error);
    assert.deepEqual(receiver.hits, [], "nothing reached the receiver");
    await server.call("DELETE", `/api/webhooks/${made.body.id}`);
  });
});

describe("with --webhooks-allow-private", () => {
  const answers = new Map<string, string>();
  let server: TestServer;
  let receiver: Awaited<ReturnType<typeof startAnyInterfaceReceiver>>;
  before(async () => {
    server = await startTestServer({ schema: { Task: TASK }, webhooksAllowPrivate: true, webhookLookup: fakeLookup(answers), webhookTimeoutMs: 1000 });
    receiver = await startAnyInterfaceReceiver();
  });
  after(async () => {
    await server.close();
    receiver.server.closeAllConnections();
    await new Promise((resolve) => receiver.server.close(resolve));
  });

  test("every embedded form is accepted", async () => {
    for (const [host] of EMBEDDED) {
      const url = `http://${host}/hook`;
      const answer = await server.call("POST", "/api/webhooks", { body: { url, enabled: false } });
      assert.equal(answer.status, 201, `${url}: ${answer.text}`);
      await server.call("DELETE", `/api/webhooks/${answer.body.id}`);
    }
  });

  test("this machine's own interface address is accepted and reached", async (t) => {
    const own = ownAddress();
    if (!own) return t.skip("this machine has no interface address but loopback: the own-address check is not exercised here");
    const made = await server.call("POST", "/api/webhooks", { body: { url: urlOf(own.address, receiver.port), enabled: false } });
    assert.equal(made.status, 201, made.text);
    const ping = await server.call("POST", `/api/webhooks/${made.body.id}/test`);
    assert.deepEqual([ping.body.status, ping.body.error], [204, null]);
    assert.deepEqual(receiver.hits, ["/hook"]);
    // And a name resolving to it at the connection.
    answers.set("self.example.test", own.address);
    const named = await server.call("POST", "/api/webhooks", { body: { url: `http://self.example.test:${receiver.port}/hook`, enabled: false } });
    const namedPing = await server.call("POST", `/api/webhooks/${named.body.id}/test`);
    assert.deepEqual([namedPing.body.status, namedPing.body.error], [204, null]);
    assert.equal(receiver.hits.length, 2);
  });
});
