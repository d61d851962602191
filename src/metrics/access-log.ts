// --log text|json: one line per request (time, method, path, route, status, ms, key id), never a
// key, a query string (it may carry ?key= or data in q) or a body. Lines are gathered and written
// to stdout by the thread pool, so a slow terminal or pipe never blocks the event loop; past a
// bound of unwritten bytes lines are dropped and counted (GET /metrics), not buffered forever.

import { write } from "node:fs";

export type LogFormat = "text" | "json" | "off";

export const LOG_FORMATS: readonly LogFormat[] = ["text", "json", "off"];

/** Unwritten bytes past which new lines are dropped: a reader that stopped costs no more memory. */
const MAX_PENDING_BYTES = 4 * 1024 * 1024;
/** How long closing waits for the last lines to be written to an output that does not take them. */
const CLOSE_WAIT_MS = 2000;

export interface LoggedRequest {
  readonly method: string;
  /** The path without its query. */
  readonly path: string;
  /** The route template that served it ("(none)" when no route matched). */
  readonly route: string;
  readonly status: number;
  readonly ms: number;
  /** The API key's id, or null when the request carried no valid key. */
  readonly keyId: string | null;
}

export class AccessLog {
  private pending: string[] = [];
  private pendingBytes = 0;
  private writing = false;
  private readonly whenIdle: Array<() => void> = [];
  /** Lines dropped because the output did not keep up. */
  dropped = 0;

  constructor(
    private readonly format: Exclude<LogFormat, "off">,
    private readonly fd: number = 1,
  ) {}

  request(entry: LoggedRequest): void {
    const time = new Date().toISOString();
    const ms = Math.round(entry.ms * 100) / 100;
    const line =
      this.format === "json"
        ? `${JSON.stringify({ time, method: entry.method, path: entry.path, route: entry.route, status: entry.status, ms, key_id: entry.keyId })}\n`
        : `${time} ${entry.method} ${entry.path} ${entry.status} ${ms}ms ${entry.keyId ?? "-"}\n`;
    if (this.pendingBytes + line.length > MAX_PENDING_BYTES) {
      this.dropped++;
      return;
    }
    this.pending.push(line);
    this.pendingBytes += line.length;
    if (!this.writing) {
      this.writing = true;
      setImmediate(() => this.flush());
    }
  }

  /** Resolves once every line is written (the server is closing), or after CLOSE_WAIT_MS. */
  close(): Promise<void> {
    if (!this.writing) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, CLOSE_WAIT_MS);
      this.whenIdle.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private flush(): void {
    const text = this.take();
    if (text === "") {
      this.writing = false;
      for (const resolve of this.whenIdle.splice(0)) resolve();
      return;
    }
    this.writeAll(Buffer.from(text), 0);
  }

  private writeAll(buffer: Buffer, offset: number): void {
    write(this.fd, buffer, offset, buffer.length - offset, null, (error, written) => {
      if (error?.code === "EAGAIN") {
        // A non-blocking stdout that is full: try again shortly (lines keep gathering, bounded).
        setTimeout(() => this.writeAll(buffer, offset), 10);
        return;
      }
      if (error) {
        // stdout closed: drop what is pending rather than retry forever.
        this.dropped += this.pending.length;
        this.take();
        this.flush();
        return;
      }
      if (offset + written < buffer.length) this.writeAll(buffer, offset + written);
      else this.flush();
    });
  }

  private take(): string {
    const text = this.pending.join("");
    this.pending = [];
    this.pendingBytes = 0;
    return text;
  }
}
