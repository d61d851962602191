// The data browser's Keys page (docs/data-browser.md, "Keys"; issue 42), driven in Debian's chromium
// against a real server on port 0: the list by prefix, a create shown once and copied, a roll whose
// old key works until its expiry, a revoke behind a confirm, the refusals in the API's words, this
// tab's key revoked, and a publishable key that is not offered the page. The server keeps its
// secret key (generated, so that it can be the last one) and is given its publishable key by flag.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { describeInChromium, eventually, launchChromium, WAIT_MS } from "../support/browser.ts";
import { PUBLISHABLE, startTestServer, type TestServer } from "../support/server.ts";

// As in data-browser.test.ts: docs/ only with TABULA_SCREENSHOTS=1, else a temporary folder.
const DOCS = process.env.TABULA_SCREENSHOTS === "1" ? fileURLToPath(new URL("../../docs/", import.meta.url)) : `${mkdtempSync(join(tmpdir(), "tabula-shots-"))}/`;
/** How long a rolled key lives on in the roll test: long enough for both keys to be tried, short enough to wait for. */
const ROLL_SECONDS = 3;

interface ListedKey {
  id: string;
  kind: string;
  name: string;
  prefix: string;
  expires_at: string | null;
  source: string;
}

describeInChromium("the data browser's Keys page in Chromium", (chromiumPath) => {
  let browser: Browser;
  let server: TestServer;
  let page: Page;
  /** The server's one secret key: generated at start, kept hashed, so the last one. */
  let secretKey: string;
  /** The publishable key the create test makes, then the successor the roll test makes of it. */
  let webAppKey = "";
  let successorKey = "";
  const problems: string[] = [];

  before(async () => {
    [browser, server] = await Promise.all([launchChromium(chromiumPath), startTestServer({ memory: true, secretKey: undefined })]);
    secretKey = server.secretKey;
    page = await (await newContext()).newPage();
    await page.goto(`${server.url}/`);
    await page.getByLabel("API key").fill(secretKey);
    await page.getByRole("button", { name: "Open" }).click();
    await page.locator(".session .badge", { hasText: "secret key" }).waitFor();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  async function newContext(options: { apiKey?: string; hasClipboard?: boolean } = {}): Promise<BrowserContext> {
    const created = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    created.setDefaultTimeout(WAIT_MS);
    await created.addInitScript(`document.addEventListener("securitypolicyviolation", (e) => console.error("CSP violation: " + e.violatedDirective + " " + e.blockedURI));`);
    if (options.apiKey) await created.addInitScript(`if (location.protocol === "http:") sessionStorage.setItem("tabula.apiKey", ${JSON.stringify(options.apiKey)});`);
    if (options.hasClipboard === false) await created.addInitScript(`Object.defineProperty(Navigator.prototype, "clipboard", { get: () => undefined });`);
    else await created.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.url });
    created.on("page", (opened) => {
      opened.on("console", (message) => {
        if (/Content Security Policy|CSP violation/i.test(message.text())) problems.push(message.text());
      });
      opened.on("pageerror", (error) => problems.push(`uncaught: ${error.message}`));
    });
    return created;
  }

  async function listKeys(): Promise<ListedKey[]> {
    const answer = await server.call("GET", "/api/keys", { apiKey: secretKey });
    assert.equal(answer.status, 200, answer.text);
    return answer.body;
  }

  /** The status of a request with `apiKey`: 200 while the server accepts it, 401 once not. */
  async function statusWith(apiKey: string): Promise<number> {
    return (await server.call("GET", "/api/entities/Task", { apiKey })).status;
  }

  const rowOf = (target: Page, id: string) => target.locator(`.keys tbody tr[data-key-id="${id}"]`);
  const keysStatus = (target: Page) => target.locator(".keys .status").textContent();
  const dialog = (target: Page) => target.locator("dialog[open]");

  async function openKeysPage(target: Page): Promise<void> {
    await target.locator('nav a[data-page="keys"]').click();
    await target.locator(".keys tbody tr[data-key-id]").first().waitFor();
  }

  /** Creates a key through the page's form; answers the key the box shows. */
  async function createInPage(target: Page, kind: string, name: string): Promise<string> {
    await target.getByLabel("Kind").selectOption(kind);
    await target.getByLabel("Name").fill(name);
    await target.getByRole("button", { name: "Create key" }).click();
    const shown = (await target.locator("[data-new-key]").textContent()) ?? "";
    assert.ok(shown.startsWith(kind === "secret" ? "sk_" : "pk_"), shown);
    return shown;
  }

  test("a secret key finds Keys in the navigation: every key listed by prefix, flag keys without buttons", async () => {
    await openKeysPage(page);
    assert.ok(page.url().endsWith("#/keys"));
    assert.equal(await page.locator('nav a[data-page="keys"]').getAttribute("aria-current"), "page");
    const listed = await listKeys();
    await eventually("one row per key", () => page.locator(".keys tbody tr[data-key-id]").count(), (count) => count === listed.length);
    assert.equal(listed.length, 2);
    // Secret keys first.
    assert.deepEqual(await page.locator(".keys tbody tr[data-key-id]").evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-key-id"))), [listed.find((key) => key.kind === "secret")!.id, listed.find((key) => key.kind === "publishable")!.id]);
    for (const key of listed) {
      assert.equal(await rowOf(page, key.id).locator('[data-column="prefix"]').textContent(), `${key.prefix}…`);
      assert.equal(await rowOf(page, key.id).locator('[data-column="source"]').textContent(), key.source);
    }
    const stored = listed.find((key) => key.source === "stored")!;
    const flag = listed.find((key) => key.source === "flag")!;
    assert.equal(await rowOf(page, stored.id).getByRole("button").count(), 2);
    assert.equal(await rowOf(page, flag.id).getByRole("button").count(), 0);
    assert.equal(await rowOf(page, stored.id).locator(".badge", { hasText: "this tab" }).count(), 1);
    const text = await page.locator("body").innerText();
    assert.ok(!text.includes(secretKey) && !text.includes(PUBLISHABLE), "no key in full on the page");
  });

  test("a created key is shown once with Copy, works against the API, and is listed by its prefix only", async () => {
    const made = await createInPage(page, "publishable", "web app");
    webAppKey = made;
    assert.equal(await statusWith(made), 200);
    const listed = (await listKeys()).find((key) => key.name === "web app");
    assert.ok(listed, "the API lists the new key");
    assert.deepEqual([listed.kind, listed.prefix, listed.expires_at, listed.source], ["publishable", made.slice(0, 8), null, "stored"]);
    await rowOf(page, listed.id).waitFor();
    assert.equal(await rowOf(page, listed.id).locator('[data-column="prefix"]').textContent(), `${made.slice(0, 8)}…`);
    assert.ok(!(await page.locator(".keys table").innerText()).includes(made), "the list never holds the key in full");
    assert.match((await page.locator(".new-key").innerText()) ?? "", /will not be shown again/);
    await page.locator(".new-key").getByRole("button", { name: "Copy" }).click();
    await eventually("the copy's word", () => page.locator(".new-key [role=status]").textContent(), (text) => text === "Copied.");
    assert.equal(await page.evaluate("navigator.clipboard.readText()"), made);
    await page.locator(".new-key").getByRole("button", { name: "Done" }).click();
    assert.equal(await page.locator(".new-key").count(), 0);
    assert.ok(!(await page.locator("body").innerText()).includes(made), "gone once Done");
  });

  test("a refused create is shown in the API's words", async () => {
    await page.getByLabel("Name").fill("   ");
    await page.getByRole("button", { name: "Create key" }).click();
    const refused = await server.call("POST", "/api/keys", { apiKey: secretKey, body: { kind: "publishable", name: "" } });
    assert.equal(refused.status, 400);
    await eventually("the refusal under the form", () => page.locator("#new-key-error").textContent(), (text) => text === refused.body.error.message);
    assert.equal(await page.getByLabel("Name").getAttribute("aria-invalid"), "true");
  });

  test("a roll shows the successor once; the old key works until the time asked, then only the new one", async () => {
    const old = (await listKeys()).find((key) => key.name === "web app")!;
    await rowOf(page, old.id).getByRole("button", { name: "Roll" }).click();
    assert.equal(await dialog(page).getByLabel("The old key keeps working for").inputValue(), "24");
    assert.equal(await dialog(page).getByLabel("Unit").inputValue(), "3600");
    await dialog(page).getByLabel("The old key keeps working for").fill(String(ROLL_SECONDS));
    await dialog(page).getByLabel("Unit").selectOption("1");
    const rolledAt = Date.now();
    await dialog(page).getByRole("button", { name: "Roll" }).click();
    const successor = (await page.locator("[data-new-key]").textContent()) ?? "";
    assert.match(successor, /^pk_/);
    assert.notEqual(successor.slice(0, 8), old.prefix);
    assert.match(await page.locator(".new-key").innerText(), new RegExp(`old key \\(${old.prefix}…\\) keeps working until`));
    const listed = await listKeys();
    const oldNow = listed.find((key) => key.id === old.id)!;
    const expiresAt = Date.parse(oldNow.expires_at!);
    assert.ok(expiresAt > rolledAt && expiresAt <= Date.now() + ROLL_SECONDS * 1000, `old key expires at ${oldNow.expires_at}`);
    assert.ok(listed.some((key) => key.name === "web app" && key.prefix === successor.slice(0, 8)));
    assert.deepEqual([await statusWith(successor), await statusWith(webAppKey)], [200, 200], "both keys work until the old one's expiry");
    await eventually("the old key's expiry words", () => rowOf(page, old.id).locator('[data-column="expires_at"]').textContent(), (text) => /expires in \d s|expired/.test(text ?? ""));
    await eventually("the old key refused after its expiry", () => statusWith(webAppKey), (status) => status === 401);
    assert.equal(await statusWith(successor), 200);
    // The page reads the list again once the old key has expired.
    await eventually("the old key's row gone", () => rowOf(page, old.id).count(), (count) => count === 0);
    successorKey = successor;
  });

  test("revoke asks first; confirmed, the key is refused (401) and leaves the list", async () => {
    const target = (await listKeys()).find((key) => key.name === "web app")!;
    await rowOf(page, target.id).getByRole("button", { name: "Revoke" }).click();
    await dialog(page).getByRole("button", { name: "Cancel" }).click();
    assert.equal(await dialog(page).count(), 0);
    assert.equal(await statusWith(successorKey), 200, "Cancel revokes nothing");
    await rowOf(page, target.id).getByRole("button", { name: "Revoke" }).click();
    assert.match(await dialog(page).innerText(), /refused from now on/);
    await dialog(page).getByRole("button", { name: "Revoke" }).click();
    await eventually("the page's word", () => keysStatus(page), (text) => text === `Revoked “web app” (${target.prefix}…).`);
    assert.equal(await statusWith(successorKey), 401);
    await eventually("the row gone", () => rowOf(page, target.id).count(), (count) => count === 0);
  });

  test("the last secret key is not revoked: the page shows the API's refusal", async () => {
    const secret = (await listKeys()).find((key) => key.kind === "secret")!;
    await rowOf(page, secret.id).getByRole("button", { name: "Revoke" }).click();
    assert.match(await dialog(page).innerText(), /This tab was opened with this key/);
    await dialog(page).getByRole("button", { name: "Revoke" }).click();
    const refused = await server.call("DELETE", `/api/keys/${secret.id}`, { apiKey: secretKey });
    assert.deepEqual([refused.status, refused.body.error.code], [409, "last_secret_key"]);
    await eventually("the refusal", () => keysStatus(page), (text) => text === refused.body.error.message);
    assert.equal(await statusWith(secretKey), 200);
    await rowOf(page, secret.id).waitFor();
  });

  test("without a clipboard, Copy selects the key for a Ctrl+C", async () => {
    const context = await newContext({ apiKey: secretKey, hasClipboard: false });
    try {
      const other = await context.newPage();
      await other.goto(`${server.url}/#/keys`);
      await other.locator(".keys tbody tr[data-key-id]").first().waitFor();
      const made = await createInPage(other, "publishable", "no clipboard");
      await other.locator(".new-key").getByRole("button", { name: "Copy" }).click();
      await eventually("the fallback's word", () => other.locator(".new-key [role=status]").textContent(), (text) => text?.startsWith("Selected: press Ctrl+C") === true);
      assert.equal(await other.evaluate("getSelection().toString()"), made);
    } finally {
      await context.close();
    }
  });

  test("this tab's key revoked: the page says so and asks for another key, also when opened again", async () => {
    const second = await server.call("POST", "/api/keys", { apiKey: secretKey, body: { kind: "secret", name: "second" } });
    assert.equal(second.status, 201);
    const context = await newContext({ apiKey: second.body.key });
    try {
      const other = await context.newPage();
      await other.goto(`${server.url}/#/keys`);
      await rowOf(other, second.body.id).locator(".badge", { hasText: "this tab" }).waitFor();
      await rowOf(other, second.body.id).getByRole("button", { name: "Revoke" }).click();
      await dialog(other).getByRole("button", { name: "Revoke" }).click();
      const gone = await eventually("the key box's words", () => other.locator("#api-key-error").textContent().catch(() => null), (text) => (text ?? "") !== "");
      assert.match(gone ?? "", /^The server no longer accepts the key this tab was using: it was revoked/);
      assert.equal(await other.evaluate("sessionStorage.getItem('tabula.apiKey')"), null);
      assert.equal(await statusWith(second.body.key), 401);
      // Opened again with the revoked key in sessionStorage (another tab's copy, say): the same words.
      await other.evaluate(`sessionStorage.setItem("tabula.apiKey", ${JSON.stringify(second.body.key)})`);
      await other.reload();
      const again = await eventually("the key box's words on a reload", () => other.locator("#api-key-error").textContent().catch(() => null), (text) => (text ?? "") !== "");
      assert.equal(again, gone);
    } finally {
      await context.close();
    }
  });

  test("a publishable key sees no Keys entry, and at #/keys the API's 403 in its words", async () => {
    const context = await newContext({ apiKey: PUBLISHABLE });
    try {
      const other = await context.newPage();
      await other.goto(`${server.url}/`);
      await other.locator(".session .badge", { hasText: "publishable key" }).waitFor();
      await other.locator('nav a[data-entity="Task"]').waitFor();
      assert.equal(await other.locator('nav a[data-page="keys"]').count(), 0);
      assert.ok(!(await other.locator("nav.entities").innerText()).includes("Keys"));
      await other.goto(`${server.url}/#/keys`);
      const refused = await server.call("GET", "/api/keys", { apiKey: PUBLISHABLE });
      assert.equal(refused.status, 403);
      await eventually("the 403", () => keysStatus(other), (text) => text === refused.body.error.message);
      assert.equal(await other.getByRole("button", { name: "Create key" }).isVisible(), false);
    } finally {
      await context.close();
    }
  });

  test("a screenshot of the Keys page (docs/ui-keys-1440.png with TABULA_SCREENSHOTS=1)", async () => {
    mkdirSync(DOCS, { recursive: true });
    for (const name of ["mobile app", "ci deploy"]) assert.equal((await server.call("POST", "/api/keys", { apiKey: secretKey, body: { kind: name === "ci deploy" ? "secret" : "publishable", name } })).status, 201);
    const mobile = (await listKeys()).find((key) => key.name === "mobile app")!;
    assert.equal((await server.call("POST", `/api/keys/${mobile.id}/roll`, { apiKey: secretKey, body: {} })).status, 201);
    const context = await newContext({ apiKey: secretKey });
    try {
      const shot = await context.newPage();
      await shot.goto(`${server.url}/#/keys`);
      await shot.locator(".keys tbody tr[data-key-id]").first().waitFor();
      await createInPage(shot, "publishable", "marketing site");
      await shot.locator(".keys tbody tr[data-key-id]", { hasText: "marketing site" }).waitFor();
      await shot.screenshot({ path: `${DOCS}ui-keys-1440.png` });
    } finally {
      await context.close();
    }
  });

  test("nothing on the page broke the Content-Security-Policy, and nothing threw", () => {
    assert.deepEqual(problems, []);
  });
});
