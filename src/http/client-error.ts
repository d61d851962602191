// What node:http answers without us: requests its parser refuses (a malformed request line or
// header, bad framing, headers over 16 KB, a timeout) and CONNECT; and a body that stopped arriving
// (connection-limits.ts). Each gets the JSON error envelope and Connection: close, but only after
// every answer still owed on its connection: with pipelining, the writes before the bad request
// were applied and must get their own answers. Nothing after the refused request is parsed.

import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { ApiError, invalidRequest, methodNotAllowed } from "../errors.ts";
import { LINGER_MS } from "./linger.ts";
import { errorReply, replyMessage } from "./response.ts";

/** node:http's parser error codes (llhttp's, plus its own for timeouts) and what they answer. */
function refusalOf(error: NodeJS.ErrnoException & { reason?: string }): ApiError {
  switch (error.code) {
    case "HPE_HEADER_OVERFLOW":
      return new ApiError(431, "headers_too_large", "The request line and headers are over 16 KB together, the most this server reads; send a shorter URL or fewer headers.");
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return new ApiError(413, "payload_too_large", "The body's chunk extensions are too long; send the body without them.");
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new ApiError(408, "request_timeout", "The request did not arrive in time; send it again.");
    case "HPE_INVALID_EOF_STATE":
      return invalidRequest("The client closed its side of the connection in the middle of a request; send the whole request.");
    default:
      // llhttp's reason ("Invalid method encountered", "Content-Length can't be present with
      // Transfer-Encoding") says what is wrong better than any code could.
      return invalidRequest(`This is not an HTTP/1.1 request this server can read (${error.reason ?? error.message}); check the request line, headers and body framing.`);
  }
}

/** Methods some path serves, for the Allow of a CONNECT refusal. */
const SERVED_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];

/** Sockets already being closed with a refusal: node:http may report one again (its end, a failed write). */
const refused = new WeakSet<Socket>();

/** server.on("clientError"). */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (refused.has(socket)) return;
  refused.add(socket);
  // A reset or a broken pipe is the network, not a request: nobody is left to answer.
  if (!error.code?.startsWith("HPE_") && error.code !== "ERR_HTTP_REQUEST_TIMEOUT") {
    socket.destroy();
    return;
  }
  refuse(socket, refusalOf(error), isHeadRequest(error as ParserError, socket));
}

/** The status sent to a request refused while its body was arriving, for its log line and metrics. */
const refusedStatus = new WeakMap<IncomingMessage, number>();

/** A request refused while its body is still arriving (connection-limits.ts: one that went silent). */
export function refuseUnfinishedRequest(req: IncomingMessage, refusal: ApiError): void {
  if (refused.has(req.socket)) return;
  refused.add(req.socket);
  refusedStatus.set(req, refusal.status);
  refuse(req.socket, refusal, req.method === "HEAD");
}

/**
 * The status refuseUnfinishedRequest sent `req`, if it did: its handler, reading the body, then
 * meets a closed connection, but the client was answered (408), not gone (499).
 */
export function refusedStatusOf(req: IncomingMessage): number | undefined {
  return refusedStatus.get(req);
}

type ParserError = NodeJS.ErrnoException & { rawPacket?: Buffer; bytesParsed?: number };

/**
 * Whether the request the parser choked on is a HEAD, whose answer has no body: a client reading
 * one after it takes the body for the next answer on the connection, and fails. The method is the
 * owed response's when its head was read whole (bad body framing), else the first word of the
 * request line before the error in the bytes the parser was given (a header line's first word ends
 * with ":"). A request line in an earlier packet is not seen: that answer keeps its body.
 */
function isHeadRequest(error: ParserError, socket: HttpSocket): boolean {
  const owed = socket._httpMessage;
  if (owed && !owed.req.complete) return owed.req.method === "HEAD";
  if (!error.rawPacket || error.bytesParsed === undefined) return false;
  const lines = error.rawPacket.subarray(0, error.bytesParsed + 1).toString("latin1").split("\n");
  for (let i = lines.length - 1; i >= 0; i--) {
    const word = /^([^\s:]+)(:)? /.exec(lines[i]!);
    if (word && word[2] === undefined) return word[1] === "HEAD";
  }
  return false;
}

/** server.on("connect"): tabula is no proxy. */
export function answerConnect(req: IncomingMessage, socket: Socket): void {
  refused.add(socket);
  refuse(socket, methodNotAllowed(req.method ?? "CONNECT", SERVED_METHODS), false);
}

/** node:http keeps the response it is writing, or will write next, on the socket. */
type HttpSocket = Socket & { _httpMessage?: ServerResponse | null };

function refuse(socket: HttpSocket, refusal: ApiError, isHead: boolean): void {
  dropWhatFollows(socket);
  refuseAfterOwedAnswers(socket, refusal, isHead);
}

/**
 * Reads what the client still sends and drops it, no longer through node:http's parser, which stops
 * feeding on the socket once another 'data' listener is added. After a timeout the parser is sound:
 * it would go on to end the refused request's body, making a write its client was told 408, or
 * begin the next request. The refused request's body never ends: its readers are told when the
 * connection closes.
 */
function dropWhatFollows(socket: Socket): void {
  socket.removeAllListeners("data");
  socket.on("data", () => {});
}

function refuseAfterOwedAnswers(socket: HttpSocket, refusal: ApiError, isHead: boolean): void {
  const owed = socket._httpMessage;
  if (owed && !owed.closed && owed.req.complete) {
    // A request read whole and still being answered, or answered whole but not yet let go of the
    // socket (its "finish" comes a tick after its last byte is written: a pipelined answer that
    // was ready before its turn is); node:http hands the socket to the next response in line (if
    // any) before this one's "close", so look again then.
    owed.once("close", () => refuseAfterOwedAnswers(socket, refusal, isHead));
    return;
  }
  // Left: no response, or the one whose body the parser choked on, which gets the refusal as its
  // answer unless it has been answered already (a refusal sent before its body was read).
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  if (!owed?.headersSent) socket.write(replyMessage(errorReply(refusal), isHead));
  socket.end();
  // Reading goes on until the client closes its side too (or LINGER_MS), so that closing sends
  // no reset over bytes it is still sending, which could destroy the answer before it is read.
  const destroy = () => socket.destroy();
  if (socket.readableEnded) socket.once("finish", destroy);
  else socket.once("end", destroy);
  setTimeout(destroy, LINGER_MS).unref();
  socket.resume();
}
