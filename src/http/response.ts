// What a handler answers (a Reply: status, headers, body text) and how it goes on the wire. Bodies
// are built as text once, so that an idempotent answer can be stored and replayed byte for byte.

import type { ServerResponse } from "node:http";
import { ApiError } from "../errors.ts";

export interface Reply {
  readonly status: number;
  readonly headers: Record<string, string>;
  /** JSON text; null for 304. */
  readonly body: string | null;
}

const JSON_TYPE = "application/json; charset=utf-8";

export function jsonReply(status: number, body: string, headers: Record<string, string> = {}): Reply {
  return { status, headers: { "Content-Type": JSON_TYPE, ...headers }, body };
}

export function errorReply(error: ApiError): Reply {
  return jsonReply(error.status, JSON.stringify(error), error.headers);
}

export function sendReply(res: ServerResponse, reply: Reply): void {
  // A flat [name, value, ...] list: node:http takes it without copying into a header object.
  const headers: Array<string | number> = [];
  for (const name in reply.headers) headers.push(name, reply.headers[name]!);
  if (reply.body !== null) headers.push("Content-Length", Buffer.byteLength(reply.body));
  res.writeHead(reply.status, headers as unknown as string[]);
  res.end(reply.body ?? undefined);
}
