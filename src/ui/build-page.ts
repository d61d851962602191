// Builds the data browser's page (docs/data-browser.md): the browser code (browser/) bundled and minified
// by esbuild, then it and page.css inlined into page.html, with the Content-Security-Policy that
// allows exactly those two by hash. build.mjs runs it for the bundle; page.ts runs it from source.

import { build, transform } from "esbuild";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { UiPage } from "./page.ts";

const pathOf = (name: string) => fileURLToPath(new URL(name, import.meta.url));

export async function buildUiPage(): Promise<UiPage> {
  const bundled = await build({
    entryPoints: [pathOf("browser/main.ts")],
    bundle: true,
    format: "iife",
    platform: "browser",
    target: "es2022",
    minify: true,
    legalComments: "none",
    write: false,
    logLevel: "warning",
  });
  // Inside <script>, "</script" would end the element early; "<\/" means the same to JavaScript.
  const script = bundled.outputFiles[0]!.text.trim().replaceAll("</script", "<\\/script");
  const style = (await transform(readFileSync(pathOf("page.css"), "utf8"), { loader: "css", minify: true })).code.trim();
  const html = readFileSync(pathOf("page.html"), "utf8")
    .replace("/*STYLE*/", () => style)
    .replace("/*SCRIPT*/", () => script);
  // Hashes, not 'unsafe-inline': the page runs its own script and style, and nothing injected.
  const csp = [
    "default-src 'none'",
    `script-src '${sha256(script)}'`,
    `style-src '${sha256(style)}'`,
    "connect-src 'self'",
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
  return { html, csp };
}

function sha256(text: string): string {
  return `sha256-${createHash("sha256").update(text, "utf8").digest("base64")}`;
}
