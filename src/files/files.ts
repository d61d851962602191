// Uploaded files (docs/api.md, "Files"), knowing no HTTP: an upload counted, capped at
// --max-file-size and hashed as it arrives, then committed to the store's FileStorage; signed URLs
// of private files; the list and deletes. Who may call what is the routes' (http/file-routes.ts).

import { createHash, type Hash } from "node:crypto";
import { fileNotFound, fileTooLarge, insufficientStorage } from "../errors.ts";
import { isOutOfSpace } from "../store/store.ts";
import type { FileSigning } from "./file-signing.ts";
import { storedContentType, storedFileName } from "./served-types.ts";
import { isFileId, newFileId, type FileDraft, type FileInfo, type FilePage, type FileStorage } from "../store/file-storage.ts";

export const DEFAULT_MAX_FILE_BYTES = 50 * 1024 * 1024;
/** CreateFileSignedUrl's expires_in when not given, in seconds. */
export const DEFAULT_SIGNED_SECONDS = 300;
/** The longest a signed URL may live: a week, in seconds. */
export const MAX_SIGNED_SECONDS = 7 * 24 * 3600;

export interface UploadRequest {
  readonly name: string | null;
  readonly contentType: string | null;
  readonly isPrivate: boolean;
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
  ) {}

  /** Refuses (413) the piece that takes the file past --max-file-size; the caller discards. */
  async write(piece: Buffer): Promise<void> {
    this.size += piece.length;
    if (this.size > this.maxBytes) throw fileTooLarge(this.maxBytes);
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
      this.isOpen = false;
    }
    return info;
  }

  /** Leaves nothing behind; harmless after finish() or a second time. */
  async discard(): Promise<void> {
    if (!this.isOpen) return;
    this.isOpen = false;
    await this.draft.discard();
  }
}

/** A full disk refuses the upload (507), and the server goes on; anything else is a fault. */
function refuseOutOfSpace(error: unknown): never {
  throw isOutOfSpace(error) ? insufficientStorage() : error;
}

export class Files {
  constructor(
    readonly storage: FileStorage,
    private readonly signing: FileSigning,
    readonly maxFileBytes: number,
  ) {}

  async startUpload(request: UploadRequest): Promise<FileUpload> {
    const id = newFileId();
    return new FileUpload(await this.storage.begin(id), id, request, this.maxFileBytes);
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
