// Backups of a data folder (docs/operating.md): the files of one consistent point (the snapshot, the log
// segments after it up to a whole entry, keys.json) copied into a temporary folder beside the
// target, fsynced, then renamed into place, so that a half-made backup never bears the target's
// name. Which point, and holding its files open, is the caller's: the file store (a running
// server, see FileStore.backup) or folder-point.ts (a folder on disk). This module only copies.

import { closeSync, openSync, read } from "node:fs";
import { mkdir, open, readdir, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { syncDirectory, writeFully } from "../../disk/durable-file.ts";
import { DATA_FILE_MODE, DATA_FOLDER_MODE } from "./folder-modes.ts";

/** Files are copied this much at a time: big enough to stream, small enough to share the disk with the log's writes. */
const COPY_CHUNK_BYTES = 1024 * 1024;
/**
 * The copy is synced every this many bytes, not only at the end: one fsync of a 100 MiB file puts
 * it all on the disk at once, and the log's durable writes wait behind it.
 */
const SYNC_EVERY_BYTES = 8 * 1024 * 1024;
const KEYS_FILE = "keys.json";
const readAt = promisify(read);

/** One file of a point, held open: its first `bytes` bytes are copied, whatever is written after them. */
export interface HeldFile {
  readonly name: string;
  readonly fd: number;
  readonly bytes: number;
}

/** What a backup copies. The files stay readable even if a compaction deletes their names meanwhile. */
export interface BackupPoint {
  readonly files: readonly HeldFile[];
  /** The last log entry included (0 when there is none). */
  readonly seq: number;
  /** keys.json as read, or null when the folder has none yet. */
  readonly keysJson: Buffer | null;
}

/**
 * More of the data folder copied into the backup's temporary folder before it is synced and renamed
 * (files/, the uploads): the bytes copied, and the names made, for the summary.
 */
export type BackupExtra = (into: string) => Promise<{ readonly bytes: number; readonly names: readonly string[] }>;

/** What POST /api/admin/backup answers and tabula backup prints. */
export interface BackupSummary {
  readonly to: string;
  readonly seq: number;
  readonly bytes: number;
  readonly files: readonly string[];
  /** Live records per entity in the copy. */
  readonly records: Record<string, number>;
  readonly ms: number;
}

/** The target cannot take a backup: it exists and holds files, or it cannot be made. */
export class BackupTargetError extends Error {
  constructor(
    message: string,
    readonly isNotEmpty: boolean,
  ) {
    super(message);
  }
}

/** Opens `names` in `dir` at once (each `[name, bytes]`); throws (closing what it opened) if one is gone. */
export function holdFiles(dir: string, names: ReadonlyArray<readonly [string, number]>): HeldFile[] {
  const held: HeldFile[] = [];
  try {
    for (const [name, bytes] of names) held.push({ name, fd: openSync(join(dir, name), "r"), bytes });
  } catch (error) {
    releaseFiles(held);
    throw error;
  }
  return held;
}

export function releaseFiles(files: readonly HeldFile[]): void {
  for (const { fd } of files) closeSync(fd);
}

/** keys.json of `dir`, or null when there is none. */
export async function readKeysJson(dir: string): Promise<Buffer | null> {
  const handle = await open(join(dir, KEYS_FILE), "r").catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return null;
    throw error;
  });
  if (!handle) return null;
  try {
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/** Refuses a target that exists and is not an empty folder, before anything is copied. */
export async function checkBackupTarget(to: string): Promise<void> {
  let isDirectory: boolean;
  try {
    isDirectory = (await stat(to)).isDirectory();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw unusableTarget(to, error);
  }
  if (!isDirectory) throw new BackupTargetError(`The backup target ${to} exists and is a file; give a new folder, or an empty one.`, true);
  if ((await readdir(to)).length > 0) throw notEmpty(to);
}

/**
 * Copies the point into `to` (a new folder, or an empty one): everything goes to a temporary folder
 * beside it, each file and the folder fsynced, renamed to `to`, and `to`'s parent fsynced, so a
 * crash leaves either no backup or a whole one. Answers the bytes copied.
 */
export async function writeBackup(point: BackupPoint, to: string, copyMore?: BackupExtra): Promise<{ bytes: number; extraNames: readonly string[] }> {
  const target = resolve(to);
  const parent = dirname(target);
  const temporary = join(parent, `.${basename(target)}.tmp-${process.pid}-${Date.now()}`);
  try {
    const made = await mkdir(parent, { recursive: true });
    if (made !== undefined) await syncDirectory(dirname(made));
    // Renamed to the target at the end: the backup is a data folder like the one it copies.
    await mkdir(temporary, { mode: DATA_FOLDER_MODE });
  } catch (error) {
    throw unusableTarget(to, error);
  }
  let bytes = 0;
  let extraNames: readonly string[] = [];
  try {
    for (const file of point.files) bytes += await copyHeld(file, join(temporary, file.name));
    if (point.keysJson) bytes += await writeSynced(join(temporary, KEYS_FILE), point.keysJson, DATA_FILE_MODE);
    if (copyMore) {
      const extra = await copyMore(temporary);
      bytes += extra.bytes;
      extraNames = extra.names;
    }
    await syncDirectory(temporary);
    await renameIntoPlace(temporary, target, to);
    await syncDirectory(parent);
  } catch (error) {
    await rm(temporary, { recursive: true, force: true });
    throw error;
  }
  return { bytes, extraNames };
}

/** The first `file.bytes` bytes of a held file into a new file, fsynced. */
async function copyHeld(file: HeldFile, path: string): Promise<number> {
  const out = await open(path, "wx", DATA_FILE_MODE);
  try {
    const buffer = Buffer.allocUnsafe(Math.min(COPY_CHUNK_BYTES, Math.max(file.bytes, 1)));
    for (let position = 0; position < file.bytes; ) {
      const { bytesRead } = await readAt(file.fd, buffer, 0, Math.min(buffer.length, file.bytes - position), position);
      if (bytesRead === 0) throw new Error(`${file.name} ended at byte ${position} while it was being copied, before the ${file.bytes} bytes it held; was it truncated by hand?`);
      await writeFully(out, buffer.subarray(0, bytesRead));
      position += bytesRead;
      if (position % SYNC_EVERY_BYTES < bytesRead) await out.datasync();
    }
    await out.sync();
  } finally {
    await out.close();
  }
  return file.bytes;
}

async function writeSynced(path: string, content: Buffer, mode: number): Promise<number> {
  const out = await open(path, "wx", mode);
  try {
    await writeFully(out, content);
    await out.sync();
  } finally {
    await out.close();
  }
  return content.length;
}

/** rename(2) replaces an empty folder, and refuses one that has gained files since the check. */
async function renameIntoPlace(temporary: string, target: string, to: string): Promise<void> {
  try {
    await rename(temporary, target);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOTEMPTY" || code === "EEXIST" || code === "ENOTDIR" || code === "EISDIR") throw notEmpty(to);
    throw error;
  }
}

function notEmpty(to: string): BackupTargetError {
  return new BackupTargetError(`The backup target ${to} exists and is not empty; give a new folder (such as one named by the date), or empty it first.`, true);
}

function unusableTarget(to: string, error: unknown): BackupTargetError {
  return new BackupTargetError(`The backup target ${to} cannot be made: ${(error as Error).message}`, false);
}
