// The data browser as users get it (docs/data-browser.md, issue 22): built into dist/tabula.mjs by
// build.mjs and served by the bundle alone, the same page src/ui builds now, within 60 KB; nothing
// of it with --no-ui or ui: false. (Its browser code is type-checked with the DOM's types by
// npm run typecheck: tsc -p src/ui/browser.)

import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { buildUiPage } from "../../src/ui/build-page.ts";
import type { UiPage } from "../../src/ui/page.ts";
import { cliInTempFolder, killSpawned, startSpawnedServer } from "../support/spawned-server.ts";
import { startTestServer } from "../support/server.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const START_TIMEOUT_MS = 10_000;
/** Issue 22: the page adds at most 60 KB to the bundle. */
const MAX_PAGE_BYTES = 60 * 1024;
const KEYS = ["--secret-key", "sk_page_bundle_k", "--publishable-key", "pk_page_bundle_k"];

let root: string;
let cli: string;
let page: UiPage;
before(async () => {
  ({ root, cli } = await cliInTempFolder("tabula-ui-"));
  page = await buildUiPage();
});
after(async () => {
  killSpawned();
  await rm(root, { recursive: true, force: true });
});

async function serve(flags: readonly string[]) {
  return startSpawnedServer(cli, ["--schema", join(ROOT, "examples/entities"), "--memory", "--port", "0", "--log", "off", ...KEYS, ...flags], START_TIMEOUT_MS);
}

test("dist/tabula.mjs serves the page src/ui builds, with its CSP, in at most 60 KB", async () => {
  const server = await serve([]);
  try {
    const got = await fetch(`${server.url}/`);
    assert.equal(got.status, 200);
    assert.equal(got.headers.get("content-security-policy"), page.csp);
    assert.equal(got.headers.get("x-content-type-options"), "nosniff");
    const html = await got.text();
    assert.ok(html === page.html, "dist/tabula.mjs holds another page than src/ui builds: run node build.mjs");
    // Its own address, where an app served at / leaves it (docs/data-browser.md).
    assert.equal(await (await fetch(`${server.url}/_/`)).text(), html);
    const bytes = Buffer.byteLength(page.html) + Buffer.byteLength(page.csp);
    assert.ok(bytes <= MAX_PAGE_BYTES, `the page is ${bytes} bytes, over ${MAX_PAGE_BYTES}`);
    assert.equal((await fetch(`${server.url}/api/entities`, { headers: { "X-Api-Key": "sk_page_bundle_k" } })).status, 200);
  } finally {
    server.child.kill("SIGTERM");
    await server.exited;
  }
});

test("--no-ui serves nothing at / nor /_/: a JSON 404 as for any unknown path, and the API as before", async () => {
  const server = await serve(["--no-ui"]);
  try {
    for (const [method, path] of [["GET", "/"], ["HEAD", "/"], ["GET", "/_/"]]) {
      const got = await fetch(`${server.url}${path}`, { method });
      assert.equal(got.status, 404, `${method} ${path}`);
      assert.equal(got.headers.get("content-type"), "application/json; charset=utf-8");
      assert.equal(got.headers.get("content-security-policy"), null);
      if (method === "GET") assert.equal(((await got.json()) as { error: { code: string } }).error.code, "not_found");
    }
    assert.equal((await fetch(`${server.url}/api/entities`, { headers: { "X-Api-Key": "sk_page_bundle_k" } })).status, 200);
  } finally {
    server.child.kill("SIGTERM");
    await server.exited;
  }
});

test("ui: false (the embedding API's option) serves nothing at / either", async () => {
  const server = await startTestServer({ memory: true, ui: false });
  try {
    for (const path of ["/", "/_/"]) {
      const got = await server.call("GET", path, { apiKey: null });
      assert.equal(got.status, 404, path);
      assert.equal(got.body.error.code, "not_found");
    }
  } finally {
    await server.close();
  }
});
