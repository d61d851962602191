// A Base44 project, as it is (docs/base44-sdk.md, issue 57): `npx tabula-server` with no schema
// named, in a folder holding base44/config.jsonc, serves base44/entities/*.jsonc (or the config's
// entitiesDir) under the app id of base44/.app.jsonc, and the banner says so. An explicit --schema
// still wins; a broken config file is named with its line and column, exit 1.

import assert from "node:assert/strict";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { createClient } from "@base44/sdk";
import { cliInTempFolder, killSpawned, spawnCli, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";

const START_TIMEOUT_MS = 30_000;
const APP_ID = "6745f0c2a1b2c3d4e5f60718";
let root: string;
let cli: string;
before(async () => ({ root, cli } = await cliInTempFolder("tabula-base44-project-")));
after(killSpawned);

/** As the Base44 CLI writes them: comments, kebab-case file names with the entity's name inside, trailing commas. */
const CONFIG = `// Base44 Project Configuration
{
  "name": "Task Manager", // shown in the dashboard
  "description": "A task list: see https://docs.base44.com/ // not a comment",
  "site": { "buildCommand": "npm run build", "outputDirectory": "dist", },
  /* entitiesDir left out: "entities" */
}
`;
const APP = `// Base44 App Configuration
// This file links your local project to your Base44 app.
{
  "id": "${APP_ID}"
}
`;
const TASK = `{
  "name": "Task",
  "type": "object",
  "properties": {
    // what the task is
    "title": { "type": "string", "description": "Task title, e.g. \\"Buy milk\\", /* or */ // anything" },
    "completed": { "type": "boolean", "default": false, },
  },
  "required": ["title",],
}
`;
const TEAM_MEMBER = `/* one more entity */ { "name": "TeamMember", "type": "object", "properties": { "email": { "type": "string", "format": "email" } } }`;

async function project(files: Record<string, string>): Promise<string> {
  const cwd = await mkdtemp(join(root, "app-"));
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(cwd, path, ".."), { recursive: true });
    await writeFile(join(cwd, path), text);
  }
  return cwd;
}

function serve(args: readonly string[], cwd: string): Promise<SpawnedServer> {
  return startSpawnedServer(cli, args, START_TIMEOUT_MS, { cwd, env: { PATH: process.env.PATH ?? "" } });
}

async function stop(server: SpawnedServer): Promise<number | null> {
  server.child.kill("SIGTERM");
  return server.exited;
}

function printedSecretKey(output: string): string {
  const match = /^secret key +(\S+)  id /m.exec(output);
  assert.ok(match, output);
  return match[1]!;
}

describe("a Base44 project folder", () => {
  test("served with no schema flag: the banner names the project, its entities and app id; the SDK's paths serve them", async () => {
    const cwd = await project({ "base44/config.jsonc": CONFIG, "base44/.app.jsonc": APP, "base44/entities/task.jsonc": TASK, "base44/entities/team-member.jsonc": TEAM_MEMBER });
    const server = await serve(["--port", "0"], cwd);
    try {
      const output = server.output();
      assert.match(output, new RegExp(`^project {10}base44/ \\(entities from base44/entities, app id ${APP_ID} from base44/\\.app\\.jsonc\\)$`, "m"));
      assert.match(output, /^schema {11}base44\/entities: Task \(2 fields\), TeamMember \(1 field\)$/m);
      const headers = { "X-Api-Key": printedSecretKey(output), "Content-Type": "application/json" };
      const base = `${server.url}/api/apps/${APP_ID}/entities`;
      const created = await fetch(`${base}/Task`, { method: "POST", headers, body: JSON.stringify({ title: "Buy milk" }) });
      assert.equal(created.status, 201, await created.clone().text());
      const listed = await fetch(`${base}/Task`, { headers });
      assert.equal(listed.status, 200);
      const tasks = (await listed.json()) as Array<{ title: string; completed: boolean }>;
      assert.deepEqual(tasks.map(({ title, completed }) => ({ title, completed })), [{ title: "Buy milk", completed: false }]);
      assert.equal((await fetch(`${base}/TeamMember`, { headers })).status, 200);
      // The app id is the project's: another is not this server's app.
      const other = await fetch(`${server.url}/api/apps/some-other-app/entities/Task`, { headers });
      assert.equal(other.status, 404);
      assert.equal(((await other.json()) as { error: { code: string } }).error.code, "app_not_found");
    } finally {
      assert.equal(await stop(server), 0);
    }
  });

  test("the commands that open a data folder read the project's entities too, with no schema flag", async () => {
    const cwd = await project({ "base44/config.jsonc": CONFIG, "base44/.app.jsonc": APP, "base44/entities/task.jsonc": TASK });
    const server = await serve(["--port", "0"], cwd);
    try {
      const headers = { "X-Api-Key": printedSecretKey(server.output()), "Content-Type": "application/json" };
      const created = await fetch(`${server.url}/api/entities/Task`, { method: "POST", headers, body: JSON.stringify({ title: "Buy bread" }) });
      assert.equal(created.status, 201);
    } finally {
      assert.equal(await stop(server), 0);
    }
    const child = spawnCli(cli, ["export", "--data", "data", "--entity", "Task"], { cwd, env: { PATH: process.env.PATH ?? "" } });
    let output = "";
    child.stdout!.on("data", (text: string) => (output += text));
    child.stderr!.on("data", (text: string) => (output += text));
    assert.equal(await new Promise<number | null>((resolve) => child.on("close", resolve)), 0, output);
    assert.match(output, /"title":"Buy bread"/);
  });

  test("the config's entitiesDir names the folder, relative to base44/; with no .app.jsonc any app id is served", async () => {
    const config = `{ "name": "x", "entitiesDir": "models", // moved\n}`;
    const cwd = await project({ "base44/config.jsonc": config, "base44/models/task.jsonc": TASK });
    const server = await serve(["--port", "0", "--memory"], cwd);
    try {
      const output = server.output();
      assert.match(output, /^project {10}base44\/ \(entities from base44\/models, any app id \(no base44\/\.app\.jsonc\)\)$/m);
      const answer = await fetch(`${server.url}/api/apps/whatever/entities/Task`, { headers: { "X-Api-Key": printedSecretKey(output) } });
      assert.equal(answer.status, 200);
    } finally {
      assert.equal(await stop(server), 0);
    }
  });

  test("an explicit --schema wins over the project, and no project line is printed", async () => {
    const cwd = await project({ "base44/config.jsonc": CONFIG, "base44/.app.jsonc": APP, "base44/entities/task.jsonc": TASK, "mine/Note.json": '{ "properties": { "body": { "type": "string" } } }' });
    const server = await serve(["--port", "0", "--memory", "--schema", "mine"], cwd);
    try {
      const output = server.output();
      assert.doesNotMatch(output, /^project/m);
      assert.match(output, /^schema {11}mine: Note \(1 field\)$/m);
    } finally {
      assert.equal(await stop(server), 0);
    }
  });

  test("a config file that is not valid JSONC: one line naming it with its line and column, exit 1", async () => {
    const cwd = await project({ "base44/config.jsonc": '{\n  // the name\n  "name": "x"\n  "entitiesDir": "entities"\n}\n', "base44/entities/task.jsonc": TASK });
    const child = spawnCli(cli, ["--port", "0", "--memory"], { cwd, env: { PATH: process.env.PATH ?? "" } });
    let stderr = "";
    child.stderr!.on("data", (text: string) => (stderr += text));
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    assert.equal(code, 1);
    assert.match(stderr, /^tabula: base44\/config\.jsonc:4:3: not valid JSONC \(/);
    assert.equal(stderr.trimEnd().split("\n").length, 1, stderr);
  });
  test('"visibility": "public" and a built app: served with no flag, the app at /, visitors with no key, the data browser at /_/', async () => {
    const config = `{ "name": "x", "visibility": "public", "site": { "outputDirectory": "./build" } }`;
    const index = "<!doctype html><title>the app</title>";
    const cwd = await project({ "base44/config.jsonc": config, "base44/.app.jsonc": APP, "base44/entities/task.jsonc": TASK, "build/index.html": index });
    const server = await serve(["--port", "0", "--memory"], cwd);
    try {
      const output = server.output();
      assert.match(output, /^app {14}http:\/\/\S+\/ \(the app built in \.\/build\)$/m);
      assert.match(output, /^visitors {9}anonymous: a request with no key acts as a publishable key \("visibility": "public" in base44\/config\.jsonc\)$/m);
      assert.match(output, /^browser {10}http:\/\/\S+\/_\/ /m);
      assert.equal(await (await fetch(`${server.url}/tasks/1`, { headers: { Accept: "text/html" } })).text(), index);
      const created = await fetch(`${server.url}/api/apps/${APP_ID}/entities/Task`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ title: "no key" }) });
      assert.equal(created.status, 201, await created.clone().text());
      // The real SDK's entities calls, with no token, as the project's app makes them.
      const Task = createClient({ serverUrl: server.url, appId: APP_ID }).entities.Task;
      const made = await Task.bulkCreate([{ title: "Buy bread" }, { title: "Bake" }]);
      assert.deepEqual(made.map((task) => task.title), ["Buy bread", "Bake"]);
      const updated = await Task.update(made[0]!.id, { completed: true });
      assert.equal(updated.completed, true);
      assert.deepEqual((await Task.filter({ completed: true })).map((task) => task.title), ["Buy bread"]);
      assert.equal((await Task.get(made[1]!.id)).title, "Bake");
      await Task.delete(made[1]!.id);
      assert.deepEqual((await Task.list("title")).map((task) => task.title), ["Buy bread", "no key"]);
    } finally {
      assert.equal(await stop(server), 0);
    }
  });

  test('TABULA_ANONYMOUS=0 keeps visitors out of a project whose config says "visibility": "public"', async () => {
    const cwd = await project({ "base44/config.jsonc": `{ "name": "x", "visibility": "public" }`, "base44/entities/task.jsonc": TASK });
    const server = await startSpawnedServer(cli, ["--port", "0", "--memory"], START_TIMEOUT_MS, { cwd, env: { PATH: process.env.PATH ?? "", TABULA_ANONYMOUS: "0" } });
    try {
      assert.doesNotMatch(server.output(), /^visitors /m);
      assert.equal((await fetch(`${server.url}/api/entities/Task`)).status, 401);
    } finally {
      assert.equal(await stop(server), 0);
    }
  });

  test("a private project needs a key; --anonymous lets visitors in anyway, and --app-dir names the app", async () => {
    const cwd = await project({ "base44/config.jsonc": `{ "name": "x" }`, "base44/entities/task.jsonc": TASK, "web/index.html": "<!doctype html>" });
    const closed = await serve(["--port", "0", "--memory"], cwd);
    try {
      assert.doesNotMatch(closed.output(), /^(visitors|app) /m);
      assert.equal((await fetch(`${closed.url}/api/entities/Task`)).status, 401);
    } finally {
      assert.equal(await stop(closed), 0);
    }
    const open = await serve(["--port", "0", "--memory", "--anonymous", "--app-dir", "web"], cwd);
    try {
      assert.match(open.output(), /^visitors {9}anonymous: .*\(--anonymous\)$/m);
      assert.match(open.output(), /^app {14}\S+ \(the app built in web\)$/m);
      assert.equal((await fetch(`${open.url}/api/entities/Task`)).status, 200);
    } finally {
      assert.equal(await stop(open), 0);
    }
  });
});
