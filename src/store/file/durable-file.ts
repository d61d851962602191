// Replacing a whole file so that a crash leaves the old file or the complete new one, never an
// empty or half-written one (NeDB's crash-safe write): snapshots and keys.json go through it.

import { open, rename, rm, type FileHandle } from "node:fs/promises";
import { dirname } from "node:path";
import { syncDirectory, writeFully } from "./wal.ts";

export const TEMPORARY_SUFFIX = ".tmp";

/**
 * `write` fills `<path>.tmp`, which is fsync'ed and renamed over `path`; then the folder is
 * fsync'ed, which makes the rename durable. On failure the temporary file is removed.
 */
export async function replaceFile(path: string, write: (handle: FileHandle) => Promise<void>, mode = 0o644): Promise<void> {
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
export function replaceFileWith(path: string, content: string, mode = 0o644): Promise<void> {
  return replaceFile(path, (handle) => writeFully(handle, Buffer.from(content)), mode);
}
