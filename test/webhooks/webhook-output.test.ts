// What the server's output says of webhooks (docs/webhooks.md, "Delivery" and "Safety"): one line
// when an endpoint starts failing, when it recovers, and when it is disabled, with the reason; and,
// at start-up, a banner line for each stored endpoint whose URL is refused now (saved under
// --webhooks-allow-private, started without it), whose delivery resumes at once when the flag is back.

import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { startTestServer, type TestServer } from "../support/server.ts";
import { childEnv, cliWithSchema, killSpawned, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";
import { WebhookReceiver } from "../support/webhook-receiver.ts";

const TASK = { name: "Task", type: "object", properties: { title: { type: "string" } }, required: ["title"] };
const SECRET_KEY = "sk_webhook_output_k";
const START_TIMEOUT_MS = 30_000;
const REFUSED_LOOPBACK = "127.0.0.1 is a loopback, private, link-local or metadata address";

/** `text` as a regular expression that matches it alone. */
function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

async function until(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("the failing, recovered and disabled lines", () => {
  let receiver: WebhookReceiver;
  before(async () => (receiver = await WebhookReceiver.start()));
  after(() => receiver.close());

  /** A server whose warnings are kept in `lines`, with the retry schedule times `scale`. */
  async function start(scale: number): Promise<{ server: TestServer; lines: string[]; origin: string }> {
    const lines: string[] = [];
    const server = await startTestServer({ schema: { Task: TASK }, memory: true, webhooksAllowPrivate: true, webhookRetryScale: scale, webhookTimeoutMs: 500, warn: (line) => void lines.push(line) });
    return { server, lines, origin: new URL(receiver.url).origin };
  }

  async function endpoint(server: TestServer): Promise<string> {
    const made = await server.call("POST", "/api/webhooks", { body: { url: `${receiver.url}?token=not-printed`, entities: ["Task"] } });
    assert.equal(made.status, 201, made.text);
    receiver.secret = made.body.secret;
    return made.body.id;
  }

  const about = (lines: readonly string[], id: string) => lines.filter((line) => line.startsWith(`Webhook ${id} `));

  test("an endpoint that starts failing is named once, however many retries follow, and once when it recovers", async (t) => {
    // Retries after 5 ms, 300 ms, 1.8 s …
    const { server, lines, origin } = await start(0.001);
    t.after(() => server.close());
    const id = await endpoint(server);
    receiver.behaviour = 503;
    const from = receiver.received.length;
    await server.call("POST", "/api/entities/Task", { body: { title: "refused thrice" } });
    await receiver.until((r) => r.received.length - from >= 3, 10_000, "three failed attempts");
    const eventId = receiver.received[from]!.id;
    receiver.behaviour = 204;
    await until(() => about(lines, id).length >= 2, 10_000, "the recovered line");
    assert.deepEqual(about(lines, id), [
      `Webhook ${id} (${origin}) is failing: HTTP 503: receiver says no. Event ${eventId} is tried again in 5 ms; after 7 retries the endpoint is disabled (GET /api/webhooks/${id}/deliveries lists the attempts).`,
      `Webhook ${id} (${origin}) recovered: event ${eventId} was delivered after 3 failed attempts.`,
    ]);
    assert.ok(!lines.join("\n").includes("not-printed"), "the URL's query is not printed");
    // Delivering on: nothing more is said.
    await server.call("POST", "/api/entities/Task", { body: { title: "taken" } });
    await receiver.until((r) => r.delivered.some((request) => request.event.data?.title === "taken"), 10_000, "the next task");
    assert.equal(about(lines, id).length, 2);
  });

  test("an endpoint disabled after its last retry says so with the reason and how to enable it; enabled again, it recovers", async (t) => {
    // A schedule of about 2 s in all.
    const { server, lines, origin } = await start(0.00002);
    t.after(() => server.close());
    const id = await endpoint(server);
    receiver.behaviour = 503;
    await server.call("POST", "/api/entities/Task", { body: { title: "never taken" } });
    await until(() => about(lines, id).length >= 2, 20_000, "the disabled line");
    const view = (await server.call("GET", `/api/webhooks/${id}`)).body;
    assert.equal(view.state, "disabled");
    const [failing, disabled] = about(lines, id);
    assert.match(failing!, new RegExp(`^Webhook ${id} \\(${literal(origin)}\\) is failing: HTTP 503: receiver says no\\. Event \\S+ is tried again in 0 ms;`));
    assert.equal(disabled, `Webhook ${id} (${origin}) is disabled: ${view.disabled_reason}. Once the receiver is mended, PATCH /api/webhooks/${id} with {"enabled": true} resumes delivery from that event.`);
    assert.match(view.disabled_reason, /^8 attempts at event \S+ failed, the last at \S+: HTTP 503: receiver says no$/);

    receiver.behaviour = 204;
    await server.call("PATCH", `/api/webhooks/${id}`, { body: { enabled: true } });
    await until(() => about(lines, id).length >= 3, 10_000, "the recovered line");
    assert.match(about(lines, id)[2]!, new RegExp(`^Webhook ${id} \\(${literal(origin)}\\) recovered: event \\S+ was delivered\\.$`));
  });

  test("410 Gone disables the endpoint at once: one line, the disabled one", async (t) => {
    const { server, lines, origin } = await start(0.001);
    t.after(() => server.close());
    const id = await endpoint(server);
    receiver.behaviour = 410;
    await server.call("POST", "/api/entities/Task", { body: { title: "gone" } });
    await until(() => about(lines, id).length >= 1, 10_000, "the disabled line");
    const view = (await server.call("GET", `/api/webhooks/${id}`)).body;
    assert.match(view.disabled_reason, /^The receiver answered 410 Gone at \S+\.$/);
    assert.deepEqual(about(lines, id), [`Webhook ${id} (${origin}) is disabled: ${view.disabled_reason.slice(0, -1)}. Once the receiver is mended, PATCH /api/webhooks/${id} with {"enabled": true} resumes delivery from that event.`]);
    receiver.behaviour = 204;
  });
});

describe("a stored private endpoint across restarts with and without --webhooks-allow-private", () => {
  let root: string;
  let cli: string;
  let schemaDir: string;
  let receiver: WebhookReceiver;
  before(async () => {
    ({ root, cli, schemaDir } = await cliWithSchema("tabula-webhook-output-", [TASK]));
    receiver = await WebhookReceiver.start();
  });
  after(async () => {
    killSpawned();
    await receiver.close();
    await rm(root, { recursive: true, force: true });
  });

  function serve(...args: string[]): Promise<SpawnedServer> {
    return startSpawnedServer(cli, ["--schema", schemaDir, "--data", join(root, "data"), "--port", "0", "--secret-key", SECRET_KEY, "--log", "off", ...args], START_TIMEOUT_MS, { env: childEnv() });
  }

  async function call(server: SpawnedServer, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
    const answer = await fetch(server.url + path, { method, headers: { "X-Api-Key": SECRET_KEY, "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: answer.status, body: await answer.json() };
  }

  async function stop(server: SpawnedServer): Promise<void> {
    server.child.kill("SIGTERM");
    assert.equal(await server.exited, 0, server.output());
  }

  test("the banner names it and the flag, its failure is printed, and with the flag back it is delivered at once, not after the stored backoff", async () => {
    const origin = new URL(receiver.url).origin;
    const allowed = await serve("--webhooks-allow-private");
    const created = await call(allowed, "POST", "/api/webhooks", { url: receiver.url, entities: ["Task"] });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id: string = created.body.id;
    receiver.secret = created.body.secret;
    await call(allowed, "POST", "/api/entities/Task", { title: "first" });
    await receiver.until((r) => r.delivered.some((request) => request.event.data?.title === "first"), 10_000, "the first task");
    assert.doesNotMatch(allowed.output(), /^webhook /m);
    await stop(allowed);

    // Without the flag, retries after 0.5 s, then 30 s.
    const refused = await serve("--webhook-retry-scale", "0.1");
    const bannerLine = `${"webhook".padEnd(17)}${id} (${origin}) is refused, so its deliveries fail: ${REFUSED_LOOPBACK}; --webhooks-allow-private would allow it`;
    assert.ok(refused.output().split("\n").includes(bannerLine), refused.output());
    await call(refused, "POST", "/api/entities/Task", { title: "second" });
    let failing: { attempts: number; next_at: string; error: string } | null = null;
    await until(async () => ((failing = (await call(refused, "GET", `/api/webhooks/${id}`)).body.failing), (failing?.attempts ?? 0) >= 2), 10_000, "two refused attempts");
    assert.equal(failing!.error, `refused: ${REFUSED_LOOPBACK}`);
    assert.match(refused.output(), new RegExp(`^warning: Webhook ${id} \\(${literal(origin)}\\) is failing: refused: ${literal(REFUSED_LOOPBACK)}; --webhooks-allow-private allows such an address\\. Event \\S+ is tried again in 500 ms;`, "m"));
    assert.equal(refused.output().split(`Webhook ${id} `).length - 1, 1, "one failing line for both attempts");
    await stop(refused);
    const nextAt = Date.parse(failing!.next_at);
    assert.ok(nextAt - Date.now() > 20_000, `the stored backoff runs to ${failing!.next_at}`);

    const back = await serve("--webhooks-allow-private", "--webhook-retry-scale", "0.1");
    assert.doesNotMatch(back.output(), /^webhook /m);
    await receiver.until((r) => r.delivered.some((request) => request.event.data?.title === "second"), nextAt - Date.now() - 5000, "the second task, before the stored backoff ends");
    await until(() => back.output().includes(`Webhook ${id} `), 5000, "the recovered line");
    assert.match(back.output(), new RegExp(`^warning: Webhook ${id} \\(${literal(origin)}\\) recovered: event \\S+ was delivered after 2 failed attempts\\.$`, "m"));
    await stop(back);
  });
});
