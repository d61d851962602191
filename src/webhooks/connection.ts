// The HTTP/1.1 client webhooks are sent with (docs/webhooks.md, "Lag"): keep-alive connections over
// node:net and node:tls, each request written as one string, each answer read by a parser that
// knows only what a webhook needs (status, Location, Connection, the body's framing) and stops at
// MAX_ANSWER_BYTES. node:http's client took half as much again of the server's CPU per delivery
// (docs/benchmarks.md, "Webhooks (W11)"). What an answer means, and the time limit, are send.ts's;
// which addresses may be reached is target.ts's (its lookup is the one every connection uses).

import { isIP, connect as netConnect, type LookupFunction, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { hostOf } from "./target.ts";

/** What is read of an answer, head and body; the connection is cut after it. */
export const MAX_ANSWER_BYTES = 64 * 1024;
/** What is kept of an answer's body (the delivery log's note). */
const MAX_NOTE_BYTES = 200;

export interface Exchange {
  /** The final status line and headers have arrived (a 1xx is passed over). */
  onHead(status: number, location: string | null): void;
  /** The body is read, or cut (at MAX_ANSWER_BYTES, or by the connection closing); `note` is its start. */
  onBody(note: string): void;
  /**
   * The connection failed before an answer's head came. `isStale`: it was a reused connection that
   * closed without a byte of answer (the receiver let it go while it was idle).
   */
  onError(error: NodeJS.ErrnoException, isStale: boolean): void;
}

type Framing = "none" | "length" | "chunked" | "close";

/** One keep-alive connection to a receiver, carrying one exchange at a time. */
export class Connection {
  private exchange: Exchange | null = null;
  /** Answer text not yet parsed, one character per byte (latin1). */
  private pending = "";
  private bytesRead = 0;
  private hasHead = false;
  private framing: Framing = "none";
  /** Body bytes still due ("length"), or of the current chunk ("chunked"). */
  private remaining = 0;
  private chunkState: "size" | "data" | "data-end" | "trailer" = "size";
  private note = "";
  private isReusable = true;
  private isClosed = false;
  private exchanges = 0;

  constructor(
    private readonly socket: Socket,
    private readonly whenIdle: (connection: Connection) => void,
    private readonly whenClosed: (connection: Connection) => void,
  ) {
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => this.read(chunk));
    socket.on("error", (error: NodeJS.ErrnoException) => this.end(error));
    const closed = () => this.end(Object.assign(new Error("the receiver closed the connection before answering"), { code: "ECONNRESET" }));
    // The receiver's FIN: node:net ends its side too (no half-open connections), then closes.
    socket.on("end", closed);
    socket.on("close", closed);
  }

  get isOpen(): boolean {
    return !this.isClosed && !this.socket.destroyed;
  }

  /** Writes `request` (head and body, one string) and reads its answer into `exchange`. */
  send(request: string, exchange: Exchange): void {
    this.exchange = exchange;
    this.pending = "";
    this.bytesRead = 0;
    this.hasHead = false;
    this.note = "";
    this.exchanges++;
    this.socket.ref();
    this.socket.write(request);
  }

  /** Cuts the connection; the exchange in flight, if any, hears nothing more. */
  destroy(): void {
    this.exchange = null;
    this.isReusable = false;
    this.socket.destroy();
  }

  private read(chunk: Buffer): void {
    if (!this.exchange) {
      // Bytes nobody asked for: the connection is out of step, and is not used again.
      this.destroy();
      return;
    }
    this.bytesRead += chunk.length;
    this.pending += chunk.toString("latin1");
    this.parse();
    if (this.exchange && this.bytesRead > MAX_ANSWER_BYTES) {
      this.isReusable = false;
      if (this.hasHead) this.endBody();
      else this.abort(Object.assign(new Error(`no answer head within ${MAX_ANSWER_BYTES} bytes`), { code: "EPROTO" }));
    }
  }

  private parse(): void {
    while (this.exchange && !this.hasHead) {
      const end = this.pending.indexOf("\r\n\r\n");
      if (end === -1) return;
      const head = this.pending.slice(0, end);
      this.pending = this.pending.slice(end + 4);
      this.readHead(head);
    }
    if (!this.exchange) return;
    if (this.framing === "length") {
      const taken = Math.min(this.remaining, this.pending.length);
      this.keep(this.pending.slice(0, taken));
      this.pending = this.pending.slice(taken);
      this.remaining -= taken;
      if (this.remaining === 0) this.endBody();
    } else if (this.framing === "chunked") {
      this.readChunks();
    } else if (this.framing === "close") {
      this.keep(this.pending);
      this.pending = "";
    }
  }

  private readHead(head: string): void {
    const lines = head.split("\r\n");
    const match = /^HTTP\/1\.([01]) (\d{3})/.exec(lines[0]!);
    if (!match) {
      this.abort(Object.assign(new Error(`the answer is not HTTP/1.x: ${JSON.stringify(lines[0]!.slice(0, 40))}`), { code: "EPROTO" }));
      return;
    }
    const status = Number(match[2]);
    // An informational answer (100, 103) comes before the real one.
    if (status < 200) return;
    this.hasHead = true;
    let length: number | null = null;
    let isChunked = false;
    let location: string | null = null;
    let connection = match[1] === "0" ? "close" : "keep-alive";
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(":");
      if (colon === -1) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === "content-length") length = Number(value);
      else if (name === "transfer-encoding") isChunked = value.toLowerCase().includes("chunked");
      else if (name === "location") location = value;
      else if (name === "connection") connection = value.toLowerCase();
    }
    if (connection.includes("close")) this.isReusable = false;
    if (status === 204 || status === 304) this.framing = "none";
    else if (isChunked) [this.framing, this.chunkState] = ["chunked", "size"];
    else if (length !== null && Number.isSafeInteger(length) && length >= 0) [this.framing, this.remaining] = ["length", length];
    else this.framing = "close";
    if (this.framing === "close") this.isReusable = false;
    this.exchange!.onHead(status, location);
    if (this.framing === "none") this.endBody();
  }

  private readChunks(): void {
    while (this.exchange) {
      if (this.chunkState === "size") {
        const end = this.pending.indexOf("\r\n");
        if (end === -1) return;
        const size = parseInt(this.pending.slice(0, end), 16);
        this.pending = this.pending.slice(end + 2);
        if (!(size >= 0)) {
          this.isReusable = false;
          this.endBody();
          return;
        }
        [this.chunkState, this.remaining] = size === 0 ? ["trailer", 0] : ["data", size];
      } else if (this.chunkState === "data") {
        const taken = Math.min(this.remaining, this.pending.length);
        this.keep(this.pending.slice(0, taken));
        this.pending = this.pending.slice(taken);
        this.remaining -= taken;
        if (this.remaining > 0) return;
        this.chunkState = "data-end";
      } else if (this.chunkState === "data-end") {
        if (this.pending.length < 2) return;
        this.pending = this.pending.slice(2);
        this.chunkState = "size";
      } else {
        // Trailers, if any, end at an empty line.
        if (this.pending.startsWith("\r\n")) this.pending = this.pending.slice(2);
        else {
          const end = this.pending.indexOf("\r\n\r\n");
          if (end === -1) return;
          this.pending = this.pending.slice(end + 4);
        }
        this.endBody();
      }
    }
  }

  private keep(text: string): void {
    if (this.note.length < MAX_NOTE_BYTES) this.note += text.slice(0, MAX_NOTE_BYTES - this.note.length);
  }

  private endBody(): void {
    const exchange = this.exchange!;
    this.exchange = null;
    // Anything after the answer is a second answer nobody asked for.
    if (this.pending !== "") this.isReusable = false;
    exchange.onBody(Buffer.from(this.note, "latin1").toString("utf8"));
    if (this.isReusable && this.isOpen) {
      this.socket.unref();
      this.whenIdle(this);
    } else this.socket.destroy();
  }

  /** Before the head: the exchange fails and the connection is cut. */
  private abort(error: NodeJS.ErrnoException): void {
    const exchange = this.exchange!;
    this.destroy();
    exchange.onError(error, false);
  }

  /** The socket failed or closed: what it carried ends here. */
  private end(error: NodeJS.ErrnoException): void {
    if (!this.isClosed) {
      this.isClosed = true;
      this.whenClosed(this);
    }
    const exchange = this.exchange;
    if (!exchange) return;
    this.isReusable = false;
    // The body ends with the connection ("close" framing), or was cut short: what came is the note.
    if (this.hasHead) return this.endBody();
    this.exchange = null;
    this.socket.destroy();
    exchange.onError(error, this.exchanges > 1 && this.bytesRead === 0);
  }
}

/** Keep-alive connections by origin; each new one opened through `lookup` (target.ts checks the address). */
export class ConnectionPool {
  private readonly idle = new Map<string, Connection[]>();
  private readonly all = new Set<Connection>();

  constructor(private readonly lookup: LookupFunction) {}

  /** An idle connection to `url`'s origin, or a new one. */
  take(url: URL): Connection {
    const origin = url.origin;
    const idle = this.idle.get(origin);
    while (idle && idle.length > 0) {
      const connection = idle.pop()!;
      if (connection.isOpen) return connection;
    }
    return this.open(url, origin);
  }

  /** A new connection, never one that was idle (after a reused one was found closed). */
  fresh(url: URL): Connection {
    return this.open(url, url.origin);
  }

  close(): void {
    for (const connection of this.all) connection.destroy();
    this.all.clear();
    this.idle.clear();
  }

  private open(url: URL, origin: string): Connection {
    const isHttps = url.protocol === "https:";
    const host = hostOf(url);
    const port = Number(url.port || (isHttps ? 443 : 80));
    // Written to before it connects: node:net and node:tls hold the request until then.
    const socket = isHttps ? tlsConnect({ host, port, servername: isIP(host) === 0 ? host : undefined, lookup: this.lookup, ALPNProtocols: ["http/1.1"] }) : netConnect({ host, port, lookup: this.lookup });
    const connection = new Connection(
      socket,
      (idle) => {
        let list = this.idle.get(origin);
        if (!list) this.idle.set(origin, (list = []));
        list.push(idle);
      },
      (closed) => {
        this.all.delete(closed);
        const list = this.idle.get(origin);
        const at = list?.indexOf(closed) ?? -1;
        if (at !== -1) list!.splice(at, 1);
      },
    );
    this.all.add(connection);
    return connection;
  }
}
