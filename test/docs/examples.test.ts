// The docs' shell examples, run as written (issue 40): every ```sh block of README.md and
// docs/*.md, in order within its file, with bash, against the built CLI serving the example
// entities (Task and Note) with the variables the docs define (TABULA, K, P, U). Each curl's
// status is checked: any 2xx unless the command's comment announces one (`# → 412`), so a pasted
// example that answers an error the docs do not announce fails here.
//
// How a block runs: `set -eo pipefail`; the variables earlier blocks of its file set are restored
// first; `curl` is a function that runs curl with `-D` into a file of its own and compares the
// status with the next announcement; `npx tabula-server …` runs the built bundle (the package
// test runs the real npx). Blocks that cannot run here (a server in the foreground, npx init and
// --demo, PostgreSQL) are fenced ```console or ```text instead.

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { cliInTempFolder, killSpawned, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const DOC_FILES = ["README.md", ...readdirSync(join(ROOT, "docs")).filter((name) => name.endsWith(".md")).sort().map((name) => `docs/${name}`)];
const SECRET_KEY = "sk_docs_example_secret_key";
const PUBLISHABLE_KEY = "pk_docs_example_publishable_key";
const START_TIMEOUT_MS = 30_000;
const BLOCK_TIMEOUT_MS = 60_000;
/** Fences a shell example may use when it is not run here; any other shell-like fence is refused. */
const NOT_RUN = new Set(["console", "text"]);
const SHELL_LIKE = new Set(["bash", "shell", "zsh", "shell-session", "sh-session"]);
/** `# → 412`, or `# → 201, 200` for a line holding two curls. */
const ANNOUNCED = /→\s*(\d{3}(?:\s*,\s*\d{3})*)/;

interface Block {
  readonly file: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly text: string;
  /** Per curl of the text, in order: the status it must answer, or "2xx". */
  readonly expected: readonly string[];
}

/** The fenced blocks of `file` by language, with the line each opens on. */
function fencedBlocks(file: string): Array<{ language: string; line: number; text: string }> {
  const lines = readFileSync(join(ROOT, file), "utf8").split("\n");
  const blocks: Array<{ language: string; line: number; text: string }> = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\S*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const [, indent, language] = open as unknown as [string, string, string];
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*```\s*$/.test(lines[j]!); j++) body.push(lines[j]!.startsWith(indent) ? lines[j]!.slice(indent.length) : lines[j]!);
    assert.ok(j < lines.length, `${file}:${i + 1}: a fence that never closes`);
    blocks.push({ language, line: i + 1, text: body.join("\n") + "\n" });
    i = j;
  }
  return blocks;
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

/** The announcements of each curl in `text`, in order; a wrong announcement is an error. */
function expectationsOf(text: string, where: string): string[] {
  const logical = text.replace(/\\\n/g, " ").split("\n");
  const expected: string[] = [];
  for (const line of logical) {
    const [code, comment] = splitComment(line);
    const curls = code.match(/(?:^|[\s;|&(`])curl(?=\s)/g)?.length ?? 0;
    const announced = ANNOUNCED.exec(comment)?.[1]?.split(/\s*,\s*/) ?? [];
    if (announced.length > 0 && announced.length !== curls) {
      throw new Error(`${where}: "${line.trim()}" announces ${announced.length} status(es) for ${curls} curl(s)`);
    }
    for (let i = 0; i < curls; i++) expected.push(announced[i] ?? "2xx");
  }
  return expected;
}

function shellBlocks(file: string): Block[] {
  const blocks: Block[] = [];
  for (const block of fencedBlocks(file)) {
    const where = `${file}:${block.line}`;
    assert.ok(!SHELL_LIKE.has(block.language), `${where}: a \`\`\`${block.language} block; fence shell examples sh (run by this test) or console/text (not run)`);
    if (block.language !== "sh") continue;
    blocks.push({ file, line: block.line, text: block.text, expected: expectationsOf(block.text, where) });
  }
  return blocks;
}

/** What every block runs first: the curl and npx stand-ins, and the variables of earlier blocks. */
const PRELUDE = String.raw`
set -eo pipefail
__docs_save() {
  local name
  for name in $(compgen -v | sort | comm -13 "$DOCS_DIR/baseline" -); do
    case $name in __docs*|BASH*|_|FUNCNAME|PIPESTATUS|LINENO|COMP*) continue;; esac
    declare -p "$name" 2>/dev/null | grep -v '^declare -[a-zA-Z]*r' || true
  done > "$DOCS_DIR/state"
}
trap __docs_save EXIT
curl() {
  local arg
  for arg in "$@"; do
    case $arg in -D*|--dump-header) echo "docs-examples: curl -D is the test's own; show headers with -i" >&2; return 98;; esac
  done
  local headers rc=0 status type n expected
  headers=$(mktemp)
  command curl -D "$headers" "$@" || rc=$?
  status=$(grep -a '^HTTP/' "$headers" | tail -n 1 | cut -d ' ' -f 2)
  status=${"$"}{status:-000}
  type=$(grep -ai '^content-type:' "$headers" | tail -n 1 || true)
  rm -f "$headers"
  # A stream ended by --max-time is how an example shows a few events of the change feed.
  if [[ $rc == 28 && $type == *text/event-stream* ]]; then rc=0; fi
  n=$(( $(cat "$DOCS_DIR/count") + 1 ))
  echo "$n" > "$DOCS_DIR/count"
  expected=$(sed -n "${"$"}{n}p" "$DOCS_DIR/expected")
  echo "$n $status ${"$"}{expected:-none} $rc" >> "$DOCS_DIR/calls"
  if [[ -z $expected ]]; then echo "docs-examples: curl call $n, but the block's text holds fewer curls" >&2; return 99; fi
  if [[ $rc != 0 ]]; then echo "docs-examples: curl call $n exited $rc" >&2; return "$rc"; fi
  if [[ $expected == 2xx && $status != 2?? ]] || [[ $expected != 2xx && $status != "$expected" ]]; then
    echo "docs-examples: curl call $n answered $status; the docs announce $expected (write '# → $status' after a command meant to fail)" >&2
    return 99
  fi
}
npx() {
  # In a subshell (npx … &, $(npx …)) node replaces it, so that $! is node's pid.
  if [[ $1 == tabula-server && $BASHPID != $$ ]]; then shift; exec node "$DOCS_CLI" "$@"; fi
  if [[ $1 == tabula-server ]]; then shift; node "$DOCS_CLI" "$@"; return; fi
  echo "docs-examples: npx $1 is not run here" >&2
  return 97
}
source "$DOCS_DIR/state"
`;

let cli: string;
let root: string;
before(async () => {
  ({ root, cli } = await cliInTempFolder("tabula-docs-"));
});
after(() => {
  killSpawned();
  rmSync(root, { recursive: true, force: true });
});

const counts: string[] = [];
after(() => console.log(`# docs examples run: ${counts.join(", ")}`));

test("every doc fences its shell examples sh (run) or console/text (not run)", () => {
  for (const file of DOC_FILES) shellBlocks(file);
});

for (const file of DOC_FILES) {
  const blocks = shellBlocks(file);
  counts.push(`${file} ${blocks.length}`);
  if (blocks.length === 0) continue;
  test(`the sh examples of ${file} run as written (${blocks.length} blocks)`, async (t) => {
    // Each file in a folder of its own, holding the example entities as ./entities, with a server
    // on them whose data folder is ./data.
    const cwd = join(root, file.replace(/\W/g, "-"));
    mkdirSync(cwd);
    cpSync(join(ROOT, "examples", "entities"), join(cwd, "entities"), { recursive: true });
    const server: SpawnedServer = await startSpawnedServer(
      cli,
      ["--schema", "./entities", "--data", "./data", "--port", "0", "--secret-key", SECRET_KEY, "--publishable-key", PUBLISHABLE_KEY, "--log", "off"],
      START_TIMEOUT_MS,
      { cwd },
    );
    const docsDir = join(cwd, ".docs-examples");
    mkdirSync(docsDir);
    const env = { ...process.env, TABULA: server.url, K: SECRET_KEY, P: PUBLISHABLE_KEY, U: `${server.url}/api/entities/Task`, DOCS_DIR: docsDir, DOCS_CLI: cli };
    const baseline = spawnSync("bash", ["--noprofile", "--norc", "-c", "compgen -v | sort"], { env, encoding: "utf8" }).stdout;
    writeFileSync(join(docsDir, "baseline"), baseline);
    writeFileSync(join(docsDir, "state"), "");
    try {
      for (const block of blocks) {
        await t.test(`${file}:${block.line}`, async () => {
          writeFileSync(join(docsDir, "count"), "0");
          writeFileSync(join(docsDir, "calls"), "");
          writeFileSync(join(docsDir, "expected"), block.expected.map((status) => status + "\n").join(""));
          writeFileSync(join(docsDir, "block.sh"), PRELUDE + block.text);
          const { code, output } = await runBash(join(docsDir, "block.sh"), cwd, env);
          const calls = readFileSync(join(docsDir, "calls"), "utf8").trim().split("\n").filter(Boolean);
          const shown = `\n--- the block (${file}:${block.line}) ---\n${block.text}--- its output ---\n${output}`;
          assert.equal(code, 0, `the block exited ${code}${shown}`);
          for (const call of calls) {
            const [n, status, expected, rc] = call.split(" ");
            assert.ok(rc === "0" && (expected === "2xx" ? /^2\d\d$/.test(status!) : status === expected), `curl call ${n} answered ${status} (exit ${rc}); the docs announce ${expected}${shown}`);
          }
          assert.equal(calls.length, block.expected.length, `the block ran curl ${calls.length} times; its text holds ${block.expected.length}${shown}`);
        });
      }
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });
}

/** Runs `script` in a process group of its own: whatever a block leaves running is killed with it. */
function runBash(script: string, cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn("bash", ["--noprofile", "--norc", script], { cwd, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    const killGroup = () => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // The group has already ended.
      }
    };
    let output = "";
    let code: number | null = null;
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    const timer = setTimeout(killGroup, BLOCK_TIMEOUT_MS);
    // On exit, not close: a process the block left in the background would hold the pipes open.
    child.on("exit", (exitCode) => {
      code = exitCode;
      clearTimeout(timer);
      killGroup();
    });
    child.on("close", () => resolve({ code, output }));
  });
}
