// WebSocket (RFC 6455) on a socket node:http hands over at its `upgrade` event, with no dependency
// (docs/base44-sdk.md, "Realtime: subscribe()"): the opening handshake, client frames (masked,
// fragmented, control frames), the closing handshake and its codes. What the messages mean is the
// Socket.IO layer's (socket-io-connection.ts).

import { createHash } from "node:crypto";
import { isUtf8 } from "node:buffer";
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { ApiError } from "../errors.ts";
import { headerOf } from "../http/request.ts";

/** RFC 6455 §1.3: the GUID appended to Sec-WebSocket-Key before hashing. */
const ACCEPT_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
const KEY_RE = /^[A-Za-z0-9+/]{22}==$/;
/** After a close frame is sent, the peer has this long to answer with its own before the socket is destroyed. */
export const CLOSE_TIMEOUT_MS = 5_000;

const OP_CONTINUATION = 0x0;
const OP_TEXT = 0x1;
const OP_BINARY = 0x2;
const OP_CLOSE = 0x8;
const OP_PING = 0x9;
const OP_PONG = 0xa;

/** RFC 6455 §7.4.1 close codes this server sends. */
export const CLOSE = {
  normal: 1000,
  goingAway: 1001,
  protocolError: 1002,
  unsupportedData: 1003,
  noStatus: 1005,
  abnormal: 1006,
  invalidPayload: 1007,
  policyViolation: 1008,
  tooBig: 1009,
  internalError: 1011,
} as const;

/**
 * Why an upgrade request cannot become a WebSocket (RFC 6455 §4.2.1), or null when it can.
 * A wrong version is 426 with the version this server speaks (§4.4).
 */
export function handshakeRefusal(req: IncomingMessage): ApiError | null {
  const mend = "Open it as a WebSocket: GET with Upgrade: websocket, Connection: Upgrade, Sec-WebSocket-Version: 13 and a Sec-WebSocket-Key.";
  if (req.method !== "GET") return new ApiError(400, "invalid_request", `A WebSocket is opened with GET, not ${req.method}. ${mend}`);
  if ((headerOf(req, "upgrade") ?? "").toLowerCase() !== "websocket") return new ApiError(400, "invalid_request", `This path upgrades to websocket alone (got Upgrade: ${headerOf(req, "upgrade") ?? "none"}). ${mend}`);
  const version = headerOf(req, "sec-websocket-version");
  if (version !== "13") return new ApiError(426, "invalid_request", `This server speaks WebSocket version 13 (RFC 6455), not ${version ?? "none"}. ${mend}`, {}, { "Sec-WebSocket-Version": "13" });
  if (!KEY_RE.test(headerOf(req, "sec-websocket-key") ?? "")) return new ApiError(400, "invalid_request", `Sec-WebSocket-Key must be 16 random bytes in base64. ${mend}`);
  return null;
}

/** The 101 answer to a handshake handshakeRefusal let through. No extension or subprotocol is taken. */
export function handshakeAnswer(req: IncomingMessage): string {
  const accept = createHash("sha1").update(headerOf(req, "sec-websocket-key")! + ACCEPT_GUID).digest("base64");
  return `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`;
}

/** One server frame (never masked, RFC 6455 §5.1), FIN set. */
export function frameOf(opcode: number, payload: Buffer): Buffer {
  const length = payload.length;
  const headLength = length < 126 ? 2 : length < 0x10000 ? 4 : 10;
  const frame = Buffer.allocUnsafe(headLength + length);
  frame[0] = 0x80 | opcode;
  if (length < 126) frame[1] = length;
  else if (length < 0x10000) {
    frame[1] = 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 127;
    frame.writeUInt32BE(0, 2);
    frame.writeUInt32BE(length, 6);
  }
  payload.copy(frame, headLength);
  return frame;
}

/** A text message as a server frame: built once, it can be written to any number of sockets. */
export function textFrame(text: string): Buffer {
  return frameOf(OP_TEXT, Buffer.from(text));
}

export interface WebSocketLimits {
  /** A frame or a whole (fragmented) message longer than this is closed with 1009. */
  readonly maxMessageBytes: number;
  /** Bytes written and not yet taken by the client past which it is closed, too slow (1008). */
  readonly maxBufferedBytes: number;
}

export interface WebSocketHandlers {
  /** A whole message: text (valid UTF-8) or binary. */
  message(data: Buffer, isText: boolean): void;
  /** Once, whichever way the connection ended: the code received or sent, 1006 when there was none. */
  close(code: number, reason: string): void;
}

/** Codes a peer may send in a close frame (RFC 6455 §7.4, IANA registry): never 1004–1006, 1015, nor below 1000. */
function isValidCloseCode(code: number): boolean {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);
}

function uncork(socket: Socket): void {
  socket.uncork();
}

export class WebSocket {
  private pending: Buffer = Buffer.alloc(0);
  /** The frames of a fragmented message read so far, and its opcode. */
  private fragments: Buffer[] | null = null;
  private fragmentsOpcode = OP_TEXT;
  private fragmentBytes = 0;
  private state: "open" | "closing" | "closed" = "open";
  private closeTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly socket: Socket,
    head: Buffer,
    private readonly limits: WebSocketLimits,
    private readonly handlers: WebSocketHandlers,
  ) {
    socket.setNoDelay(true);
    // Bytes that came with the handshake are read first, once the caller has wired its handlers.
    if (head.length > 0) socket.unshift(head);
    socket.on("data", (chunk: Buffer) => this.read(chunk));
    // A reset or a broken pipe: "close" follows, and says 1006.
    socket.on("error", () => {});
    // node:http's sockets are half-open: a client gone without a close frame (or done after its
    // answer to ours) ends its side, and this side ends too; "close" follows.
    socket.on("end", () => socket.end());
    socket.on("close", () => this.closed(CLOSE.abnormal, ""));
  }

  get isOpen(): boolean {
    return this.state === "open";
  }

  /** Bytes written and not yet taken by the client. */
  get bufferedBytes(): number {
    return this.socket.writableLength;
  }

  /** Resolves once the socket can take more, or is gone. */
  drained(): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.socket.off("drain", done);
        this.socket.off("close", done);
        resolve();
      };
      this.socket.on("drain", done);
      this.socket.on("close", done);
    });
  }

  send(text: string): void {
    this.write(textFrame(text));
  }

  /** Writes frames built by frameOf or textFrame; a client that stops reading is closed (1008). */
  write(frames: Buffer): void {
    if (this.state !== "open") return;
    // Writes of one turn go out in one system call, as node:http corks a response's writes.
    if (this.socket.writableCorked === 0) {
      this.socket.cork();
      process.nextTick(uncork, this.socket);
    }
    this.socket.write(frames);
    if (this.socket.writableLength > this.limits.maxBufferedBytes) {
      this.close(CLOSE.policyViolation, `too slow: over ${this.limits.maxBufferedBytes} bytes not read; reconnect`);
    }
  }

  /** Starts the closing handshake (RFC 6455 §7.1.2): the socket is destroyed if the peer does not answer. */
  close(code: number, reason: string): void {
    if (this.state !== "open") return;
    this.state = "closing";
    this.socket.write(this.closeFrame(code, reason));
    this.closeTimer = setTimeout(() => this.socket.destroy(), CLOSE_TIMEOUT_MS).unref();
    this.handlers.close(code, reason);
  }

  /** Ends at once, without a closing handshake (the server stopping). */
  destroy(): void {
    this.socket.destroy();
  }

  private closeFrame(code: number, reason: string): Buffer {
    // A close frame's payload is a control frame's: 125 bytes at most, 2 of them the code.
    let text = Buffer.from(reason);
    if (text.length > 123) text = Buffer.from(reason.slice(0, 60));
    const payload = Buffer.allocUnsafe(2 + text.length);
    payload.writeUInt16BE(code, 0);
    text.copy(payload, 2);
    return frameOf(OP_CLOSE, payload);
  }

  /** Fails the connection (RFC 6455 §7.1.7): a close frame with the code, and no more reading. */
  private fail(code: number, reason: string): void {
    this.pending = Buffer.alloc(0);
    this.fragments = null;
    if (this.state === "open") this.close(code, reason);
    this.socket.end();
  }

  private refuse(code: number, reason: string): false {
    this.fail(code, reason);
    return false;
  }

  private closed(code: number, reason: string): void {
    if (this.closeTimer) clearTimeout(this.closeTimer);
    const wasOpen = this.state === "open";
    this.state = "closed";
    this.pending = Buffer.alloc(0);
    this.fragments = null;
    if (wasOpen) this.handlers.close(code, reason);
  }

  private read(chunk: Buffer): void {
    if (this.state === "closed") return;
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    // A failed connection empties `pending`, which ends the loop.
    while (this.pending.length >= 2) if (!this.readFrame()) return;
  }

  /** Reads one frame from `pending`; false when it is not all there yet (or the connection failed). */
  private readFrame(): boolean {
    const data = this.pending;
    const isFinal = (data[0]! & 0x80) !== 0;
    const opcode = data[0]! & 0x0f;
    const isControl = (opcode & 0x08) !== 0;
    if ((data[0]! & 0x70) !== 0) return this.refuse(CLOSE.protocolError, "RSV bits set: no extension was agreed");
    if ((data[1]! & 0x80) === 0) return this.refuse(CLOSE.protocolError, "client frames must be masked (RFC 6455 §5.1)");
    if (![OP_CONTINUATION, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG].includes(opcode)) return this.refuse(CLOSE.protocolError, `unknown opcode ${opcode}`);
    let length = data[1]! & 0x7f;
    let at = 2;
    if (length === 126) {
      if (data.length < 4) return false;
      length = data.readUInt16BE(2);
      at = 4;
    } else if (length === 127) {
      if (data.length < 10) return false;
      // Above 2^32 is over any limit: the high word need not be added up.
      length = data.readUInt32BE(2) > 0 ? Number.MAX_SAFE_INTEGER : data.readUInt32BE(6);
      at = 10;
    }
    if (isControl && (!isFinal || length > 125)) return this.refuse(CLOSE.protocolError, "control frames are whole and carry 125 bytes at most");
    // Refused before its bytes are waited for: what is buffered stays under the limit.
    if (!isControl && this.fragmentBytes + length > this.limits.maxMessageBytes) return this.refuse(CLOSE.tooBig, `messages are ${this.limits.maxMessageBytes} bytes at most`);
    if (data.length < at + 4 + length) return false;
    const mask = data.subarray(at, at + 4);
    const payload = Buffer.from(data.subarray(at + 4, at + 4 + length));
    for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i & 3]!;
    this.pending = data.subarray(at + 4 + length);
    if (isControl) this.control(opcode, payload);
    else this.dataFrame(opcode, isFinal, payload);
    return true;
  }

  private dataFrame(opcode: number, isFinal: boolean, payload: Buffer): void {
    if (this.state !== "open") return;
    if (opcode === OP_CONTINUATION) {
      if (this.fragments === null) return this.fail(CLOSE.protocolError, "a continuation frame with no message to continue");
      this.fragments.push(payload);
      this.fragmentBytes += payload.length;
      if (!isFinal) return;
      const whole = Buffer.concat(this.fragments);
      this.fragments = null;
      this.fragmentBytes = 0;
      return this.deliver(this.fragmentsOpcode, whole);
    }
    if (this.fragments !== null) return this.fail(CLOSE.protocolError, "a new message began before the fragmented one ended");
    if (isFinal) return this.deliver(opcode, payload);
    this.fragments = [payload];
    this.fragmentsOpcode = opcode;
    this.fragmentBytes = payload.length;
  }

  private deliver(opcode: number, data: Buffer): void {
    const isText = opcode === OP_TEXT;
    if (isText && !isUtf8(data)) return this.fail(CLOSE.invalidPayload, "a text message must be valid UTF-8");
    this.handlers.message(data, isText);
  }

  private control(opcode: number, payload: Buffer): void {
    if (opcode === OP_PING) {
      if (this.state === "open") this.write(frameOf(OP_PONG, payload));
      return;
    }
    if (opcode === OP_PONG) return;
    // A close frame: its code (if any) must be one a peer may send, and its reason UTF-8.
    if (payload.length === 1) return this.fail(CLOSE.protocolError, "a close frame's code is 2 bytes");
    const code = payload.length >= 2 ? payload.readUInt16BE(0) : CLOSE.noStatus;
    if (payload.length >= 2 && !isValidCloseCode(code)) return this.fail(CLOSE.protocolError, `close code ${code} may not be sent`);
    const reason = payload.subarray(2);
    if (!isUtf8(reason)) return this.fail(CLOSE.invalidPayload, "a close reason must be valid UTF-8");
    if (this.state === "open") {
      // The peer's close, answered with its code (RFC 6455 §5.5.1); the server then ends TCP first (§7.1.1).
      this.state = "closing";
      this.socket.write(payload.length >= 2 ? frameOf(OP_CLOSE, payload.subarray(0, 2)) : frameOf(OP_CLOSE, Buffer.alloc(0)));
      this.closeTimer = setTimeout(() => this.socket.destroy(), CLOSE_TIMEOUT_MS).unref();
      this.handlers.close(code, reason.toString());
    }
    this.socket.end();
  }
}
