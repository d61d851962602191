// Bundles tabula into dist/: the command (dist/tabula.mjs, runs with plain node) and the embedding
// API (dist/tabula-api.mjs) as two entry points over shared chunks, so that the code ships once;
// the API's public types in dist/tabula-api.d.ts. `npm pack` runs it first (prepack).
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tsImport } from "tsx/esm/api";

rmSync("dist", { recursive: true, force: true });
// The data browser's page (docs/data-browser.md), built once by src/ui/build-page.ts (through tsx,
// as it is TypeScript) and handed to the bundle as a constant: it never builds it, nor loads esbuild.
const { buildUiPage } = await tsImport("./src/ui/build-page.ts", import.meta.url);
const uiPage = await buildUiPage();
// The webhook sending thread's program (src/webhooks/send-thread.ts), one script handed to the bundle
// as a constant, as node:worker_threads runs a string: the bundle stays one command file.
const { buildSendWorker } = await tsImport("./src/webhooks/build-send-worker.ts", import.meta.url);
const sendWorker = await buildSendWorker();
await build({
  entryPoints: { tabula: "src/cli.ts", "tabula-api": "src/api.ts" },
  outdir: "dist",
  outExtension: { ".js": ".mjs" },
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  logLevel: "warning",
  // postgres is the one package a user may add (docs/postgresql.md): imported at run time, only by that store.
  external: ["postgres"],
  define: { __TABULA_UI_PAGE__: JSON.stringify(uiPage), __TABULA_SEND_WORKER__: JSON.stringify(sendWorker) },
  // Whitespace and syntax only: names stay, so that a stack trace still reads as the source.
  minifyWhitespace: true,
  minifySyntax: true,
});
// The command's shebang, on its file alone (esbuild's banner would put it on every chunk).
writeFileSync("dist/tabula.mjs", `#!/usr/bin/env node\n${readFileSync("dist/tabula.mjs", "utf8")}`);
// The public types: src/api.ts declares every type it exports without importing any other module's
// (a check in src/api.ts keeps the implementation assignable to them), so its declaration file
// stands alone: no internal class, no node type, usable with --strict without @types/node.
execFileSync(process.execPath, [
  "node_modules/typescript/bin/tsc", "src/public-api.ts", "--declaration", "--emitDeclarationOnly", "--outDir", "dist/types",
  "--module", "ESNext", "--moduleResolution", "Bundler", "--target", "ES2022", "--strict", "--typeRoots", "dist/no-types",
], { stdio: "inherit" });
renameSync("dist/types/public-api.d.ts", "dist/tabula-api.d.ts");
rmSync("dist/types", { recursive: true, force: true });
