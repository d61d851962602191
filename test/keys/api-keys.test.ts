// keys.json (docs/api.md): generated keys are kept in the data folder, written so that a crash
// leaves either the old file or the whole new one (issue 16, defect 6).

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, readlinkSync } from "node:fs";
import { mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { createServer } from "../../src/server.ts";
import { TASK } from "../support/server.ts";

let root: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "tabula-keys-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

interface SyncSeen {
  readonly path: string;
  readonly hasKeysFile: boolean;
  readonly hasTemporary: boolean;
}

/** Records every FileHandle.sync() while `run` runs: which file, and what the folder held then. */
async function watchSyncs(dataDir: string, run: () => Promise<void>): Promise<SyncSeen[]> {
  const probe = await open(join(root, "probe"), "w");
  const prototype = Object.getPrototypeOf(probe) as { sync(): Promise<void> };
  await probe.close();
  const sync = prototype.sync;
  const seen: SyncSeen[] = [];
  prototype.sync = function (this: { fd: number }) {
    const keysFile = join(dataDir, "keys.json");
    seen.push({ path: readlinkSync(`/proc/self/fd/${this.fd}`), hasKeysFile: existsSync(keysFile), hasTemporary: existsSync(`${keysFile}.tmp`) });
    return sync.call(this);
  };
  try {
    await run();
  } finally {
    prototype.sync = sync;
  }
  return seen;
}

test("keys.json is written crash-safe: the temporary file is fsync'ed before its rename and the folder after it (issue 16, defect 6)", { skip: existsSync("/proc/self/fd") ? false : "needs /proc/self/fd to name synced files" }, async () => {
  const dataDir = join(root, "data");
  let keys: { secretKey: string; publishableKey: string } | undefined;
  const seen = await watchSyncs(dataDir, async () => {
    const server = await createServer({ schema: { Task: TASK }, data: dataDir, port: 0 });
    keys = { secretKey: server.secretKey, publishableKey: server.publishableKey };
    await server.close();
  });
  const keysFile = join(dataDir, "keys.json");
  const fileSync = seen.findIndex((s) => s.path === `${keysFile}.tmp` && !s.hasKeysFile);
  assert.ok(fileSync >= 0, `the new keys were fsync'ed under the temporary name before the rename; syncs seen: ${JSON.stringify(seen)}`);
  const folderSync = seen.findIndex((s, i) => i > fileSync && s.path === dataDir && s.hasKeysFile && !s.hasTemporary);
  assert.ok(folderSync >= 0, `the folder was fsync'ed after the rename; syncs seen: ${JSON.stringify(seen)}`);
  const stored = JSON.parse(readFileSync(keysFile, "utf8")) as Array<{ kind: string; sha256: string }>;
  // Kept as hashes only (docs/operating.md, "keys.json").
  const sha256 = (key: string) => createHash("sha256").update(key).digest("hex");
  assert.deepEqual(stored.map(({ kind, sha256 }) => [kind, sha256]), [["secret", sha256(keys!.secretKey)], ["publishable", sha256(keys!.publishableKey)]]);
});
