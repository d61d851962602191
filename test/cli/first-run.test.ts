// The first ten minutes (issue 40): the command as a new user meets it in an empty folder. No
// schema: a message offering init and --demo. init writes entities/ and prints what to run next;
// --demo serves the example entities in memory. A busy port, an empty or short key flag, a
// mistyped command or option: one line, exit 1, nothing written. serve, help, -h and -v work.

import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { cliInTempFolder, killSpawned, spawnCli, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";

const START_TIMEOUT_MS = 30_000;
let root: string;
let cli: string;
before(async () => ({ root, cli } = await cliInTempFolder("tabula-first-run-")));
after(killSpawned);

interface Exit {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** An empty folder of its own, where the command runs as a user's would. */
async function emptyFolder(): Promise<string> {
  return mkdtemp(join(root, "user-"));
}

function run(args: readonly string[], cwd: string, env: Record<string, string> = {}): Promise<Exit> {
  const child = spawnCli(cli, args, { cwd, env: { PATH: process.env.PATH ?? "", ...env } });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (text: string) => (stdout += text));
  child.stderr!.on("data", (text: string) => (stderr += text));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

function serve(args: readonly string[], cwd: string, env: Record<string, string> = {}): Promise<SpawnedServer> {
  return startSpawnedServer(cli, args, START_TIMEOUT_MS, { cwd, env: { PATH: process.env.PATH ?? "", ...env } });
}

async function stop(server: SpawnedServer): Promise<number | null> {
  server.child.kill("SIGTERM");
  return server.exited;
}

/** The key printed on a banner line such as "secret key       sk_…  id key_…". */
function printedKey(output: string, kind: "secret" | "publishable"): string {
  const match = new RegExp(`^${kind} key +(\\S+)  id `, "m").exec(output);
  assert.ok(match, output);
  return match[1]!;
}

describe("an empty folder", () => {
  test("no schema: three lines offering init and --demo, exit 1, nothing written", async () => {
    const cwd = await emptyFolder();
    const exit = await run([], cwd);
    assert.equal(exit.code, 1);
    assert.equal(
      exit.stderr,
      [
        "tabula: there is no ./entities folder here, so there is nothing to serve yet. Either",
        "  npx tabula-server init     writes entities/ with one example entity to edit, then serve it, or",
        "  npx tabula-server --demo   serves the bundled example entities (Task, Note) in memory.",
        "",
      ].join("\n"),
    );
    assert.deepEqual(readdirSync(cwd), []);
  });

  test("init writes entities/Task.json and prints the next three commands, which run: the server serves it", async () => {
    const cwd = await emptyFolder();
    const init = await run(["init"], cwd);
    assert.equal(init.code, 0, init.stderr);
    assert.deepEqual(readdirSync(cwd), ["entities"]);
    assert.deepEqual(readdirSync(join(cwd, "entities")), ["Task.json"]);
    const declaration = JSON.parse(readFileSync(join(cwd, "entities", "Task.json"), "utf8"));
    assert.match(declaration.$comment, /docs\/entities\.md/);
    // The same Task as --demo's: the README's examples work on either.
    assert.deepEqual(Object.keys(declaration.properties), ["title", "status", "priority", "estimate", "done", "due_date", "start_at", "email", "tags", "meta"]);
    const commands = init.stdout.split("\n").filter((line) => line.startsWith("  "));
    assert.equal(commands.length, 3, init.stdout);
    assert.match(commands[0]!, /^ {2}npx tabula-server {2,}/);
    assert.match(commands[1]!, /^ {2}curl -X POST http:\/\/127\.0\.0\.1:8080\/api\/entities\/Task -H "X-Api-Key: <the secret key>"/);
    assert.match(commands[2]!, /^ {2}open http:\/\/127\.0\.0\.1:8080\//);

    // The first command as printed (on a free port here), then the second with the key it printed.
    const server = await serve(["--port", "0"], cwd);
    try {
      const key = printedKey(server.output(), "secret");
      const body = /-d '([^']+)'/.exec(commands[1]!)![1]!;
      const created = await fetch(`${server.url}/api/entities/Task`, { method: "POST", headers: { "X-Api-Key": key, "Content-Type": "application/json" }, body });
      assert.equal(created.status, 201);
      const record = (await created.json()) as { title: string; status: string };
      assert.equal(record.title, "My first task");
      assert.equal(record.status, "todo");
      const page = await fetch(`${server.url}/`);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<title>/);
    } finally {
      assert.equal(await stop(server), 0);
    }
    assert.ok(existsSync(join(cwd, "data", "keys.json")), "data is kept in ./data");

    const again = await run(["init"], cwd);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /^tabula init: \.\/entities already exists, and init writes only into a new folder\./);
  });

  test("--demo serves the example entities in memory with a few records, says so, and writes nothing", async () => {
    const cwd = await emptyFolder();
    const server = await serve(["--demo", "--port", "0"], cwd);
    try {
      const output = server.output();
      assert.match(output, /^tabula \d+\.\d+\.\d+ \(demo: the example entities, in memory; nothing is kept\)$/m);
      assert.match(output, /^schema {11}examples: Note \(3 fields\), Task \(10 fields\)$/m);
      assert.match(output, /^data {13}in memory only/m);
      const key = printedKey(output, "secret");
      assert.match(printedKey(output, "publishable"), /^pk_/);
      assert.match(output, /^seed {13}8 records loaded from the demo's examples$/m);
      // A few records to look at: the tables are not empty.
      const tasks = (await (await fetch(`${server.url}/api/entities/Task?sort_by=id`, { headers: { "X-Api-Key": key } })).json()) as Array<{ title: string }>;
      assert.equal(tasks.length, 5);
      assert.equal(tasks[0].title, "Read the README");
      const created = await fetch(`${server.url}/api/entities/Note`, { method: "POST", headers: { "X-Api-Key": key, "Content-Type": "application/json" }, body: JSON.stringify({ body: "hello" }) });
      assert.equal(created.status, 201);
      const notes = (await (await fetch(`${server.url}/api/entities/Note/count`, { headers: { "X-Api-Key": key } })).json()) as { count: number };
      assert.equal(notes.count, 4);
    } finally {
      assert.equal(await stop(server), 0);
    }
    assert.deepEqual(readdirSync(cwd), []);
  });
});

describe("refused in one line, with nothing written", () => {
  let busy: Server;
  let busyPort: number;
  before(async () => {
    busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
    busyPort = (busy.address() as { port: number }).port;
  });
  after(() => busy.close());

  test("a busy port: the message names it and the way out, and no data folder or keys.json is made", async () => {
    const cwd = await emptyFolder();
    const exit = await run(["--demo", "--port", String(busyPort)], cwd);
    assert.equal(exit.code, 1);
    assert.equal(exit.stderr, `tabula: Port ${busyPort} is in use; pass --port N, or --port 0 for a free one.\n`);
    const withData = await run(["--schema", join(cwd, "..", "none"), "--data", "./data", "--port", String(busyPort)], cwd);
    assert.equal(withData.code, 1);
    const init = await run(["init"], cwd);
    assert.equal(init.code, 0);
    const onDisk = await run(["--port", String(busyPort)], cwd);
    assert.equal(onDisk.code, 1);
    assert.equal(onDisk.stderr, `tabula: Port ${busyPort} is in use; pass --port N, or --port 0 for a free one.\n`);
    assert.deepEqual(readdirSync(cwd), ["entities"], "no ./data, no LOCK, no keys.json");
  });

  test("an empty or short key, by flag or variable, names it", async () => {
    const cwd = await emptyFolder();
    const cases: Array<[args: string[], env: Record<string, string>, source: string, what: string]> = [
      [["--secret-key", ""], {}, "--secret-key", "is empty (an unset variable?)"],
      [["--secret-key="], {}, "--secret-key", "is empty (an unset variable?)"],
      [["--publishable-key", "pk_short"], {}, "--publishable-key", "is 8 characters long"],
      [[], { TABULA_SECRET_KEY: "" }, "TABULA_SECRET_KEY", "is empty (an unset variable?)"],
      [[], { TABULA_PUBLISHABLE_KEY: "pk_123456789012" }, "TABULA_PUBLISHABLE_KEY", "is 15 characters long"],
    ];
    for (const [args, env, source, what] of cases) {
      const exit = await run(["--demo", "--port", "0", ...args], cwd, env);
      assert.equal(exit.code, 1, `${source}: ${exit.stdout}`);
      assert.equal(exit.stderr, `tabula: ${source} ${what}: a key needs at least 16 characters. Give a longer one, or leave ${source} out to have one generated and printed. (npx tabula-server --help lists the options)\n`);
    }
    assert.deepEqual(readdirSync(cwd), []);
    const long = await serve(["--demo", "--port", "0", "--secret-key", "sk_sixteen_chars"], cwd);
    assert.equal(printedKey(long.output(), "secret"), "sk_sixteen_chars");
    assert.equal(await stop(long), 0);
  });

  test("a mistyped command or option suggests the nearest", async () => {
    const cwd = await emptyFolder();
    const cases: Array<[args: string[], message: string]> = [
      [["exprot"], 'tabula: No command is named "exprot". Did you mean export? Commands: serve, init, export, import, backup, verify, migrate, schema, keys, users, types, help; without one, tabula serves. (npx tabula-server --help lists the options)\n'],
      [["--shema", "x"], "tabula: Unknown option --shema. Did you mean --schema? (npx tabula-server --help lists the options)\n"],
      [["--demo", "--prot", "0"], "tabula: Unknown option --prot. Did you mean --port? (npx tabula-server --help lists the options)\n"],
      [["--wholly-unknown"], "tabula: Unknown option --wholly-unknown. (npx tabula-server --help lists the options)\n"],
      [["export", "--entitty", "Task"], "tabula export: Unknown option --entitty. Did you mean --entity? (npx tabula-server export --help)\n"],
      [["help", "exprot"], 'tabula: No command is named "exprot". Did you mean export? Commands: serve, init, export, import, backup, verify, migrate, schema, keys, users, types, help. (npx tabula-server --help lists the options)\n'],
    ];
    for (const [args, message] of cases) {
      const exit = await run(args, cwd);
      assert.equal(exit.code, 1, args.join(" "));
      assert.equal(exit.stderr, message);
    }
    assert.deepEqual(readdirSync(cwd), []);
  });
});

describe("serve, help, -h and -v", () => {
  test("help, -h and --help print the same page; help <command> its page; -v and --version the version", async () => {
    const cwd = await emptyFolder();
    const pages = await Promise.all([["help"], ["-h"], ["--help"], ["serve", "--help"]].map((args) => run(args, cwd)));
    for (const page of pages) {
      assert.equal(page.code, 0);
      assert.equal(page.stdout, pages[0]!.stdout);
    }
    assert.match(pages[0]!.stdout, /^Usage: npx tabula-server \[serve\] \[options\]/m);
    const exportPage = await run(["help", "export"], cwd);
    assert.equal(exportPage.stdout, (await run(["export", "--help"], cwd)).stdout);
    assert.match(exportPage.stdout, /^Usage: npx tabula-server export /);
    for (const flag of ["-v", "--version"]) {
      const version = await run([flag], cwd);
      assert.equal(version.code, 0);
      assert.match(version.stdout, /^\d+\.\d+\.\d+\n$/);
    }
  });

  test("every help page gives an option's variable and default the same way: [VARIABLE, default X]", async () => {
    const cwd = await emptyFolder();
    for (const command of ["", "init", "export", "import", "backup", "verify"]) {
      const page = (await run(command === "" ? ["--help"] : [command, "--help"], cwd)).stdout;
      const bracketed = [...page.matchAll(/ {2}\[([^\]\n]*)\]\s*$/gm)].map((match) => match[1]!);
      for (const text of bracketed) {
        assert.match(text, /^(([A-Z_]+( or [A-Z_]+)?(=1)?)(, [A-Z_]+)*(, default .+)?|default .+)$/, `${command || "serve"}: [${text}]`);
      }
      assert.ok(bracketed.some((text) => text.includes("default")), `${command || "serve"} lists defaults`);
    }
  });

  test("serve is the default command, spelled out", async () => {
    const cwd = await emptyFolder();
    const server = await serve(["serve", "--demo", "--port", "0"], cwd);
    assert.equal((await fetch(`${server.url}/health`)).status, 200);
    assert.equal(await stop(server), 0);
  });

  test("the banner counts one field as \"1 field\"", async () => {
    const cwd = await emptyFolder();
    const schema = join(cwd, "one.json");
    await import("node:fs/promises").then((fs) => fs.writeFile(schema, JSON.stringify({ Tag: { properties: { label: { type: "string" } } } })));
    const server = await serve(["--schema", schema, "--memory", "--port", "0"], cwd);
    assert.match(server.output(), /^schema +\S+one\.json: Tag \(1 field\)$/m);
    assert.equal(await stop(server), 0);
  });
});
