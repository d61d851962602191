// The pages the package ships (README.md and docs/, as `npm pack` lists them) are read where npm
// installs them, node_modules/tabula-server/: each picture and each link to another file names a
// file the package holds (issue 58: docs/data-browser.md showed pictures left in the repository).
// Pages left out (docs/benchmarks.md, docs/architecture.md) are linked by their address instead.

import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const NPM = process.platform === "win32" ? "npm.cmd" : "npm";
const hasNpm = spawnSync(NPM, ["--version"], { encoding: "utf8" }).status === 0;

/** Every file `npm pack` would put in the tarball, by its path in the package. */
function shippedFiles(): Set<string> {
  const listed = execFileSync(NPM, ["pack", "--dry-run", "--json", "--ignore-scripts", "--loglevel=error"], { cwd: ROOT, encoding: "utf8" });
  return new Set((JSON.parse(listed) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((file) => file.path));
}

/** The targets a Markdown page refers to: links and pictures, Markdown's and HTML's. */
function referencesOf(text: string): string[] {
  const outsideCode = text.replace(/^```[^]*?^```/gm, "").replace(/`[^`\n]*`/g, "");
  const markdown = [...outsideCode.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1]!);
  const html = [...outsideCode.matchAll(/<(?:img|a|source)\b[^>]*?\b(?:src|href|srcset)\s*=\s*"([^"]+)"/gi)].map((match) => match[1]!);
  return [...markdown, ...html];
}

/** The anchors of a page's headings, as GitHub makes them: lower case, punctuation dropped, spaces as "-", repeats numbered. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, heading] of text.replace(/^```[^]*?^```/gm, "").matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)) {
    const words = heading!.replace(/`/g, "").replace(/\[([^\]]*)\]\([^)]*\)/g, "$1");
    const slug = words.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

test("every page the package ships refers only to files the package holds", { skip: !hasNpm && "npm is not available" }, () => {
  const shipped = shippedFiles();
  const pages = [...shipped].filter((path) => path.endsWith(".md"));
  assert.ok(pages.includes("README.md") && pages.includes("docs/data-browser.md"), `the pages shipped: ${pages.join(", ")}`);
  const missing: string[] = [];
  for (const page of pages) {
    for (const reference of referencesOf(readFileSync(join(ROOT, page), "utf8"))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(reference) || reference.startsWith("#")) continue; // an address, or a place on the page
      const target = normalize(join(dirname(page), decodeURIComponent(reference.split("#")[0]!))).replaceAll("\\", "/");
      const isShippedFolder = reference.endsWith("/") && [...shipped].some((path) => path.startsWith(target));
      if (!shipped.has(target) && !isShippedFolder) missing.push(`${page} refers to ${reference} (${target}), which the package does not hold`);
    }
  }
  assert.deepEqual(missing, []);
});

test("every link to a place on a shipped page names a heading that page has", { skip: !hasNpm && "npm is not available" }, () => {
  const shipped = shippedFiles();
  const pages = [...shipped].filter((path) => path.endsWith(".md"));
  const broken: string[] = [];
  for (const page of pages) {
    for (const reference of referencesOf(readFileSync(join(ROOT, page), "utf8"))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(reference) || !reference.includes("#")) continue;
      const [file, anchor] = reference.split("#") as [string, string];
      const target = file === "" ? page : normalize(join(dirname(page), decodeURIComponent(file))).replaceAll("\\", "/");
      if (!target.endsWith(".md") || !shipped.has(target)) continue;
      if (!anchorsOf(readFileSync(join(ROOT, target), "utf8")).has(decodeURIComponent(anchor))) broken.push(`${page} links to ${reference}: ${target} has no heading "#${anchor}"`);
    }
  }
  assert.deepEqual(broken, []);
});
