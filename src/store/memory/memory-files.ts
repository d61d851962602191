// The memory store's files: each file's bytes as the pieces they arrived in, gone with the process.
// A file is at most --max-file-size, which files.ts enforces while it arrives; all of them, kept and
// arriving, at most MEMORY_FILES_PER_MAX_FILE times that (docs/api.md, "Files"): uploads by a
// publishable key must not fill the process's memory, as they cannot fill the file store's disk.

import { Readable } from "node:stream";
import { memoryFilesFull } from "../../errors.ts";
import { compareFiles, type FileDraft, type FileInfo, type FilePage, type FileStorage } from "../file-storage.ts";

/** How many files of the largest size the memory store holds at most: 200 MiB at the default 50 MiB. */
export const MEMORY_FILES_PER_MAX_FILE = 4;

interface Kept {
  readonly info: FileInfo;
  readonly pieces: readonly Buffer[];
}

export class MemoryFiles implements FileStorage {
  private readonly files = new Map<string, Kept>();
  /** Bytes held by files kept and by uploads under way. */
  private heldBytes = 0;
  /** Bytes of the files kept alone: every upload asks (usedBytes). */
  private keptBytes = 0;

  constructor(private readonly maxTotalBytes: number) {}

  async begin(): Promise<FileDraft> {
    const pieces: Buffer[] = [];
    let bytes = 0;
    return {
      write: async (piece) => {
        if (this.heldBytes + piece.length > this.maxTotalBytes) throw memoryFilesFull(this.maxTotalBytes);
        this.heldBytes += piece.length;
        bytes += piece.length;
        // A copy: the piece may be a view of a buffer its reader reuses.
        pieces.push(Buffer.from(piece));
      },
      commit: async (info) => {
        this.files.set(info.id, { info, pieces });
        this.keptBytes += info.size;
      },
      discard: async () => {
        pieces.length = 0;
        this.heldBytes -= bytes;
        bytes = 0;
      },
    };
  }

  async info(id: string): Promise<FileInfo | undefined> {
    return this.files.get(id)?.info;
  }

  read(info: FileInfo, start: number, end: number): Readable {
    const pieces = this.files.get(info.id)?.pieces ?? [];
    return Readable.from(slices(pieces, start, end), { objectMode: false });
  }

  async usedBytes(): Promise<number> {
    return this.keptBytes;
  }

  async list(offset: number, limit: number): Promise<FilePage> {
    const all = [...this.files.values()].map((kept) => kept.info).sort(compareFiles);
    return { files: all.slice(offset, offset + limit), total: all.length };
  }

  async delete(id: string): Promise<boolean> {
    const kept = this.files.get(id);
    if (kept === undefined) return false;
    this.files.delete(id);
    this.heldBytes -= kept.info.size;
    this.keptBytes -= kept.info.size;
    return true;
  }

  async close(): Promise<void> {}
}

/** The parts of `pieces` between the byte offsets `start` and `end` (inclusive). */
function* slices(pieces: readonly Buffer[], start: number, end: number): Generator<Buffer> {
  let at = 0;
  for (const piece of pieces) {
    const from = Math.max(start - at, 0);
    const to = Math.min(end + 1 - at, piece.length);
    if (from < to) yield piece.subarray(from, to);
    at += piece.length;
    if (at > end) return;
  }
}
