// tabula as a spawned process, for the tests that need a real one (signals, SIGKILL, exit codes,
// a preloaded module): start it, wait for its `listening on` line, and kill whatever a test file
// left running when it ends.

import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { copyFileSync, existsSync } from "node:fs";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { createServer as createNetServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const BUILT_CLI = fileURLToPath(new URL("../../dist/tabula.mjs", import.meta.url));

export interface SpawnedServer {
  readonly url: string;
  readonly child: ChildProcess;
  /** The exit code once the process has ended and its output is read (null after a signal). */
  readonly exited: Promise<number | null>;
  /** Everything printed so far (stdout and stderr). */
  output(): string;
}

export interface SpawnOptions {
  readonly env?: NodeJS.ProcessEnv;
  /** The working folder, where relative paths (the default ./data) land. */
  readonly cwd?: string;
  /** node's own flags, before the script (such as --import of a module). */
  readonly nodeArgs?: readonly string[];
}

const running = new Set<ChildProcess>();

/**
 * A new temporary folder (`prefix` + random) holding a private copy of the bundle, built first when
 * dist/ has none: what a test file that drives the CLI sets up before anything else.
 */
export async function cliInTempFolder(prefix: string): Promise<{ root: string; cli: string }> {
  if (!existsSync(BUILT_CLI)) execFileSync(process.execPath, ["build.mjs"], { cwd: REPO_ROOT, stdio: "inherit" });
  const root = await mkdtemp(join(tmpdir(), prefix));
  return { root, cli: copyCli(root) };
}

/** cliInTempFolder, with each declaration written as entities/<name>.json in the folder: the schema folder to pass. */
export async function cliWithSchema(prefix: string, declarations: ReadonlyArray<{ readonly name: string }>): Promise<{ root: string; cli: string; schemaDir: string }> {
  const { root, cli } = await cliInTempFolder(prefix);
  const schemaDir = join(root, "entities");
  await mkdir(schemaDir);
  for (const declaration of declarations) await writeFile(join(schemaDir, `${declaration.name}.json`), JSON.stringify(declaration));
  return { root, cli, schemaDir };
}

/**
 * The environment of a child CLI: this process's, less every TABULA_*, PORT and DATABASE_URL (which
 * would choose its options), plus `env`.
 */
export function childEnv(env: Record<string, string> = {}): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("TABULA_") && name !== "PORT" && name !== "DATABASE_URL"));
  return { ...base, ...env };
}

/**
 * A private copy of the bundle in `dir` (the command is one file): a rebuild elsewhere (build.mjs
 * empties dist/) cannot pull it away mid-run.
 */
export function copyCli(dir: string): string {
  const cli = join(dir, "tabula.mjs");
  copyFileSync(BUILT_CLI, cli);
  return cli;
}

/** Spawns the CLI with piped output; killSpawned() kills it if it is still running then. */
export function spawnCli(cli: string, args: readonly string[], options: SpawnOptions = {}): ChildProcess {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), cli, ...args], { env: options.env, cwd: options.cwd, stdio: ["ignore", "pipe", "pipe"] });
  running.add(child);
  // "close", not "exit": it comes once stdout and stderr are read to their end.
  child.on("close", () => running.delete(child));
  child.stdout!.setEncoding("utf8");
  child.stderr!.setEncoding("utf8");
  return child;
}

/**
 * Starts the CLI and resolves once it prints `listening on`. `startTimeoutMs` only guards against
 * a server that never listens: the child is killed then, and the start rejects with its output.
 */
export function startSpawnedServer(cli: string, args: readonly string[], startTimeoutMs: number, options: SpawnOptions = {}): Promise<SpawnedServer> {
  const child = spawnCli(cli, args, options);
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  let output = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`tabula did not listen within ${startTimeoutMs} ms:\n${output}`));
    }, startTimeoutMs);
    let isListening = false;
    const onData = (text: string) => {
      output += text;
      // Once listening, the output is only kept: a request log grows it by a line per request.
      if (isListening) return;
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) {
        isListening = true;
        clearTimeout(timer);
        resolve({ url: match[1]!.replace(/\/$/, ""), child, exited, output: () => output });
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`tabula exited with ${code ?? child.signalCode} before listening:\n${output}`));
    });
  });
}

/** SIGKILLs every process spawned here that is still running (in a test file's after()). */
export function killSpawned(): void {
  for (const child of running) child.kill("SIGKILL");
}

/** A port free a moment ago, for a test that must name one before the server starts. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}
