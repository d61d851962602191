// Compressed answers: gzip or brotli, as the request's Accept-Encoding allows, for JSON bodies of
// MIN_COMPRESSED_BYTES or more. Compressed whole, so that the answer keeps its Content-Length: in
// one synchronous call when small, on the thread pool from ASYNC_COMPRESSED_BYTES on, so that a
// big answer never holds the event loop; streams (the change feed, exports) are never compressed here. The levels were
// chosen by measuring a page of 100 records (docs/benchmarks.md, "Compression").

import { brotliCompress, brotliCompressSync, constants, gzip, gzipSync, type BrotliOptions } from "node:zlib";
import type { IncomingMessage } from "node:http";
import { headerOf } from "./request.ts";
import { Lane } from "../turns/lane.ts";

/** Smaller bodies fit in a packet or two either way: compressing them costs more than it saves. */
export const MIN_COMPRESSED_BYTES = 1024;
/** From this size a body is compressed on the thread pool: about a millisecond of work at level 1. */
export const ASYNC_COMPRESSED_BYTES = 64 * 1024;
export const GZIP_LEVEL = 1;
export const BROTLI_QUALITY = 1;

export type ContentCoding = "br" | "gzip";

/**
 * The coding to answer in: brotli when accepted (it packs JSON tighter at the same cost), else
 * gzip; null for neither, or for one refused with q=0.
 */
export function acceptedCoding(req: IncomingMessage): ContentCoding | null {
  const header = headerOf(req, "accept-encoding");
  if (header === undefined) return null;
  const weights = new Map<string, number>();
  for (const part of header.split(",")) {
    const [name = "", ...parameters] = part.trim().toLowerCase().split(";");
    const q = parameters.map((parameter) => /^\s*q\s*=\s*([\d.]+)\s*$/.exec(parameter)?.[1]).find((value) => value !== undefined);
    weights.set(name === "x-gzip" ? "gzip" : name, q === undefined ? 1 : Number(q));
  }
  // A coding not named takes the weight of "*", when there is one.
  const weightOf = (coding: ContentCoding) => weights.get(coding) ?? weights.get("*") ?? 0;
  return weightOf("br") > 0 ? "br" : weightOf("gzip") > 0 ? "gzip" : null;
}

export function compress(body: string, coding: ContentCoding): Buffer {
  const bytes = Buffer.from(body);
  return coding === "br" ? brotliCompressSync(bytes, brotliOptions(bytes.length)) : gzipSync(bytes, { level: GZIP_LEVEL });
}

/**
 * Big answers compressed at once on the thread pool, whose four threads the log's writes and the
 * files' reads share: two at a time, a few more waiting (each holds its answer meanwhile), and past
 * that an answer is sent as it is. Many big lists asked for at once slow their own answers, not
 * everyone's writes.
 */
const compressionLane = new Lane(2, 8, () => new Error("Compression is busy: the answer goes uncompressed."));

/**
 * compress() on the thread pool, for bodies of ASYNC_COMPRESSED_BYTES or more. Rejects when zlib
 * fails or the lane is full: the answer is then sent uncompressed.
 */
export function compressLater(body: string, coding: ContentCoding): Promise<Buffer> {
  return compressionLane.run(() => {
    const bytes = Buffer.from(body);
    return new Promise((resolve, reject) => {
      const done = (error: Error | null, packed: Buffer) => (error ? reject(error) : resolve(packed));
      if (coding === "br") brotliCompress(bytes, brotliOptions(bytes.length), done);
      else gzip(bytes, { level: GZIP_LEVEL }, done);
    });
  });
}

function brotliOptions(size: number): BrotliOptions {
  return { params: { [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [constants.BROTLI_PARAM_SIZE_HINT]: size, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT } };
}
