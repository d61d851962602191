// The real @base44/sdk in a browser (docs/base44-sdk.md): an app's page on another origin, with the SDK
// bundled for browsers as its build would bundle it, calls tabula with the publishable key, in
// Debian's chromium. test/sdk/ runs the same SDK from Node; this file adds what only a browser
// does: CORS preflights for the SDK's own headers, axios's browser adapter, and the SDK's start-up
// calls (analytics, auth), which it makes only where there is a window.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Browser, Page, Response } from "playwright-core";
import { bundleForPage, describeInChromium, launchChromium, recordPreflights, startAppServer, type AppServer, type Preflight } from "../support/browser.ts";
import { PUBLISHABLE, startTestServer, type TestServer } from "../support/server.ts";

const SDK_SCRIPT = "/base44-sdk.js";
// The app's bundle entry: what `import { createClient } from "@base44/sdk"` gives its code.
const SDK_ENTRY = `import { createClient, Base44Error } from "@base44/sdk";
Object.assign(window, { createClient, Base44Error });`;

// The app's page. Its script holds one client and calls the entities module as an app does; a
// rejection comes back as plain data so that Node can check what the page saw.
const APP_PAGE = `<!doctype html>
<meta charset="utf-8">
<title>An app on another origin, with @base44/sdk</title>
<script src="${SDK_SCRIPT}"></script>
<script>
  let base44 = null;
  function startClient(config) {
    base44 = createClient(config);
  }
  async function settle(work) {
    try {
      return { value: await work() };
    } catch (error) {
      return { error: { isBase44Error: error instanceof Base44Error, name: error.name, status: error.status, code: error.code, message: error.message } };
    }
  }
  function callEntity(entity, method, args) {
    return settle(() => base44.entities[entity][method](...args));
  }
  // list(options) until has_more is false, as an app's "load more" button would.
  function walkPages(entity, options) {
    return settle(async () => {
      const pages = [await base44.entities[entity].list(options)];
      while (pages.at(-1).has_more) pages.push(await base44.entities[entity].list({ cursor: pages.at(-1).next_cursor, limit: options.limit }));
      return pages;
    });
  }
</script>`;

interface PageError {
  isBase44Error: boolean;
  name: string;
  status?: number;
  code?: string;
  message: string;
}
type Outcome = { value: any } | { error: PageError };
type PageGlobals = {
  startClient(config: object): void;
  callEntity(entity: string, method: string, args: unknown[]): Promise<Outcome>;
  walkPages(entity: string, options: object): Promise<Outcome>;
};

/** An error the page's SDK call rejected with, carried to Node. */
class RejectedInPage extends Error {
  constructor(readonly fromPage: PageError) {
    super(`the SDK call rejected in the page: ${JSON.stringify(fromPage)}`);
  }
}

function valueIn(outcome: Outcome): any {
  if ("error" in outcome) throw new RejectedInPage(outcome.error);
  return outcome.value;
}

/** `base44.entities[entity]` of the page: each method runs there, and its value comes back. */
function entityInPage(page: Page, entity: string): Record<string, (...args: unknown[]) => Promise<any>> {
  const call = (method: string) => async (...args: unknown[]) =>
    valueIn(await page.evaluate(([e, m, a]) => (globalThis as unknown as PageGlobals).callEntity(e, m, a), [entity, method, args] as const));
  // No "then": a thenable proxy would be awaited, not returned, by an async function.
  return new Proxy({}, { get: (_, method) => (method === "then" ? undefined : call(String(method))) });
}

/** What the page's call rejected with; it must be a Base44Error. */
async function refusal(call: Promise<unknown>): Promise<PageError> {
  try {
    await call;
  } catch (error) {
    if (!(error instanceof RejectedInPage)) throw error;
    assert.ok(error.fromPage.isBase44Error, `a Base44Error, not ${error.fromPage.name}: ${error.fromPage.message}`);
    return error.fromPage;
  }
  assert.fail("the call succeeded");
}

describeInChromium("@base44/sdk in Chromium, from a page on another origin, with the publishable key", (chromiumPath) => {
  // One browser, one page and one tabula for the whole file; the tests run in order on one store.
  let browser: Browser;
  let tabula: TestServer;
  let app: AppServer;
  let page: Page;
  let preflights: Preflight[];
  let Task: ReturnType<typeof entityInPage>;
  let bundle: { bytes: number; ms: number };
  async function bundleSdk(): Promise<string> {
    const started = performance.now();
    const code = await bundleForPage(SDK_ENTRY);
    bundle = { bytes: Buffer.byteLength(code), ms: performance.now() - started };
    return code;
  }
  /** Every answer tabula gave the page's script, in order. */
  const answers: Response[] = [];
  const pageErrors: Error[] = [];
  before(async () => {
    let code: string;
    [browser, tabula, code] = await Promise.all([launchChromium(chromiumPath), startTestServer({ appId: "app1" }), bundleSdk()]);
    app = await startAppServer(APP_PAGE, { [SDK_SCRIPT]: code });
    page = await (await browser.newContext()).newPage();
    preflights = await recordPreflights(page);
    page.on("response", (response) => void (response.url().startsWith(tabula.url) && answers.push(response)));
    page.on("pageerror", (error) => pageErrors.push(error));
    await page.goto(`${app.origin}/`);
    Task = entityInPage(page, "Task");
  });
  after(() => Promise.all([browser?.close(), app?.close(), tabula?.close()]));

  test("createClient's own calls at start (auth.me for analytics, the analytics batch) get a JSON 401 (no one signed in) and a 204 (dropped), and the page goes on", async (t) => {
    t.diagnostic(`@base44/sdk bundled for the browser: ${(bundle.bytes / 1024).toFixed(0)} KiB in ${bundle.ms.toFixed(0)} ms`);
    // In a window the SDK tracks an initialization event: it resolves the user with auth.me()
    // (it has a token), then posts the batch. Both swallow their errors.
    const analyticsBatch = page.waitForResponse((response) => response.url().endsWith("/analytics/track/batch"));
    await page.evaluate(([serverUrl, token]) => (globalThis as unknown as PageGlobals).startClient({ serverUrl, appId: "app1", token }), [tabula.url, PUBLISHABLE] as const);
    await analyticsBatch;
    const startUp = await Promise.all(answers.map(async (answer) => {
      const call = `${answer.request().method()} ${answer.url().slice(tabula.url.length)} ${answer.status()}`;
      if (answer.status() === 204) return call;
      assert.match(answer.headers()["content-type"] ?? "", /^application\/json/);
      return `${call} ${(await answer.json()).error.code}`;
    }));
    // A new SDK version that calls something else at start fails here by design: tabula must answer it too.
    assert.deepEqual(startUp, [
      "GET /api/apps/app1/entities/User/me 401 unauthorized",
      "POST /api/apps/app1/analytics/track/batch 204",
    ]);
    assert.equal(answers[0]!.request().headers()["authorization"], `Bearer ${PUBLISHABLE}`, "the token went on the first call already");
    assert.equal(await Task.count(), 0, "the client works after its start-up calls failed");
    assert.deepEqual(pageErrors, []);
  });

  test("create, get, update and delete; tabula stored what the page wrote", async () => {
    const created = await Task.create({ title: "Written in the browser", priority: 2 });
    assert.match(created.id, /^[0-9a-f]{24}$/);
    assert.equal(created.status, "todo");
    assert.equal("created_by_id" in created, false, "a publishable key never sees created_by_id");
    assert.equal((await Task.get(created.id)).title, "Written in the browser");
    const updated = await Task.update(created.id, { status: "done" });
    assert.deepEqual([updated.title, updated.status, updated.priority], ["Written in the browser", "done", 2]);
    // What the server holds, read with the secret key over plain fetch.
    const stored = await tabula.call("GET", `/api/entities/Task/${created.id}`);
    assert.equal(stored.status, 200);
    assert.deepEqual([stored.body.title, stored.body.status, stored.body.priority], ["Written in the browser", "done", 2]);
    assert.equal(typeof stored.body.created_by_id, "string", "the creator is stored, only hidden from the page");
    assert.deepEqual(await Task.delete(created.id), { id: created.id, deleted: true, success: true });
    assert.equal((await tabula.call("GET", `/api/entities/Task/${created.id}`)).status, 404);
    const gone = await refusal(Task.get(created.id));
    assert.deepEqual([gone.status, gone.code], [404, "record_not_found"]);
  });

  test("bulkCreate, bulkUpdate and upsert answer in request order", async () => {
    const created = await Task.bulkCreate(Array.from({ length: 12 }, (_, i) => ({ title: `t${String(i).padStart(2, "0")}`, priority: i % 3, email: `t${i}@example.com` })));
    assert.deepEqual(created.map((r: any) => r.title), ["t00", "t01", "t02", "t03", "t04", "t05", "t06", "t07", "t08", "t09", "t10", "t11"]);
    const updated = await Task.bulkUpdate([{ id: created[11].id, estimate: 1.5 }, { id: created[0].id, estimate: 0.5 }]);
    assert.deepEqual(updated.map((r: any) => [r.title, r.estimate]), [["t11", 1.5], ["t00", 0.5]]);
    const upserted = await Task.upsert([{ email: "t3@example.com", done: true }, { email: "new@example.com", title: "t12", priority: 0 }], { key: "email" });
    assert.deepEqual([upserted.created, upserted.updated], [1, 1]);
    assert.deepEqual(upserted.records.map((r: any) => [r.title, r.done ?? null]), [["t03", true], ["t12", null]]);
    assert.equal(upserted.records[0].id, created[3].id);
    assert.equal((await tabula.call("GET", "/api/entities/Task?count=true&limit=1")).headers.get("x-total-count"), "13");
  });

  test("filter with an operator, list with sort and limit, count with a filter", async () => {
    const high = await Task.filter({ priority: { $gte: 2 } }, "title");
    assert.deepEqual(high.map((r: any) => r.title), ["t02", "t05", "t08", "t11"]);
    assert.deepEqual((await Task.list("-title", 3)).map((r: any) => r.title), ["t12", "t11", "t10"]);
    const skipped = await Task.list("+title", 2, 1, ["title"]);
    assert.deepEqual(skipped.map((r: any) => Object.keys(r).join() + "=" + r.title), ["id,title=t01", "id,title=t02"]);
    assert.equal(await Task.count(), 13);
    assert.equal(await Task.count({ priority: 0 }), 5);
  });

  test("list({ sort, limit }) walks cursor pages to the end", async () => {
    const pages = valueIn(await page.evaluate((options) => (globalThis as unknown as PageGlobals).walkPages("Task", options), { sort: "-priority", limit: 5 }));
    assert.deepEqual(pages.map((p: any) => [p.items.length, p.has_more]), [[5, true], [5, true], [3, false]]);
    assert.equal(pages.at(-1).next_cursor, null);
    const walked = pages.flatMap((p: any) => p.items);
    assert.deepEqual(walked.map((r: any) => r.priority), [2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, 0]);
    assert.equal(new Set(walked.map((r: any) => r.id)).size, 13, "no record twice");
  });

  test("tabula's errors reject as Base44Error with its status, code and message", async () => {
    const filter = await refusal(Task.filter({ colour: "red" }));
    assert.deepEqual([filter.name, filter.status, filter.code], ["Base44Error", 400, "unknown_field"]);
    assert.match(filter.message, /Unknown field "colour"/);
    const forbidden = await refusal(Task.deleteMany({ priority: 0 }));
    assert.deepEqual([forbidden.status, forbidden.code], [403, "forbidden"]);
    assert.match(forbidden.message, /publishable/i);
    assert.equal(await Task.count({ priority: 0 }), 5, "the refused deleteMany deleted nothing");
  });

  test("every call was preflighted, and each preflight allowed the SDK's X-App-Id and X-Origin-URL", () => {
    // Chromium keeps a preflight's answer for its URL, so a URL called twice is preflighted once.
    const called = [...new Set(answers.map((answer) => answer.url()))];
    assert.deepEqual([...new Set(answers.map((answer) => answer.request().method()))].sort(), ["DELETE", "GET", "POST", "PUT"]);
    for (const url of called) {
      const preflight = preflights.find((p) => p.url === url);
      assert.ok(preflight, `no preflight for ${url}`);
      assert.equal(preflight.status, 204, url);
      const requested = preflight.requestedHeaders.split(",");
      const allowed = (preflight.allowedHeaders ?? "").toLowerCase().split(/\s*,\s*/);
      for (const name of ["authorization", "x-app-id", "x-origin-url"]) {
        assert.ok(requested.includes(name), `${url}: Chromium asked for ${preflight.requestedHeaders}`);
        assert.ok(allowed.includes(name), `${url}: tabula allowed ${preflight.allowedHeaders}`);
      }
    }
    for (const answer of answers) {
      const headers = answer.request().headers();
      assert.deepEqual([headers["x-app-id"], headers["x-origin-url"]], ["app1", `${app.origin}/`], answer.url());
    }
    assert.deepEqual(pageErrors, []);
  });
});
