// Uploaded files (docs/api.md, "Files"), knowing no HTTP: an upload counted, capped at
// --max-file-size and hashed as it arrives, then committed to the store's FileStorage; signed URLs
// of private files; the list and deletes. Who may call what is the routes' (http/file-routes.ts).

import { createHash, type Hash } from "node:crypto";
import { fileNotFound, filesFull, fileTooLarge, insufficientStorage } from "../errors.ts";
import { isOutOfSpace } from "../store/store.ts";
import type { FileSigning } from "./file-signing.ts";
import { storedContentType, storedFileName } from "./served-types.ts";
import { isFileId, newFileId, type FileDraft, type FileInfo, type FilePage, type FileStorage } from "../store/file-storage.ts";

export const DEFAULT_MAX_FILE_BYTES = 50 * 1024 * 1024;
/**
 * All uploaded files together (--max-files-total): uploads need no more than a publishable key, which
 * a browser app publishes, so without a bound anyone could fill the disk a database or a log needs.
 */
export const DEFAULT_MAX_FILES_TOTAL_BYTES = 10 * 1024 * 1024 * 1024;
/** CreateFileSignedUrl's expires_in when not given, in seconds. */
export const DEFAULT_SIGNED_SECONDS = 300;
/** The longest a signed URL may live: a week, in seconds. */
export const MAX_SIGNED_SECONDS = 7 * 24 * 3600;

export interface UploadRequest {
  readonly name: string | null;
  readonly contentType: string | null;
  readonly isPrivate: boolean;
}

/**
 * The room left for files under --max-files-total: the bytes kept when an upload began, and those of
 * the uploads under way in this process. Other processes sharing a database may pass it by what they
 * have under way at the same moment.
 */
interface FilesRoom {
  /** Takes `bytes` for an upload under way; false when they would pass the total. */
  take(keptBytes: number, bytes: number): boolean;
  /** Gives back what an upload took, once it is kept (and counted in keptBytes) or discarded. */
  release(bytes: number): void;
}

/** One upload under way: write() its pieces in order, then finish(), or discard() it. */
export class FileUpload {
  private readonly hash: Hash = createHash("sha256");
  private size = 0;
  private isOpen = true;

  constructor(
    private readonly draft: FileDraft,
    private readonly id: string,
    private readonly request: UploadRequest,
    private readonly maxBytes: number,
    private readonly room: FilesRoom,
    private readonly keptBytes: number,
    private readonly maxTotalBytes: number,
  ) {}

  /** Refuses (413) the piece that takes the file past --max-file-size, (507) all files past --max-files-total; the caller discards. */
  async write(piece: Buffer): Promise<void> {
    if (this.size + piece.length > this.maxBytes) throw fileTooLarge(this.maxBytes);
    if (!this.room.take(this.keptBytes, piece.length)) throw filesFull(this.maxTotalBytes);
    this.size += piece.length;
    this.hash.update(piece);
    await this.draft.write(piece).catch(refuseOutOfSpace);
  }

  /** Durable once this resolves: the file is listed and served from then on. */
  async finish(): Promise<FileInfo> {
    const info: FileInfo = {
      id: this.id,
      name: storedFileName(this.request.name),
      size: this.size,
      contentType: storedContentType(this.request.contentType),
      isPrivate: this.request.isPrivate,
      sha256: this.hash.digest("hex"),
      createdDate: new Date().toISOString(),
    };
    try {
      await this.draft.commit(info);
    } catch (error) {
      await this.draft.discard().catch(() => undefined);
      refuseOutOfSpace(error);
    } finally {
      this.close();
    }
    return info;
  }

  /** Leaves nothing behind; harmless after finish() or a second time. */
  async discard(): Promise<void> {
    if (!this.isOpen) return;
    this.close();
    await this.draft.discard();
  }

  private close(): void {
    if (this.isOpen) this.room.release(this.size);
    this.isOpen = false;
  }
}

/** A full disk refuses the upload (507), and the server goes on; anything else is a fault. */
function refuseOutOfSpace(error: unknown): never {
  throw isOutOfSpace(error) ? insufficientStorage() : error;
}

export class Files {
  /** Bytes of the uploads under way in this process. */
  private arrivingBytes = 0;
  private readonly room: FilesRoom = {
    take: (keptBytes, bytes) => {
      if (keptBytes + this.arrivingBytes + bytes > this.maxTotalBytes) return false;
      this.arrivingBytes += bytes;
      return true;
    },
    release: (bytes) => void (this.arrivingBytes -= bytes),
  };

  constructor(
    readonly storage: FileStorage,
    private readonly signing: FileSigning,
    readonly maxFileBytes: number,
    readonly maxTotalBytes: number = DEFAULT_MAX_FILES_TOTAL_BYTES,
  ) {}

  /** Refused (507) at once when the files kept already fill --max-files-total: not a byte of the body is read. */
  async startUpload(request: UploadRequest): Promise<FileUpload> {
    const keptBytes = await this.storage.usedBytes();
    if (keptBytes + this.arrivingBytes >= this.maxTotalBytes) throw filesFull(this.maxTotalBytes);
    const id = newFileId();
    return new FileUpload(await this.storage.begin(id), id, request, this.maxFileBytes, this.room, keptBytes, this.maxTotalBytes);
  }

  /** The file of `id`; 404 file_not_found when there is none (a malformed id included). */
  async find(id: string): Promise<FileInfo> {
    const info = isFileId(id) ? await this.storage.info(id) : undefined;
    if (info === undefined) throw fileNotFound(id);
    return info;
  }

  list(offset: number, limit: number): Promise<FilePage> {
    return this.storage.list(offset, limit);
  }

  /** Deletes every file: server.reset() empties the store of its files too (docs/testing.md). */
  async deleteAll(): Promise<void> {
    for (let page = await this.storage.list(0, 1000); page.files.length > 0; page = await this.storage.list(0, 1000)) {
      for (const info of page.files) await this.storage.delete(info.id);
    }
  }

  async delete(id: string): Promise<void> {
    if (!isFileId(id) || !(await this.storage.delete(id))) throw fileNotFound(id);
  }

  /** The signed query (?expires&signature) of `info`, readable for `seconds`, and when it expires. */
  async signedQuery(info: FileInfo, seconds: number, nowMs: number): Promise<{ query: string; expires: number }> {
    const expires = Math.floor(nowMs / 1000) + seconds;
    return { query: await this.signing.sign(info.id, expires), expires };
  }

  /** Refuses (403) a read of a private file without a valid, unexpired signature. */
  async checkRead(info: FileInfo, query: URLSearchParams, nowMs: number): Promise<void> {
    if (info.isPrivate) await this.signing.check(info.id, query, Math.floor(nowMs / 1000));
  }
}
