// Answering a request whose body is still arriving (a 413, or a write refused before its body was
// read). The status and the body go out at once, but the response (chunked, Connection: close) ends
// only once the rest of the request's body has been read and dropped, or the client has stopped
// sending for LINGER_IDLE_MS; then the connection closes. Two kinds of client are served so:
// - one that sends it all before it reads (urllib) or goes on sending while it reads (node:http):
//   closing with bytes unread makes the kernel reset the connection ("Broken pipe"), and node:http,
//   seeing a whole answer with Connection: close, drops its socket with writes still queued, whose
//   callbacks then never run: a client awaiting its upload waits forever;
// - one that stops sending at the answer (curl): it hears the end after LINGER_IDLE_MS.
// Bounded like nginx's lingering close.

import type { IncomingMessage, ServerResponse } from "node:http";
import { hasBody } from "./request.ts";
import { sendReply, writeReplyOpen, type Reply } from "./response.ts";

/** The most body read and dropped after the answer; beyond it the connection is cut. */
export const LINGER_MAX_BYTES = 64 * 1024 * 1024;
/** The longest wait for the rest of the body after the answer. */
export const LINGER_MS = 10_000;
/** A client silent this long after the answer has stopped sending: the answer ends. */
export const LINGER_IDLE_MS = 1_000;

/** Sends `reply`, reading out the rest of the request's body first when it has not all arrived. */
export function sendReplyLingering(req: IncomingMessage, res: ServerResponse, reply: Reply): void {
  if (req.complete || !hasBody(req)) {
    sendReply(res, reply);
    return;
  }
  writeReplyOpen(res, reply);
  let dropped = 0;
  let isDone = false;
  const finish = (isCut: boolean) => {
    if (isDone) return;
    isDone = true;
    clearTimeout(deadline);
    clearTimeout(idle);
    req.off("data", onData);
    if (isCut) {
      req.socket.destroy();
      return;
    }
    res.end();
  };
  const onData = (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > LINGER_MAX_BYTES) return finish(true);
    idle.refresh();
  };
  const deadline = setTimeout(() => finish(true), LINGER_MS).unref();
  const idle = setTimeout(() => finish(false), LINGER_IDLE_MS).unref();
  req.on("data", onData);
  req.once("end", () => finish(false));
  req.once("close", () => finish(false)); // the client gave up first
  req.resume();
}
