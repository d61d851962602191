// Reading a request body: capped at --max-body without buffering more than the cap (a declared
// Content-Length over it is refused before reading), JSON only, parsed once.

import type { IncomingMessage } from "node:http";
import { ApiError, invalidJson } from "../errors.ts";

export const DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024;

export function payloadTooLarge(maxBytes: number): ApiError {
  return new ApiError(
    413,
    "payload_too_large",
    `The body is larger than ${maxBytes} bytes, the most this server accepts (--max-body). Send fewer records per request.`,
    { maxBytes },
    { Connection: "close" },
  );
}

export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (declared > maxBytes) return Promise.reject(payloadTooLarge(maxBytes));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        req.off("data", onData);
        req.pause(); // stop buffering; the reply closes the connection
        reject(payloadTooLarge(maxBytes));
        return;
      }
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.on("end", () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/** The JSON value of a body; undefined when the body is empty. */
export function parseJsonBody(req: IncomingMessage, bytes: Buffer): unknown {
  if (bytes.length === 0) return undefined;
  const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json" && !/^application\/[a-z0-9.+-]+\+json$/.test(type)) {
    throw new ApiError(
      415,
      "unsupported_media_type",
      `The body is sent as ${type || "an unstated type"}; send JSON with the header Content-Type: application/json.`,
      { contentType: type || null },
    );
  }
  try {
    return JSON.parse(bytes.toString("utf8"));
  } catch (error) {
    throw invalidJson(`The body is not valid JSON (${(error as Error).message}).`);
  }
}

/** The body of a write that needs one. */
export function requireBody(body: unknown, example: string): unknown {
  if (body === undefined) throw invalidJson(`This request needs a JSON body, such as ${example}.`);
  return body;
}
