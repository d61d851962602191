// The file store's key vault: <data>/keys.json (docs/operating.md, "keys.json"), written 0600 and
// crash-safe, holding hashes only. A server and `tabula-server keys --data` beside it change it in
// turns, under keys.json.lock; the server notices another's change by the file's mtime.

import { existsSync } from "node:fs";
import { open, readFile, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import { replaceFileWith } from "../disk/durable-file.ts";
import type { KeyUpdate, KeyUpdated, KeyVault } from "./key-vault.ts";
import { checkStoredKeys, KeyError, type StoredKey } from "./stored-keys.ts";

/** A server looks at keys.json's mtime this often: a change made beside it counts within a second. */
const KEYS_FILE_POLL_MS = 250;
/** A change waits at most this long for another's to end... */
const LOCK_WAIT_MS = 10_000;
/** ...and takes over a lock older than this (its holder died mid-change: a change takes milliseconds). */
const STALE_LOCK_MS = 5_000;
const LOCK_RETRY_MS = 10;

export const KEYS_FILE = "keys.json";

export function keysFileVault(dataDir: string): KeyVault {
  const file = join(dataDir, KEYS_FILE);
  const lockFile = `${file}.lock`;
  /** The version of keys.json last read or written (inode, mtime, size); null before the first. */
  let seen: string | null = null;

  const read = async (): Promise<{ keys: StoredKey[]; upgraded: number }> => {
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return { keys: [], upgraded: 0 };
      throw error;
    }
    let entries: unknown;
    try {
      entries = JSON.parse(text);
    } catch (error) {
      throw new KeyError(`${file} is not valid JSON (${(error as Error).message}); fix it, or delete it to have new keys generated.`);
    }
    return checkStoredKeys(entries, file);
  };

  return {
    where: file,
    pollMs: KEYS_FILE_POLL_MS,
    async update<T>(change: (stored: readonly StoredKey[]) => KeyUpdate<T>): Promise<KeyUpdated<T>> {
      const release = await lock(lockFile);
      try {
        const { keys: stored, upgraded } = await read();
        const { keys, value } = change(stored);
        const kept = keys ?? stored;
        if (keys !== null || upgraded > 0) await replaceFileWith(file, JSON.stringify(kept, null, 2) + "\n", 0o600);
        seen = await versionOf(file);
        return { keys: kept, value, upgraded };
      } finally {
        await release();
      }
    },
    async poll() {
      const version = await versionOf(file);
      if (version === seen) return null;
      const { keys } = await read();
      seen = version;
      return keys;
    },
    close: async () => {},
  };
}

async function versionOf(file: string): Promise<string> {
  try {
    const { ino, mtimeMs, size } = await stat(file);
    return `${ino}:${mtimeMs}:${size}`;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return "none";
    throw error;
  }
}

/** Takes keys.json.lock (created exclusively); resolves to its release. */
async function lock(lockFile: string): Promise<() => Promise<void>> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const handle = await open(lockFile, "wx", 0o600);
      await handle.writeFile(String(process.pid));
      await handle.close();
      return () => unlink(lockFile).catch(() => {});
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const age = await stat(lockFile).then((found) => Date.now() - found.mtimeMs, () => 0);
    if (age > STALE_LOCK_MS && existsSync(lockFile)) {
      await unlink(lockFile).catch(() => {});
      continue;
    }
    if (Date.now() > deadline) throw new KeyError(`${lockFile} has been held for ${Math.round(age / 1000)} s: another change of the keys is under way, or one stopped half-way; delete the file if no tabula is changing keys.`);
    await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS));
  }
}
