// Who may read a data folder (docs/operating.md, "Start-up and shutdown"): it holds every record and
// the webhooks' signing secrets, so it is made 0700 and each file in it 0600, whatever the umask (left
// alone); one found more open is warned about at start-up, with its chmod, as PostgreSQL checks its own.

import { lstat, mkdir, readdir, stat } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";

export const DATA_FOLDER_MODE = 0o700;
/** Log segments, snapshots, their temporary files, the lock, keys.json, and a backup's copies of them. */
export const DATA_FILE_MODE = 0o600;
/** The bits of a mode that let anyone but the owner in. */
const OTHERS_BITS = 0o077;

/**
 * Makes `dir` 0700 unless it is there (its missing parents as mkdir -p makes them). A folder that
 * is there keeps its mode: checkFolderModes says if it is too open.
 */
export async function makeDataFolder(dir: string): Promise<void> {
  const parent = dirname(resolve(dir));
  if (parent !== resolve(dir)) await mkdir(parent, { recursive: true });
  try {
    await mkdir(dir, { mode: DATA_FOLDER_MODE });
  } catch (error) {
    // A file of that name is no folder: the caller explains the error (lock.ts, explainFolderError).
    if ((error as NodeJS.ErrnoException).code !== "EEXIST" || !(await stat(dir)).isDirectory()) throw error;
  }
}

/**
 * Warns, in one line, when `dir` or a file in it lets other users in. The modes mean nothing on
 * Windows, whose folders are guarded by access lists: nothing is checked there.
 */
export async function checkFolderModes(dir: string, warn: (message: string) => void): Promise<void> {
  if (process.platform === "win32") return;
  // The folder named may be a symbolic link to it: its target's mode is the one that guards.
  const folderMode = (await stat(dir)).mode & 0o777;
  const openFiles: Array<{ name: string; mode: number }> = [];
  for (const name of await readdir(dir)) {
    // A file gone meanwhile (keys.json.lock, a temporary file) is no longer a concern.
    const info = await lstat(join(dir, name)).catch(() => null);
    // A symbolic link's own mode is always 0777 and guards nothing: its target is elsewhere.
    if (info === null || info.isSymbolicLink()) continue;
    if ((info.mode & OTHERS_BITS) !== 0) openFiles.push({ name, mode: info.mode & 0o777 });
  }
  const isFolderOpen = (folderMode & OTHERS_BITS) !== 0;
  if (!isFolderOpen && openFiles.length === 0) return;
  const what: string[] = [];
  if (isFolderOpen) what.push(`the folder is ${octal(folderMode)}`);
  const [first] = openFiles;
  if (first !== undefined) {
    what.push(openFiles.length === 1 ? `${first.name} is ${octal(first.mode)}` : `${openFiles.length} files in it, such as ${first.name}, are ${octal(first.mode)}`);
  }
  warn(
    `The data folder ${dir} is open to other users of this machine (${what.join("; ")}), and it holds every record and the webhooks' signing secrets. ` +
      `Mend it with: chmod -R go-rwx ${shellWord(dir)}`,
  );
}

function octal(mode: number): string {
  return `0${mode.toString(8).padStart(3, "0")}`;
}

/** A path as one shell word: as it is when it is plain, else in single quotes. */
function shellWord(path: string): string {
  return /^[\w./@%+=:,-]+$/.test(path) ? path : `'${path.replaceAll("'", `'\\''`)}'`;
}
