// One process per data folder: `<dir>/LOCK` holds the pid of the process serving it. A lock whose
// pid is gone (a crash, kill -9) is stale and taken over. It knows nothing of what the folder holds.

import { open, readFile, rm } from "node:fs/promises";
import { join, resolve } from "node:path";

const LOCK_FILE = "LOCK";
const MAX_ATTEMPTS = 3;

/** Lock files this process holds: a LOCK with our own pid that is not listed is from an earlier run. */
const heldHere = new Set<string>();

export interface DirectoryLock {
  readonly path: string;
  release(): Promise<void>;
}

export async function acquireLock(dir: string): Promise<DirectoryLock> {
  const path = join(resolve(dir), LOCK_FILE);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    if (await tryCreate(path)) {
      heldHere.add(path);
      return { path, release: () => releaseLock(path) };
    }
    const holder = await readHolder(path);
    if (holder !== undefined && isHeld(path, holder)) {
      const who = holder === process.pid ? "this process (open twice)" : `another process (pid ${holder})`;
      throw new Error(
        `The data folder ${dir} is in use by ${who}: only one server may use a folder at a time. ` +
          `Stop it, or use another --data folder. If pid ${holder} is not a tabula server, delete ${path}.`,
      );
    }
    // Stale: its process is gone. Two servers taking over the same stale lock in the same instant
    // could both succeed; that race needs two starts within microseconds and is accepted.
    await rm(path, { force: true });
  }
  throw new Error(`Could not take the lock ${path}: it keeps reappearing. Is another server starting on the same folder?`);
}

/**
 * The pid of the live process holding `dir`'s lock (this one included), or undefined when it is
 * free or stale; it takes nothing (tabula verify and backup read beside a running server).
 */
export async function findLockHolder(dir: string): Promise<number | undefined> {
  const path = join(resolve(dir), LOCK_FILE);
  const holder = await readHolder(path);
  return holder !== undefined && isHeld(path, holder) ? holder : undefined;
}

async function tryCreate(path: string): Promise<boolean> {
  let handle;
  try {
    handle = await open(path, "wx");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
  try {
    await handle.writeFile(`${process.pid}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  return true;
}

/** The pid in the lock file; undefined when it is gone or unreadable (a crash while creating it). */
async function readHolder(path: string): Promise<number | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const pid = Number(text.trim());
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

function isHeld(path: string, pid: number): boolean {
  // Our own pid in a lock we did not take: an earlier run that had the same pid (containers).
  if (pid === process.pid) return heldHere.has(path);
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else; it is alive.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function releaseLock(path: string): Promise<void> {
  if (!heldHere.delete(path)) return;
  // Remove it only while it is still ours: never someone else's lock taken over meanwhile.
  if ((await readHolder(path)) === process.pid) await rm(path, { force: true });
}
