// The data folder is its owner's alone (docs/operating.md, "Start-up and shutdown"): made 0700, and
// every file in it 0600 (log segments, snapshots, LOCK, keys.json, a backup's copies), whatever the
// umask; a folder or file found more open at start-up is warned about in one line naming the chmod.
// Through the HTTP interface of a server on a data folder, then the file store alone for a snapshot.

import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { FileStore } from "../../src/store/file/file-store.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

const modeOf = (path: string): number => statSync(path).mode & 0o777;

/** Each name in `dir` with its mode, for messages. */
function modesIn(dir: string): Record<string, string> {
  return Object.fromEntries(readdirSync(dir).map((name) => [name, modeOf(join(dir, name)).toString(8)]));
}

function assertPrivate(dir: string): void {
  assert.equal(modeOf(dir), 0o700, `${dir} is ${modeOf(dir).toString(8)}`);
  const names = readdirSync(dir);
  assert.ok(names.length > 0, `${dir} holds files`);
  for (const name of names) assert.equal(modeOf(join(dir, name)), 0o600, `${name}: ${JSON.stringify(modesIn(dir))}`);
}

describe("the data folder's modes", () => {
  let root: string;
  let umask: number;
  before(() => {
    root = mkdtempSync(join(tmpdir(), "tabula-modes-"));
    // The most open umask: the modes must not come from it.
    umask = process.umask(0);
  });
  after(() => {
    process.umask(umask);
    rmSync(root, { recursive: true, force: true });
  });

  async function start(dir: string, warnings: string[]): Promise<TestServer> {
    return startTestServer({ memory: false, data: dir, warn: (message) => warnings.push(message) });
  }

  test("a new folder is 0700 and every file in it 0600 after start and writes, and a backup's copy too", async () => {
    const dir = join(root, "nested", "data");
    const warnings: string[] = [];
    const server = await start(dir, warnings);
    try {
      for (let n = 0; n < 3; n++) assert.equal((await server.call("POST", "/api/entities/Task", { body: { title: `t${n}` } })).status, 201);
      assert.equal((await server.call("POST", "/api/keys", { body: { kind: "publishable", name: "browser" } })).status, 201);
      assertPrivate(dir);
      for (const name of ["LOCK", "keys.json"]) assert.ok(readdirSync(dir).includes(name), `${name} in ${readdirSync(dir)}`);
      const to = join(root, "backups", "first");
      const backup = await server.call("POST", "/api/admin/backup", { body: { to } });
      assert.equal(backup.status, 200, backup.text);
      assertPrivate(to);
    } finally {
      await server.close();
    }
    // The parents made on the way are ordinary folders (mkdir -p); the folder itself is private.
    assert.equal(modeOf(join(root, "nested")), 0o777);
    assert.deepEqual(warnings.filter((warning) => /open to other users/.test(warning)), []);
  });

  test("a snapshot and its log segments are 0600", async () => {
    const dir = join(root, "compacted");
    const store = await FileStore.open({ dir, valueIndexed: new Map(), warn: (message) => assert.fail(message) });
    try {
      const row = { id: "r1", rev: 1, deleted: false, data: { id: "r1", title: "x" } };
      await store.commit({ puts: [{ entity: "Task", row }] });
      await store.compact();
      await store.commit({ puts: [{ entity: "Task", row: { ...row, rev: 2, data: { id: "r1", title: "y" } } }] });
      assert.ok(readdirSync(dir).some((name) => name.startsWith("snapshot")), JSON.stringify(modesIn(dir)));
      assertPrivate(dir);
    } finally {
      await store.close();
    }
  });

  test("a file or folder others may read is warned about at start-up, once, naming the chmod that mends it", async () => {
    const dir = join(root, "opened");
    const first = await start(dir, []);
    assert.equal((await first.call("POST", "/api/entities/Task", { body: { title: "kept" } })).status, 201);
    await first.close();
    const segment = readdirSync(dir).find((name) => name !== "keys.json" && name !== "LOCK")!;
    chmodSync(join(dir, segment), 0o644);

    const warnings: string[] = [];
    const second = await start(dir, warnings);
    try {
      const modes = warnings.filter((warning) => /open to other users/.test(warning));
      assert.equal(modes.length, 1, JSON.stringify(warnings));
      assert.match(modes[0]!, new RegExp(`${segment} is 0644`));
      assert.ok(modes[0]!.endsWith(`chmod -R go-rwx ${dir}`), modes[0]);
      assert.ok(!modes[0]!.includes("\n"), "one line");
      // Warned, not mended, and the server serves.
      assert.equal(modeOf(join(dir, segment)), 0o644);
      assert.equal((await second.call("GET", "/api/entities/Task")).body.length, 1);
    } finally {
      await second.close();
    }

    chmodSync(dir, 0o755);
    const third: string[] = [];
    await (await start(dir, third)).close();
    const [line] = third.filter((warning) => /open to other users/.test(warning));
    assert.match(line ?? "", /the folder is 0755; .* is 0644/);

    chmodSync(dir, 0o700);
    chmodSync(join(dir, segment), 0o600);
    const mended: string[] = [];
    await (await start(dir, mended)).close();
    assert.deepEqual(mended.filter((warning) => /open to other users/.test(warning)), []);
  });
});
