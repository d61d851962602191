// Replacing a whole file so that a crash leaves the old file or the complete new one, never an
// empty or half-written one (NeDB's crash-safe write): snapshots and keys.json go through it.
// Beside it, the two steps it is made of, which the write-ahead log and backups take too: writing a
// whole buffer (writeFully) and making a folder's names durable (syncDirectory).

import { open, rename, rm, type FileHandle } from "node:fs/promises";
import { dirname } from "node:path";

export const TEMPORARY_SUFFIX = ".tmp";
/** What the files replaced here hold (records, keys' hashes) is the owner's alone: 0600 unless asked otherwise. */
const PRIVATE_FILE_MODE = 0o600;

/**
 * `write` fills `<path>.tmp`, which is fsync'ed and renamed over `path`; then the folder is
 * fsync'ed, which makes the rename durable. On failure the temporary file is removed.
 */
export async function replaceFile(path: string, write: (handle: FileHandle) => Promise<void>, mode = PRIVATE_FILE_MODE): Promise<void> {
  const temporary = path + TEMPORARY_SUFFIX;
  const handle = await open(temporary, "w", mode);
  try {
    await write(handle);
    await handle.sync();
  } catch (error) {
    await handle.close();
    await rm(temporary, { force: true });
    throw error;
  }
  await handle.close();
  await rename(temporary, path);
  await syncDirectory(dirname(path));
}

/** replaceFile with the whole content at hand. */
export function replaceFileWith(path: string, content: string, mode = PRIVATE_FILE_MODE): Promise<void> {
  return replaceFile(path, (handle) => writeFully(handle, Buffer.from(content)), mode);
}

/** Writes the whole buffer, at `position` or at the file's offset: a write may take fewer bytes than asked. */
export async function writeFully(handle: FileHandle, buffer: Buffer, position: number | null = null): Promise<void> {
  let offset = 0;
  while (offset < buffer.length) {
    const { bytesWritten } = await handle.write(buffer, offset, buffer.length - offset, position === null ? null : position + offset);
    offset += bytesWritten;
  }
}

/** Makes created, renamed and removed names in a folder durable. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
