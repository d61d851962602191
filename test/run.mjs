// `npm test`: every test file once on the memory store, then the HTTP suites again on each other
// store (issue 18, docs/postgresql.md: every store answers as docs/ says, through the same
// acceptance tests). test/support/server.ts reads TABULA_TEST_STORE and says which tests follow it.
// One throwaway PostgreSQL cluster serves every run (TABULA_TEST_PG_URL); each test server takes a
// schema of its own in it.
//
//   node test/run.mjs [--store NAME] [FILE...]
// --store (or TABULA_TEST_STORE) runs that store's run alone; FILEs narrow every run to those files.
// Without PostgreSQL the postgres run is skipped, or fails when TABULA_REQUIRE_POSTGRES=1 (.ci/run).

import { execFileSync, spawn } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { constants } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { BUILD_DIR, compileTests } from "./compile.mjs";
import { findPostgresBin, MISSING_POSTGRES, startCluster } from "./support/pg-cluster.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
/**
 * A run in which no test has reported for this long has a hung file (its tests may all be done
 * and its process not ending: a server, a pool or a timer left open): it is stopped and fails,
 * naming the files still running, rather than holding CI until its own time runs out.
 */
const STALL_MS = Number(process.env.TABULA_TEST_STALL_SECONDS ?? 300) * 1000;

/** The suites that test tabula through HTTP, whatever holds the records. */
const STORE_SUITES = ["test/http", "test/sdk", "test/rules"];

// One folder deep, as the shell's test/*/*.test.ts was.
const ALL_FILES = readdirSync(join(ROOT, "test"))
  .filter((folder) => statSync(join(ROOT, "test", folder)).isDirectory())
  .flatMap((folder) => readdirSync(join(ROOT, "test", folder)).map((name) => `test/${folder}/${name}`))
  .filter((file) => file.endsWith(".test.ts"))
  .sort();
const STORE_FILES = ALL_FILES.filter((file) => STORE_SUITES.some((suite) => file.startsWith(`${suite}/`)));

/** A store and the files run on it. A new store is one more entry here and in test/support/server.ts. */
const RUNS = [
  { store: "memory", files: ALL_FILES, what: "every test file" },
  { store: "file", files: STORE_FILES, what: `the HTTP suites (${STORE_SUITES.join(", ")})` },
  { store: "postgres", files: STORE_FILES, what: `the HTTP suites (${STORE_SUITES.join(", ")})`, needsPostgres: true },
];

const { values, positionals } = parseArgs({ options: { store: { type: "string" } }, allowPositionals: true });
const onlyStore = values.store ?? (process.env.TABULA_TEST_STORE || undefined);
if (onlyStore !== undefined && !RUNS.some((run) => run.store === onlyStore)) {
  console.error(`test/run.mjs: no store named ${onlyStore}; use one of ${RUNS.map((run) => run.store).join(", ")}`);
  process.exit(2);
}
const wanted = positionals.length > 0 ? new Set(positionals.map((file) => relative(ROOT, join(process.cwd(), file)))) : null;
const runs = RUNS.filter((run) => onlyStore === undefined || run.store === onlyStore)
  .map((run) => ({ ...run, files: wanted ? run.files.filter((file) => wanted.has(file)) : run.files }))
  .filter((run) => run.files.length > 0);
if (runs.length === 0) {
  console.error("test/run.mjs: no test file matched");
  process.exit(2);
}

/** The test run in progress, told to stop when this process is. */
let child = null;
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    if (child) stopGroup(child, signal);
    // Exiting stops the cluster: pg-cluster.mjs listens for 'exit'.
    process.exit(128 + constants.signals[signal]);
  });
}

// Each test file runs as plain JavaScript compiled once (compile.mjs), not through tsx per file.
const compileStartedAt = Date.now();
const compiled = await compileTests();
console.log(`# compiled ${compiled} files of src/ and test/ in ${Date.now() - compileStartedAt} ms`);
const postgres = await providePostgres();
const outcomes = [];
for (const run of runs) {
  const title = `${run.store} store, ${wanted ? "the files named" : run.what}`;
  if (run.needsPostgres && postgres.url === null) {
    outcomes.push(`# SKIPPED: ${title} (${postgres.skipReason})`);
    console.log(`\n# ==== SKIPPED: ${run.store} store: ${postgres.skipReason} ====`);
    continue;
  }
  console.log(`\n# ==== ${title} (TABULA_TEST_STORE=${run.store}) ====\n`);
  const startedAt = Date.now();
  const passed = await runTests(run.files, { TABULA_TEST_STORE: run.store });
  const seconds = ((Date.now() - startedAt) / 1000).toFixed(1);
  outcomes.push(`# ${passed ? "passed" : "FAILED"}: ${title}, ${run.files.length} files in ${seconds} s`);
  console.log(`\n# ==== ${run.store} store ${passed ? "passed" : "FAILED"} ====`);
}
postgres.stop();

console.log(`\n${outcomes.join("\n")}`);
process.exit(outcomes.some((line) => line.startsWith("# FAILED")) ? 1 : 0);

/**
 * { url, skipReason, stop }: TABULA_TEST_PG_URL when given (an existing database: each test server
 * takes a schema of its own), else a cluster of our own. Without one, url is null, or this exits 1
 * when TABULA_REQUIRE_POSTGRES=1.
 */
async function providePostgres() {
  const given = process.env.TABULA_TEST_PG_URL;
  if (given) {
    console.log("# PostgreSQL: the database TABULA_TEST_PG_URL names");
    return { url: given, skipReason: null, stop: () => {} };
  }
  const isRequired = process.env.TABULA_REQUIRE_POSTGRES === "1";
  let problem = MISSING_POSTGRES;
  if (findPostgresBin() !== null) {
    const startedAt = Date.now();
    try {
      const cluster = await startCluster();
      console.log(`# PostgreSQL: a throwaway cluster at ${cluster.url}, started in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
      return { url: cluster.url, skipReason: null, stop: cluster.stop };
    } catch (error) {
      problem = `the PostgreSQL cluster did not start: ${error.message}`;
    }
  }
  if (isRequired) {
    console.error(`test/run.mjs: TABULA_REQUIRE_POSTGRES=1, but ${problem}`);
    process.exit(1);
  }
  console.log(`\n# !!!! PostgreSQL SKIPPED: ${problem}\n# !!!! The postgres run and the tests that need PostgreSQL are skipped. Set TABULA_REQUIRE_POSTGRES=1 to fail instead.\n`);
  return { url: null, skipReason: "no PostgreSQL", stop: () => {} };
}

/** Runs files in one child; resolves to whether every test passed. */
function runTests(files, env) {
  const pgEnv = postgres.url === null ? {} : { TABULA_TEST_PG_URL: postgres.url };
  return new Promise((resolve) => {
    const compiledFiles = files.map((file) => join(relative(ROOT, BUILD_DIR), file.replace(/\.ts$/, ".js")));
    // Its own process group, so that a hung run is stopped with every test file it started.
    const reporter = process.stdout.isTTY ? ["--test-reporter=spec"] : [];
    child = spawn(process.execPath, ["--enable-source-maps", "--test", "--test-concurrency=2", ...reporter, ...compiledFiles], {
      cwd: ROOT,
      stdio: ["inherit", "pipe", "inherit"],
      env: { ...process.env, ...pgEnv, ...env },
      detached: true,
    });
    let lastReport = Date.now();
    let isStalled = false;
    child.stdout.on("data", (chunk) => {
      lastReport = Date.now();
      process.stdout.write(chunk);
    });
    const watch = setInterval(() => {
      if (child === null || Date.now() - lastReport < STALL_MS) return;
      isStalled = true;
      console.error(`\n# test/run.mjs: no test has reported for ${STALL_MS / 1000} s, so a test file is hung (a server, pool or timer it left open keeps its process from ending). Still running:\n${runningFiles(child.pid)}\n# Stopping the run.`);
      stopGroup(child, "SIGKILL");
    }, Math.min(10_000, STALL_MS / 2));
    child.once("error", (error) => {
      clearInterval(watch);
      console.error(`test/run.mjs: could not run the tests: ${error.message}`);
      resolve(false);
    });
    child.once("exit", (code) => {
      clearInterval(watch);
      child = null;
      resolve(code === 0 && !isStalled);
    });
  });
}

/** The test files the runner `pid` still has running, one per line. */
function runningFiles(pid) {
  try {
    const lines = execFileSync("ps", ["-o", "args=", "--ppid", String(pid)], { encoding: "utf8" }).split("\n");
    return lines.map((line) => /\S+\.test\.js/.exec(line)?.[0]).filter(Boolean).map((file) => `#   ${relative(ROOT, file)}`).join("\n") || "#   (none found)";
  } catch {
    return "#   (ps could not list them)";
  }
}

/** Signals the runner and every test file it started. */
function stopGroup(runner, signal) {
  try {
    process.kill(-runner.pid, signal);
  } catch {
    runner.kill(signal);
  }
}
