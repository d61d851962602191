// Bundles the CLI into dist/tabula.mjs (runs with plain node) and the embedding API into
// dist/tabula-api.mjs, with its types in dist/tabula-api.d.ts.
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";

rmSync("dist", { recursive: true, force: true });
const common = { bundle: true, platform: "node", format: "esm", target: "node20", logLevel: "warning" };
await build({ ...common, entryPoints: ["src/cli.ts"], outfile: "dist/tabula.mjs", banner: { js: "#!/usr/bin/env node" } });
await build({ ...common, entryPoints: ["src/api.ts"], outfile: "dist/tabula-api.mjs" });
// One declaration file for the API, emitted by tsc from src/api.ts and what it exports.
execFileSync(process.execPath, [
  "node_modules/typescript/bin/tsc", "src/api.ts", "--declaration", "--emitDeclarationOnly", "--outFile", "dist/tabula-api.d.ts",
  "--module", "ESNext", "--moduleResolution", "Bundler", "--target", "ES2022", "--allowImportingTsExtensions", "--strict",
  "--skipLibCheck", "--types", "node",
], { stdio: "inherit" });
