// The memory store's files: each file's bytes as the pieces they arrived in, gone with the process.
// A file is at most --max-file-size, which files.ts enforces while it arrives.

import { Readable } from "node:stream";
import { compareFiles, type FileDraft, type FileInfo, type FilePage, type FileStorage } from "../file-storage.ts";

interface Kept {
  readonly info: FileInfo;
  readonly pieces: readonly Buffer[];
}

export class MemoryFiles implements FileStorage {
  private readonly files = new Map<string, Kept>();

  async begin(): Promise<FileDraft> {
    const pieces: Buffer[] = [];
    return {
      // A copy: the piece may be a view of a buffer its reader reuses.
      write: async (piece) => void pieces.push(Buffer.from(piece)),
      commit: async (info) => void this.files.set(info.id, { info, pieces }),
      discard: async () => void (pieces.length = 0),
    };
  }

  async info(id: string): Promise<FileInfo | undefined> {
    return this.files.get(id)?.info;
  }

  read(info: FileInfo, start: number, end: number): Readable {
    const pieces = this.files.get(info.id)?.pieces ?? [];
    return Readable.from(slices(pieces, start, end), { objectMode: false });
  }

  async list(offset: number, limit: number): Promise<FilePage> {
    const all = [...this.files.values()].map((kept) => kept.info).sort(compareFiles);
    return { files: all.slice(offset, offset + limit), total: all.length };
  }

  async delete(id: string): Promise<boolean> {
    return this.files.delete(id);
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
