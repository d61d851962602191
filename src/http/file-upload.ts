// An upload's body read as it arrives into a FileUpload (files/files.ts), never held whole: a
// multipart/form-data body's "file" part (the SDK's UploadFile, a browser's form), or a raw body
// whose Content-Type is the file's. The socket is paused while each piece is written, so memory
// holds a piece or two whatever the file's size. A refused or cut-off upload is discarded.

import type { Readable } from "node:stream";
import { fileTooLarge, invalidRequest } from "../errors.ts";
import type { FileInfo } from "../store/file-storage.ts";
import type { FileUpload, Files, UploadRequest } from "../files/files.ts";
import { boundaryOf, invalidMultipart, MultipartParser, type PartHeaders } from "./multipart.ts";
import { FILE_FIELD } from "./upload.ts";
import type { RequestContext } from "./context.ts";
import { noteStreamed } from "../streamed-garbage.ts";

/** What a multipart body may hold beyond the file itself: boundaries, part headers, small fields. */
const MULTIPART_ALLOWANCE_BYTES = 1024 * 1024;

const MULTIPART_RE = /^multipart\/form-data\s*(;|$)/i;

type Event = { readonly kind: "part"; readonly headers: PartHeaders } | { readonly kind: "data"; readonly piece: Buffer } | { readonly kind: "end" };

/** Whether the body is multipart/form-data: a form holding the file, not the file itself. */
export function isFormBody(ctx: RequestContext): boolean {
  return MULTIPART_RE.test(ctx.header("content-type") ?? "");
}

/** Reads the request's file and keeps it; resolves once it is durable. `name` is a raw body's (?name=). */
export async function receiveFile(ctx: RequestContext, files: Files, isPrivate: boolean): Promise<FileInfo> {
  const isForm = isFormBody(ctx);
  const declared = Number(ctx.header("content-length"));
  const maxBody = files.maxFileBytes + (isForm ? MULTIPART_ALLOWANCE_BYTES : 0);
  if (declared > maxBody) throw fileTooLarge(files.maxFileBytes);
  return isForm ? receiveForm(ctx, files, isPrivate, maxBody) : receiveRaw(ctx, files, isPrivate);
}

async function receiveRaw(ctx: RequestContext, files: Files, isPrivate: boolean): Promise<FileInfo> {
  const upload = await files.startUpload({ name: ctx.query.get("name"), contentType: ctx.header("content-type") ?? null, isPrivate });
  try {
    await eachChunk(ctx.bodyStream, (chunk) => upload.write(chunk));
    return await upload.finish();
  } finally {
    await upload.discard();
  }
}

async function receiveForm(ctx: RequestContext, files: Files, isPrivate: boolean, maxBody: number): Promise<FileInfo> {
  const events: Event[] = [];
  const parser = new MultipartParser(boundaryOf(ctx.header("content-type")!), {
    part: (headers) => void events.push({ kind: "part", headers }),
    data: (piece) => void events.push({ kind: "data", piece }),
    partEnd: () => void events.push({ kind: "end" }),
  });
  const form = new FormFile(files, isPrivate);
  let bodyBytes = 0;
  try {
    await eachChunk(ctx.bodyStream, async (chunk) => {
      bodyBytes += chunk.length;
      if (bodyBytes > maxBody) throw fileTooLarge(files.maxFileBytes);
      parser.push(chunk);
      for (const event of events.splice(0)) await form.take(event);
    });
    parser.end();
    for (const event of events.splice(0)) await form.take(event);
    return await form.finish();
  } finally {
    await form.discard();
  }
}

/** The "file" part of a form as an upload; other parts are read past. */
class FormFile {
  private upload: FileUpload | null = null;
  private isInFile = false;
  private isDone = false;
  private readonly fieldsSeen: string[] = [];

  constructor(
    private readonly files: Files,
    private readonly isPrivate: boolean,
  ) {}

  async take(event: Event): Promise<void> {
    if (event.kind === "part") {
      this.fieldsSeen.push(event.headers.name ?? "(unnamed)");
      if (event.headers.name !== FILE_FIELD) return;
      if (this.upload !== null) throw invalidMultipart(`The body holds more than one "${FILE_FIELD}" part; send one file per request.`);
      const request: UploadRequest = { name: event.headers.filename, contentType: event.headers.contentType, isPrivate: this.isPrivate };
      this.upload = await this.files.startUpload(request);
      this.isInFile = true;
    } else if (event.kind === "data") {
      if (this.isInFile) await this.upload!.write(event.piece);
    } else if (this.isInFile) {
      this.isInFile = false;
      this.isDone = true;
    }
  }

  async finish(): Promise<FileInfo> {
    if (this.upload === null || !this.isDone) {
      throw invalidMultipart(`The body holds no part named "${FILE_FIELD}" (it has ${this.fieldsSeen.length === 0 ? "no parts" : this.fieldsSeen.map((name) => JSON.stringify(name)).join(", ")}); send the file as the form field "${FILE_FIELD}".`, { fields: this.fieldsSeen });
    }
    return this.upload.finish();
  }

  async discard(): Promise<void> {
    await this.upload?.discard();
  }
}

/**
 * Hands each chunk of `body` to `handle`, one at a time: the stream is paused until the chunk is
 * handled. Rejects with `handle`'s error (the stream left paused, for the refusal to read out), or
 * when the client hangs up before the body's end, once the chunk in hand is handled.
 */
function eachChunk(body: Readable, handle: (chunk: Buffer) => Promise<void>): Promise<void> {
  return new Promise((resolve, reject) => {
    let inHand: Promise<void> = Promise.resolve();
    let isSettled = false;
    const settle = (error: unknown) => {
      if (isSettled) return;
      isSettled = true;
      body.off("data", onData);
      body.off("end", onEnd);
      body.off("error", onCut);
      body.off("close", onClose);
      if (error === null) return resolve();
      body.pause();
      // A write still on its way must end before the caller discards the file under it.
      void inHand.then(() => reject(error), () => reject(error));
    };
    const onData = (chunk: Buffer) => {
      body.pause();
      inHand = handle(chunk).then(
        () => {
          noteStreamed(chunk.length);
          if (!isSettled) body.resume();
        },
        (error: unknown) => settle(error),
      );
    };
    const onEnd = () => void inHand.then(() => settle(null), () => undefined);
    const onCut = () => settle(invalidRequest("The connection closed before the body ended; send the whole body."));
    const onClose = () => {
      if (!(body as Readable & { complete?: boolean }).complete) onCut();
    };
    body.on("data", onData);
    body.on("end", onEnd);
    body.on("error", onCut);
    body.on("close", onClose);
  });
}
