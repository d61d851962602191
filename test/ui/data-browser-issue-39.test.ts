// The data browser's regressions of issue 39 (items 12–18), each driven in Debian's chromium against
// a real server on port 0: a boolean that can stay unset, a refused filter that leaves no stale
// rows, messages that end with the next action, a filter example per entity, a wide table that
// shows it scrolls, refusals worded for the page, and a key's kind learnt without a 403.

import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { describeInChromium, eventually, launchChromium, WAIT_MS } from "../support/browser.ts";
import { PUBLISHABLE, q, SECRET, startTestServer, TASK, type TestServer } from "../support/server.ts";

const NOTE = { name: "Note", type: "object", properties: { text: { type: "string" }, pinned: { type: "boolean" } }, required: ["text"] };
const EMPTY = { name: "Empty", type: "object", properties: { label: { type: "string" }, size: { type: "number" } } };
const SEED = Array.from({ length: 6 }, (_, i) => ({ title: `Task ${i + 1}`, status: ["todo", "doing", "done"][i % 3], priority: i, done: i % 2 === 0, due_date: "2026-12-01", tags: ["a"] }));
/** Words of HTTP and of the server's files, which a person using the page never typed. */
const SERVER_WORDS = /\bbody\b|URL-encoded|q=|keys\.json|<data>|\bheader\b|X-Api-Key|Parameter q/i;

describeInChromium("the data browser's fixes of issue 39, in Chromium", (chromiumPath) => {
  let browser: Browser;
  let server: TestServer;
  let context: BrowserContext;
  let page: Page;

  before(async () => {
    [browser, server] = await Promise.all([launchChromium(chromiumPath), startTestServer({ memory: true, schema: { Task: TASK, Note: NOTE, Empty: EMPTY } })]);
    assert.equal((await server.call("POST", "/api/entities/Task/bulk", { body: SEED })).status, 201);
    assert.equal((await server.call("POST", "/api/entities/Note/bulk", { body: [{ text: "Call the bank", pinned: false }] })).status, 201);
    context = await newContext(1280);
    page = await context.newPage();
  });
  // Each test starts from the page as opened, so that one failing leaves nothing to the next.
  beforeEach(async () => {
    await page.goto("about:blank"); // else a goto to the same URL and fragment loads nothing
    await page.goto(`${server.url}/#Task`);
    await page.locator("tbody tr[data-id]").first().waitFor();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  /** A browser context at `width` px whose pages hold `apiKey` in sessionStorage, if given. */
  async function newContext(width: number, apiKey: string | null = SECRET): Promise<BrowserContext> {
    const created = await browser.newContext({ viewport: { width, height: 900 } });
    created.setDefaultTimeout(WAIT_MS);
    if (apiKey) await created.addInitScript(`if (location.protocol === "http:") sessionStorage.setItem("tabula.apiKey", ${JSON.stringify(apiKey)});`);
    return created;
  }

  const rows = () => page.locator("tbody tr[data-id]");
  const dialog = () => page.locator("dialog[open]");
  const fieldError = (name: string) => dialog().locator(".field", { has: page.locator(`[name="${name}"]`) }).locator(".field-error");
  const range = () => page.locator(".pager .range").textContent();
  const status = () => page.locator(".records .status").textContent();
  const qError = () => page.locator("#records-q-error").textContent();

  async function applyFilter(filter: string, search = ""): Promise<void> {
    await page.locator("#records-q").fill(filter);
    await page.getByLabel("Search").fill(search);
    await page.getByRole("button", { name: "Apply" }).click();
  }

  async function record(id: string): Promise<Record<string, unknown>> {
    const answer = await server.call("GET", `/api/entities/Task/${id}`);
    assert.equal(answer.status, 200, answer.text);
    return answer.body;
  }

  /** Creates a Task through the form with `title` alone, and answers its id. */
  async function createInForm(title: string): Promise<string> {
    await page.getByRole("button", { name: "New record" }).click();
    await dialog().locator('[name="title"]').fill(title);
    await dialog().getByRole("button", { name: "Create" }).click();
    await dialog().waitFor({ state: "detached" });
    const found = await server.call("GET", `/api/entities/Task?q=${q({ title })}`);
    assert.equal(found.body.length, 1, found.text);
    return found.body[0].id;
  }

  test("item 12: a boolean left alone in the form is stored without a value, and an edit can set it false or clear it", async () => {
    await page.getByRole("button", { name: "New record" }).click();
    const done = dialog().locator('[name="done"]');
    assert.equal(await done.evaluate((element) => element.tagName), "SELECT", "three states: no value, true, false");
    assert.deepEqual(await done.locator("option").allTextContents(), ["(no value)", "true", "false"]);
    assert.equal(await done.locator("option:checked").textContent(), "(no value)");
    await page.keyboard.press("Escape");
    const id = await createInForm("Left alone");
    assert.equal("done" in (await record(id)), false, "an untouched boolean has no value");

    await page.locator(`tbody tr[data-id="${id}"]`).getByRole("button", { name: "Edit" }).click();
    await eventually("the form filled", () => dialog().locator('[name="title"]').inputValue(), (text) => text === "Left alone");
    await dialog().locator('[name="done"]').selectOption({ label: "false" });
    await dialog().getByRole("button", { name: "Save" }).click();
    await dialog().waitFor({ state: "detached" });
    assert.equal((await record(id)).done, false);

    await page.locator(`tbody tr[data-id="${id}"]`).getByRole("button", { name: "Edit" }).click();
    await eventually("the stored false shown", () => dialog().locator('[name="done"] option:checked').textContent(), (text) => text === "false");
    await dialog().locator('[name="done"]').selectOption({ label: "(no value)" });
    await dialog().getByRole("button", { name: "Save" }).click();
    await dialog().waitFor({ state: "detached" });
    assert.equal("done" in (await record(id)), false, "(no value) clears the field: PATCH sends null");
  });

  test("item 13: a refused filter takes away the rows and the range of the filter before it", async () => {
    await applyFilter('{"title": "Task 3"}');
    await eventually("one row", () => rows().count(), (count) => count === 1);
    assert.equal(await range(), "Records 1–1 of 1");
    await applyFilter('{"priority": {"$gt": "3"}}');
    await eventually("the refusal", qError, (text) => (text ?? "") !== "");
    await eventually("the rows taken away", () => rows().count(), (count) => count === 0);
    assert.doesNotMatch((await range()) ?? "", /Records|of \d/, "no count of an answer the page no longer shows");
    assert.match((await page.locator("tbody td.empty").textContent()) ?? "", /filter/i, "the table says why it is empty");
    await applyFilter("");
    await eventually("every task again", () => rows().count(), (count) => count >= SEED.length);
  });

  test("item 14: a message about a write ends with the next sort, filter or search", async () => {
    const id = await createInForm("Sorted away");
    await eventually("the create's message", status, (text) => text === `Created Task ${id}.`);
    await page.locator('button.sort[data-column="priority"]').click();
    await eventually("the message gone after a sort", status, (text) => text === "");
    await page.locator('button.sort[data-column="created_date"]').click();
    await page.locator('button.sort[data-column="created_date"]').click();

    await page.locator(`tbody tr[data-id="${id}"]`).getByRole("button", { name: "Delete" }).click();
    await eventually("the delete's message", status, (text) => text?.startsWith(`Deleted Task ${id}.`) === true);
    await applyFilter('{"status": "todo"}');
    await eventually("the message gone after a filter", status, (text) => text === "");

    await page.locator("tbody tr[data-id]").first().getByRole("button", { name: "Delete" }).click();
    await eventually("another delete's message", status, (text) => text?.startsWith("Deleted Task") === true);
    await applyFilter("", "Task");
    await eventually("the message gone after a search", status, (text) => text === "");
    await applyFilter("", "");
  });

  test("item 15: the filter box's example names the entity's own fields, and the API accepts it as written", async () => {
    for (const entity of ["Task", "Note", "Empty"]) {
      await page.locator(`nav a[data-entity="${entity}"]`).click();
      await eventually(`${entity}'s table`, () => page.locator("#records-title").textContent(), (text) => text === entity);
      const example = (await page.locator("#records-q").getAttribute("placeholder")) ?? "";
      const filter = JSON.parse(example) as Record<string, unknown>;
      const declared = Object.keys({ Task: TASK, Note: NOTE, Empty: EMPTY }[entity]!.properties);
      for (const name of Object.keys(filter)) assert.ok([...declared, "id", "created_date", "updated_date"].includes(name), `${entity}'s example ${example} names ${name}`);
      const answer = await server.call("GET", `/api/entities/${entity}/count?q=${encodeURIComponent(example)}`);
      assert.equal(answer.status, 200, `${entity}'s example ${example}: ${answer.text}`);
    }
  });

  test("item 15: an entity without records says so, with no count of zero", async () => {
    await page.locator('nav a[data-entity="Empty"]').click();
    await eventually("the empty range", range, (text) => text === "No records");
    assert.equal(await page.locator("tbody td.empty").textContent(), "No Empty records yet.");
    await page.locator('nav a[data-entity="Task"]').click();
    await eventually("Task's rows", () => rows().count(), (count) => count > 0);
  });

  test("item 16: at 1,440 px the id column is narrow, the table shows that it scrolls, and its last column comes out whole", async () => {
    const wide = await newContext(1440);
    const widePage = await wide.newPage();
    try {
      await widePage.goto(`${server.url}/#Task`);
      const firstRow = widePage.locator("tbody tr[data-id]").first();
      await firstRow.waitFor();
      const id = (await firstRow.getAttribute("data-id"))!;
      const idCell = firstRow.locator("td.id");
      assert.ok((await idCell.boundingBox())!.width <= 120, `the id column is ${(await idCell.boundingBox())!.width} px wide`);
      assert.equal(await idCell.textContent(), id, "the whole id is still there, to copy");
      assert.equal(await idCell.getAttribute("title"), id);

      const wrap = widePage.locator(".table-wrap");
      assert.ok(await wrap.evaluate((element) => element.scrollWidth > element.clientWidth), "the table is wider than the page");
      assert.equal(await wrap.getAttribute("data-more"), "right", "the table says more columns are to the right");
      const shadow = () => widePage.evaluate<string>("getComputedStyle(document.querySelector('th.actions')).boxShadow");
      // offset-x offset-y blur: a blur of 4 px or more is a shadow, not the 1 px line beside the buttons.
      const CAST_SHADOW = /-?\d+px -?\d+px (?:[4-9]|\d{2,})px/;
      assert.match(await shadow(), CAST_SHADOW, "a shadow shows columns going under the buttons");
      assert.equal(await widePage.locator(".scroll-hint").textContent(), "Scroll sideways for more columns →");

      await wrap.evaluate((element) => element.scrollTo({ left: element.scrollWidth }));
      await eventually("the end reached", () => wrap.getAttribute("data-more"), (more) => more === "left");
      assert.equal(await widePage.locator(".scroll-hint").textContent(), "", "the hint is spent");
      assert.doesNotMatch(await shadow(), CAST_SHADOW, "no shadow once nothing is under the buttons");
      const last = (await widePage.locator("thead th").evaluateAll((cells) => cells.map((cell) => cell.textContent)))!.at(-2);
      assert.equal(last, "created_by_id");
      const lastBox = (await widePage.locator('thead th:has(button[data-column="created_by_id"])').boundingBox())!;
      const actionsBox = (await widePage.locator("thead th.actions").boundingBox())!;
      assert.ok(lastBox.x + lastBox.width <= actionsBox.x + 1, `created_by_id ends at ${lastBox.x + lastBox.width}, the buttons begin at ${actionsBox.x}`);
      assert.equal(await widePage.evaluate("document.documentElement.scrollWidth <= 1440"), true, "only the table scrolls");
    } finally {
      await wide.close();
    }
  });

  test("item 17: refusals are worded for the form, the filter box and the key box, without the API's HTTP words", async () => {
    await applyFilter("{not json");
    const notJson = (await eventually("the refusal of text that is not JSON", qError, (text) => (text ?? "") !== "")) ?? "";
    assert.match(notJson, /^The filter is not valid JSON/);
    assert.doesNotMatch(notJson, SERVER_WORDS);
    await applyFilter("[1, 2]");
    const notObject = (await eventually("the refusal of an array", qError, (text) => text !== notJson && (text ?? "") !== "")) ?? "";
    assert.match(notObject, /^The filter must be a JSON object/);
    assert.doesNotMatch(notObject, SERVER_WORDS);
    await applyFilter('{"colour": "red"}');
    const unknown = (await eventually("the refusal of an unknown field", qError, (text) => text?.includes("colour") === true)) ?? "";
    assert.match(unknown, /^Task has no field "colour"/);
    assert.match(unknown, /title, status, priority/);
    await applyFilter("");
    await eventually("every task again", () => rows().count(), (count) => count > 0);

    await page.getByRole("button", { name: "New record" }).click();
    await dialog().locator('[name="title"]').fill("");
    await dialog().getByRole("button", { name: "Create" }).click();
    const required = (await eventually("the error beside title", () => fieldError("title").textContent(), (text) => (text ?? "") !== "")) ?? "";
    assert.equal(required, "Required: give it a value.");
    await page.keyboard.press("Escape");
    await dialog().waitFor({ state: "detached" });

    const keyContext = await newContext(1280, null);
    try {
      const keyPage = await keyContext.newPage();
      await keyPage.goto(`${server.url}/`);
      await keyPage.getByLabel("API key").fill("sk_not_a_key_at_all");
      await keyPage.getByRole("button", { name: "Open" }).click();
      const refusal = (await eventually("the wrong key's refusal", () => keyPage.locator("#api-key-error").textContent(), (text) => (text ?? "") !== "")) ?? "";
      assert.match(refusal, /^This server knows no such key/);
      assert.doesNotMatch(refusal, SERVER_WORDS);
    } finally {
      await keyContext.close();
    }
  });

  // Issue 40 item 7: a refusal lists every bad field (details.errors); each is marked beside its own.
  test("a record with two mistakes gets both marked in the form, each worded for its field", async () => {
    await page.getByRole("button", { name: "New record" }).click();
    await dialog().locator('[name="title"]').fill("");
    await dialog().locator('[name="email"]').fill("not an address");
    await dialog().getByRole("button", { name: "Create" }).click();
    const emailError = (await eventually("the error beside email", () => fieldError("email").textContent(), (text) => (text ?? "") !== "")) ?? "";
    assert.match(emailError, /^Must be an email address/);
    assert.equal(await fieldError("title").textContent(), "Required: give it a value.");
    await page.keyboard.press("Escape");
    await dialog().waitFor({ state: "detached" });
  });

  test("item 18: opening the page with either key logs no error in the console and meets no refusal", async () => {
    for (const [apiKey, kind] of [
      [PUBLISHABLE, "publishable"],
      [SECRET, "secret"],
    ] as const) {
      const keyContext = await newContext(1280, null);
      try {
        const keyPage = await keyContext.newPage();
        const errors: string[] = [];
        keyPage.on("console", (message) => {
          if (message.type() === "error") errors.push(message.text());
        });
        keyPage.on("response", (response) => {
          if (response.status() >= 400) errors.push(`${response.status()} ${response.url()}`);
        });
        await keyPage.goto(`${server.url}/#Task`);
        await keyPage.getByLabel("API key").fill(apiKey);
        await keyPage.getByRole("button", { name: "Open" }).click();
        await eventually(`the ${kind} key's badge`, () => keyPage.locator(".session .badge").textContent().catch(() => null), (text) => text === `${kind} key`);
        await keyPage.locator("tbody tr[data-id]").first().waitFor();
        await keyPage.locator('.live[data-state="live"]').waitFor();
        assert.deepEqual(errors, [], `${kind} key`);
      } finally {
        await keyContext.close();
      }
    }
  });
});
