// Uploaded files in the data browser (docs/data-browser.md): a field holding a public file's URL of
// this server (an UploadFile's file_url) shows the file as a link by its name, and a picture small
// beside it, served under the page's own CSP (img-src 'self'); any other text, a URL of another
// host included, stays text.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { describeInChromium, eventually, launchChromium, WAIT_MS } from "../support/browser.ts";
import { SECRET, startTestServer, TASK, type TestServer } from "../support/server.ts";

/** A 1×1 PNG. */
const DOT = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64");

describeInChromium("uploaded files in the data browser", (chromiumPath) => {
  let browser: Browser;
  let server: TestServer;
  let page: Page;
  const problems: string[] = [];

  before(async () => {
    [browser, server] = await Promise.all([launchChromium(chromiumPath), startTestServer({ memory: true, schema: { Task: TASK } })]);
    page = await browser.newPage();
    page.setDefaultTimeout(WAIT_MS);
    page.on("console", (message) => {
      if (/Content Security Policy/i.test(message.text())) problems.push(message.text());
    });
    page.on("pageerror", (error) => problems.push(`uncaught: ${error.message}`));
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  async function upload(name: string, type: string, bytes: Buffer): Promise<string> {
    const answer = await fetch(`${server.url}/api/files?name=${encodeURIComponent(name)}`, { method: "POST", headers: { "X-Api-Key": SECRET, "Content-Type": type }, body: bytes });
    assert.equal(answer.status, 201, await answer.clone().text());
    return ((await answer.json()) as { url: string }).url;
  }

  test("a picture's URL shows the picture and a link; a PDF's a link; another host's URL stays text", async () => {
    const picture = await upload("dot.png", "image/png", DOT);
    const pdf = await upload("report.pdf", "application/pdf", Buffer.from("%PDF-1.4\n%%EOF\n"));
    for (const title of [picture, pdf, "https://elsewhere.example/api/files/0123456789abcdef0123456789abcdef/x.png"]) {
      assert.equal((await server.call("POST", "/api/entities/Task", { body: { title } })).status, 201);
    }
    await page.goto(`${server.url}/_/`);
    await page.getByLabel("API key").fill(SECRET);
    await page.keyboard.press("Enter");
    await eventually("three rows", () => page.locator("tbody tr[data-id]").count(), (count) => count === 3);
    const cells = page.locator('tbody td[data-column="title"]');
    const shown = await cells.evaluateAll((tds) =>
      tds.map((td) => ({ link: td.querySelector("a")?.getAttribute("href") ?? null, text: td.textContent, picture: td.querySelector("img")?.getAttribute("src") ?? null })),
    );
    const byText = (text: string) => shown.find((cell) => cell.text === text);
    assert.deepEqual(byText("dot.png"), { link: picture, text: "dot.png", picture });
    assert.deepEqual(byText("report.pdf"), { link: pdf, text: "report.pdf", picture: null });
    assert.ok(shown.some((cell) => cell.link === null && cell.text?.startsWith("https://elsewhere.example/")), JSON.stringify(shown));
    // The picture loaded (its natural size is the PNG's), under the page's CSP.
    await eventually("the picture loaded", () => page.locator("td img").evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth), (width) => width === 1);
    assert.deepEqual(problems, []);
  });
});
