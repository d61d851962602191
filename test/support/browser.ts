// A real browser for the tests that need one: Debian's chromium (never a downloaded build), driven
// by playwright-core, and a small node:http server that serves the page of an app on its own origin.
// Installing chromium is .ci/run's job; here we only find it, or say why a test cannot run.

import { accessSync, constants } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { delimiter, join } from "node:path";
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

/** Serves `html` at every path, as an app's own server would serve its page. */
export async function startAppServer(html: string): Promise<AppServer> {
  const server = createServer((req, res) => {
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

/** The URLs of the CORS preflights Chromium sent for a page; playwright's own events leave them out. */
export async function recordPreflights(page: Page): Promise<string[]> {
  const urls: string[] = [];
  const session = await page.context().newCDPSession(page);
  session.on("Network.requestWillBeSent", (event) => {
    if (event.initiator.type === "preflight") urls.push(event.request.url);
  });
  await session.send("Network.enable");
  return urls;
}
