// Where webhooks may go (docs/webhooks.md, "Safety"), on every store: loopback, private,
// link-local and metadata addresses are refused when an endpoint is saved (400
// invalid_webhook_url) and again at each connection (a name that resolves to one later); redirects
// are not followed; a receiver that answers slowly or endlessly is cut.

import assert from "node:assert/strict";
import type { LookupFunction } from "node:net";
import { after, before, describe, test } from "node:test";
import { startTestServer, type TestServer } from "../support/server.ts";
import { WebhookReceiver } from "../support/webhook-receiver.ts";

const TASK = { name: "Task", type: "object", properties: { title: { type: "string" } }, required: ["title"] };

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

describe("without --webhooks-allow-private", () => {
  const answers = new Map([["public.example.test", "203.0.113.7"], ["inside.example.test", "127.0.0.1"], ["rebind.example.test", "203.0.113.8"]]);
  let server: TestServer;
  let receiver: WebhookReceiver;
  before(async () => {
    server = await startTestServer({ schema: { Task: TASK }, webhookLookup: fakeLookup(answers), webhookTimeoutMs: 1000 });
    receiver = await WebhookReceiver.start();
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });

  const refused = [
    "http://127.0.0.1:8080/hook",
    "http://127.8.9.10/hook",
    "http://10.1.2.3/hook",
    "http://172.16.0.1/hook",
    "http://192.168.1.20/hook",
    "http://100.100.100.200/latest",
    "http://169.254.169.254/latest/meta-data/",
    "http://0.0.0.0:8080/hook",
    "http://[::1]:8080/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://[fd00:ec2::254]/latest",
    "http://[fe80::1]/hook",
    "http://localhost:8080/hook",
    "http://api.localhost/hook",
    "http://inside.example.test/hook",
    "http://2130706433/hook",
  ];
  for (const url of refused) {
    test(`${url} is refused: 400 invalid_webhook_url`, async () => {
      const answer = await server.call("POST", "/api/webhooks", { body: { url } });
      assert.equal(answer.status, 400, answer.text);
      assert.equal(answer.body.error.code, "invalid_webhook_url");
      assert.equal(answer.body.error.details.url, url);
      assert.match(answer.body.error.message, /--webhooks-allow-private/);
      const patched = await server.call("GET", "/api/webhooks");
      assert.ok(!patched.text.includes(url), "nothing was kept");
    });
  }

  test("a public address, or a name resolving to one, is accepted", async () => {
    for (const url of ["https://203.0.113.10/hook", "http://public.example.test/hook", "https://unresolvable.example.test/hook"]) {
      const answer = await server.call("POST", "/api/webhooks", { body: { url, enabled: false } });
      assert.equal(answer.status, 201, `${url}: ${answer.text}`);
      assert.equal(answer.body.url, url);
      await server.call("DELETE", `/api/webhooks/${answer.body.id}`);
    }
  });

  test("PATCH checks the new url as a create does", async () => {
    const made = await server.call("POST", "/api/webhooks", { body: { url: "https://203.0.113.10/hook", enabled: false } });
    const answer = await server.call("PATCH", `/api/webhooks/${made.body.id}`, { body: { url: "http://169.254.169.254/" } });
    assert.deepEqual([answer.status, answer.body.error.code], [400, "invalid_webhook_url"]);
    assert.equal((await server.call("GET", `/api/webhooks/${made.body.id}`)).body.url, "https://203.0.113.10/hook");
  });

  test("a name that resolves to loopback by the time of the connection is refused then, and nothing reaches the receiver", async () => {
    const port = new URL(receiver.url).port;
    const made = await server.call("POST", "/api/webhooks", { body: { url: `http://rebind.example.test:${port}/hook`, entities: ["Task"] } });
    assert.equal(made.status, 201, made.text);
    receiver.secret = made.body.secret;
    answers.set("rebind.example.test", "127.0.0.1");
    const ping = await server.call("POST", `/api/webhooks/${made.body.id}/test`);
    assert.equal(ping.status, 200);
    assert.equal(ping.body.status, null);
    assert.match(ping.body.error, /^refused: rebind\.example\.test resolves to 127\.0\.0\.1 is a loopback, private, link-local or metadata address/);
    await server.call("POST", "/api/entities/Task", { body: { title: "not for loopback" } });
    const deadline = Date.now() + 5000;
    let attempts: Array<{ error: string | null }> = [];
    while (attempts.length < 2 && Date.now() < deadline) {
      attempts = (await server.call("GET", `/api/webhooks/${made.body.id}/deliveries`)).body;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.ok(attempts.length >= 2, "the change was attempted");
    assert.match(attempts[0]!.error!, /^refused: /);
    assert.equal(receiver.received.length, 0);
    await server.call("DELETE", `/api/webhooks/${made.body.id}`);
  });
});

describe("what a receiver answers", () => {
  let server: TestServer;
  let receiver: WebhookReceiver;
  let id: string;
  before(async () => {
    server = await startTestServer({ schema: { Task: TASK }, webhooksAllowPrivate: true, webhookTimeoutMs: 500 });
    receiver = await WebhookReceiver.start();
    const made = await server.call("POST", "/api/webhooks", { body: { url: receiver.url, entities: ["Task"], enabled: false } });
    receiver.secret = made.body.secret;
    id = made.body.id;
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });

  const ping = async () => (await server.call("POST", `/api/webhooks/${id}/test`)).body as { status: number | null; latency_ms: number; error: string | null };

  test("a redirect is not followed: the attempt fails with its status", async () => {
    receiver.behaviour = (_req, res) => res.writeHead(307, { Location: receiver.url.replace("/hook", "/elsewhere") }).end();
    const attempt = await ping();
    assert.equal(attempt.status, 307);
    assert.match(attempt.error!, /^redirect to http:\/\/127\.0\.0\.1:\d+\/elsewhere not followed$/);
    assert.deepEqual(receiver.received.map((request) => request.path), ["/hook"]);
  });

  test("an endless error answer is cut after 64 KiB, well before the time limit", async () => {
    receiver.behaviour = (_req, res) => {
      res.writeHead(500);
      const chunk = "x".repeat(16 * 1024);
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once("drain", pump);
      };
      pump();
    };
    const attempt = await ping();
    assert.equal(attempt.status, 500);
    assert.match(attempt.error!, /^HTTP 500: x{10}/);
    assert.ok(attempt.latency_ms < 400, `${attempt.latency_ms} ms`);
  });

  test("a 2xx followed by an endless body is a delivery; a receiver that never answers is cut at the time limit", async () => {
    receiver.behaviour = (_req, res) => {
      res.writeHead(200);
      const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write("still here\n")), 20);
    };
    const endless = await ping();
    assert.deepEqual([endless.status, endless.error], [200, null]);
    receiver.behaviour = "hang";
    const hung = await ping();
    assert.equal(hung.status, null);
    assert.equal(hung.error, "no answer within 500 ms");
    assert.ok(hung.latency_ms >= 480 && hung.latency_ms < 1500, `${hung.latency_ms} ms`);
  });
});
