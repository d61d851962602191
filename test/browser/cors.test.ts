// CORS as a browser does it (docs/api.md, issue 17): a page served from one origin calls tabula on
// another with the publishable key, from its own script, in Debian's chromium. Chromium sends the
// preflight, then the request with Origin, and shows the page only what CORS lets it read.
// test/http/cors.test.ts checks the headers themselves; this file checks that a browser agrees.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { describeInChromium, launchChromium, recordPreflights, startAppServer, type AppServer } from "../support/browser.ts";
import { PUBLISHABLE, startTestServer, type TestServer } from "../support/server.ts";

// The app's page. callTabula is what an app's script does: fetch, then read what it may read.
// Iterating response.headers in a browser yields only the safelisted and the exposed headers.
const APP_PAGE = `<!doctype html>
<meta charset="utf-8">
<title>An app on another origin</title>
<script>
  async function callTabula(url, init) {
    try {
      const response = await fetch(url, init);
      const text = await response.text();
      return { status: response.status, headers: Object.fromEntries(response.headers), body: text ? JSON.parse(text) : null };
    } catch (error) {
      return { error: error.name + ": " + error.message };
    }
  }
</script>`;

interface PageInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}
/** What the page's script got: an answer it may read, or the error fetch rejected with. */
type PageResult = { status: number; headers: Record<string, string>; body: any } | { error: string };
type PageGlobals = { callTabula(url: string, init: PageInit): Promise<PageResult> };

interface App {
  /** Runs fetch(url, init) in the page's script. */
  call(url: string, init?: PageInit): Promise<PageResult>;
  /** URLs Chromium sent a preflight for, in order. */
  readonly preflights: string[];
}

const KEY = { "X-Api-Key": PUBLISHABLE };
const BEARER_JSON = { Authorization: `Bearer ${PUBLISHABLE}`, "Content-Type": "application/json" };

/** The page, in a browser context of its own: its own preflight cache, kept for the whole file. */
async function openApp(browser: Browser, origin: string): Promise<App> {
  const page: Page = await (await browser.newContext()).newPage();
  const preflights = await recordPreflights(page);
  await page.goto(`${origin}/`);
  return {
    get preflights() {
      return preflights.map((preflight) => preflight.url);
    },
    call: (url, init = {}) => page.evaluate(([u, i]) => (globalThis as unknown as PageGlobals).callTabula(u, i), [url, init] as const),
  };
}

function answered(result: PageResult): { status: number; headers: Record<string, string>; body: any } {
  if ("error" in result) assert.fail(`the browser kept the answer from the page: ${result.error}`);
  return result;
}

function blocked(result: PageResult): void {
  assert.ok("error" in result, `the page read an answer CORS should have kept from it: ${JSON.stringify(result)}`);
  assert.match(result.error, /^TypeError: /);
}

describeInChromium("CORS in Chromium, from a page on another origin", (chromiumPath) => {
  // One browser, and two apps' pages (each in its own context) for the whole file: a page costs
  // most of a second. Each tabula below listens on a port of its own, so no preflight answered
  // for one server's URLs is taken from the browser's cache for another's.
  let browser: Browser;
  let apps: AppServer[];
  let page: App;
  let unlistedPage: App;
  before(async () => {
    [browser, apps] = await Promise.all([launchChromium(chromiumPath), Promise.all([startAppServer(APP_PAGE), startAppServer(APP_PAGE)])]);
    [page, unlistedPage] = await Promise.all(apps.map((app) => openApp(browser, app.origin)));
  });
  after(() => Promise.all([browser?.close(), ...(apps ?? []).map((app) => app.close())]));

  describe("with the default policy (any origin)", () => {
    let tabula: TestServer;
    let tasks: string;
    before(async () => {
      tabula = await startTestServer();
      tasks = `${tabula.url}/api/entities/Task`;
      for (const title of ["one", "two", "three"]) assert.equal((await tabula.call("POST", "/api/entities/Task", { body: { title } })).status, 201);
    });
    after(() => tabula?.close());

    test("a list with X-Api-Key is preflighted, and the page reads X-Total-Count, X-Next-Cursor and Link", async () => {
      const url = `${tasks}?sort_by=created_date&limit=2&count=true`;
      const first = answered(await page.call(url, { headers: KEY }));
      assert.equal(first.status, 200);
      assert.deepEqual(first.body.map((record: { title: string }) => record.title), ["one", "two"]);
      assert.equal(first.body.some((record: object) => "created_by_id" in record), false, "a publishable key never sees created_by_id");
      assert.equal(first.headers["x-total-count"], "3");
      const cursor = first.headers["x-next-cursor"];
      assert.ok(cursor, "X-Next-Cursor is readable");
      const link = /^<([^>]+)>; rel="next"$/.exec(first.headers["link"] ?? "");
      assert.ok(link, `Link is readable: ${first.headers["link"]}`);
      assert.ok(page.preflights.includes(url), `a preflight went first: ${page.preflights.join(" ")}`);
      // docs/query-language.md's walk: the next page by the Link the page was given.
      const second = answered(await page.call(link[1]!, { headers: KEY }));
      assert.equal(second.status, 200);
      assert.deepEqual(second.body.map((record: { title: string }) => record.title), ["three"]);
      assert.equal(second.headers["x-next-cursor"], undefined);
    });

    test("a create with Authorization: Bearer and JSON is 201, and the page reads Location, ETag and Idempotent-Replayed", async () => {
      const init = { method: "POST", headers: { ...BEARER_JSON, "Idempotency-Key": "browser-create-1" }, body: JSON.stringify({ title: "from the page" }) };
      const created = answered(await page.call(tasks, init));
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.equal(created.body.title, "from the page");
      assert.equal("created_by_id" in created.body, false);
      assert.equal(created.headers["location"], `/api/entities/Task/${created.body.id}`);
      assert.match(created.headers["etag"] ?? "", /^"[^"]+"$/);
      assert.equal(created.headers["idempotent-replayed"], undefined);
      assert.ok(page.preflights.includes(tasks), "Authorization and a JSON body are preflighted");
      const replayed = answered(await page.call(tasks, init));
      assert.equal(replayed.status, 201);
      assert.equal(replayed.body.id, created.body.id);
      assert.equal(replayed.headers["idempotent-replayed"], "true");
    });

    test("a PATCH with If-Match is 200; a stale If-Match is a 412 the page reads; If-None-Match gives a readable 304", async () => {
      const created = answered(await page.call(tasks, { method: "POST", headers: BEARER_JSON, body: JSON.stringify({ title: "to patch" }) }));
      const record = `${tasks}/${created.body.id}`;
      const etag = created.headers["etag"]!;
      const patch = (ifMatch: string) => page.call(record, { method: "PATCH", headers: { ...BEARER_JSON, "If-Match": ifMatch }, body: JSON.stringify({ status: "done" }) });
      const patched = answered(await patch(etag));
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      assert.equal(patched.body.status, "done");
      assert.notEqual(patched.headers["etag"], etag);
      assert.ok(page.preflights.includes(record), "PATCH and If-Match are preflighted");
      const stale = answered(await patch(etag));
      assert.equal(stale.status, 412);
      assert.equal(stale.body.error.code, "precondition_failed");
      const unchanged = answered(await page.call(record, { headers: { ...KEY, "If-None-Match": patched.headers["etag"]! } }));
      assert.equal(unchanged.status, 304);
      assert.equal(unchanged.headers["etag"], patched.headers["etag"]);
      const deleted = answered(await page.call(record, { method: "DELETE", headers: KEY }));
      assert.equal(deleted.status, 200);
      assert.equal(deleted.body.deleted, true);
    });

    test("headers of a client's own pass the preflight: those @base44/sdk 0.8 adds in a browser", async () => {
      // Its axios client sets X-App-Id and X-Origin-URL on every request, and X-Base44-Anonymous-Id
      // when it has no token (dist/client.js, dist/utils/axios-client.js).
      const sdkHeaders = { ...BEARER_JSON, Accept: "application/json", "X-App-Id": "app-1", "X-Origin-URL": `${apps[0]!.origin}/` };
      const listed = answered(await page.call(`${tasks}?limit=1`, { headers: sdkHeaders }));
      assert.equal(listed.status, 200, JSON.stringify(listed.body));
      const anonymous = answered(await page.call(`${tasks}?limit=2`, { headers: { ...KEY, "X-App-Id": "app-1", "X-Base44-Anonymous-Id": "visitor-1" } }));
      assert.equal(anonymous.status, 200, JSON.stringify(anonymous.body));
    });

    test("errors are JSON the page reads: 400 invalid_filter, and 401 with or without a preflight", async () => {
      const badFilter = answered(await page.call(`${tasks}?q=${encodeURIComponent('{"priority":{"$gt":"3"}}')}`, { headers: KEY }));
      assert.equal(badFilter.status, 400);
      assert.equal(badFilter.body.error.code, "invalid_filter");
      const wrongKey = answered(await page.call(`${tasks}?limit=1`, { headers: { Authorization: "Bearer pk_nobody" } }));
      assert.equal(wrongKey.status, 401);
      assert.equal(wrongKey.body.error.code, "unauthorized");
      // No custom header: a simple request, sent without a preflight.
      const noKey = answered(await page.call(`${tasks}?search=no-key`));
      assert.equal(noKey.status, 401);
      assert.equal(noKey.body.error.code, "unauthorized");
      assert.equal(page.preflights.includes(`${tasks}?search=no-key`), false);
    });
  });

  describe("with a list of origins", () => {
    let tabula: TestServer;
    before(async () => (tabula = await startTestServer({ cors: `https://app.example.com, ${apps[0]!.origin}` })));
    after(() => tabula?.close());

    test("a listed origin's page reads the answers; another origin's is blocked, and its POST never sent", async () => {
      const tasks = `${tabula.url}/api/entities/Task`;
      const list = answered(await page.call(`${tasks}?count=true`, { headers: KEY }));
      assert.equal(list.status, 200);
      assert.equal(list.headers["x-total-count"], "0");
      blocked(await unlistedPage.call(`${tasks}?count=true`, { headers: KEY }));
      blocked(await unlistedPage.call(tasks, { method: "POST", headers: BEARER_JSON, body: JSON.stringify({ title: "from an unlisted origin" }) }));
      assert.ok(unlistedPage.preflights.includes(tasks), "the browser asked first");
      assert.deepEqual((await tabula.call("GET", "/api/entities/Task")).body, [], "the refused preflight kept the POST from being sent");
      // A simple request is sent, but its answer is kept from the page.
      assert.equal(answered(await page.call(`${tabula.url}/health`)).status, 200);
      blocked(await unlistedPage.call(`${tabula.url}/health`));
    });
  });

  describe("with --cors off", () => {
    let tabula: TestServer;
    before(async () => (tabula = await startTestServer({ cors: "off" })));
    after(() => tabula?.close());

    test("the browser blocks every cross-origin call, and a write never reaches tabula", async () => {
      const tasks = `${tabula.url}/api/entities/Task`;
      blocked(await page.call(`${tasks}?limit=1`, { headers: KEY }));
      blocked(await page.call(tasks, { method: "POST", headers: BEARER_JSON, body: JSON.stringify({ title: "with CORS off" }) }));
      blocked(await page.call(`${tabula.url}/health`));
      assert.deepEqual((await tabula.call("GET", "/api/entities/Task")).body, []);
    });
  });
});
