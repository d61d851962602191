// Bundles the CLI into dist/tabula.mjs (runs with plain node) and the embedding API into
// dist/tabula-api.mjs, with its types in dist/tabula-api.d.ts; both with the data browser's page.
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { tsImport } from "tsx/esm/api";

rmSync("dist", { recursive: true, force: true });
// The data browser's page (CONTRACT §12), built once by src/ui/build-page.ts (through tsx, as it
// is TypeScript) and handed to both bundles as a constant: they never build it, nor load esbuild.
const { buildUiPage } = await tsImport("./src/ui/build-page.ts", import.meta.url);
const uiPage = await buildUiPage();
// postgres is the one package a user may add (CONTRACT §10): imported at run time, only by that store.
const common = { bundle: true, platform: "node", format: "esm", target: "node20", logLevel: "warning", external: ["postgres"], define: { __TABULA_UI_PAGE__: JSON.stringify(uiPage) } };
await build({ ...common, entryPoints: ["src/cli.ts"], outfile: "dist/tabula.mjs", banner: { js: "#!/usr/bin/env node" } });
await build({ ...common, entryPoints: ["src/api.ts"], outfile: "dist/tabula-api.mjs" });
// Declarations for the API, one .d.ts per source file under dist/types (tsc's --outFile would wrap
// them in ambient `declare module "api"` blocks, which `import ... from "tabula-server"` cannot
// use), and dist/tabula-api.d.ts re-exporting them. TypeScript resolves the ".ts" specifiers they keep.
execFileSync(process.execPath, [
  "node_modules/typescript/bin/tsc", "src/api.ts", "--declaration", "--emitDeclarationOnly", "--outDir", "dist/types", "--rootDir", "src",
  "--module", "ESNext", "--moduleResolution", "Bundler", "--target", "ES2022", "--allowImportingTsExtensions", "--strict",
  "--skipLibCheck", "--types", "node",
], { stdio: "inherit" });
writeFileSync("dist/tabula-api.d.ts", 'export * from "./types/api.ts";\n');
