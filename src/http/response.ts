// What a handler answers (a Reply: status, headers, body text) and how it goes on the wire. Bodies
// are built as text once, so that an idempotent answer can be stored and replayed byte for byte.

import { STATUS_CODES, type ServerResponse } from "node:http";
import { ApiError } from "../errors.ts";
import type { RecordView } from "../records/read-cache.ts";
import { acceptedCoding, ASYNC_COMPRESSED_BYTES, compress, compressLater, MIN_COMPRESSED_BYTES } from "./compression.ts";

export interface Reply {
  readonly status: number;
  /** This answer's own headers: Content-Type and Content-Length are added when it is sent. */
  readonly headers: Record<string, string>;
  /** JSON text; null for 304 and for a stream. */
  readonly body: string | null;
  /** The body's length in UTF-8 bytes, when known (a record's cached JSON); else counted when sent. */
  readonly bodyBytes?: number | undefined;
  /** A stream (the change feed's SSE): called with the response once its head is written. */
  readonly stream?: (res: ServerResponse) => void;
  /** Lets go of what a stream holds when it will never run (a HEAD request, a client gone). */
  readonly cancel?: () => void;
}

const JSON_TYPE = "application/json; charset=utf-8";

const NO_HEADERS: Record<string, string> = Object.freeze({});

export function jsonReply(status: number, body: string, headers: Record<string, string> = NO_HEADERS, bodyBytes?: number): Reply {
  return { status, headers, body, bodyBytes };
}

export function errorReply(error: ApiError): Reply {
  return jsonReply(error.status, JSON.stringify(error), error.headers);
}

export function sendReply(res: ServerResponse, reply: Reply): void {
  const { body } = reply;
  // A body this long in UTF-16 units is at least as long in bytes.
  if (body !== null && !reply.stream && body.length >= MIN_COMPRESSED_BYTES) return sendCompressible(res, reply, body);
  res.writeHead(reply.status, headersOf(reply));
  if (reply.stream && res.req.method !== "HEAD") {
    res.flushHeaders();
    reply.stream(res);
    return;
  }
  reply.cancel?.();
  res.end(body ?? undefined);
}

/** A body worth compressing: compressed when the request accepts a coding; either way, Vary says so. */
function sendCompressible(res: ServerResponse, reply: Reply, body: string): void {
  const vary = res.getHeader("vary");
  res.setHeader("Vary", vary === undefined ? "Accept-Encoding" : `${String(vary)}, Accept-Encoding`);
  const coding = acceptedCoding(res.req);
  if (coding === null) {
    res.writeHead(reply.status, headersOf(reply));
    res.end(body);
    return;
  }
  const send = (packed: Buffer) => {
    const headers = headersOf(reply, false) as unknown as Array<string | number>;
    headers.push("Content-Encoding", coding, "Content-Length", packed.length);
    res.writeHead(reply.status, headers as unknown as string[]);
    res.end(packed);
  };
  if (body.length < ASYNC_COMPRESSED_BYTES) return send(compress(body, coding));
  compressLater(body, coding).then(send, () => {
    // zlib failed (out of memory), or enough big answers wait to be compressed: the same answer, uncompressed.
    if (res.headersSent || res.destroyed) return;
    res.writeHead(reply.status, headersOf(reply));
    res.end(body);
  });
}

/** A record's view as a read's 200: what sendReply sends for the view's Reply, header for header. */
export function sendView(res: ServerResponse, view: RecordView): void {
  res.writeHead(200, ["Content-Type", JSON_TYPE, "ETag", view.etag, "Content-Length", view.bytes] as unknown as string[]);
  res.end(view.json);
}

/** Resolves once a stream's response can take more (drain), or is gone (close). */
export function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}

/**
 * Sends a reply's status, headers and body but leaves the response open, for linger.ts to end: no
 * Content-Length (node:http sends it chunked, or until the close to an HTTP/1.0 client), so that
 * the client hears the answer end only then; and Connection: close.
 */
export function writeReplyOpen(res: ServerResponse, reply: Reply): void {
  res.writeHead(reply.status, headersOf({ ...reply, headers: { ...reply.headers, Connection: "close" } }, false));
  if (reply.body !== null && res.req.method !== "HEAD") res.write(reply.body);
}

function headersOf(reply: Reply, hasLength = true): string[] {
  // A flat [name, value, ...] list: node:http takes it without copying into a header object.
  const headers: Array<string | number> = [];
  // Idempotent answers stored in a data folder by earlier builds carry their own Content-Type.
  if (reply.body !== null && reply.headers["Content-Type"] === undefined) headers.push("Content-Type", JSON_TYPE);
  for (const name in reply.headers) headers.push(name, reply.headers[name]!);
  // Counting a body's UTF-8 bytes reads all of it, cold in memory for a record read by id.
  if (reply.body !== null && hasLength) headers.push("Content-Length", reply.bodyBytes ?? Buffer.byteLength(reply.body));
  return headers as unknown as string[];
}

/**
 * A reply as the bytes of a whole HTTP/1.1 response, for a socket node:http has no response object
 * for (client-error.ts). It closes the connection. The answer to a HEAD has the headers alone.
 */
export function replyMessage(reply: Reply, isHead = false): string {
  const headers = headersOf({ ...reply, headers: { ...reply.headers, Connection: "close" } });
  let head = `HTTP/1.1 ${reply.status} ${STATUS_CODES[reply.status] ?? ""}\r\n`;
  for (let i = 0; i < headers.length; i += 2) head += `${headers[i]}: ${headers[i + 1]}\r\n`;
  return `${head}\r\n${isHead ? "" : (reply.body ?? "")}`;
}
