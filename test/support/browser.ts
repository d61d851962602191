// A real browser for the tests that need one: Debian's chromium (never a downloaded build), driven
// by playwright-core, and a small node:http server that serves the page of an app on its own origin,
// with the scripts it loads (bundled here, in memory, as an app's build would bundle them).
// Installing chromium is .ci/run's job; here we only find it, or say why a test cannot run.

import { build } from "esbuild";
import assert from "node:assert/strict";
import { accessSync, constants } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";

const CHROMIUM_NAMES = ["chromium", "chromium-browser"];
const LAUNCH_TIMEOUT_MS = 30_000;

/** CHROMIUM_PATH, or the first chromium on PATH; undefined when there is none. */
export function findChromium(): string | undefined {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    for (const name of CHROMIUM_NAMES) {
      const candidate = join(dir, name);
      try {
        accessSync(candidate, constants.X_OK);
        return candidate;
      } catch {
        // Not here: look in the next folder of PATH.
      }
    }
  }
  return undefined;
}

/** Whether a missing browser must fail the run rather than skip: on CI, or when asked to. */
export function isBrowserRequired(): boolean {
  const ci = process.env.CI ?? "";
  return process.env.TABULA_REQUIRE_BROWSER === "1" || (ci !== "" && ci !== "0" && ci !== "false");
}

export const MISSING_CHROMIUM =
  "no chromium binary on PATH (nor CHROMIUM_PATH). Install Debian's: apt-get install -y chromium " +
  "(bash .ci/run does it), or point CHROMIUM_PATH at one.";

/**
 * `describe(name)` given chromium's path. Without chromium: one test that fails when a browser is
 * required (isBrowserRequired), else one skipped test saying how to install it.
 */
export function describeInChromium(name: string, body: (executablePath: string) => void): void {
  const executablePath = findChromium();
  if (executablePath !== undefined) {
    describe(name, () => body(executablePath));
  } else if (isBrowserRequired()) {
    test(`${name}: needs Debian's chromium (required: CI or TABULA_REQUIRE_BROWSER=1)`, () => assert.fail(MISSING_CHROMIUM));
  } else {
    test(name, { skip: `${MISSING_CHROMIUM} Set TABULA_REQUIRE_BROWSER=1 to fail instead of skipping.` }, () => {});
  }
}

export function launchChromium(executablePath: string): Promise<Browser> {
  // Chromium refuses its sandbox as root; playwright-core already turns off background networking,
  // which this machine's closed network would refuse.
  return chromium.launch({ executablePath, headless: true, chromiumSandbox: false, timeout: LAUNCH_TIMEOUT_MS });
}

export interface AppServer {
  /** The page's origin, such as http://127.0.0.1:41234. */
  readonly origin: string;
  close(): Promise<void>;
}

/** Serves each of `scripts` at its path and `html` at every other, as an app's own server would. */
export async function startAppServer(html: string, scripts: Readonly<Record<string, string>> = {}): Promise<AppServer> {
  const server = createServer((req, res) => {
    const script = Object.hasOwn(scripts, req.url ?? "") ? scripts[req.url!] : undefined;
    if (script !== undefined) {
      res.writeHead(200, { "Content-Type": "text/javascript; charset=utf-8" });
      res.end(script);
      return;
    }
    res.writeHead(req.url === "/favicon.ico" ? 404 : 200, { "Content-Type": "text/html; charset=utf-8" });
    res.end(req.url === "/favicon.ico" ? "" : html);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));

/**
 * One classic script for a page, built in memory from `source` (a module that may import packages
 * of node_modules) the way an app's bundler builds it for browsers. Nothing is written to disk.
 */
export async function bundleForPage(source: string): Promise<string> {
  const result = await build({
    stdin: { contents: source, resolveDir: REPO_ROOT, sourcefile: "page-entry.js", loader: "js" },
    bundle: true,
    format: "iife",
    platform: "browser",
    write: false,
    logLevel: "silent",
    // What an app's production build sets; @base44/sdk, for one, logs every error it throws otherwise.
    define: { "process.env.NODE_ENV": '"production"' },
  });
  return result.outputFiles[0]!.text;
}

/** A CORS preflight Chromium sent, and what the server allowed in its answer. */
export interface Preflight {
  readonly url: string;
  /** Access-Control-Request-Headers as Chromium sent it: lower-case names, comma-separated. */
  readonly requestedHeaders: string;
  /** The answer's status and Access-Control-Allow-Headers; absent until it arrives. */
  status?: number;
  allowedHeaders?: string;
}

/** The CORS preflights Chromium sends for a page, in order; playwright's own events leave them out. */
export async function recordPreflights(page: Page): Promise<Preflight[]> {
  const preflights: Preflight[] = [];
  const byRequestId = new Map<string, Preflight>();
  const session = await page.context().newCDPSession(page);
  session.on("Network.requestWillBeSent", (event) => {
    if (event.initiator.type !== "preflight") return;
    const preflight: Preflight = { url: event.request.url, requestedHeaders: headerIn(event.request.headers, "access-control-request-headers") ?? "" };
    preflights.push(preflight);
    byRequestId.set(event.requestId, preflight);
  });
  session.on("Network.responseReceived", (event) => {
    const preflight = byRequestId.get(event.requestId);
    if (preflight === undefined) return;
    preflight.status = event.response.status;
    preflight.allowedHeaders = headerIn(event.response.headers, "access-control-allow-headers");
  });
  await session.send("Network.enable");
  return preflights;
}

/** A header of a CDP event, whose names keep the case they were sent in. */
function headerIn(headers: Record<string, string>, name: string): string | undefined {
  return Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
}

/** Long enough for a loaded 2-core machine; a step that passes takes a fraction of it. */
export const WAIT_MS = 10_000;

/** Polls `read` until `isDone` holds, or fails naming `what` and the last value read. */
export async function eventually<T>(what: string, read: () => Promise<T>, isDone: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  let value = await read();
  while (!isDone(value)) {
    if (Date.now() > deadline) assert.fail(`${what}: still ${JSON.stringify(value)} after ${WAIT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 40));
    value = await read();
  }
  return value;
}
