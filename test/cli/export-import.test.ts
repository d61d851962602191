// tabula export and tabula import (docs/operating.md, issue 21), run as a user runs them: the built CLI
// against a running server (--url, --key) and against a data folder (--data). What export wrote,
// imported with --keep-ids, exports again byte for byte; a bad record stops an import naming its
// line and field, with nothing of its batch stored.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { TASK } from "../support/server.ts";
import { copyCli, killSpawned, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";

const KEY = "sk_export_import_test";

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

describe("tabula export and import", () => {
  let dir: string;
  let cli: string;
  let source: SpawnedServer;
  let target: SpawnedServer;

  function run(args: readonly string[], stdin?: string): Promise<Run> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [cli, ...args], { cwd: dir, env: { ...process.env, TABULA_SECRET_KEY: "" } });
      let stdout = "";
      let stderr = "";
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
      child.on("error", reject);
      child.on("close", (code) => resolve({ code, stdout, stderr }));
      child.stdin.end(stdin ?? "");
    });
  }

  async function call(server: SpawnedServer, method: string, path: string, body?: unknown): Promise<any> {
    const response = await fetch(server.url + path, { method, headers: { "X-Api-Key": KEY, "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await response.text();
    assert.ok(response.ok, `${method} ${path}: ${response.status} ${text}`);
    return path.endsWith("/export") ? text : JSON.parse(text);
  }

  const serve = (data: string) => startSpawnedServer(cli, ["--schema", "entities", "--data", data, "--port", "0", "--secret-key", KEY, "--log", "off"], 20_000, { cwd: dir });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "tabula-export-import-"));
    cli = copyCli(dir);
    mkdirSync(join(dir, "entities"));
    writeFileSync(join(dir, "entities", "Task.json"), JSON.stringify(TASK));
    [source, target] = await Promise.all([serve("source"), serve("target")]);
    // 12,000 records over three bulk writes; some changed and some deleted since.
    for (let batch = 0; batch < 3; batch++) {
      const records = Array.from({ length: 4000 }, (_, i) => {
        const n = batch * 4000 + i;
        return { title: `task ${n}, "quoted"`, priority: n, tags: n % 3 === 0 ? ["a", "b"] : undefined, meta: n % 5 === 0 ? { n } : undefined, done: n % 2 === 0 };
      });
      await call(source, "POST", "/api/entities/Task/bulk", records);
    }
    const some = await call(source, "GET", "/api/entities/Task?sort_by=priority&limit=20&fields=id");
    for (const { id } of some.slice(0, 10)) await call(source, "PATCH", `/api/entities/Task/${id}`, { status: "done" });
    for (const { id } of some.slice(10)) await call(source, "DELETE", `/api/entities/Task/${id}`);
  });
  after(() => {
    killSpawned();
    rmSync(dir, { recursive: true, force: true });
  });

  test("export --url writes what the export route streams; import --keep-ids into another server gives the same records", async () => {
    const exported = await run(["export", "--url", source.url, "--key", KEY, "--entity", "Task"]);
    assert.equal(exported.code, 0, exported.stderr);
    assert.equal(exported.stdout, await call(source, "GET", "/api/entities/Task/export"));
    assert.equal(exported.stdout.split("\n").length - 1, 11_990);
    writeFileSync(join(dir, "tasks.ndjson"), exported.stdout);

    const imported = await run(["import", "tasks.ndjson", "--entity", "Task", "--url", target.url, "--key", KEY, "--keep-ids"]);
    assert.equal(imported.code, 0, imported.stderr);
    assert.match(imported.stdout, /^Imported 11,990 records into Task in [\d.]+ s \([\d,]+ records\/s, 3 batches\)\.\n$/);
    assert.equal(imported.stderr, "", "no progress line when stderr is not a terminal");
    assert.equal(await call(target, "GET", "/api/entities/Task/export"), exported.stdout);
  });

  test("without --keep-ids the records get new ids and timestamps, and the summary says so", async () => {
    const imported = await run(["import", "tasks.ndjson", "--entity", "Task", "--data", "fresh", "--schema", "entities"]);
    assert.equal(imported.code, 0, imported.stderr);
    assert.match(imported.stdout, /Imported 11,990 records into Task .*11,990 records carried ids or timestamps, left out: they got new ones \(--keep-ids keeps them\)\./);
    const again = await run(["export", "--data", "fresh", "--schema", "entities", "--entity", "Task", "--format", "json"]);
    assert.equal(again.code, 0, again.stderr);
    const records = JSON.parse(again.stdout);
    const original = new Map(
      (await call(source, "GET", "/api/entities/Task/export"))
        .trim()
        .split("\n")
        .map((line: string) => JSON.parse(line))
        .map((record: any) => [record.priority, record]),
    );
    assert.equal(records.length, 11_990);
    for (const record of records.slice(0, 50)) {
      const from = original.get(record.priority) as any;
      assert.notEqual(record.id, from.id);
      assert.equal(record.title, from.title);
      assert.deepEqual(record.tags, from.tags);
      assert.deepEqual(record.meta, from.meta);
    }
  });

  test("import --data ends with its records in a snapshot, the log after it holding none, and a restart serves them all", async () => {
    const exported = await run(["export", "--url", source.url, "--key", KEY, "--entity", "Task"]);
    assert.equal(exported.code, 0, exported.stderr);
    writeFileSync(join(dir, "to-compact.ndjson"), exported.stdout);
    const imported = await run(["import", "to-compact.ndjson", "--entity", "Task", "--data", "compacted", "--schema", "entities", "--keep-ids"]);
    assert.equal(imported.code, 0, imported.stderr);
    const files = readdirSync(join(dir, "compacted"));
    const snapshots = files.filter((name) => /^snapshot-\d+$/.test(name));
    assert.equal(snapshots.length, 1, `one snapshot in ${files.join(", ")}`);
    const covered = Number(snapshots[0]!.slice("snapshot-".length));
    // Every log segment left starts at or after the snapshot's seq, and none holds a record.
    for (const name of files.filter((file) => file.startsWith("log-"))) {
      assert.ok(Number(name.slice("log-".length)) >= covered, `${name} is covered by ${snapshots[0]}`);
      assert.doesNotMatch(readFileSync(join(dir, "compacted", name), "utf8"), /"e":"Task"/, `${name} holds no Task record`);
    }
    const restarted = await serve("compacted");
    assert.equal(await call(restarted, "GET", "/api/entities/Task/export"), exported.stdout);
  });

  test("a bad record stops the import: its line and field named, nothing of its batch stored, the batches before it kept", async () => {
    const lines = Array.from({ length: 7000 }, (_, i) => JSON.stringify({ title: `bad file ${i}`, priority: i === 6000 ? "high" : i }));
    writeFileSync(join(dir, "bad.ndjson"), lines.join("\n") + "\n");
    const imported = await run(["import", "bad.ndjson", "--entity", "Task", "--data", "partial", "--schema", "entities"]);
    assert.equal(imported.code, 1);
    assert.equal(imported.stdout, "");
    assert.equal(
      imported.stderr,
      'tabula import: Line 6001: Field "priority" must be a whole number (got "high"). Nothing of the batch of lines 5001–7000 was stored. The 5,000 records before it were imported (1 batch).\n',
    );
    const stored = await run(["export", "--data", "partial", "--schema", "entities", "--entity", "Task"]);
    assert.equal(stored.stdout.split("\n").length - 1, 5000);
  });

  test("a record with several bad fields: each printed on a line of its own", async () => {
    writeFileSync(join(dir, "two-bad.ndjson"), `${JSON.stringify({ title: "ok" })}\n${JSON.stringify({ title: 7, priority: "high", done: "yes" })}\n`);
    const refused = await run(["import", "two-bad.ndjson", "--entity", "Task", "--data", "two-bad", "--schema", "entities"]);
    assert.equal(refused.code, 1);
    const lines = refused.stderr.trimEnd().split("\n");
    assert.equal(lines[0], "tabula import: Line 2: 3 fields need mending:");
    assert.match(lines[1]!, /^ {2}- Field "title" must be a string/);
    assert.match(lines[2]!, /^ {2}- Field "priority" must be a whole number \(got "high"\)\.$/);
    assert.match(lines[3]!, /^ {2}- Field "done" must be true or false/);
    assert.match(lines[4]!, /^Nothing of the batch of lines 1–2 was stored\. No record was imported\.$/);
    assert.doesNotMatch(refused.stderr, /details\.errors/);
  });

  test("a JSON array is read element by element, each error at the line its record starts", async () => {
    writeFileSync(join(dir, "array.json"), '[\n  {"title": "one"},\n  {"title": "two",\n   "priority": 2},\n  {\n    "title": "three, with ] and \\"}",\n    "done": "yes"\n  }\n]\n');
    const refused = await run(["import", "array.json", "--entity", "Task", "--data", "array", "--schema", "entities"]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /^tabula import: Line 5: Field "done" must be true or false/);
    writeFileSync(join(dir, "array.json"), '[\n  {"title": "one"},\n  {"title": "two, with ] and \\"}"}\n]\n');
    const imported = await run(["import", "-", "--entity", "Task", "--data", "array", "--schema", "entities"], '[{"title": "from stdin"}]');
    assert.equal(imported.code, 0, imported.stderr);
    const file = await run(["import", "array.json", "--entity", "Task", "--data", "array", "--schema", "entities"]);
    assert.equal(file.code, 0, file.stderr);
    const titles = JSON.parse((await run(["export", "--data", "array", "--schema", "entities", "--entity", "Task", "--format", "json"])).stdout).map((record: any) => record.title);
    assert.deepEqual(titles, ["from stdin", "one", 'two, with ] and "}']);
  });

  test("every entity at once: NDJSON lines name their entity, JSON is an object by entity", async () => {
    const ndjson = await run(["export", "--url", target.url, "--key", KEY]);
    assert.equal(ndjson.code, 0, ndjson.stderr);
    const first = JSON.parse(ndjson.stdout.slice(0, ndjson.stdout.indexOf("\n")));
    assert.equal(first.entity, "Task");
    assert.equal(typeof first.record.id, "string");
    const json = await run(["export", "--url", target.url, "--key", KEY, "--format", "json"]);
    assert.deepEqual(Object.keys(JSON.parse(json.stdout)), ["Task"]);
    assert.equal(JSON.parse(json.stdout).Task.length, 11_990);
  });

  test("bad input: one line, exit 1", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["export", "--data", "source", "--schema", "entities", "--entity", "Task"], /^tabula export: The data folder source is in use by another process .* Ask the running server instead: --url http:\/\/HOST:PORT --key K\.\n$/],
      [["export", "--data", "nowhere", "--schema", "entities"], /^tabula export: There is no data folder nowhere\. Give --data DIR/],
      [["export", "--url", source.url, "--entity", "Task"], /^tabula export: --url needs --key K \(or TABULA_SECRET_KEY\)/],
      [["export", "--url", source.url, "--key", KEY, "--format", "csv"], /^tabula export: A CSV file holds one entity: add --entity E\./],
      [["export", "--url", source.url, "--key", KEY, "--format", "xml"], /^tabula export: --format must be one of ndjson, json, csv/],
      [["export", "--url", source.url, "--key", KEY, "--entity", "Nope"], /^tabula export: Exporting Nope: 404 No entity is named "Nope"/],
      [["export", "--url", source.url, "--key", "wrong", "--entity", "Task"], /^tabula export: Exporting Task: 401 /],
      [["export", "--bogus"], /^tabula export: Unknown option --bogus\. \(npx tabula-server export --help\)\n$/],
      [["import", "--entity", "Task"], /^tabula import: Name the file to import/],
      [["import", "missing.ndjson", "--entity", "Task", "--url", source.url, "--key", KEY], /^tabula import: Cannot read missing\.ndjson \(ENOENT\)/],
      [["import", "tasks.ndjson", "--url", source.url, "--key", KEY], /^tabula import: --entity E names the entity/],
      [["import", "tasks.ndjson", "--entity", "Task", "--url", "http://127.0.0.1:9", "--key", KEY], /^tabula import: Cannot reach http:\/\/127\.0\.0\.1:9 /],
    ];
    for (const [args, expected] of cases) {
      const result = await run(args);
      assert.equal(result.code, 1, args.join(" "));
      assert.match(result.stderr, expected);
      assert.equal(result.stderr.trimEnd().split("\n").length, 1, `one line for ${args.join(" ")}: ${result.stderr}`);
    }
  });

  test("--help shows each command's usage and exits 0", async () => {
    for (const name of ["export", "import"]) {
      const help = await run([name, "--help"]);
      assert.equal(help.code, 0);
      assert.match(help.stdout, new RegExp(`^Usage: npx tabula-server ${name} `));
    }
  });
});
