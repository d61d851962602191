// tabula-server schema diff and migrate [--dry-run] (docs/schema-changes.md), as built, on the
// file store and PostgreSQL: what they print, their exit status, and that the dry ones write
// nothing. The memory store keeps nothing for them to read: this file skips it.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { BUILT_CLI, killSpawned, spawnCli, startSpawnedServer } from "../support/spawned-server.ts";
import { dropPgSchema, freshPgSchema, pgTestUrl } from "../support/postgres.ts";
import { TEST_STORE } from "../support/server.ts";

const SECRET_KEY = "sk_test_schema_commands";
const START_TIMEOUT_MS = 30_000;

let root: string;
let cli: string;
const pgSchema = freshPgSchema();
before(async () => {
  root = await mkdtemp(join(tmpdir(), "tabula-schema-commands-"));
  // The bundle in the repository, beside node_modules/postgres (a copy elsewhere finds no driver).
  cli = BUILT_CLI;
});
after(async () => {
  killSpawned();
  await rm(root, { recursive: true, force: true });
  if (TEST_STORE === "postgres") await dropPgSchema(pgTestUrl()!, pgSchema);
});

const storeArgs = () => (TEST_STORE === "postgres" ? ["--store", pgTestUrl()!, "--pg-schema", pgSchema] : ["--data", join(root, "data")]);

function run(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnCli(cli, args);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (text: string) => (stdout += text));
  child.stderr!.on("data", (text: string) => (stderr += text));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

const schema = (properties: Record<string, unknown>, required = ["title"]) => JSON.stringify({ Item: { type: "object", properties, required } });

describe("schema diff and migrate, built", { skip: (TEST_STORE === "memory" && "the memory store keeps nothing for them to read") || (!existsSync(BUILT_CLI) && "needs npm run build") }, () => {
  test("diff shows the refusal and the steps; migrate --dry-run shows each step's records and writes nothing; migrate runs it once", async () => {
    const v1 = join(root, "v1.json");
    const v2 = join(root, "v2.json");
    const migrations = join(root, "migrations");
    await mkdir(migrations);
    await writeFile(v1, schema({ title: { type: "string" }, priority: { type: "integer" }, state: { type: "string", enum: ["a", "b"] } }));
    await writeFile(v2, schema({ title: { type: "string" }, priority: { type: "string" }, state: { type: "string", enum: ["a"] }, owner: { type: "string" } }, ["title", "owner"]));
    const server = await startSpawnedServer(cli, ["--schema", v1, ...storeArgs(), "--migrations", migrations, "--port", "0", "--secret-key", SECRET_KEY, "--log", "off"], START_TIMEOUT_MS);
    const ids: string[] = [];
    for (const body of [{ title: "x", priority: 3, state: "b" }, { title: "y", priority: 4, state: "a" }]) {
      const answer = await fetch(`${server.url}/api/entities/Item`, { method: "POST", headers: { "X-Api-Key": SECRET_KEY, "Content-Type": "application/json" }, body: JSON.stringify(body) });
      ids.push(((await answer.json()) as { id: string }).id);
    }
    server.child.kill("SIGTERM");
    assert.equal(await server.exited, 0);
    const common = ["--schema", v2, "--migrations", migrations, ...storeArgs()];

    const diff = await run(["schema", "diff", ...common]);
    assert.equal(diff.code, 1, "a start-up would refuse: exit 1");
    assert.match(diff.stdout, /^migrations: none pending in /);
    assert.match(diff.stdout, new RegExp(`Item\\.priority: integer → text: 2 records hold a number where the declaration now says text \\(${ids[0]}, ${ids[1]}\\)`));
    assert.match(diff.stdout, new RegExp(`Item\\.state: enum − "b": 1 record holds "b", outside the enum \\(${ids[0]}\\)`));
    assert.match(diff.stdout, /Item: \+ owner \(text, required\): 2 records lack it/);

    await writeFile(
      join(migrations, "0001-v2.json"),
      JSON.stringify({ steps: [{ convert: "Item.priority", to: "string" }, { set: "Item.state", value: "a", q: { state: "b" } }, { set: "Item.owner", value: "ops", q: { owner: null } }] }),
    );
    const dry = await run(["migrate", "--dry-run", ...common]);
    assert.equal(dry.code, 0, dry.stdout + dry.stderr);
    assert.equal(
      dry.stdout,
      [
        "migration 0001-v2.json: 2 records would change",
        '  {"convert":"Item.priority","to":"string"}: 2 would change',
        '  {"set":"Item.state","value":"a","q":{"state":"b"}}: 1 would change',
        '  {"set":"Item.owner","value":"ops","q":{"owner":null}}: 2 would change',
        "schema: 3 changes would apply, every stored record fits:",
        "  Item.priority: integer → text",
        '  Item.state: enum − "b"',
        "  Item: + owner (text, required)",
        "dry run: nothing was written",
        "",
      ].join("\n"),
    );
    // Nothing was written: the same dry run says the same.
    assert.equal((await run(["migrate", "--dry-run", ...common])).stdout, dry.stdout);
    assert.match((await run(["schema", "diff", ...common])).stdout, /migration 0001-v2\.json: 2 records would change/);

    const migrate = await run(["migrate", ...common]);
    assert.equal(migrate.code, 0, migrate.stdout + migrate.stderr);
    assert.match(migrate.stdout, /^migration 0001-v2\.json: 2 records changed\n/);
    assert.match(migrate.stdout, /schema: 3 changes applied, every stored record fits:/);
    const again = await run(["migrate", ...common]);
    assert.equal(again.code, 0);
    assert.equal(again.stdout, `migrations: none pending in ${migrations}\nschema: unchanged\n`);
    const served = await startSpawnedServer(cli, ["--schema", v2, ...common.slice(2), "--port", "0", "--secret-key", SECRET_KEY, "--log", "off"], START_TIMEOUT_MS);
    const list = await fetch(`${served.url}/api/entities/Item?sort_by=title`, { headers: { "X-Api-Key": SECRET_KEY } });
    assert.deepEqual(((await list.json()) as any[]).map(({ priority, state, owner }) => ({ priority, state, owner })), [
      { priority: "3", state: "a", owner: "ops" },
      { priority: "4", state: "a", owner: "ops" },
    ]);
    served.child.kill("SIGTERM");
    await served.exited;

    // A recorded migration whose file changed: both commands refuse, naming it.
    await writeFile(join(migrations, "0001-v2.json"), JSON.stringify({ steps: [{ unset: "Item.owner" }] }));
    const changed = await run(["schema", "diff", ...common]);
    assert.equal(changed.code, 1);
    assert.match(changed.stderr, /0001-v2\.json changed since it ran on .* A migration runs once/);
  });

  test("a refusing migration: the dry run names the step, the records and why; exit 1", async () => {
    const dir = join(root, "refusing");
    await mkdir(join(dir, "migrations"), { recursive: true });
    const v1 = join(dir, "v1.json");
    await writeFile(v1, schema({ title: { type: "string" }, n: { type: "string" } }));
    const place = TEST_STORE === "postgres" ? ["--store", pgTestUrl()!, "--pg-schema", `${pgSchema}_r`] : ["--data", join(dir, "data")];
    const server = await startSpawnedServer(cli, ["--schema", v1, ...place, "--port", "0", "--secret-key", SECRET_KEY, "--log", "off"], START_TIMEOUT_MS);
    const answer = await fetch(`${server.url}/api/entities/Item/bulk`, { method: "POST", headers: { "X-Api-Key": SECRET_KEY, "Content-Type": "application/json" }, body: JSON.stringify([{ title: "a", n: "1" }, { title: "b", n: "one" }]) });
    const [, bad] = (await answer.json()) as Array<{ id: string }>;
    server.child.kill("SIGTERM");
    await server.exited;
    try {
      await writeFile(join(dir, "migrations", "0001-n.json"), JSON.stringify({ steps: [{ convert: "Item.n", to: "number" }] }));
      const dry = await run(["migrate", "--dry-run", "--schema", v1, ...place]);
      assert.equal(dry.code, 1);
      assert.match(dry.stdout, new RegExp(`migration 0001-n\\.json: refused, nothing would be written\\n  \\{"convert":"Item\\.n","to":"number"\\}: 1 would change, 1 refused \\(${bad!.id}\\): "one" does not convert to number`));
    } finally {
      if (TEST_STORE === "postgres") await dropPgSchema(pgTestUrl()!, `${pgSchema}_r`);
    }
  });
});
