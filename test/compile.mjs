// Compiles src/ and test/ to JavaScript once, into .test-build/, so that `npm test` runs each test
// file with plain node instead of loading tsx in every one of its 130 child processes (about 0.7 s
// of CPU each: node 20 starts a loader's hooks on a thread of their own). The JavaScript is what
// tsx would run: esbuild's transform with this tsconfig. Three things change on the way:
// - import specifiers ending in .ts name the compiled .js beside them;
// - import.meta.url, dirname and filename are the source file's, so that every path a file builds
//   from its own location (the repo's root, examples/, dist/, a .ts a child imports with tsx)
//   still names what it named;
// - files that are not TypeScript (page.html, pg-cluster.mjs) are copied as they are.
//
//   node test/compile.mjs   (test/run.mjs runs it first)

import { transform } from "esbuild";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const BUILD_DIR = join(ROOT, ".test-build");
const FOLDERS = ["src", "test"];
const TSCONFIG = JSON.parse(readFileSync(join(ROOT, "tsconfig.json"), "utf8"));

/** A relative specifier ending in .ts, as an import names it; `new URL("….ts", …)` is left alone. */
const TS_SPECIFIER = /(?<!new URL\()(["'])(\.{1,2}\/[^"'\n]*?)\.ts\1/g;

export async function compileTests() {
  rmSync(BUILD_DIR, { recursive: true, force: true });
  const files = FOLDERS.flatMap((folder) => walk(join(ROOT, folder)));
  await Promise.all(
    files.map(async (source) => {
      const target = join(BUILD_DIR, relative(ROOT, source));
      mkdirSync(dirname(target), { recursive: true });
      if (!source.endsWith(".ts") || source.endsWith(".d.ts")) return copyFileSync(source, target);
      const { code } = await transform(readFileSync(source, "utf8"), {
        loader: "ts",
        format: "esm",
        target: "node20",
        sourcefile: source,
        sourcemap: "inline",
        tsconfigRaw: { compilerOptions: TSCONFIG.compilerOptions },
      });
      const url = pathToFileURL(source).href;
      const js = code
        .replace(TS_SPECIFIER, (_, quote, path) => `${quote}${path}.js${quote}`)
        .replaceAll("import.meta.url", JSON.stringify(url))
        .replaceAll("import.meta.dirname", JSON.stringify(dirname(source)))
        .replaceAll("import.meta.filename", JSON.stringify(source));
      writeFileSync(target.replace(/\.ts$/, ".js"), js);
    }),
  );
  return files.length;
}

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const startedAt = Date.now();
  const count = await compileTests();
  console.log(`compiled ${count} files into ${relative(process.cwd(), BUILD_DIR)}/ in ${Date.now() - startedAt} ms`);
}
