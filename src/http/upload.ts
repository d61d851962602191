// An import file sent as multipart/form-data (docs/base44-sdk.md: the SDK's importEntities posts
// FormData with a "file" part): the body read as it arrives, capped at --max-body, its "file"
// part handed to the file reader (records/import-file.ts); other parts are skipped.

import type { SizeLimits } from "../json-depth.ts";
import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { invalidRequest } from "../errors.ts";
import { ImportFileReader, type ImportFile } from "../records/import-file.ts";
import { boundaryOf, invalidMultipart, MultipartParser, type PartHeaders } from "./multipart.ts";
import { headerOf, payloadTooLarge } from "./request.ts";

/** The form field the file travels in: the SDK's `formData.append("file", file, file.name)`. */
export const FILE_FIELD = "file";

/** What a refusal of another Content-Type names, beside JSON, on a route that takes uploads. */
export const UPLOAD_MEDIA = `multipart/form-data with the file in a part named "${FILE_FIELD}" (JSON, NDJSON or CSV)`;

export interface Upload {
  readonly file: ImportFile;
  /**
   * SHA-256 of the file (its name, type and content): what an Idempotency-Key's fingerprint hashes
   * in place of the body, whose boundary a client picks afresh for each request, even a retry.
   */
  readonly digest: Buffer;
}

export function isMultipart(req: IncomingMessage): boolean {
  return /^multipart\/form-data\s*(;|$)/i.test(headerOf(req, "content-type") ?? "");
}

export function readUpload(req: IncomingMessage, maxBytes: number, limits?: SizeLimits): Promise<Upload> {
  const declared = Number(headerOf(req, "content-length"));
  if (declared > maxBytes) return Promise.reject(payloadTooLarge(maxBytes));
  const sink = new FilePartSink(limits);
  let parser: MultipartParser;
  try {
    parser = new MultipartParser(boundaryOf(headerOf(req, "content-type")!), sink);
  } catch (error) {
    return Promise.reject(error);
  }
  return new Promise((resolve, reject) => {
    let size = 0;
    const stop = (error: unknown) => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.pause(); // stop buffering; the refusal closes the connection
      reject(error);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) return stop(payloadTooLarge(maxBytes));
      try {
        parser.push(chunk);
      } catch (error) {
        stop(error);
      }
    };
    const onEnd = () => {
      try {
        parser.end();
        resolve({ file: sink.file(), digest: sink.digest() });
      } catch (error) {
        reject(error);
      }
    };
    req.on("data", onData);
    req.on("end", onEnd);
    // The client hung up before its body ended: a client's doing, answered to nobody (request.ts).
    req.on("error", () => reject(invalidRequest("The connection closed before the body ended; send the whole body.")));
  });
}

/** Hands the "file" part's content to the file reader; any other part is read past. */
class FilePartSink {
  private reader: ImportFileReader | null = null;
  private current: ImportFileReader | null = null;
  private result: ImportFile | null = null;
  private fieldsSeen: string[] = [];
  private readonly hash = createHash("sha256");

  /** `limits`: the records' (json-depth.ts), past which a record is refused unread. */
  constructor(private readonly limits?: SizeLimits) {}

  part(headers: PartHeaders): void {
    this.fieldsSeen.push(headers.name ?? "(unnamed)");
    if (headers.name !== FILE_FIELD) return;
    if (this.reader !== null) throw invalidMultipart(`The body holds more than one "${FILE_FIELD}" part; send one file per request.`);
    this.reader = new ImportFileReader(headers.filename ?? FILE_FIELD, headers.contentType, this.limits);
    this.current = this.reader;
    this.hash.update(`${headers.filename ?? ""}\n${headers.contentType ?? ""}\n`);
  }

  data(piece: Buffer): void {
    if (this.current === null) return;
    this.current.push(piece);
    this.hash.update(piece);
  }

  partEnd(): void {
    if (this.current !== null) this.result = this.current.end();
    this.current = null;
  }

  digest(): Buffer {
    return this.hash.digest();
  }

  file(): ImportFile {
    if (this.result === null) {
      const seen = this.fieldsSeen.length === 0 ? "no parts" : `the parts ${this.fieldsSeen.map((name) => JSON.stringify(name)).join(", ")}`;
      throw invalidMultipart(`The body holds ${seen} but none named "${FILE_FIELD}"; send the file as the form field "${FILE_FIELD}" (formData.append("file", file)).`, { fields: this.fieldsSeen });
    }
    return this.result;
  }
}
