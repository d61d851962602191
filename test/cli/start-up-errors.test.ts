// A data folder or store URL that cannot serve (issue 39, item 9) is one line on stderr naming the
// flag or variable, the path or the URL without its password, and what to do; exit 1 before
// listening, with nothing written. A read-only folder can still be verified and backed up.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { chmod, mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { childEnv, cliInTempFolder, killSpawned, startSpawnedServer } from "../support/spawned-server.ts";

const TASK = { name: "Task", type: "object", properties: { title: { type: "string" } }, required: ["title"] };
const SECRET_KEY = "sk_start_up_errors";
const TIMEOUT_MS = 10_000;
const POSTGRES_FORM = "write postgres://user:password@host:port/database, such as postgres://tabula:secret@127.0.0.1:5432/tabula";
const SETPRIV = ["/usr/bin/setpriv", "/bin/setpriv"].find((path) => existsSync(path));
const isRoot = process.getuid?.() === 0;
/**
 * Root writes anywhere whatever the permissions say, and tests run as root on CI: there the CLI
 * runs as root without the capabilities that override permissions (CAP_DAC_OVERRIDE and
 * CAP_DAC_READ_SEARCH), so a folder without write permission is refused to it as to anyone.
 */
const DROP_OVERRIDE = ["--inh-caps=-dac_override,-dac_read_search", "--bounding-set=-dac_override,-dac_read_search"];
const skipReadOnly = process.platform === "win32" ? "no POSIX permissions" : isRoot && SETPRIV === undefined ? "running as root without setpriv to drop CAP_DAC_OVERRIDE" : false;

let root: string;
let cli: string;
let schemaDir: string;
let aFile: string;
let readOnly: string;
before(async () => {
  ({ root, cli } = await cliInTempFolder("tabula-start-up-errors-"));
  schemaDir = join(root, "entities");
  await mkdir(schemaDir);
  await writeFile(join(schemaDir, "Task.json"), JSON.stringify(TASK));
  aFile = join(root, "a-file");
  await writeFile(aFile, "not a folder\n");
  readOnly = join(root, "read-only");
  await mkdir(readOnly);
  await chmod(readOnly, 0o555);
});
after(async () => {
  killSpawned();
  await rm(root, { recursive: true, force: true });
});

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the CLI to its end (in `root`, unless `cwd`), with `env` as its only TABULA_* and
 * DATABASE_URL; `isUnprivileged`: as root, without the override.
 */
function run(args: readonly string[], env: Record<string, string> = {}, { isUnprivileged = false, cwd = root } = {}): Promise<Exit> {
  const command = isUnprivileged && isRoot ? [SETPRIV!, ...DROP_OVERRIDE, process.execPath] : [process.execPath];
  const child = spawn(command[0]!, [...command.slice(1), cli, ...args], { cwd, env: childEnv(env), stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (text: string) => (stdout += text));
  child.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`tabula ${args.join(" ")} did not exit:\n${stdout}${stderr}`));
    }, TIMEOUT_MS);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Exit 1, never listening, and stderr exactly `line`. */
function assertRefused({ code, stdout, stderr }: Exit, line: string): void {
  assert.equal(stderr, `${line}\n`);
  assert.equal(code, 1);
  assert.doesNotMatch(stdout, /listening on/);
}

const SERVE = ["--schema", "entities", "--port", "0", "--secret-key", SECRET_KEY];
const NOT_A_FOLDER = "it is a file, not a folder. Name a folder (a missing one is made), or move the file away.";

describe("a data folder that cannot serve", () => {
  // [args, env, how the line names the folder]
  const files: Array<[string[], Record<string, string>, string]> = [
    [["--data", "a-file"], {}, "--data a-file"],
    [[], { TABULA_DATA: "a-file" }, "TABULA_DATA=a-file"],
    [["--store", "file:a-file"], {}, "--store file:a-file"],
    [[], { TABULA_STORE: "file:a-file" }, "TABULA_STORE=file:a-file"],
  ];
  for (const [args, env, given] of files) {
    test(`${[...Object.entries(env).map(([name, value]) => `${name}=${value}`), ...args].join(" ")} naming a file: one line naming it, exit 1, the file untouched`, async () => {
      assertRefused(await run([...SERVE, ...args], env), `tabula: ${given}: ${NOT_A_FOLDER}`);
      assert.equal(readFileSync(aFile, "utf8"), "not a folder\n");
    });
  }

  test("--data under a file: one line naming the file in the way, exit 1, nothing made", async () => {
    assertRefused(await run([...SERVE, "--data", "a-file/data"]), `tabula: --data a-file/data: ${aFile} is a file, so no folder can be made in it. Name a folder whose parents are folders.`);
  });

  test("the default ./data being a file: one line saying it is the default, exit 1", async () => {
    const cwd = join(root, "default-is-a-file");
    await mkdir(cwd);
    await writeFile(join(cwd, "data"), "");
    const exit = await run(["--schema", schemaDir, "--port", "0", "--secret-key", SECRET_KEY], {}, { cwd });
    assertRefused(exit, `tabula: The data folder ./data (the default, as none of --store, --data and --memory was given): ${NOT_A_FOLDER}`);
    assert.deepEqual(readdirSync(cwd), ["data"], "no keys.json or anything else written");
  });

  // [args, env, how the line names the folder, where permission is missing]
  const unwritable: Array<[string[], Record<string, string>, string, string]> = [
    [["--data", "read-only"], {}, "--data read-only", "in it"],
    [[], { TABULA_DATA: "read-only" }, "TABULA_DATA=read-only", "in it"],
    [["--data", "read-only/data"], {}, "--data read-only/data", "in READ_ONLY, to make it"],
  ];
  for (const [args, env, given, where] of unwritable) {
    test(`${[...Object.entries(env).map(([name, value]) => `${name}=${value}`), ...args].join(" ")} without write permission: one line naming it and chown/chmod, exit 1, nothing written`, { skip: skipReadOnly }, async () => {
      const exit = await run([...SERVE, ...args], env, { isUnprivileged: true });
      const line = new RegExp(
        `^tabula: ${escape(given)}: this process \\(uid \\d+\\) may not write ${escape(where.replace("READ_ONLY", readOnly))} \\(EACCES\\), and the file store keeps its lock, log and keys\\.json there\\. Name a folder it may write in, or let it write there \\(chown or chmod ${escape(readOnly)}\\)\\.\\n$`,
      );
      assert.match(exit.stderr, line);
      assert.equal(exit.code, 1);
      assert.doesNotMatch(exit.stdout, /listening on/);
      assert.deepEqual(readdirSync(readOnly), [], "no LOCK, log or keys.json");
    });
  }
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

describe("a PostgreSQL URL that cannot be read", () => {
  const URL_WITH_BAD_PORT = "postgres://app:hunter2@127.0.0.1:notaport/db";
  const SHOWN = "postgres://app:***@127.0.0.1:notaport/db";
  // [args, env, what names it]
  const cases: Array<[string[], Record<string, string>, string]> = [
    [["--store", URL_WITH_BAD_PORT], {}, "--store"],
    [[], { TABULA_STORE: URL_WITH_BAD_PORT }, "TABULA_STORE"],
    [[], { DATABASE_URL: URL_WITH_BAD_PORT }, "DATABASE_URL"],
  ];
  for (const [args, env, source] of cases) {
    test(`${source} with a port that is not a number: one line naming ${source}, the URL without its password and the form, exit 1`, async () => {
      assertRefused(await run([...SERVE, ...args], env), `tabula: ${source} ${SHOWN}: its port "notaport" is not a number from 1 to 65535; ${POSTGRES_FORM}. (npx tabula-server --help lists the options)`);
    });
  }

  // [what is wrong, URL, the URL as the line shows it]
  const malformed: Array<[string, string, string]> = [
    ["a / in the password", "postgres://app:hunt/er2@db.example/app", "postgres://app:***@db.example/app"],
    ["a stray % in the password", "postgres://app:hunt%er2@db.example/app", "postgres://app:***@db.example/app"],
    ["a port past 65535", "postgres://app:hunter2@db.example:99999/app", "postgres://app:***@db.example:99999/app"],
  ];
  for (const [what, url, shown] of malformed) {
    test(`--store with ${what}: one line naming --store and the URL, exit 1, and no part of the password printed`, async () => {
      const exit = await run([...SERVE, "--store", url]);
      assert.equal(exit.code, 1);
      assert.ok(exit.stderr.startsWith(`tabula: --store ${shown}: `), exit.stderr);
      assert.ok(exit.stderr.endsWith(`; ${POSTGRES_FORM}. (npx tabula-server --help lists the options)\n`), exit.stderr);
      assert.equal(exit.stderr.split("\n").length, 2, "one line");
      assert.doesNotMatch(exit.stderr, /hunt|er2/);
    });
  }
});

describe("commands on a data folder", () => {
  let source: string;
  before(async () => {
    // A folder a server wrote, then made read-only.
    source = join(root, "written");
    const server = await startSpawnedServer(cli, ["--schema", schemaDir, "--data", source, "--port", "0", "--secret-key", SECRET_KEY], TIMEOUT_MS);
    const created = await fetch(`${server.url}/api/entities/Task`, { method: "POST", headers: { "X-Api-Key": SECRET_KEY, "Content-Type": "application/json" }, body: JSON.stringify({ title: "kept" }) });
    assert.equal(created.status, 201);
    server.child.kill("SIGTERM");
    assert.equal(await server.exited, 0);
    await chmod(source, 0o555);
  });

  test("tabula verify and tabula backup read a folder they may not write in; export says so in one line, pointing to backup", { skip: skipReadOnly }, async () => {
    const before = readdirSync(source).sort();
    const verified = await run(["verify", "--data", "written"], {}, { isUnprivileged: true });
    assert.equal(verified.code, 0, verified.stderr);
    assert.match(verified.stdout, /Task\s+1 live, 0 deleted/);

    const backedUp = await run(["backup", "--data", "written", "--to", "copy"], {}, { isUnprivileged: true });
    assert.equal(backedUp.code, 0, backedUp.stderr);
    assert.match(backedUp.stdout, /^backed up to .*copy/);
    const restored = await run(["export", "--data", "copy", "--schema", "entities", "--entity", "Task"]);
    assert.equal(restored.code, 0, restored.stderr);
    assert.equal(JSON.parse(restored.stdout).title, "kept");

    const exported = await run(["export", "--data", "written", "--schema", "entities", "--entity", "Task"], {}, { isUnprivileged: true });
    assert.match(
      exported.stderr,
      new RegExp(`^tabula export: --data written: this process \\(uid \\d+\\) may not write in it \\(EACCES\\), .* Or copy it with npx tabula-server backup --data written --to COPY, which writes nothing there, and read the copy\\.\\n$`),
    );
    assert.equal(exported.code, 1);
    assert.equal(exported.stdout, "");
    assert.deepEqual(readdirSync(source).sort(), before, "nothing written into the folder");
  });

  test("tabula export --data naming a file, or under one: one line naming it, exit 1", async () => {
    const file = await run(["export", "--data", "a-file", "--schema", "entities", "--entity", "Task"]);
    assert.equal(file.stderr, `tabula export: --data a-file: ${NOT_A_FOLDER}\n`);
    assert.equal(file.code, 1);
    const under = await run(["export", "--store", "file:a-file/data", "--schema", "entities", "--entity", "Task"]);
    assert.equal(under.stderr, `tabula export: --store file:a-file/data: ${aFile} is a file, so no folder can be made in it. Name a folder whose parents are folders.\n`);
    assert.equal(under.code, 1);
  });
});
