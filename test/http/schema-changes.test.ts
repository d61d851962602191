// Schema changes against stored records, and migrations (docs/schema-changes.md), through the
// embedding API and HTTP on the file store and PostgreSQL. The memory store keeps nothing across a
// restart, so a changed schema never meets stored records there: this file skips it.

import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { createServer, type ServerOptions, type TabulaServer } from "../../src/server.ts";
import { q, SECRET, TEST_STORE } from "../support/server.ts";
import { dropPgSchema, freshPgSchema, pgTestUrl } from "../support/postgres.ts";
import { feedNow } from "../support/feed-now.ts";

type Fields = Record<string, Record<string, unknown>>;

/** Item as the user first declared it. */
const ITEM_V1: Fields = { title: { type: "string" }, priority: { type: "integer" }, state: { type: "string", enum: ["a", "b"] } };
/** …and as they changed it: priority as text, "b" gone from the enum, a required owner. */
const ITEM_V2: Fields = { title: { type: "string" }, priority: { type: "string" }, state: { type: "string", enum: ["a"] }, owner: { type: "string" } };

function item(properties: Fields, required: string[] = ["title"], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: "object", properties, required, ...extra };
}

/** A store that outlives its servers: a data folder, or a PostgreSQL schema of its own. */
class Place {
  readonly root = mkdtempSync(join(tmpdir(), "tabula-schema-changes-"));
  readonly migrations = join(this.root, "migrations");
  private readonly pgSchema = freshPgSchema();

  constructor() {
    mkdirSync(this.migrations);
  }

  options(): Partial<ServerOptions> {
    if (TEST_STORE === "postgres") return { store: pgTestUrl()!, pgSchema: this.pgSchema };
    return { data: join(this.root, "data") };
  }

  start(declarations: Record<string, unknown>, more: Partial<ServerOptions> = {}): Promise<TabulaServer> {
    return createServer({ schema: declarations, ...this.options(), port: 0, secretKey: SECRET, publishableKey: "pk_test_publishable", migrations: this.migrations, log: "off", warn: () => {}, ...more });
  }

  writeMigration(name: string, steps: unknown[]): void {
    writeFileSync(join(this.migrations, name), JSON.stringify({ steps }, null, 2));
  }

  async remove(): Promise<void> {
    rmSync(this.root, { recursive: true, force: true });
    if (TEST_STORE === "postgres") await dropPgSchema(pgTestUrl()!, this.pgSchema);
  }
}

async function call(server: TabulaServer, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(server.url + path, {
    method,
    headers: { "X-Api-Key": SECRET, ...(body === undefined ? {} : { "Content-Type": "application/json" }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

/** The refusal a start-up rejects with. */
async function refusalOf(start: Promise<TabulaServer>): Promise<string> {
  const server = await start.then(
    (started) => started,
    (error: Error) => error,
  );
  if (!(server instanceof Error)) {
    await server.close();
    assert.fail("the start-up was expected to refuse");
  }
  return server.message;
}

const places: Place[] = [];
function place(): Place {
  const made = new Place();
  places.push(made);
  return made;
}
after(async () => {
  for (const made of places) await made.remove();
});

describe("a schema changed under stored records", { skip: TEST_STORE === "memory" && "the memory store keeps no records across a restart" }, () => {
  test("the issue's scenario: refused naming priority, state and owner with a step each; nothing written; after the migration it starts and the record is found", async () => {
    const at = place();
    let server = await at.start({ Item: item(ITEM_V1) });
    const created = await call(server, "POST", "/api/entities/Item", { title: "x", priority: 3, state: "b" });
    assert.equal(created.status, 201);
    const id = created.body.id as string;
    const etag = created.headers.get("etag")!;
    await server.close();

    const v2 = { Item: item(ITEM_V2, ["title", "owner"]) };
    const message = await refusalOf(at.start(v2));
    assert.match(message, /nothing was written/);
    assert.match(message, new RegExp(`Item\\.priority: integer → text: 1 record holds a number where the declaration now says text \\(${id}\\)\\. Step: \\{"convert":"Item\\.priority","to":"string","else":"refuse"\\}`));
    assert.match(message, new RegExp(`Item\\.state: enum − "b": 1 record holds "b", outside the enum \\(${id}\\)\\. Step: \\{"set":"Item\\.state","value":"a","q":\\{"state":"b"\\}\\}`));
    assert.match(message, new RegExp(`Item: \\+ owner \\(text, required\\): 1 record lacks it \\(${id}\\)\\. Step: \\{"set":"Item\\.owner","value":"<value>","q":\\{"owner":null\\}\\}`));

    // Nothing was written: the old schema still starts, and the record is the same version.
    server = await at.start({ Item: item(ITEM_V1) });
    const same = await call(server, "GET", `/api/entities/Item/${id}`);
    assert.equal(same.headers.get("etag"), etag);
    assert.deepEqual((server as TabulaServer).schemaLines, []);
    const since = await feedNow((path) => call(server, "GET", path), "/api/entities/Item/changes");
    await server.close();

    at.writeMigration("0001-priority-text-state-a-owner.json", [
      { convert: "Item.priority", to: "string" },
      { set: "Item.state", value: "a", q: { state: "b" } },
      { set: "Item.owner", value: "ops", q: { owner: null } },
    ]);
    server = await at.start(v2);
    assert.deepEqual(server.schemaLines, [
      "migration 0001-priority-text-state-a-owner.json: 1 record changed",
      "Item.priority: integer → text",
      "Item.state: enum − \"b\"",
      "Item: + owner (text, required)",
    ]);
    const found = await call(server, "GET", `/api/entities/Item?q=${q({ state: "a" })}`);
    assert.equal(found.status, 200);
    assert.equal(found.body.length, 1);
    const migrated = found.body[0];
    assert.deepEqual({ priority: migrated.priority, state: migrated.state, owner: migrated.owner, title: migrated.title }, { priority: "3", state: "a", owner: "ops", title: "x" });
    assert.equal(migrated.updated_date, created.body.updated_date, "a migration keeps updated_date");
    const stale = await call(server, "PATCH", `/api/entities/Item/${id}`, { title: "y" }, { "If-Match": etag });
    assert.equal(stale.status, 412, "the migrated record has a new revision: the old ETag no longer matches");
    const changes = await call(server, "GET", `/api/entities/Item/changes?since=${since}`);
    assert.deepEqual(changes.body.changes.map((change: any) => [change.type, change.id, change.data.priority]), [["sync", id, "3"]]);
    const newEtag = (await call(server, "GET", `/api/entities/Item/${id}`)).headers.get("etag")!;
    await server.close();

    // Once run, never again: a restart leaves the record at the same version.
    server = await at.start(v2);
    assert.deepEqual(server.schemaLines, []);
    assert.equal((await call(server, "GET", `/api/entities/Item/${id}`)).headers.get("etag"), newEtag);
    await server.close();

    // A recorded migration whose file changed stops the start-up.
    at.writeMigration("0001-priority-text-state-a-owner.json", [{ convert: "Item.priority", to: "string", else: "null" }]);
    assert.match(await refusalOf(at.start(v2)), /0001-priority-text-state-a-owner\.json changed since it ran on .*A migration runs once/);
  });

  test("changes every record already fits apply with one line each: optional field, integer → number, whole numbers → integer, enum widened, required dropped, entity added", async () => {
    const at = place();
    const v1 = { Item: item({ title: { type: "string" }, count: { type: "integer" }, ratio: { type: "number" }, state: { type: "string", enum: ["a"] } }, ["title", "state"]) };
    let server = await at.start(v1);
    await call(server, "POST", "/api/entities/Item", { title: "x", count: 2, ratio: 4, state: "a" });
    await server.close();
    const v2 = {
      Item: item({ title: { type: "string" }, count: { type: "number" }, ratio: { type: "integer" }, state: { type: "string", enum: ["a", "c"] }, note: { type: "string" } }, ["title"]),
      Tag: item({ label: { type: "string" } }, []),
    };
    server = await at.start(v2);
    assert.deepEqual(server.schemaLines, [
      "Item.count: integer → number",
      "Item.ratio: number → integer",
      'Item.state: enum + "c"',
      "Item.state: no longer required",
      "Item: + note (text, optional)",
      "Tag: + entity (1 field)",
    ]);
    assert.equal((await call(server, "POST", "/api/entities/Item", { title: "y", state: "c", note: "n" })).status, 201);
    await server.close();
    // The new declarations are kept: the next start has nothing to say.
    server = await at.start(v2);
    assert.deepEqual(server.schemaLines, []);
    await server.close();
  });

  test("breaking changes each name their records: a field dropped while held, number → integer over fractions, a new unique set over duplicates", async () => {
    const at = place();
    let server = await at.start({ Item: item({ title: { type: "string" }, legacy: { type: "string" }, ratio: { type: "number" }, sku: { type: "string" } }) });
    const ids: string[] = [];
    for (const [ratio, legacy] of [[1.5, "old"], [2, undefined], [2.25, undefined]] as const) {
      ids.push((await call(server, "POST", "/api/entities/Item", { title: "t", ratio, sku: "same", ...(legacy ? { legacy } : {}) })).body.id);
    }
    await server.close();
    const message = await refusalOf(at.start({ Item: item({ title: { type: "string" }, ratio: { type: "integer" }, sku: { type: "string" } }, ["title"], { unique: [["sku"]] }) }));
    assert.match(message, new RegExp(`Item: − legacy: 1 record holds a value for it \\(${ids[0]}\\)\\. Step: \\{"unset":"Item\\.legacy"\\}`));
    assert.match(message, new RegExp(`Item\\.ratio: number → integer: 2 records hold a number where the declaration now says integer \\(${ids[0]}, ${ids[2]}\\)\\. Step: \\{"convert":"Item\\.ratio","to":"integer","else":"refuse"\\}`));
    assert.match(message, new RegExp(`Item declares "unique": \\["sku"\\], but live records already share such values: ${ids.join(", ")}`));
    // Deleted records break nothing.
    server = await at.start({ Item: item({ title: { type: "string" }, legacy: { type: "string" }, ratio: { type: "number" }, sku: { type: "string" } }) });
    for (const id of [ids[0], ids[2]]) assert.equal((await call(server, "DELETE", `/api/entities/Item/${id}`)).status, 200);
    await server.close();
    server = await at.start({ Item: item({ title: { type: "string" }, legacy: { type: "string" }, ratio: { type: "integer" }, sku: { type: "string" } }, ["title"], { unique: [["sku"]] }) });
    assert.deepEqual(server.schemaLines, ["Item.ratio: number → integer", "Item: unique (sku)"]);
    await server.close();
  });

  test("an entity no longer declared keeps its records, not served, and is reported; declared again, they are back", async () => {
    const at = place();
    const both = { Item: item({ title: { type: "string" } }), Old: item({ name: { type: "string" } }, []) };
    let server = await at.start(both);
    const old = (await call(server, "POST", "/api/entities/Old", { name: "kept" })).body.id;
    await server.close();
    server = await at.start({ Item: both.Item });
    assert.deepEqual(server.schemaLines, ["Old: − entity (no longer declared: its 1 live record is kept, not served)"]);
    assert.equal((await call(server, "GET", `/api/entities/Old/${old}`)).status, 404);
    await server.close();
    server = await at.start(both);
    assert.equal((await call(server, "GET", `/api/entities/Old/${old}`)).body.name, "kept");
    await server.close();
  });

  test("a stored field no longer declared is named among the undeclared fields; declared and platform fields are not", async () => {
    const at = place();
    let server = await at.start({ Note: item({ title: { type: "string" }, color: { type: "string" }, size: { type: "integer" } }) });
    const colored = await call(server, "POST", "/api/entities/Note", { title: "a", color: "red", size: 2 });
    assert.equal(colored.status, 201);
    assert.equal((await call(server, "POST", "/api/entities/Note", { title: "b" })).status, 201);
    // Deleted, its color keeps no live record from dropping the field: the row holds it still.
    assert.equal((await call(server, "DELETE", `/api/entities/Note/${colored.body.id}`)).status, 200);
    await server.close();
    server = await at.start({ Note: item({ title: { type: "string" }, color: { type: "string" }, size: { type: "integer" } }) });
    assert.deepEqual(server.undeclaredFields, []);
    await server.close();
    server = await at.start({ Note: item({ title: { type: "string" }, size: { type: "integer" } }) });
    assert.deepEqual(server.undeclaredFields, ["Note.color"]);
    await server.close();
  });

  test("steps: rename, convert with else null and else a value, set where q, unset, renameEntity; all or nothing when a step refuses", async () => {
    const at = place();
    const v1 = { Person: item({ name: { type: "string" }, age: { type: "string" }, score: { type: "string" }, gone: { type: "string" } }, ["name"]) };
    let server = await at.start(v1);
    const rows = [
      { name: "ann", age: "41", score: "7.5", gone: "x" },
      { name: "bob", age: "unknown", score: "n/a" },
    ];
    const ids: string[] = [];
    for (const row of rows) ids.push((await call(server, "POST", "/api/entities/Person", row)).body.id);
    await server.close();

    // A convert that refuses: nothing of the migration is written, and the start-up says which record.
    at.writeMigration("0001-people.json", [
      { rename: "Person.name", to: "full_name" },
      { convert: "Person.age", to: "integer" },
    ]);
    const v2 = { Member: item({ full_name: { type: "string" }, age: { type: "integer" }, score: { type: "number" }, team: { type: "string" } }, ["full_name"]) };
    const refused = await refusalOf(at.start(v2));
    assert.match(refused, new RegExp(`0001-people\\.json was not run.*\\n  \\{"convert":"Person\\.age","to":"integer"\\}: refuses 1 record \\(${ids[1]}\\): "unknown" does not convert to integer`));
    // (Started without the migrations, which would refuse again.)
    server = await at.start(v1, { migrations: undefined });
    assert.equal((await call(server, "GET", `/api/entities/Person/${ids[0]}`)).body.name, "ann", "the rename before the refusing step was not written either");
    await server.close();

    at.writeMigration("0001-people.json", [
      { rename: "Person.name", to: "full_name" },
      { convert: "Person.age", to: "integer", else: "null" },
      { convert: "Person.score", to: "number", else: 0 },
      { set: "Person.team", value: "blue", q: { full_name: { $in: ["ann"] } } },
      { unset: "Person.gone" },
      { renameEntity: "Person", to: "Member" },
    ]);
    server = await at.start(v2);
    assert.equal(server.schemaLines[0], "migration 0001-people.json: 2 records changed");
    assert.ok(server.schemaLines.includes("Person: − entity"), server.schemaLines.join("\n"));
    const members = (await call(server, "GET", "/api/entities/Member?sort_by=full_name")).body.map(({ id, full_name, age, score, team, gone }: any) => ({ id, full_name, age, score, team, gone }));
    assert.deepEqual(members, [
      { id: ids[0], full_name: "ann", age: 41, score: 7.5, team: "blue", gone: undefined },
      { id: ids[1], full_name: "bob", age: undefined, score: 0, team: undefined, gone: undefined },
    ]);
    assert.equal((await call(server, "GET", "/api/entities/Member/count")).body.count, 2);
    await server.close();
  });

  test("a migration with a bad step stops the start-up naming the file and the step", async () => {
    const at = place();
    at.writeMigration("0001-bad.json", [{ convert: "Item.title", to: "text" }]);
    const message = await refusalOf(at.start({ Item: item({ title: { type: "string" } }) }));
    assert.match(message, /0001-bad\.json, step 1: "to" is the type to convert to: one of string, number, integer, boolean, date, date-time/);
    rmSync(join(at.migrations, "0001-bad.json"));
    writeFileSync(join(at.migrations, "first.json"), "{}");
    assert.match(await refusalOf(at.start({ Item: item({ title: { type: "string" } }) })), /first\.json: a migration file is named NNNN-words\.json/);
  });
});

describe("two processes on one PostgreSQL database", { skip: TEST_STORE !== "postgres" && "PostgreSQL only" }, () => {
  test("started together over a pending migration, it runs once and both serve", async () => {
    const at = place();
    let server = await at.start({ Item: item({ title: { type: "string" }, n: { type: "string" } }) });
    for (let i = 0; i < 50; i++) await call(server, "POST", "/api/entities/Item", { title: `t${i}`, n: String(i) });
    const since = await feedNow((path) => call(server, "GET", path), "/api/entities/Item/changes");
    await server.close();
    at.writeMigration("0001-n-as-number.json", [{ convert: "Item.n", to: "integer" }]);
    const v2 = { Item: item({ title: { type: "string" }, n: { type: "integer" } }) };
    const [one, two] = await Promise.all([at.start(v2), at.start(v2)]);
    try {
      const lines = [one.schemaLines, two.schemaLines];
      assert.equal(lines.filter((each) => each.includes("migration 0001-n-as-number.json: 50 records changed")).length, 1, JSON.stringify(lines));
      const changes = await call(one, "GET", `/api/entities/Item/changes?since=${since}&limit=500`);
      assert.equal(changes.body.changes.length, 50, "one sync event per record: the migration ran once");
      assert.equal((await call(two, "GET", `/api/entities/Item/count?q=${q({ n: { $gte: 0 } })}`)).body.count, 50);
    } finally {
      await one.close();
      await two.close();
    }
  });
});
