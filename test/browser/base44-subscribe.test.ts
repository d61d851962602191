// @base44/sdk's subscribe() in Chromium (docs/base44-sdk.md, "Realtime"): an app's page on another
// origin, with the SDK bundled for browsers and the publishable key, follows Task through the
// browser's own WebSocket; the page's Origin is checked against --cors.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { bundleForPage, describeInChromium, eventually, launchChromium, startAppServer, type AppServer } from "../support/browser.ts";
import { PUBLISHABLE, startTestServer, type TestServer } from "../support/server.ts";

const SDK_SCRIPT = "/base44-sdk.js";
const SDK_ENTRY = `import { createClient } from "@base44/sdk";
Object.assign(window, { createClient });`;

// The app's page: one client, one subscription to Task, every event kept for Node to read.
const APP_PAGE = `<!doctype html>
<meta charset="utf-8">
<title>An app on another origin, following Task</title>
<script src="${SDK_SCRIPT}"></script>
<script>
  window.events = [];
  window.logged = [];
  const consoleError = console.error;
  console.error = (...args) => { window.logged.push(args.map((arg) => String(arg && arg.message || arg)).join(" ")); consoleError(...args); };
  let unsubscribe = null;
  function follow(config) {
    const base44 = createClient(config);
    unsubscribe = base44.entities.Task.subscribe((event) => window.events.push(event));
  }
  function stop() {
    unsubscribe();
  }
</script>`;

type PageGlobals = { follow(config: object): void; stop(): void; events: any[]; logged: string[] };

/** The rooms joined on the server (GET /metrics): the SDK says nothing when its join has landed. */
function roomsOn(tabula: TestServer): Promise<number> {
  return tabula.call("GET", "/metrics").then(({ text }) => Number(/^tabula_realtime_rooms (\d+)$/m.exec(text)?.[1]));
}

describeInChromium("@base44/sdk's subscribe() in Chromium, from a page on another origin, with the publishable key", (chromiumPath) => {
  let browser: Browser;
  let app: AppServer;
  let tabula: TestServer;
  let page: Page;
  const socketUrls: string[] = [];
  before(async () => {
    let code: string;
    [browser, code] = await Promise.all([launchChromium(chromiumPath), bundleForPage(SDK_ENTRY)]);
    app = await startAppServer(APP_PAGE, { [SDK_SCRIPT]: code });
    // --cors naming the page's origin alone: the socket is checked against it.
    tabula = await startTestServer({ appId: "app1", cors: app.origin });
    page = await (await browser.newContext()).newPage();
    page.on("websocket", (socket) => socketUrls.push(socket.url()));
    await page.goto(`${app.origin}/`);
  });
  after(() => Promise.all([browser?.close(), app?.close(), tabula?.close()]));

  const events = () => page.evaluate(() => (globalThis as unknown as PageGlobals).events);

  test("the page's subscription gets the create, update and delete made by another client, with no created_by_id", async () => {
    await page.evaluate(([serverUrl, token]) => (globalThis as unknown as PageGlobals).follow({ serverUrl, appId: "app1", token }), [tabula.url, PUBLISHABLE] as const);
    await eventually("rooms joined", () => roomsOn(tabula), (rooms) => rooms === 1);
    assert.equal(socketUrls.length, 1);
    assert.match(socketUrls[0]!, /\/ws-user-apps\/socket\.io\/\?.*EIO=4&transport=websocket/);
    const created = (await tabula.call("POST", "/api/apps/app1/entities/Task", { body: { title: "from another client" } })).body;
    await tabula.call("PUT", `/api/apps/app1/entities/Task/${created.id}`, { body: { status: "doing" } });
    await tabula.call("DELETE", `/api/apps/app1/entities/Task/${created.id}`);
    const seen = await eventually("three events in the page", events, (list) => list.length >= 3);
    assert.deepEqual(seen.map((event) => [event.type, event.id, event.data.status]), [["create", created.id, "todo"], ["update", created.id, "doing"], ["delete", created.id, "doing"]]);
    assert.equal(seen.some((event) => "created_by_id" in event.data), false);
  });

  test("unsubscribe leaves the room, and the page gets nothing more", async () => {
    const before = (await events()).length;
    await page.evaluate(() => (globalThis as unknown as PageGlobals).stop());
    await eventually("the room left", () => roomsOn(tabula), (rooms) => rooms === 0);
    await tabula.call("POST", "/api/entities/Task", { body: { title: "after" } });
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal((await events()).length, before);
  });

  test("a page on an origin --cors does not allow is refused the socket, and the SDK reports a connect_error", async () => {
    const other = await startTestServer({ appId: "app1", cors: "http://elsewhere.example" });
    try {
      await page.evaluate(([serverUrl, token]) => (globalThis as unknown as PageGlobals).follow({ serverUrl, appId: "app1", token }), [other.url, PUBLISHABLE] as const);
      await eventually("a connect_error logged", () => page.evaluate(() => (globalThis as unknown as PageGlobals).logged), (lines) => lines.some((line) => line.startsWith("connect_error")));
      assert.equal(await roomsOn(other), 0);
    } finally {
      await other.close();
    }
  });
});
