// The curl sessions of docs/rules.md's examples, run as written with bash against the built CLI:
// the entity files are the page's own, the people are made by the page's `users create` commands,
// the server starts with the page's flags (and a port, keys and log of the test's), and each curl's
// status is checked: any 2xx unless its comment announces one (`# → 403`), as
// test/docs/examples.test.ts checks the ```sh blocks of the other pages. The fences are ```console
// because the docs test serves the example entities alone; this test serves these.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { TEST_STORE } from "../support/server.ts";
import { childEnv, cliInTempFolder, killSpawned, startSpawnedServer } from "../support/spawned-server.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SECRET_KEY = "sk_rules_docs_secret_key";
const PUBLISHABLE_KEY = "pk_rules_docs_publishable_key";
const START_TIMEOUT_MS = 30_000;
const SCRIPT_TIMEOUT_MS = 120_000;
/** `# → 403`, as test/docs/examples.test.ts reads it. */
const ANNOUNCED = /→\s*(\d{3}(?:\s*,\s*\d{3})*)/;

/** The console and json blocks of the section "## The examples", in order. */
function blocksOfTheExamples(): Array<{ language: string; text: string }> {
  const text = readFileSync(join(ROOT, "docs", "rules.md"), "utf8");
  const start = text.indexOf("\n## The examples\n");
  const end = text.indexOf("\n## ", start + 1);
  return [...text.slice(start, end).matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)].map(([, language, body]) => ({ language: language!, text: body! }));
}

/** `line` cut at its comment (a # after a blank, outside quotes): [code, comment]. */
function splitComment(line: string): [string, string] {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === "\\" && quote === '"') i++;
      else if (c === quote) quote = null;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === "\\") i++;
    else if (c === "#" && (i === 0 || /\s/.test(line[i - 1]!))) return [line.slice(0, i), line.slice(i)];
  }
  return [line, ""];
}

/** The status each curl of `text` must answer, in order: announced, or any 2xx. */
function expectationsOf(text: string): string[] {
  const expected: string[] = [];
  for (const line of text.replace(/\\\n/g, " ").split("\n")) {
    const [code, comment] = splitComment(line);
    const curls = code.match(/(?:^|[\s;|&(`])curl(?=\s)/g)?.length ?? 0;
    const announced = ANNOUNCED.exec(comment)?.[1]?.split(/\s*,\s*/) ?? [];
    assert.ok(announced.length === 0 || announced.length === curls, `"${line}" announces ${announced.length} statuses for ${curls} curls`);
    for (let i = 0; i < curls; i++) expected.push(announced[i] ?? "2xx");
  }
  return expected;
}

/** curl writes each call's status to calls (through a file: $(…) runs it in a subshell); npx runs the CLI, or notes the server's flags. */
const PRELUDE = String.raw`
set -eo pipefail
curl() {
  local headers rc=0 status
  headers=$(mktemp)
  command curl -D "$headers" "$@" || rc=$?
  status=$(grep -a '^HTTP/' "$headers" | tail -n 1 | cut -d ' ' -f 2)
  rm -f "$headers"
  echo "${"$"}{status:-000} $rc" >> "$RUN_DIR/calls"
  return "$rc"
}
npx() {
  if [[ $1 == tabula-server && $2 == users ]]; then shift; node "$RUN_CLI" "$@"; return; fi
  if [[ $1 == tabula-server ]]; then shift; echo "$*" > "$RUN_DIR/serve"; return 0; fi
  echo "rules-doc-sessions: npx $1 is not run here" >&2
  return 97
}
`;

let root: string;
let cli: string;
before(async () => {
  ({ root, cli } = await cliInTempFolder("tabula-rules-docs-"));
});
after(() => {
  killSpawned();
  rmSync(root, { recursive: true, force: true });
});

/** Runs `script` with bash in `cwd`; its exit code and output. */
function runBash(script: string, cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn("bash", ["--noprofile", "--norc", "-c", PRELUDE + script], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), SCRIPT_TIMEOUT_MS);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

// One data folder, whatever store the run is for: once is enough.
test("the curl sessions of docs/rules.md's examples answer as the page says", { skip: TEST_STORE !== "memory" && "the sessions run on a data folder, on the memory run" }, async () => {
  const [setup, login, ...rest] = blocksOfTheExamples();
  assert.equal(setup?.language, "console");
  assert.match(setup!.text, /users create/);
  assert.equal(login?.language, "console");
  assert.match(login!.text, /^login\(\)/);

  const cwd = join(root, "session");
  const runDir = join(cwd, ".run");
  mkdirSync(join(cwd, "entities"), { recursive: true });
  mkdirSync(runDir);
  for (const block of rest.filter((block) => block.language === "json")) {
    const declaration = JSON.parse(block.text);
    writeFileSync(join(cwd, "entities", `${declaration.name}.json`), block.text);
  }
  const env = childEnv({ RUN_DIR: runDir, RUN_CLI: cli });
  writeFileSync(join(runDir, "calls"), "");
  const made = await runBash(setup!.text, cwd, env);
  assert.equal(made.code, 0, made.output);
  assert.match(made.output, /grace@example\.com, role admin/);
  const serveArgs = readFileSync(join(runDir, "serve"), "utf8").trim().split(" ");
  assert.deepEqual(serveArgs, ["--schema", "./entities", "--data", "./data"]);

  const server = await startSpawnedServer(cli, [...serveArgs, "--port", "0", "--secret-key", SECRET_KEY, "--publishable-key", PUBLISHABLE_KEY, "--log", "off"], START_TIMEOUT_MS, { cwd, env: childEnv() });
  try {
    const sessions = rest.filter((block) => block.language === "console");
    assert.equal(sessions.length, 5, "a session per example");
    const script = [login!.text, ...sessions.map((block) => block.text)].join("\n");
    // login is defined once and called three times.
    const expected = ["2xx", "2xx", "2xx", ...sessions.flatMap((block) => expectationsOf(block.text))];
    writeFileSync(join(runDir, "calls"), "");
    const ran = await runBash(script, cwd, { ...env, TABULA: server.url, K: SECRET_KEY, P: PUBLISHABLE_KEY });
    const calls = readFileSync(join(runDir, "calls"), "utf8").trim().split("\n").filter(Boolean);
    const shown = `\n--- output ---\n${ran.output}\n--- calls ---\n${calls.join("\n")}`;
    assert.equal(ran.code, 0, `the sessions exited ${ran.code}${shown}`);
    assert.equal(calls.length, expected.length, `curl ran ${calls.length} times; the text holds ${expected.length}${shown}`);
    const wrong = calls.flatMap((call, i) => {
      const [status, rc] = call.split(" ");
      const wanted = expected[i]!;
      return rc === "0" && (wanted === "2xx" ? /^2\d\d$/.test(status!) : status === wanted) ? [] : [`curl call ${i + 1} answered ${status} (exit ${rc}); the page announces ${wanted}`];
    });
    assert.deepEqual(wrong, [], `${wrong.join("\n")}${shown}`);
  } finally {
    server.child.kill("SIGTERM");
    await server.exited;
  }
});
