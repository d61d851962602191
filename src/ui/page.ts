// GET /_/ and / (docs/data-browser.md): the data browser's page as a Reply, with its Content-Security-Policy.
// The bundle has the page built in (build.mjs defines __TABULA_UI_PAGE__); run from source (the
// tests, under tsx) it is built by build-page.ts on the first request. The page holds no data, so
// it needs no key: the page asks for one, and sends it with each API request.

import { openRoute, type Handler } from "../http/context.ts";
import type { Router } from "../http/router.ts";
import { methodNotAllowed } from "../errors.ts";
import type { Reply } from "../http/response.ts";

export interface UiPage {
  readonly html: string;
  readonly csp: string;
}

declare const __TABULA_UI_PAGE__: UiPage | undefined;

/** The builder, by a specifier esbuild does not follow: the bundle never loads it (nor esbuild). */
const BUILDER = "./build-page.ts";

let loading: Promise<Reply> | undefined;

export function uiPageReply(method: string): Promise<Reply> {
  if (method !== "GET" && method !== "HEAD") throw methodNotAllowed(method, ["GET", "HEAD"]);
  loading ??= loadUiPage().then(replyOf, (error: unknown) => {
    loading = undefined; // a failed build is tried again on the next request
    throw error;
  });
  return loading;
}

async function loadUiPage(): Promise<UiPage> {
  if (typeof __TABULA_UI_PAGE__ !== "undefined") return __TABULA_UI_PAGE__;
  const { buildUiPage } = (await import(BUILDER)) as typeof import("./build-page.ts");
  return buildUiPage();
}

function replyOf(page: UiPage): Reply {
  const headers = {
    "Content-Type": "text/html; charset=utf-8",
    "Content-Security-Policy": page.csp,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    // The page changes only with tabula's version: ask the server each time, a 200 of ~40 KB.
    "Cache-Control": "no-cache",
  };
  return { status: 200, headers, body: page.html };
}

/** GET /_/, and GET / unless an app is served there: the data browser's page; it needs no key (the page asks for one). */
export function addUiRoute(router: Router<Handler>, atRoot: boolean): void {
  const page = openRoute(() => uiPageReply("GET").then((reply) => ({ reply })));
  router.add("GET", "/_", page);
  if (atRoot) router.add("GET", "/", page);
}
