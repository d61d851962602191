// One raw HTTP/1.1 connection held open: bytes go out as given, when the test says, and the answers
// are parsed as they come (raw-http.ts's parseResponses), for tests of what a connection does
// between its requests: a body that pauses, a head that trickles, an upgrade declined.

import { connect, type Socket } from "node:net";
import { parseResponses, type RawResponse } from "./raw-http.ts";

/** Guards against a hang only, generous for a loaded machine. */
const WAIT_MS = 30_000;

export class RawConnection {
  private data = Buffer.alloc(0);
  private isClosed = false;
  private readonly waiters = new Set<() => void>();

  private constructor(readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => {
      this.data = Buffer.concat([this.data, chunk]);
      this.wake();
    });
    socket.on("close", () => {
      this.isClosed = true;
      this.wake();
    });
    // A reset after the server closed is the close itself.
    socket.on("error", () => {});
  }

  /** Connected (the server may not have accepted it yet: that is the kernel's doing), from `localAddress` when given. */
  static open(url: string, localAddress?: string): Promise<RawConnection> {
    const { hostname, port } = new URL(url);
    const socket = connect({ port: Number(port), host: hostname, localAddress });
    return new Promise((resolve, reject) => {
      socket.once("connect", () => resolve(new RawConnection(socket)));
      socket.once("error", reject);
    });
  }

  get received(): string {
    return this.data.toString("latin1");
  }

  get closed(): boolean {
    return this.isClosed;
  }

  write(bytes: string | Buffer): void {
    if (!this.socket.destroyed) this.socket.write(bytes);
  }

  end(bytes?: string | Buffer): void {
    if (this.socket.destroyed) return;
    if (bytes === undefined) this.socket.end();
    else this.socket.end(bytes);
  }

  /** The first `count` whole answers, once they have come. */
  async responses(count: number, ms = WAIT_MS): Promise<RawResponse[]> {
    await this.until(() => parseResponses(this.data).responses.length >= count, `${count} answers`, ms);
    return parseResponses(this.data).responses.slice(0, count);
  }

  /** Resolves once the server has closed the connection (the client's side too, then). */
  async whenClosed(ms = WAIT_MS): Promise<void> {
    await this.until(() => this.isClosed, "the connection's close", ms);
  }

  private async until(condition: () => boolean, what: string, ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (!condition()) {
      if (this.isClosed) throw new Error(`the connection closed before ${what}; received ${JSON.stringify(this.received.slice(0, 500))}`);
      if (Date.now() > deadline) throw new Error(`no ${what} within ${ms} ms; received ${JSON.stringify(this.received.slice(0, 500))}`);
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.max(0, deadline - Date.now()) + 1);
        this.waiters.add(wake);
      });
    }
  }

  private wake(): void {
    for (const wake of [...this.waiters]) wake();
  }
}
