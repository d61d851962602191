// Bundles tabula into dist/: tabula.mjs is the whole program in one file (the command, the embedding
// API, the data browser's page, the webhook sending thread), so that it runs copied alone anywhere
// with node; tabula-api.mjs and tabula-api.cjs hand its API to import and require(), with the public
// types in tabula-api.d.ts and .d.cts. `npm pack` runs it first (prepack).
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { renameSync, rmSync, writeFileSync } from "node:fs";
import { tsImport } from "tsx/esm/api";

rmSync("dist", { recursive: true, force: true });
// The data browser's page (docs/data-browser.md), built once by src/ui/build-page.ts (through tsx,
// as it is TypeScript) and handed to the bundle as a constant: it never builds it, nor loads esbuild.
const { buildUiPage } = await tsImport("./src/ui/build-page.ts", import.meta.url);
const uiPage = await buildUiPage();
// The entry point. Without code splitting, esbuild turns each import() of a bundled module into a
// function that runs the module on its first call, in this same file: serving never runs the
// commands' code, a command never runs the server's unless it serves, and the sending thread
// (started on this file by send-thread.ts) runs send-worker.ts and what it imports, nothing else.
const ENTRY = `
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { isMainThread } from "node:worker_threads";
import { isSendThread } from "./webhooks/send-thread.ts";
export { PortInUseError } from "./http/listen.ts";

export async function startServer(options) {
  return (await import("./api.ts")).startServer(options);
}

/** bin/tabula.mjs calls it; cli.ts runs the command line as it loads, once. */
export function runCommandLine() {
  return import("./cli.ts");
}

/** node dist/tabula.mjs: this file is the program node was asked to run (not imported by bin/ or by the API). */
function isRunAsProgram() {
  if (!isMainThread || process.argv[1] === undefined) return false;
  try {
    return realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false; // argv[1] names no file (node - < tabula.mjs): then the program is not this file
  }
}

if (isSendThread()) void import("./webhooks/send-worker.ts");
else if (isRunAsProgram()) void runCommandLine();
`;
await build({
  stdin: { contents: ENTRY, resolveDir: "src", sourcefile: "dist-entry.ts", loader: "ts" },
  outfile: "dist/tabula.mjs",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  logLevel: "warning",
  banner: { js: "#!/usr/bin/env node" },
  // postgres is the one package a user may add (docs/postgresql.md): imported at run time, only by that store.
  external: ["postgres"],
  define: { __TABULA_UI_PAGE__: JSON.stringify(uiPage), __TABULA_IS_BUNDLED__: "true" },
  // Minified, names too: one file holds all the code the package ships (at most 350 kB packed, the
  // package test checks it), and keepNames would cost start-up about a tenth more. The source map
  // beside it (not packed: package.json's files) makes a stack trace read as the source again,
  // under node --enable-source-maps or for a trace sent from the same version.
  minify: true,
  sourcemap: "linked",
  sourcesContent: false,
});
writeFileSync("dist/tabula-api.mjs", `export { PortInUseError, startServer } from "./tabula.mjs";\n`);
// require("tabula-server") on every Node 20: require() loads no ES module before Node 20.19, so the
// module is imported on the first call of startServer (async anyway). What it rejects with is the
// ES module's PortInUseError, which this one's instanceof recognises too.
writeFileSync("dist/tabula-api.cjs", `"use strict";
let api;
const load = async () => (api ??= await import("./tabula-api.mjs"));
exports.startServer = async (options) => (await load()).startServer(options);
exports.PortInUseError = class PortInUseError extends Error {
  constructor(port, host) {
    super(\`Port \${port} on \${host} is in use; give another port, or port 0 for a free one.\`);
    Object.assign(this, { name: "PortInUseError", code: "EADDRINUSE", port, host });
  }
  static [Symbol.hasInstance](value) {
    return Function.prototype[Symbol.hasInstance].call(this, value) || (api !== undefined && value instanceof api.PortInUseError);
  }
};
`);
// The public types: src/api.ts declares every type it exports without importing any other module's
// (a check in src/api.ts keeps the implementation assignable to them), so its declaration file
// stands alone: no internal class, no node type, usable with --strict without @types/node. It is
// the .d.cts, which types require(); the .d.ts, for import (TypeScript reads a .d.ts here as an ES
// module's), takes them from it, as an ES module may import a CommonJS one: one text, shipped once.
execFileSync(process.execPath, [
  "node_modules/typescript/bin/tsc", "src/public-api.ts", "--declaration", "--emitDeclarationOnly", "--outDir", "dist/types",
  "--module", "ESNext", "--moduleResolution", "Bundler", "--target", "ES2022", "--strict", "--typeRoots", "dist/no-types",
], { stdio: "inherit" });
renameSync("dist/types/public-api.d.ts", "dist/tabula-api.d.cts");
writeFileSync("dist/tabula-api.d.ts", `export * from "./tabula-api.cjs";\n`);
rmSync("dist/types", { recursive: true, force: true });
