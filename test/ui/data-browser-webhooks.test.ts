// The data browser's Webhooks page (docs/data-browser.md, "Webhooks"; issue 44), driven in Debian's
// chromium against a real server on port 0: each endpoint with its state and last attempts (one
// delivering, one disabled by a 410 with its reason), no secret on the page, and a publishable key
// that is not offered the page and is shown the API's 403 when it comes by the URL.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { describeInChromium, eventually, launchChromium, WAIT_MS } from "../support/browser.ts";
import { PUBLISHABLE, SECRET, startTestServer, type TestServer } from "../support/server.ts";
import { WebhookReceiver } from "../support/webhook-receiver.ts";

describeInChromium("the data browser's Webhooks page in Chromium", (chromiumPath) => {
  let browser: Browser;
  let server: TestServer;
  let receivers: WebhookReceiver[];
  const ids: string[] = [];
  const secrets: string[] = [];
  const problems: string[] = [];

  before(async () => {
    [browser, server, ...receivers] = await Promise.all([launchChromium(chromiumPath), startTestServer({ memory: true, webhooksAllowPrivate: true }), WebhookReceiver.start(), WebhookReceiver.start()]);
    receivers[1]!.behaviour = 410;
    for (const [index, receiver] of receivers.entries()) {
      const made = await server.call("POST", "/api/webhooks", { body: { url: receiver.url, entities: ["Task"], description: index === 0 ? "search index" : "" } });
      assert.equal(made.status, 201, made.text);
      receiver.secret = made.body.secret;
      ids.push(made.body.id);
      secrets.push(made.body.secret);
    }
    await server.call("POST", "/api/entities/Task", { body: { title: "one" } });
    await receivers[0]!.until((r) => r.delivered.length === 1);
    await receivers[1]!.until((r) => r.received.length === 1);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    for (const receiver of receivers ?? []) await receiver.close();
  });

  async function open(apiKey: string): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    context.setDefaultTimeout(WAIT_MS);
    await context.addInitScript(`sessionStorage.setItem("tabula.apiKey", ${JSON.stringify(apiKey)});`);
    const page = await context.newPage();
    page.on("pageerror", (error) => problems.push(`uncaught: ${error.message}`));
    await page.goto(`${server.url}/`);
    await page.locator(".session .badge").waitFor();
    return page;
  }

  test("a secret key finds Webhooks in the navigation: each endpoint's state, reason and last attempts, never a secret", async () => {
    const page = await open(SECRET);
    await page.locator('nav a[data-page="webhooks"]').click();
    assert.ok(page.url().endsWith("#/webhooks"));
    const active = page.locator(`article[data-webhook-id="${ids[0]}"]`);
    const gone = page.locator(`article[data-webhook-id="${ids[1]}"]`);
    await eventually("the disabled endpoint", () => gone.locator(".badge").textContent(), (text) => text === "disabled");
    assert.equal(await active.locator(".badge").textContent(), "active");
    assert.equal(await active.locator("code.url").textContent(), receivers[0]!.url);
    assert.match(await active.innerText(), /search index/);
    assert.deepEqual(await active.locator("tbody td[data-column=status]").allTextContents(), ["204"]);
    assert.deepEqual(await active.locator("tbody td[data-column=error]").allTextContents(), ["delivered"]);
    assert.equal(await active.locator("tbody td[data-column=event] code").textContent(), receivers[0]!.delivered[0]!.id);
    assert.match(await gone.locator(".webhook-why").textContent() ?? "", /410 Gone/);
    assert.deepEqual(await gone.locator("tbody td[data-column=status]").allTextContents(), ["410"]);
    const text = await page.locator("body").innerText();
    for (const secret of secrets) assert.ok(!text.includes(secret), "a secret on the page");
    assert.deepEqual(problems, []);
  });

  test("a publishable key is not offered the page, and by its URL is shown the API's 403", async () => {
    const page = await open(PUBLISHABLE);
    assert.equal(await page.locator('nav a[data-page="webhooks"]').count(), 0);
    await page.evaluate(`location.hash = "#/webhooks"`);
    await eventually("the refusal", () => page.locator(".webhooks .status").textContent(), (text) => /secret key/.test(text ?? ""));
    assert.equal(await page.locator("article.webhook").count(), 0);
  });
});
