// One process per data folder: `<dir>/LOCK` holds the pid of the process serving it. A lock whose
// pid is gone (a crash, kill -9) is stale and taken over. It knows nothing of what the folder holds.
// Before the lock, prepareDataFolder makes the folder, or says in words why it cannot be one.

import { constants } from "node:fs";
import { access, open, readFile, rm, stat } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { DATA_FILE_MODE, makeDataFolder } from "./folder-modes.ts";

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
    handle = await open(path, "wx", DATA_FILE_MODE);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw (await explainFolderError(dirname(path), error as NodeJS.ErrnoException)) ?? error;
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

/** Why a data folder cannot be used; the code never changes, the words may. */
export type DataFolderProblem = "not_a_folder" | "under_a_file" | "not_writable";

/**
 * A data folder that cannot be one. Its message says "The data folder DIR: ..."; namedBy() says
 * the same after whatever named the folder (--data DIR, TABULA_DATA=DIR), which only the caller knows.
 */
export class DataFolderError extends Error {
  constructor(
    readonly dir: string,
    readonly problem: DataFolderProblem,
    private readonly why: string,
    private readonly remedy: string,
  ) {
    super(`The data folder ${dir}: ${why}. ${remedy}.`);
  }

  namedBy(given: string): string {
    return `${given}: ${this.why}. ${this.remedy}.`;
  }
}

/**
 * Makes `dir` (0700, and its parents) unless it is there, and checks that this process may write in it,
 * so that a folder that cannot serve is refused before anything is written into it.
 */
export async function prepareDataFolder(dir: string): Promise<void> {
  try {
    await makeDataFolder(dir);
    // As root this passes for a folder without write permission, as writing there would.
    await access(dir, constants.W_OK);
  } catch (error) {
    throw (await explainFolderError(dir, error as NodeJS.ErrnoException)) ?? error;
  }
}

/** `error`, met making or writing in `dir`, as a DataFolderError; null when it is something else. */
async function explainFolderError(dir: string, error: NodeJS.ErrnoException): Promise<DataFolderError | null> {
  const found = await nearestExisting(dir);
  if (error.code === "EEXIST" || error.code === "ENOTDIR") {
    if (found === null || found.isFolder) return null;
    if (found.path === resolve(dir)) return new DataFolderError(dir, "not_a_folder", "it is a file, not a folder", "Name a folder (a missing one is made), or move the file away");
    return new DataFolderError(dir, "under_a_file", `${found.path} is a file, so no folder can be made in it`, "Name a folder whose parents are folders");
  }
  if (error.code !== "EACCES" && error.code !== "EPERM" && error.code !== "EROFS") return null;
  const where = found === null || found.path === resolve(dir) ? "in it" : `in ${found.path}, to make it`;
  const who = process.getuid ? `this process (uid ${process.getuid()})` : "this process";
  const why = error.code === "EROFS" ? `it is on a read-only file system` : `${who} may not write ${where} (${error.code}), and the file store keeps its lock, log and keys.json there`;
  const remedy = error.code === "EROFS" ? "Name a folder on a writable file system" : `Name a folder it may write in, or let it write there (chown or chmod ${found?.path ?? dir})`;
  return new DataFolderError(dir, "not_writable", why, remedy);
}

/** `dir` or the nearest of its parents that exists, and whether it is a folder; null when none can be read. */
async function nearestExisting(dir: string): Promise<{ path: string; isFolder: boolean } | null> {
  for (let path = resolve(dir); ; path = dirname(path)) {
    const info = await stat(path).catch(() => null);
    if (info !== null) return { path, isFolder: info.isDirectory() };
    if (dirname(path) === path) return null;
  }
}
