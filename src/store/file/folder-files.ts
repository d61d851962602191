// The file store's files (docs/operating.md, "Files"): the data folder's files/ holds each file as
// <id> (its bytes) and <id>.json (its description). An upload is written to .tmp-<id>, fsynced and
// renamed to <id>, the folder fsynced, and only then is <id>.json written (temporary file, fsync,
// rename, fsync): a file is listed only once its bytes are durable. A delete removes <id>.json
// first. Start-up removes what a crash left half done: temporary files, and bytes with no description.

import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, open, readdir, readFile, rename, rm, stat, statfs, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { replaceFileWith, syncDirectory, writeFully } from "../../disk/durable-file.ts";
import { DATA_FILE_MODE, DATA_FOLDER_MODE } from "./folder-modes.ts";
import { ApiError } from "../../errors.ts";
import { compareFiles, isFileId, parseFileInfo, type FileDraft, type FileInfo, type FilePage, type FileStorage } from "../file-storage.ts";

export const FILES_FOLDER = "files";
const UPLOAD_PREFIX = ".tmp-";
const DESCRIPTION_SUFFIX = ".json";
/** Bytes read at a time when a file is served. */
const READ_CHUNK_BYTES = 64 * 1024;
/**
 * Disk space uploads leave to the records: an upload that would leave less is refused (507), so
 * that visitors' uploads can never fill the disk the log must grow on. Checked at the start and
 * after each RESERVE_CHECK_BYTES written.
 */
const DISK_RESERVE_BYTES = 512 * 1024 * 1024;
const RESERVE_CHECK_BYTES = 8 * 1024 * 1024;

export class FolderFiles implements FileStorage {
  /** Whether files/ is known to exist: it is made at the first upload, so a folder that never had one has none. */
  private isMade: boolean;
  /** The bytes of the files described, kept as they change: every upload asks (usedBytes). */
  private keptBytes = 0;

  private constructor(
    private readonly dataDir: string,
    private readonly folder: string,
    private readonly files: Map<string, FileInfo>,
    isMade: boolean,
  ) {
    this.isMade = isMade;
    for (const info of files.values()) this.keptBytes += info.size;
  }

  /** Reads `<dataDir>/files` when there is one, and clears what a crash left (see the top). */
  static async open(dataDir: string, warn: (message: string) => void): Promise<FolderFiles> {
    const folder = join(dataDir, FILES_FOLDER);
    const { files, leftovers, unreadable, isPresent } = await readFolder(folder);
    for (const why of unreadable) warn(`${why}; it is not served (restore the data folder's files/ from a backup)`);
    for (const name of leftovers) await rm(join(folder, name), { force: true });
    if (leftovers.length > 0) await syncDirectory(folder);
    return new FolderFiles(dataDir, folder, new Map(files.map((info) => [info.id, info])), isPresent);
  }

  async begin(id: string): Promise<FileDraft> {
    if (!this.isMade) {
      const made = await mkdir(this.folder, { mode: DATA_FOLDER_MODE, recursive: true });
      if (made !== undefined) await syncDirectory(this.dataDir);
      this.isMade = true;
    }
    await this.checkReserve();
    const upload = join(this.folder, UPLOAD_PREFIX + id);
    const handle = await open(upload, "wx", DATA_FILE_MODE);
    let unchecked = 0;
    let isClosed = false;
    const close = async (): Promise<void> => {
      if (isClosed) return;
      isClosed = true;
      await handle.close();
    };
    return {
      write: async (piece) => {
        unchecked += piece.length;
        if (unchecked >= RESERVE_CHECK_BYTES) {
          unchecked = 0;
          await this.checkReserve();
        }
        await writeFully(handle, piece);
      },
      commit: async (info) => {
        await handle.sync();
        await close();
        await rename(upload, join(this.folder, id));
        await syncDirectory(this.folder);
        await replaceFileWith(join(this.folder, id + DESCRIPTION_SUFFIX), JSON.stringify(info), DATA_FILE_MODE);
        this.files.set(id, info);
        this.keptBytes += info.size;
      },
      // Also after a commit that failed midway: its bytes may have been renamed already (never described).
      discard: async () => {
        await close().catch(() => undefined);
        await rm(upload, { force: true });
        if (!this.files.has(id)) await rm(join(this.folder, id), { force: true });
      },
    };
  }

  private async checkReserve(): Promise<void> {
    const { bavail, bsize } = await statfs(this.folder);
    if (bavail * bsize >= DISK_RESERVE_BYTES) return;
    throw new ApiError(507, "insufficient_storage", `The data folder's disk has less than ${DISK_RESERVE_BYTES / 1024 / 1024} MiB free, which uploads leave to the records: this file was not stored. Free some space (or delete files: DELETE /api/files/<id>), then retry.`);
  }

  async info(id: string): Promise<FileInfo | undefined> {
    return this.files.get(id);
  }

  read(info: FileInfo, start: number, end: number): Readable {
    return createReadStream(join(this.folder, info.id), { start, end, highWaterMark: READ_CHUNK_BYTES });
  }

  async usedBytes(): Promise<number> {
    return this.keptBytes;
  }

  async list(offset: number, limit: number): Promise<FilePage> {
    const all = [...this.files.values()].sort(compareFiles);
    return { files: all.slice(offset, offset + limit), total: all.length };
  }

  /** The description first: a crash between the two leaves bytes that start-up removes. */
  async delete(id: string): Promise<boolean> {
    const info = this.files.get(id);
    if (info === undefined) return false;
    this.files.delete(id);
    this.keptBytes -= info.size;
    await rm(join(this.folder, id + DESCRIPTION_SUFFIX), { force: true });
    await syncDirectory(this.folder);
    await rm(join(this.folder, id), { force: true });
    await syncDirectory(this.folder);
    return true;
  }

  async close(): Promise<void> {}
}

interface FolderListing {
  readonly files: FileInfo[];
  /** Temporary files, and bytes with no description: what a crash left. */
  readonly leftovers: string[];
  /** Descriptions that do not read, or whose bytes are missing or of another size. */
  readonly unreadable: string[];
  readonly isPresent: boolean;
}

/** What `folder` holds; an absent folder holds nothing. */
export async function readFolder(folder: string): Promise<FolderListing> {
  const names = await readdir(folder).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return null;
    throw error;
  });
  if (names === null) return { files: [], leftovers: [], unreadable: [], isPresent: false };
  const present = new Set(names);
  const files: FileInfo[] = [];
  const leftovers: string[] = [];
  const unreadable: string[] = [];
  const described = new Set<string>();
  for (const name of names) {
    if (name.startsWith(UPLOAD_PREFIX) || name.endsWith(".tmp")) {
      leftovers.push(name);
      continue;
    }
    if (!name.endsWith(DESCRIPTION_SUFFIX) || !isFileId(name.slice(0, -DESCRIPTION_SUFFIX.length))) continue;
    const id = name.slice(0, -DESCRIPTION_SUFFIX.length);
    described.add(id);
    const where = join(folder, name);
    try {
      const info = parseFileInfo(JSON.parse(await readFile(where, "utf8")), where);
      if (info.id !== id) throw new Error(`${where} describes the file ${info.id}, not ${id}`);
      if (!present.has(id)) throw new Error(`${where} describes a file whose bytes (${id}) are missing`);
      const size = (await stat(join(folder, id))).size;
      if (size !== info.size) throw new Error(`${join(folder, id)} holds ${size} bytes, but its description says ${info.size}`);
      files.push(info);
    } catch (error) {
      unreadable.push(error instanceof SyntaxError ? `${where} is not JSON (${error.message})` : (error as Error).message);
    }
  }
  for (const name of names) if (isFileId(name) && !described.has(name)) leftovers.push(name);
  return { files, leftovers, unreadable, isPresent: true };
}

/**
 * Copies the files described in `<dataDir>/files` into `<intoDir>/files` (a backup being made),
 * each fsynced, then the folder; no folder when there is no file. A file deleted meanwhile is left
 * out. Answers the bytes copied and the names made in `intoDir`.
 */
export async function copyStoredFiles(dataDir: string, intoDir: string): Promise<{ readonly bytes: number; readonly names: readonly string[] }> {
  const from = join(dataDir, FILES_FOLDER);
  const into = join(intoDir, FILES_FOLDER);
  const { files } = await readFolder(from);
  if (files.length === 0) return { bytes: 0, names: [] };
  await mkdir(into, { mode: DATA_FOLDER_MODE });
  let bytes = 0;
  for (const info of files) {
    try {
      bytes += await copySynced(join(from, info.id), join(into, info.id));
      bytes += await copySynced(join(from, info.id + DESCRIPTION_SUFFIX), join(into, info.id + DESCRIPTION_SUFFIX));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      await rm(join(into, info.id), { force: true });
    }
  }
  await syncDirectory(into);
  return { bytes, names: [FILES_FOLDER] };
}

async function copySynced(from: string, to: string): Promise<number> {
  const source = await open(from, "r");
  let out: FileHandle | null = null;
  try {
    out = await open(to, "wx", DATA_FILE_MODE);
    const buffer = Buffer.allocUnsafe(1024 * 1024);
    let copied = 0;
    for (;;) {
      const { bytesRead } = await source.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      await writeFully(out, buffer.subarray(0, bytesRead));
      copied += bytesRead;
    }
    await out.sync();
    return copied;
  } finally {
    await out?.close();
    await source.close();
  }
}

/** What tabula verify reports of a data folder's files. */
export interface FilesCheck {
  readonly files: number;
  readonly bytes: number;
  /** Bytes whose size or SHA-256 differ from their description, descriptions that do not read. */
  readonly damage: ReadonlyArray<{ readonly file: string; readonly why: string }>;
  /** What start-up removes by itself: an upload or a delete a crash cut short. */
  readonly leftovers: readonly string[];
}

/** Reads every file of `<dataDir>/files` back and checks its size and SHA-256 against its description. */
export async function checkStoredFiles(dataDir: string): Promise<FilesCheck> {
  const folder = join(dataDir, FILES_FOLDER);
  const { files, leftovers, unreadable } = await readFolder(folder);
  const damage = unreadable.map((why) => ({ file: FILES_FOLDER, why }));
  let bytes = 0;
  for (const info of files) {
    const hash = createHash("sha256");
    let size = 0;
    for await (const piece of createReadStream(join(folder, info.id), { highWaterMark: 1024 * 1024 })) {
      hash.update(piece as Buffer);
      size += (piece as Buffer).length;
    }
    const sha256 = hash.digest("hex");
    if (size !== info.size || sha256 !== info.sha256) {
      damage.push({ file: `${FILES_FOLDER}/${info.id}`, why: `holds ${size} bytes of SHA-256 ${sha256}, but its description says ${info.size} bytes of SHA-256 ${info.sha256}` });
    }
    bytes += size;
  }
  return { files: files.length, bytes, damage, leftovers };
}
