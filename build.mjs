// Bundles the CLI into dist/tabula.mjs (runs with plain node) and the embedding API into
// dist/tabula-api.mjs, with its types in dist/tabula-api.d.ts.
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";

rmSync("dist", { recursive: true, force: true });
// postgres is the one package a user may add (CONTRACT §10): imported at run time, only by that store.
const common = { bundle: true, platform: "node", format: "esm", target: "node20", logLevel: "warning", external: ["postgres"] };
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
