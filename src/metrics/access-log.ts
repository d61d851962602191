// --log text|json: one line per request (time, method, path, route, status, ms, key id), never a
// key, a query string (it may carry ?key= or data in q) or a body. Lines are gathered and written
// to stdout by the thread pool, so a slow terminal or pipe never blocks the event loop; past a
// bound of unwritten bytes lines are dropped and counted (GET /metrics), not buffered forever.
//
// Lines are written in batches, as nginx's `access_log ... buffer= flush=` does: once FLUSH_BYTES
// have gathered or FLUSH_MS after the first line of a batch, whichever comes first. A write per
// turn of the event loop would cost a hand-off to the thread pool and a wake-up back for every
// few requests, a large share of a read by id.

import { write } from "node:fs";
import { IsoTimes } from "../iso-time.ts";

export type LogFormat = "text" | "json" | "off";

export const LOG_FORMATS: readonly LogFormat[] = ["text", "json", "off"];

/** Unwritten bytes past which new lines are dropped: a reader that stopped costs no more memory. */
const MAX_PENDING_BYTES = 4 * 1024 * 1024;
/** How long closing waits for the last lines to be written to an output that does not take them. */
const CLOSE_WAIT_MS = 2000;
/** A batch is written once it holds this many bytes... */
const FLUSH_BYTES = 64 * 1024;
/** ...or this long after its first line: what a reader of the log (tail -f) waits at most. */
export const FLUSH_MS = 100;

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
  /** A batch is being written... */
  private writing = false;
  /** ...of this many lines. */
  private writingLines = 0;
  /** The timer that writes the gathering batch FLUSH_MS after its first line. */
  private flushTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly whenIdle: Array<() => void> = [];
  /** The lines of one millisecond share one time string. */
  private readonly times = new IsoTimes();
  /** Lines dropped because the output did not keep up. */
  dropped = 0;

  constructor(
    private readonly format: Exclude<LogFormat, "off">,
    private readonly fd: number = 1,
  ) {}

  request(entry: LoggedRequest): void {
    const time = this.times.of(Date.now());
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
    if (this.writing) return;
    if (this.pendingBytes >= FLUSH_BYTES) this.flush();
    else this.flushLater();
  }

  /** Writes what has gathered, then resolves once every line is written, or after CLOSE_WAIT_MS. */
  close(): Promise<void> {
    if (!this.writing) this.flush();
    if (!this.writing) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, CLOSE_WAIT_MS);
      this.whenIdle.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Writes the batch gathered so far, if any; when it is written, the next batch is scheduled. */
  private flush(): void {
    if (this.flushTimer !== null) {
      clearTimeout(this.flushTimer);
      this.flushTimer = null;
    }
    const lines = this.pending.length;
    const text = this.take();
    if (text === "") {
      this.writing = false;
      for (const resolve of this.whenIdle.splice(0)) resolve();
      return;
    }
    this.writing = true;
    this.writingLines = lines;
    this.writeAll(Buffer.from(text), 0);
  }

  /** After a write: at once when another full batch waits or the log is closing, else by the timer. */
  private written(): void {
    if (this.pendingBytes >= FLUSH_BYTES || this.whenIdle.length > 0 || this.pending.length === 0) {
      this.flush();
      return;
    }
    this.writing = false;
    this.flushLater();
  }

  /** Arms the batch's timer; unref'd, as close() writes what is left. */
  private flushLater(): void {
    this.flushTimer ??= setTimeout(() => this.flush(), FLUSH_MS).unref();
  }

  private writeAll(buffer: Buffer, offset: number): void {
    write(this.fd, buffer, offset, buffer.length - offset, null, (error, written) => {
      if (error?.code === "EAGAIN") {
        // A non-blocking stdout that is full: try again shortly (lines keep gathering, bounded).
        setTimeout(() => this.writeAll(buffer, offset), 10);
        return;
      }
      if (error) {
        // stdout closed: drop the batch and what is pending rather than retry forever.
        this.dropped += this.writingLines + this.pending.length;
        this.take();
        this.flush();
        return;
      }
      if (offset + written < buffer.length) this.writeAll(buffer, offset + written);
      else this.written();
    });
  }

  private take(): string {
    const text = this.pending.join("");
    this.pending = [];
    this.pendingBytes = 0;
    return text;
  }
}
