// Where uploaded files are kept (docs/api.md, "Files"): the role each store plays for them, and a
// file's description. Each store keeps them its own way (memory/memory-files.ts, file/folder-files.ts,
// postgres/postgres-files.ts); hashing, limits and who may read are files/files.ts's, serving is http/'s.

import { randomBytes } from "node:crypto";
import type { Readable } from "node:stream";

/** What is kept about a file beside its bytes. Its id and bytes never change; a deleted id is never reused. */
export interface FileInfo {
  /** 128 random bits as 32 hex digits: a public file's URL is readable by whoever knows it. */
  readonly id: string;
  /** The name it was uploaded with, for its URL and Content-Disposition. */
  readonly name: string;
  readonly size: number;
  readonly contentType: string;
  readonly isPrivate: boolean;
  /** SHA-256 of the bytes, hex: the strong ETag, and what verify checks. */
  readonly sha256: string;
  /** ISO time of the upload. */
  readonly createdDate: string;
}

/**
 * A file being written. Nothing of it is visible until commit() resolves; discard() (a refused or
 * cut-off upload) leaves nothing behind, and so does a crash before commit() resolved.
 */
export interface FileDraft {
  write(piece: Buffer): Promise<void>;
  commit(info: FileInfo): Promise<void>;
  discard(): Promise<void>;
}

export interface FilePage {
  readonly files: readonly FileInfo[];
  readonly total: number;
}

/** A store's files. Listing is in upload order (created_date, then id). */
export interface FileStorage {
  begin(id: string): Promise<FileDraft>;
  info(id: string): Promise<FileInfo | undefined>;
  /** The bytes from `start` to `end` inclusive, read a piece at a time. */
  read(info: FileInfo, start: number, end: number): Readable;
  list(offset: number, limit: number): Promise<FilePage>;
  /** The bytes of every file kept (not of uploads under way). */
  usedBytes(): Promise<number>;
  /** False when no file has that id. */
  delete(id: string): Promise<boolean>;
  close(): Promise<void>;
}

const FILE_ID_RE = /^[0-9a-f]{32}$/;

export function newFileId(): string {
  return randomBytes(16).toString("hex");
}

export function isFileId(text: string): boolean {
  return FILE_ID_RE.test(text);
}

/** Upload order: created_date, then id. */
export function compareFiles(a: FileInfo, b: FileInfo): number {
  if (a.createdDate !== b.createdDate) return a.createdDate < b.createdDate ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** A FileInfo from its stored JSON; throws naming what is wrong. */
export function parseFileInfo(value: unknown, where: string): FileInfo {
  const info = value as Record<string, unknown>;
  const isValid =
    typeof info === "object" && info !== null &&
    typeof info.id === "string" && isFileId(info.id) &&
    typeof info.name === "string" && typeof info.contentType === "string" &&
    Number.isSafeInteger(info.size) && (info.size as number) >= 0 &&
    typeof info.isPrivate === "boolean" && typeof info.sha256 === "string" && /^[0-9a-f]{64}$/.test(info.sha256) &&
    typeof info.createdDate === "string";
  if (!isValid) throw new Error(`${where} does not describe a file (id, name, size, contentType, isPrivate, sha256, createdDate).`);
  return { id: info.id as string, name: info.name as string, size: info.size as number, contentType: info.contentType as string, isPrivate: info.isPrivate as boolean, sha256: info.sha256 as string, createdDate: info.createdDate as string };
}
