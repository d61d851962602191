// The app's front end served beside the API (docs/base44-sdk.md, "Run your Base44 app on tabula"):
// its files with their types, hashed assets cached for good and packed, index.html for the app's
// pages, nothing outside its folder and no hidden file; /api/ stays the API and the data browser
// moves to /_/.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { startTestServer, type TestServer } from "../support/server.ts";

const INDEX = '<!doctype html><html><head><script type="module" src="/assets/index-B1f0BiQk.js"></script></head><body><div id="root"></div></body></html>';
/** A script long enough to be worth packing. */
const SCRIPT = `console.log(${JSON.stringify("tabula ".repeat(400))});\n`;

/** A raw GET, the path sent as written (fetch would resolve "/../"). */
function rawGet(url: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/`, { path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("an app served at /", () => {
  let server: TestServer;
  let place: string;
  before(async () => {
    place = mkdtempSync(join(tmpdir(), "tabula-app-"));
    const app = join(place, "dist");
    mkdirSync(join(app, "assets"), { recursive: true });
    writeFileSync(join(app, "index.html"), INDEX);
    writeFileSync(join(app, "assets", "index-B1f0BiQk.js"), SCRIPT);
    writeFileSync(join(app, "favicon.svg"), "<svg xmlns='http://www.w3.org/2000/svg'/>");
    writeFileSync(join(app, ".env"), "SECRET=hidden-value");
    writeFileSync(join(place, "outside.txt"), "outside-the-app");
    symlinkSync(join(place, "outside.txt"), join(app, "link.txt"));
    server = await startTestServer({ appDir: app, memory: true });
  });
  after(async () => {
    await server.close();
    rmSync(place, { recursive: true, force: true });
  });

  test("/ is the app's index.html, revalidated on each visit", async () => {
    const answer = await fetch(`${server.url}/`);
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get("content-type"), "text/html; charset=utf-8");
    assert.equal(answer.headers.get("cache-control"), "no-cache");
    assert.equal(await answer.text(), INDEX);
  });

  test("a page of the app (any path a browser navigates to) is index.html", async () => {
    for (const path of ["/tasks", "/tasks/12/edit", "/settings?tab=2"]) {
      const answer = await fetch(`${server.url}${path}`, { headers: { Accept: "text/html,application/xhtml+xml,*/*;q=0.8" } });
      assert.equal(answer.status, 200, path);
      assert.equal(await answer.text(), INDEX, path);
    }
  });

  test("a hashed asset is served with its type, cached for good, and packed when the client accepts it", async () => {
    const plain = await rawGet(server.url, "/assets/index-B1f0BiQk.js");
    assert.equal(plain.status, 200);
    assert.equal(plain.headers["content-type"], "text/javascript; charset=utf-8");
    assert.equal(plain.headers["cache-control"], "public, max-age=31536000, immutable");
    assert.equal(plain.headers["x-content-type-options"], "nosniff");
    assert.equal(plain.body.toString(), SCRIPT);
    assert.equal(plain.headers["content-length"], String(Buffer.byteLength(SCRIPT)));
    const br = await rawGet(server.url, "/assets/index-B1f0BiQk.js", { "Accept-Encoding": "gzip, br" });
    assert.equal(br.headers["content-encoding"], "br");
    assert.ok(br.body.length < Buffer.byteLength(SCRIPT) / 4, `${br.body.length} bytes packed`);
    assert.equal(brotliDecompressSync(br.body).toString(), SCRIPT);
    const gz = await rawGet(server.url, "/assets/index-B1f0BiQk.js", { "Accept-Encoding": "gzip" });
    assert.equal(gz.headers["content-encoding"], "gzip");
    assert.equal(gunzipSync(gz.body).toString(), SCRIPT);
    assert.match(String(gz.headers.vary), /Accept-Encoding/);
  });

  test("an unchanged file is 304 to a client holding its ETag; HEAD has the headers alone", async () => {
    const first = await fetch(`${server.url}/favicon.svg`);
    const etag = first.headers.get("etag")!;
    assert.match(etag, /^W\/"/);
    assert.equal(first.headers.get("content-type"), "image/svg+xml");
    const again = await fetch(`${server.url}/favicon.svg`, { headers: { "If-None-Match": etag } });
    assert.equal(again.status, 304);
    const head = await rawGet(server.url, "/favicon.svg", {});
    assert.equal(head.status, 200);
    const onlyHead = await new Promise<{ status: number; length: string | undefined; bytes: number }>((resolve, reject) => {
      const req = request(`${server.url}/favicon.svg`, { method: "HEAD" }, (res) => {
        let bytes = 0;
        res.on("data", (chunk: Buffer) => (bytes += chunk.length));
        res.on("end", () => resolve({ status: res.statusCode!, length: res.headers["content-length"], bytes }));
      });
      req.on("error", reject);
      req.end();
    });
    assert.deepEqual(onlyHead, { status: 200, length: String(head.body.length), bytes: 0 });
  });

  test("a missing script or picture is a JSON 404, not the page", async () => {
    const answer = await fetch(`${server.url}/assets/missing-12345678.js`, { headers: { Accept: "*/*" } });
    assert.equal(answer.status, 404);
    assert.equal(((await answer.json()) as { error: { code: string } }).error.code, "not_found");
  });

  test("nothing outside the folder, and no hidden file, is ever served", async () => {
    for (const path of ["/../outside.txt", "/%2e%2e/outside.txt", "/assets/..%2f..%2foutside.txt", "/link.txt", "/.env", "/%2eenv"]) {
      const answer = await rawGet(server.url, path, { Accept: "*/*" });
      const text = answer.body.toString();
      assert.ok(!text.includes("outside-the-app") && !text.includes("hidden-value"), `${path}: ${answer.status} ${text.slice(0, 80)}`);
    }
  });

  test("/api/ stays the API: an unknown API path is a JSON 404, even to a browser", async () => {
    const answer = await fetch(`${server.url}/api/nothing-here`, { headers: { Accept: "text/html", "X-Api-Key": "sk_test_secret_key" } });
    assert.equal(answer.status, 404);
    assert.equal(((await answer.json()) as { error: { code: string } }).error.code, "not_found");
    const list = await server.call("GET", "/api/entities/Task");
    assert.equal(list.status, 200);
  });

  test("the data browser is at /_/, not at /", async () => {
    const browser = await fetch(`${server.url}/_/`);
    assert.equal(browser.status, 200);
    const page = await browser.text();
    assert.match(page, /tabula/);
    assert.notEqual(page, INDEX);
    assert.ok(browser.headers.get("content-security-policy"));
  });

  test("a write to a page of the app is 404, as to any unknown path", async () => {
    const answer = await fetch(`${server.url}/tasks`, { method: "POST", body: "{}", headers: { "Content-Type": "application/json" } });
    assert.equal(answer.status, 404);
  });
});

describe("without an app", () => {
  let server: TestServer;
  before(async () => (server = await startTestServer({ memory: true })));
  after(() => server.close());

  test("the data browser is at / and at /_/ alike; another path is a 404", async () => {
    const [root, under] = await Promise.all([fetch(`${server.url}/`), fetch(`${server.url}/_/`)]);
    assert.equal(root.status, 200);
    assert.equal(under.status, 200);
    assert.equal(await root.text(), await under.text());
    const other = await fetch(`${server.url}/tasks`, { headers: { Accept: "text/html" } });
    assert.equal(other.status, 404);
  });
});

test("an app folder without index.html stops the start, saying what to build", async () => {
  const place = mkdtempSync(join(tmpdir(), "tabula-app-"));
  try {
    await assert.rejects(startTestServer({ appDir: place, memory: true }), /holds no index\.html/);
    await assert.rejects(startTestServer({ appDir: join(place, "missing"), memory: true }), /does not exist: build the app first/);
  } finally {
    rmSync(place, { recursive: true, force: true });
  }
});
