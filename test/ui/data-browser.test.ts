// The data browser at GET / (docs/data-browser.md, issue 22), driven in Debian's chromium through every
// flow: a pasted key, entities with counts, sorting by a header, q (and the API's refusal of it),
// search, paging, the form (a create, a refused write beside its field, an edit meeting a 412),
// delete, restore, delete-many, a write arriving live, deleted=include, a publishable key's view.
// One browser and one server for the file; the flows run in order on the same page. The same run
// takes docs/data-browser.md's screenshots (docs/ui-*.png) and checks the page broke no CSP rule.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { describeInChromium, eventually, launchChromium, WAIT_MS } from "../support/browser.ts";
import { PUBLISHABLE, q, SECRET, startTestServer, TASK, type TestServer } from "../support/server.ts";

// The screenshots land in docs/ only when asked (TABULA_SCREENSHOTS=1): a test run must leave the
// tree as it found it. Otherwise they go to a temporary folder, taken all the same.
const DOCS = process.env.TABULA_SCREENSHOTS === "1" ? fileURLToPath(new URL("../../docs/", import.meta.url)) : `${mkdtempSync(join(tmpdir(), "tabula-shots-"))}/`;
const NOTE = {
  name: "Note",
  type: "object",
  properties: { text: { type: "string" }, pinned: { type: "boolean" } },
  required: ["text"],
  access: { publishable: ["read"] },
};
const PAGE_SIZE = 25;

// Thirty tasks that look like a team's, so that the screenshots show something real.
const VERBS = ["Write", "Review", "Ship", "Fix", "Plan", "Test"];
const THINGS = ["the README", "the release notes", "login flow", "the backup job", "onboarding email", "the pricing page", "CSV export", "search ranking", "the status page", "dark mode"];
const STATUSES = ["todo", "doing", "done"];
const TAGS = [["docs"], ["ops", "urgent"], ["web"], [], ["billing"]];
const SEED = Array.from({ length: 30 }, (_, i) => ({
  title: `${VERBS[i % VERBS.length]} ${THINGS[i % THINGS.length]} #${i + 1}`,
  status: STATUSES[i % 3],
  priority: (i * 7) % 5,
  estimate: ((i * 13) % 9) / 2,
  done: i % 3 === 2,
  due_date: `2026-12-${String((i % 28) + 1).padStart(2, "0")}`,
  tags: TAGS[i % TAGS.length],
}));

describeInChromium("the data browser in Chromium", (chromiumPath) => {
  let browser: Browser;
  let server: TestServer;
  let context: BrowserContext;
  let page: Page;
  /** CSP violations and uncaught errors, from every page of the file. */
  const problems: string[] = [];

  before(async () => {
    [browser, server] = await Promise.all([launchChromium(chromiumPath), startTestServer({ memory: true, schema: { Task: TASK, Note: NOTE } })]);
    assert.equal((await server.call("POST", "/api/entities/Task/bulk", { body: SEED })).status, 201);
    assert.equal((await server.call("POST", "/api/entities/Note/bulk", { body: [{ text: "Call the bank" }, { text: "Pin me", pinned: true }] })).status, 201);
    context = await newContext({ width: 1440, height: 900 });
    page = await context.newPage();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  /** A browser context whose pages report CSP violations and uncaught errors into `problems`. */
  async function newContext(viewport: { width: number; height: number }, colorScheme: "light" | "dark" = "light", apiKey?: string): Promise<BrowserContext> {
    const created = await browser.newContext({ viewport, colorScheme });
    // A step that cannot happen fails in seconds, not playwright's default 30.
    created.setDefaultTimeout(WAIT_MS);
    // The event names the directive; Chromium's console line comes too, and is caught below.
    await created.addInitScript(`document.addEventListener("securitypolicyviolation", (e) => console.error("CSP violation: " + e.violatedDirective + " " + e.blockedURI));`);
    // Init scripts run in about:blank too, which has no sessionStorage.
    if (apiKey) await created.addInitScript(`if (location.protocol === "http:") sessionStorage.setItem("tabula.apiKey", ${JSON.stringify(apiKey)});`);
    created.on("page", (opened) => {
      opened.on("console", (message) => {
        if (/Content Security Policy|CSP violation/i.test(message.text())) problems.push(message.text());
      });
      opened.on("pageerror", (error) => problems.push(`uncaught: ${error.message}`));
    });
    return created;
  }

  const rows = () => page.locator("tbody tr[data-id]");
  const rowIds = () => rows().evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-id")));
  const rowOf = (id: string) => page.locator(`tbody tr[data-id="${id}"]`);
  const cellsOf = (column: string) => page.locator(`tbody td[data-column="${column}"]`).allTextContents();
  const dialog = () => page.locator("dialog[open]");
  const fieldError = (name: string) => dialog().locator(".field", { has: page.locator(`[name="${name}"]`) }).locator(".field-error");
  const range = () => page.locator(".pager .range").textContent();
  const status = () => page.locator(".records .status").textContent();

  /** The ids the API lists for `query` with the secret key: what the table must show. */
  async function apiIds(query: string): Promise<string[]> {
    const answer = await server.call("GET", `/api/entities/Task?${query}`);
    assert.equal(answer.status, 200, answer.text);
    return answer.body.map((record: { id: string }) => record.id);
  }

  async function apiCount(filter: unknown = {}): Promise<number> {
    return (await server.call("GET", `/api/entities/Task/count?q=${q(filter)}`)).body.count;
  }

  async function waitForRows(what: string, expected: string[]): Promise<void> {
    await eventually(what, rowIds, (ids) => JSON.stringify(ids) === JSON.stringify(expected));
  }

  async function applyFilters(values: { search?: string; q?: string; deleted?: string }): Promise<void> {
    if (values.search !== undefined) await page.getByLabel("Search").fill(values.search);
    if (values.q !== undefined) await page.locator("#records-q").fill(values.q);
    if (values.deleted !== undefined) await page.locator("#records-deleted").selectOption(values.deleted);
    await page.getByRole("button", { name: "Apply" }).click();
  }

  test("GET / is the page, with a strict CSP and nosniff, and no key; other methods are 405", async () => {
    const got = await fetch(`${server.url}/`);
    assert.equal(got.status, 200);
    assert.equal(got.headers.get("content-type"), "text/html; charset=utf-8");
    assert.equal(got.headers.get("x-content-type-options"), "nosniff");
    const csp = got.headers.get("content-security-policy") ?? "";
    for (const directive of ["default-src 'none'", "connect-src 'self'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'"]) assert.ok(csp.includes(directive), `${directive} in ${csp}`);
    assert.match(csp, /script-src 'sha256-[A-Za-z0-9+/=]+'/);
    assert.match(csp, /style-src 'sha256-[A-Za-z0-9+/=]+'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/);
    const html = await got.text();
    assert.match(html, /^<!doctype html>/);
    assert.doesNotMatch(html, /<(script|link|img)[^>]+(src|href)="(?!data:)/, "the page loads nothing from anywhere");
    const head = await fetch(`${server.url}/`, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), "");
    const post = await fetch(`${server.url}/`, { method: "POST" });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get("allow"), "GET, HEAD");
    assert.equal(((await post.json()) as { error: { code: string } }).error.code, "method_not_allowed");
  });

  test("a pasted key opens the entities with their counts, and stays out of the URL", async () => {
    await page.goto(`${server.url}/`);
    await page.getByLabel("API key").fill("sk_not_a_key_key");
    await page.getByRole("button", { name: "Open" }).click();
    assert.equal((await server.call("GET", "/api/entities", { apiKey: "sk_not_a_key_key" })).status, 401);
    await eventually("the refusal of a wrong key", () => page.locator("#api-key-error").textContent(), (text) => text?.startsWith("This server knows no such key.") === true);
    await page.getByLabel("API key").fill(SECRET);
    await page.keyboard.press("Enter");
    await eventually("the Task count", () => page.locator('nav a[data-entity="Task"] .count').textContent(), (text) => text === "30");
    await eventually("the Note count", () => page.locator('nav a[data-entity="Note"] .count').textContent(), (text) => text === "2");
    assert.equal(await page.locator(".session .badge").textContent(), "secret key");
    assert.equal(await page.evaluate("sessionStorage.getItem('tabula.apiKey')"), SECRET);
    assert.ok(!page.url().includes(SECRET), page.url());
    await waitForRows("the first page", await apiIds(`limit=${PAGE_SIZE}`));
    assert.equal(await range(), `Records 1–${PAGE_SIZE} of 30`);
    const headers = await page.locator("thead th").allTextContents();
    for (const column of ["id", ...Object.keys(TASK.properties), "created_date", "updated_date", "created_by_id"]) assert.ok(headers.some((text) => text.startsWith(column)), `column ${column} in ${headers}`);
    // Reloading the tab keeps the key (sessionStorage), and asks for none.
    await page.reload();
    await waitForRows("the first page after a reload", await apiIds(`limit=${PAGE_SIZE}`));
  });

  test("a click on a header sorts as the API sorts, ascending then descending, also by keyboard", async () => {
    await page.locator('button.sort[data-column="priority"]').click();
    await waitForRows("sorted by priority", await apiIds(`sort_by=priority&limit=${PAGE_SIZE}`));
    assert.equal(await page.locator('th:has(button[data-column="priority"])').getAttribute("aria-sort"), "ascending");
    await page.locator('button.sort[data-column="priority"]').focus();
    await page.keyboard.press("Enter");
    await waitForRows("sorted by -priority", await apiIds(`sort_by=-priority&limit=${PAGE_SIZE}`));
    assert.equal(await page.locator('th:has(button[data-column="priority"])').getAttribute("aria-sort"), "descending");
    assert.equal(await page.evaluate("document.activeElement.dataset.column"), "priority", "focus stays on the header");
    const priorities = (await cellsOf("priority")).map(Number);
    assert.deepEqual(priorities, [...priorities].sort((a, b) => b - a));
    // Paging a sort that allows no cursor goes by skip, from the Link header.
    await page.getByRole("button", { name: "Next →" }).click();
    await waitForRows("page 2 sorted by -priority", await apiIds(`sort_by=-priority&limit=${PAGE_SIZE}&skip=${PAGE_SIZE}`));
    // Back to the default, -created_date.
    await page.locator('button.sort[data-column="created_date"]').click();
    await page.locator('button.sort[data-column="created_date"]').click();
    await waitForRows("sorted by -created_date", await apiIds(`limit=${PAGE_SIZE}`));
  });

  test("a refused q shows the API's words about its operator under the box; an accepted one filters, with its count", async () => {
    const refused = '{"priority": {"$gt": "3"}}';
    const message = (await server.call("GET", `/api/entities/Task?q=${encodeURIComponent(refused)}`)).body.error.message;
    await applyFilters({ q: refused });
    await eventually("the q error", () => page.locator("#records-q-error").textContent(), (text) => text === message);
    assert.equal(await page.locator("#records-q").getAttribute("aria-invalid"), "true");
    await applyFilters({ q: '{"status": "done", "priority": {"$gte": 2}}' });
    const filter = { status: "done", priority: { $gte: 2 } };
    await waitForRows("filtered by q", await apiIds(`q=${q(filter)}&limit=${PAGE_SIZE}`));
    assert.equal(await page.locator("#records-q-error").textContent(), "");
    assert.equal(await range(), `Records 1–${await apiCount(filter)} of ${await apiCount(filter)}`);
    assert.ok((await cellsOf("status")).every((text) => text === "done"));
    await applyFilters({ q: "" });
  });

  test("the search box finds text in every text field", async () => {
    await applyFilters({ search: "readme" });
    const expected = await apiIds(`search=readme&limit=${PAGE_SIZE}`);
    assert.ok(expected.length >= 2);
    await waitForRows("searched for readme", expected);
    assert.ok((await cellsOf("title")).every((title) => /readme/i.test(title)));
    await applyFilters({ search: "" });
    await waitForRows("every task", await apiIds(`limit=${PAGE_SIZE}`));
  });

  test("next and previous walk the pages by cursor", async () => {
    const first = await apiIds(`limit=${PAGE_SIZE}`);
    const answer = await server.call("GET", `/api/entities/Task?limit=${PAGE_SIZE}`);
    const second = await apiIds(`cursor=${encodeURIComponent(answer.headers.get("x-next-cursor")!)}&limit=${PAGE_SIZE}`);
    await page.getByRole("button", { name: "Next →" }).click();
    await waitForRows("page 2", second);
    assert.equal(await range(), `Records ${PAGE_SIZE + 1}–30 of 30`);
    assert.equal(await page.getByRole("button", { name: "Next →" }).isDisabled(), true);
    await page.getByRole("button", { name: "← Previous" }).click();
    await waitForRows("page 1 again", first);
    assert.equal(await page.getByRole("button", { name: "← Previous" }).isDisabled(), true);
  });

  let createdId: string;

  test("the form made from the declaration creates a record, typed", async () => {
    await page.getByRole("button", { name: "New record" }).click();
    const form = dialog();
    await form.waitFor();
    assert.equal(await form.locator('[name="status"]').inputValue(), '"todo"', "the declared default");
    assert.equal(await form.locator('[name="title"]').getAttribute("aria-required"), "true");
    assert.equal(await form.locator('[name="priority"]').getAttribute("type"), "number");
    assert.equal(await form.locator('[name="done"]').inputValue(), "", "a boolean starts without a value");
    assert.equal(await form.locator('[name="due_date"]').getAttribute("type"), "date");
    assert.equal(await form.locator('[name="start_at"]').getAttribute("type"), "datetime-local");
    assert.equal(await form.locator('[name="tags"]').evaluate((element) => element.tagName), "TEXTAREA");
    assert.equal(await form.evaluate("document.activeElement.name"), "title", "the first field has focus");
    await form.locator('[name="title"]').fill("Made in the browser");
    await form.locator('[name="status"]').selectOption({ label: "doing" });
    await form.locator('[name="priority"]').fill("4");
    await form.locator('[name="estimate"]').fill("1.5");
    await form.locator('[name="done"]').selectOption({ label: "true" });
    await form.locator('[name="due_date"]').fill("2026-12-24");
    await form.locator('[name="start_at"]').fill("2026-12-20T09:30");
    await form.locator('[name="tags"]').fill('["ui", "demo"]');
    await form.locator('[name="meta"]').fill('{"source": "browser"}');
    await form.getByRole("button", { name: "Create" }).click();
    await eventually("the created record's row", () => cellsOf("title"), (titles) => titles[0] === "Made in the browser");
    createdId = (await rowIds())[0]!;
    const { body } = await server.call("GET", `/api/entities/Task/${createdId}`);
    assert.deepEqual(
      { title: body.title, status: body.status, priority: body.priority, estimate: body.estimate, done: body.done, due_date: body.due_date, start_at: body.start_at, tags: body.tags, meta: body.meta },
      { title: "Made in the browser", status: "doing", priority: 4, estimate: 1.5, done: true, due_date: "2026-12-24", start_at: "2026-12-20T09:30:00.000Z", tags: ["ui", "demo"], meta: { source: "browser" } },
    );
    assert.equal(await status(), `Created Task ${createdId}.`);
    await eventually("the Task count", () => page.locator('nav a[data-entity="Task"] .count').textContent(), (text) => text === "31");
  });

  test("a refused write is shown beside the field it names", async () => {
    await page.getByRole("button", { name: "New record" }).click();
    await dialog().locator('[name="title"]').fill("");
    await dialog().getByRole("button", { name: "Create" }).click();
    const missing = (await server.call("POST", "/api/entities/Task", { body: { status: "todo" } })).body.error;
    assert.equal(missing.details.field, "title");
    await eventually("the error beside title", () => fieldError("title").textContent(), (text) => text === "Required: give it a value.");
    assert.equal(await dialog().locator('[name="title"]').getAttribute("aria-invalid"), "true");
    await dialog().locator('[name="title"]').fill("Half a priority");
    await dialog().locator('[name="priority"]').fill("2.5");
    await dialog().getByRole("button", { name: "Create" }).click();
    const fractional = (await server.call("POST", "/api/entities/Task", { body: { title: "Half a priority", status: "todo", priority: 2.5 } })).body.error;
    assert.equal(fractional.message, 'Field "priority" must be a whole number (got 2.5).');
    await eventually("the error beside priority", () => fieldError("priority").textContent(), (text) => text === "Must be a whole number (got 2.5).");
    assert.equal(await fieldError("title").textContent(), "", "the earlier error is gone");
    assert.equal(await page.evaluate("document.activeElement.name"), "priority", "focus goes to the field at fault");
    await dialog().locator('[name="tags"]').fill("[not json");
    await dialog().getByRole("button", { name: "Create" }).click();
    await eventually("the JSON error beside tags", () => fieldError("tags").textContent(), (text) => text?.startsWith('Field "tags" is not valid JSON') === true);
    await page.keyboard.press("Escape");
    await dialog().waitFor({ state: "detached" });
    assert.equal(await apiCount({ title: "Half a priority" }), 0);
  });

  test("an edit sends If-Match: a record changed meanwhile is a 412, shown with a reload", async () => {
    await rowOf(createdId).getByRole("button", { name: "Edit" }).click();
    const form = dialog();
    await eventually("the form filled", () => form.locator('[name="title"]').inputValue(), (text) => text === "Made in the browser");
    // Shown in UTC, as stored; Chromium writes the value without the seconds that are zero.
    assert.equal(await form.locator('[name="start_at"]').inputValue(), "2026-12-20T09:30");
    await form.locator('[name="title"]').fill("Edited in the browser");
    // Someone else writes the record after the form has read it.
    assert.equal((await server.call("PATCH", `/api/entities/Task/${createdId}`, { body: { priority: 1 } })).status, 200);
    await form.getByRole("button", { name: "Save" }).click();
    await eventually("the 412 banner", () => form.locator(".form-banner").textContent(), (text) => text?.includes("changed since you opened it") === true);
    assert.equal((await server.call("GET", `/api/entities/Task/${createdId}`)).body.title, "Made in the browser", "nothing was overwritten");
    await form.getByRole("button", { name: "Reload the record" }).click();
    await eventually("the reloaded priority", () => form.locator('[name="priority"]').inputValue(), (text) => text === "1");
    assert.equal(await form.locator('[name="title"]').inputValue(), "Made in the browser");
    assert.equal(await form.locator(".form-banner").isHidden(), true);
    await form.locator('[name="title"]').fill("Edited in the browser");
    await form.locator('[name="estimate"]').fill("");
    await form.getByRole("button", { name: "Save" }).click();
    await dialog().waitFor({ state: "detached" });
    const { body } = await server.call("GET", `/api/entities/Task/${createdId}`);
    assert.equal(body.title, "Edited in the browser");
    assert.equal(body.priority, 1);
    assert.equal(body.estimate, undefined, "an emptied field is cleared");
    assert.deepEqual(body.tags, ["ui", "demo"], "untouched fields are not sent");
    await eventually("the edited row", () => rowOf(createdId).locator('td[data-column="title"]').textContent(), (text) => text === "Edited in the browser");
  });

  test("delete hides a record, and restore brings it back", async () => {
    await rowOf(createdId).getByRole("button", { name: "Delete" }).click();
    await eventually("the row gone", () => rowOf(createdId).count(), (count) => count === 0);
    assert.equal((await server.call("GET", `/api/entities/Task/${createdId}`)).status, 404);
    assert.equal(await status(), `Deleted Task ${createdId}. Restore it`);
    await page.locator(".records .status").getByRole("button", { name: "Restore it" }).click();
    await eventually("the row back", () => rowOf(createdId).count(), (count) => count === 1);
    assert.equal((await server.call("GET", `/api/entities/Task/${createdId}`)).status, 200);
  });

  test("deleted=include shows deleted records, marked, each with a restore", async () => {
    const victim = (await apiIds("limit=2"))[1];
    assert.equal((await server.call("DELETE", `/api/entities/Task/${victim}`)).status, 200);
    await applyFilters({ deleted: "include" });
    // Marked deleted (and, for a moment, changed: the feed reported the delete).
    const isDeleted = (name: string | null) => (name ?? "").split(" ").includes("is-deleted");
    await eventually("the deleted row", () => rowOf(victim!).getAttribute("class"), isDeleted);
    assert.equal(await rowOf(victim!).locator(".badge").textContent(), "deleted");
    await waitForRows("live and deleted", await apiIds(`deleted=include&limit=${PAGE_SIZE}`));
    assert.equal(await rows().locator(".badge").count(), 1, "only the deleted record is marked");
    await rowOf(victim!).getByRole("button", { name: "Restore" }).click();
    await eventually("the restored row", () => rowOf(victim!).getAttribute("class"), (name) => !isDeleted(name));
    assert.equal((await server.call("GET", `/api/entities/Task/${victim}`)).status, 200);
    await applyFilters({ deleted: "" });
  });

  test("several selected records are deleted at once by their ids", async () => {
    const before = await apiCount();
    const chosen = (await rowIds()).slice(1, 4) as string[];
    for (const id of chosen) await rowOf(id).getByRole("checkbox").check();
    await page.getByRole("button", { name: "Delete selected (3)" }).click();
    await eventually("the bulk delete's report", status, (text) => text === "Deleted 3 Task records.");
    assert.equal(await apiCount(), before - 3);
    for (const id of chosen) assert.equal((await server.call("GET", `/api/entities/Task/${id}`)).status, 404);
    await waitForRows("the page without them", await apiIds(`limit=${PAGE_SIZE}`));
    assert.equal(await page.getByRole("button", { name: "Delete selected (0)" }).isDisabled(), true);
  });

  test("writes from elsewhere arrive live from the change feed", async () => {
    await eventually("the feed's state", () => page.locator(".live").getAttribute("data-state"), (state) => state === "live");
    const created = await server.call("POST", "/api/entities/Task", { body: { title: "Arrived live", priority: 3 } });
    assert.equal(created.status, 201);
    await eventually("the live row", () => rowOf(created.body.id).locator('td[data-column="title"]').textContent().catch(() => null), (text) => text === "Arrived live");
    await server.call("PATCH", `/api/entities/Task/${created.body.id}`, { body: { title: "Changed live" } });
    await eventually("the live change", () => rowOf(created.body.id).locator('td[data-column="title"]').textContent(), (text) => text === "Changed live");
    const count = String(await apiCount());
    await eventually("the live count", () => page.locator('nav a[data-entity="Task"] .count').textContent(), (text) => text === count);
  });

  test("a publishable key sees what it may: no deleted=, no bulk delete, no created_by_id, per-entity access", async () => {
    await page.getByRole("button", { name: "Forget key" }).click();
    assert.equal(await page.evaluate("sessionStorage.getItem('tabula.apiKey')"), null);
    await page.getByLabel("API key").fill(PUBLISHABLE);
    await page.getByRole("button", { name: "Open" }).click();
    await eventually("the key's kind", () => page.locator(".session .badge").textContent().catch(() => null), (text) => text === "publishable key");
    await eventually("the rows", () => rows().count(), (count) => count === PAGE_SIZE);
    assert.equal(await page.locator("#records-deleted").count(), 0);
    assert.equal(await rows().getByRole("checkbox").count(), 0);
    assert.equal(await page.getByRole("button", { name: /Delete selected/ }).count(), 0);
    assert.ok(!(await page.locator("thead th").allTextContents()).some((text) => text.startsWith("created_by_id")));
    assert.equal(await rows().first().getByRole("button", { name: "Edit" }).count(), 1);
    // Note lets publishable keys read only: no form, no edit, no delete.
    await page.locator('nav a[data-entity="Note"]').click();
    await eventually("the notes", () => rows().count(), (count) => count === 2);
    assert.equal(await page.getByRole("button", { name: "New record" }).count(), 0);
    assert.equal(await rows().getByRole("button").count(), 0);
    assert.ok(page.url().endsWith("#Note"));
    await page.getByRole("button", { name: "Forget key" }).click();
  });

  test("screenshots at 1440 and 375 px, light and dark (docs/ with TABULA_SCREENSHOTS=1); 375 px needs no sideways scroll", async () => {
    mkdirSync(DOCS, { recursive: true });
    const shots: Array<{ file: string; width: number; height: number; colorScheme: "light" | "dark"; withForm?: boolean }> = [
      { file: "ui-records-1440.png", width: 1440, height: 900, colorScheme: "light" },
      { file: "ui-form-1440.png", width: 1440, height: 900, colorScheme: "light", withForm: true },
      { file: "ui-records-dark-1440.png", width: 1440, height: 900, colorScheme: "dark" },
      { file: "ui-records-375.png", width: 375, height: 812, colorScheme: "light" },
    ];
    for (const shot of shots) {
      const shotContext = await newContext({ width: shot.width, height: shot.height }, shot.colorScheme, SECRET);
      const shotPage = await shotContext.newPage();
      await shotPage.goto(`${server.url}/#Task`);
      await shotPage.locator(`tbody tr[data-id]`).nth(PAGE_SIZE - 1).waitFor();
      await shotPage.locator('.live[data-state="live"]').waitFor();
      if (shot.withForm) {
        await shotPage.locator("tbody tr[data-id]", { hasText: "Edited in the browser" }).getByRole("button", { name: "Edit" }).click();
        await shotPage.locator("dialog[open] [name=title]").waitFor();
        await shotPage.waitForFunction("document.querySelector('dialog[open] [name=title]').value !== ''");
      }
      if (shot.width === 375) assert.ok(await shotPage.evaluate("document.documentElement.scrollWidth <= 375"), "the page fits 375 px; only the table scrolls");
      await shotPage.screenshot({ path: `${DOCS}${shot.file}` });
      await shotContext.close();
    }
  });

  test("nothing on the page broke the Content-Security-Policy, and nothing threw", () => {
    assert.deepEqual(problems, []);
  });
});
