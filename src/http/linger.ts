// Answering a request whose body is still arriving (a 413, or a write refused before its body was
// read). The reply goes out whole at once; the rest of the body is read and dropped, and only then
// does the response end and node:http close the connection if it must. Closing with bytes unread
// makes the kernel reset the connection, and a client still sending (urllib sends all before it
// reads) sees "Broken pipe" instead of the answer. Bounded like nginx's lingering close.

import type { IncomingMessage, ServerResponse } from "node:http";
import { headerOf } from "./request.ts";
import { sendReply, writeReply, type Reply } from "./response.ts";

/** The most body read and dropped after the answer; beyond it the connection is cut. */
export const LINGER_MAX_BYTES = 64 * 1024 * 1024;
/** The longest wait for the rest of the body after the answer. */
export const LINGER_MS = 10_000;

/** Sends `reply`, reading out the rest of the request's body first when it has not all arrived. */
export function sendReplyLingering(req: IncomingMessage, res: ServerResponse, reply: Reply): void {
  if (req.complete || !hasBody(req)) {
    sendReply(res, reply);
    return;
  }
  writeReply(res, reply);
  let dropped = 0;
  let isDone = false;
  const finish = (isCut: boolean) => {
    if (isDone) return;
    isDone = true;
    clearTimeout(timer);
    req.off("data", onData);
    res.end();
    if (isCut) req.socket.destroy();
  };
  const onData = (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > LINGER_MAX_BYTES) finish(true);
  };
  const timer = setTimeout(() => finish(true), LINGER_MS).unref();
  req.on("data", onData);
  req.once("end", () => finish(false));
  req.once("close", () => finish(false)); // the client gave up first
  req.resume();
}

function hasBody(req: IncomingMessage): boolean {
  const length = headerOf(req, "content-length");
  return length === undefined ? headerOf(req, "transfer-encoding") !== undefined : Number(length) > 0;
}
