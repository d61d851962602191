// `npm test`: every test file once on the memory store, then the HTTP suites again on each other
// store (issue 18, CONTRACT §10: on every store all of SPEC.md and the contract hold, through the
// same acceptance tests). test/support/server.ts reads TABULA_TEST_STORE and says which tests follow it.
//
//   node test/run.mjs [--store NAME] [FILE...]
// --store (or TABULA_TEST_STORE) runs that store's run alone; FILEs narrow every run to those files.

import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TSX_CLI = fileURLToPath(import.meta.resolve("tsx/cli"));
/** The suites that test tabula through HTTP, whatever holds the records. */
const STORE_SUITES = ["test/http", "test/sdk"];

// One folder deep, as the shell's test/*/*.test.ts was.
const ALL_FILES = readdirSync(join(ROOT, "test"))
  .filter((folder) => statSync(join(ROOT, "test", folder)).isDirectory())
  .flatMap((folder) => readdirSync(join(ROOT, "test", folder)).map((name) => `test/${folder}/${name}`))
  .filter((file) => file.endsWith(".test.ts"))
  .sort();
const STORE_FILES = ALL_FILES.filter((file) => STORE_SUITES.some((suite) => file.startsWith(`${suite}/`)));

/** A store and the files run on it. A new store (PostgreSQL) is one more entry here and in test/support/server.ts. */
const RUNS = [
  { store: "memory", files: ALL_FILES, what: "every test file" },
  { store: "file", files: STORE_FILES, what: `the HTTP suites (${STORE_SUITES.join(", ")})` },
];

const { values, positionals } = parseArgs({ options: { store: { type: "string" } }, allowPositionals: true });
const onlyStore = values.store ?? (process.env.TABULA_TEST_STORE || undefined);
if (onlyStore !== undefined && !RUNS.some((run) => run.store === onlyStore)) {
  console.error(`test/run.mjs: no store named ${onlyStore}; use one of ${RUNS.map((run) => run.store).join(", ")}`);
  process.exit(2);
}
const wanted = positionals.length > 0 ? new Set(positionals.map((file) => relative(ROOT, join(process.cwd(), file)))) : null;

const outcomes = [];
for (const run of RUNS) {
  if (onlyStore !== undefined && run.store !== onlyStore) continue;
  const files = wanted ? run.files.filter((file) => wanted.has(file)) : run.files;
  if (files.length === 0) continue;
  const title = `${run.store} store, ${wanted ? "the files named" : run.what}`;
  console.log(`\n# ==== ${title} (TABULA_TEST_STORE=${run.store}) ====\n`);
  const startedAt = Date.now();
  const child = spawnSync(process.execPath, [TSX_CLI, "--test", "--test-concurrency=2", ...files], {
    cwd: ROOT,
    stdio: "inherit",
    env: { ...process.env, TABULA_TEST_STORE: run.store },
  });
  const seconds = ((Date.now() - startedAt) / 1000).toFixed(1);
  const passed = child.status === 0;
  outcomes.push(`# ${passed ? "passed" : "FAILED"}: ${title}, ${files.length} files in ${seconds} s`);
  console.log(`\n# ==== ${run.store} store ${passed ? "passed" : "FAILED"} ====`);
}

if (outcomes.length === 0) {
  console.error("test/run.mjs: no test file matched");
  process.exit(2);
}
console.log(`\n${outcomes.join("\n")}`);
process.exit(outcomes.every((line) => line.startsWith("# passed")) ? 0 : 1);
