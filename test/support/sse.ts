// A Server-Sent Events client for tests of the change feed: parses the stream as the EventSource
// specification says (fields per line, an event per blank line, comments), and lets a test wait for
// events, pause reading (a slow consumer) and drop the connection.

import { request, type ClientRequest, type IncomingMessage } from "node:http";

export interface SseEvent {
  readonly id: string | undefined;
  readonly event: string;
  readonly data: string;
  /** data parsed as JSON. */
  readonly json: any;
}

export class SseClient {
  readonly events: SseEvent[] = [];
  readonly comments: string[] = [];
  status = 0;
  headers: IncomingMessage["headers"] = {};
  /** The body of a refusal (not a stream). */
  body = "";
  ended = false;
  /** Whether the server ended the stream as it should (the chunked body's last chunk), not cut it. */
  endedCleanly = false;
  private buffer = "";
  private response: IncomingMessage | null = null;
  private waiters: Array<() => void> = [];
  private readonly req: ClientRequest;
  readonly opened: Promise<void>;

  constructor(url: string, headers: Record<string, string> = {}) {
    this.req = request(url, { headers: { Accept: "text/event-stream", ...headers } });
    this.opened = new Promise((resolve, reject) => {
      this.req.on("response", (res) => {
        this.response = res;
        this.status = res.statusCode ?? 0;
        this.headers = res.headers;
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => this.receive(chunk));
        res.on("end", () => {
          this.endedCleanly = res.complete;
          this.finish();
        });
        res.on("close", () => this.finish());
        resolve();
      });
      this.req.on("error", (error) => {
        this.finish();
        reject(error);
      });
    });
    this.req.end();
  }

  /** Resolves once `count` events have arrived (or rejects after `ms`). */
  async waitFor(count: number, ms = 10_000): Promise<SseEvent[]> {
    await this.until(() => this.events.length >= count, `${count} events (got ${this.events.length})`, ms);
    return this.events;
  }

  async waitForEnd(ms = 10_000): Promise<void> {
    await this.until(() => this.ended, "the stream's end", ms);
  }

  async until(condition: () => boolean, what: string, ms = 10_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Stops reading: the socket's buffers fill, as with a consumer that cannot keep up. */
  pause(): void {
    this.response?.pause();
    this.response?.socket.pause();
  }

  resume(): void {
    this.response?.socket.resume();
    this.response?.resume();
  }

  close(): void {
    this.req.destroy();
  }

  get lastId(): string | undefined {
    for (let i = this.events.length - 1; i >= 0; i--) if (this.events[i]!.id !== undefined) return this.events[i]!.id;
    return undefined;
  }

  private receive(chunk: string): void {
    if (this.status !== 200) {
      this.body += chunk;
      return;
    }
    this.buffer += chunk;
    for (let end = this.buffer.indexOf("\n\n"); end >= 0; end = this.buffer.indexOf("\n\n")) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      let id: string | undefined;
      let event = "message";
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) {
          this.comments.push(line.slice(1).trim());
          continue;
        }
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "id") id = value;
        else if (field === "event") event = value;
        else if (field === "data") data.push(value);
      }
      if (data.length > 0) {
        const text = data.join("\n");
        this.events.push({ id, event, data: text, json: JSON.parse(text) });
      }
    }
    this.wake();
  }

  private finish(): void {
    this.ended = true;
    this.wake();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}
