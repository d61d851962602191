// A webhook receiver for tests: an HTTP server on 127.0.0.1 that verifies each request with the
// standardwebhooks package (never with tabula's own code), keeps what arrived, and answers as the
// test says: 2xx, another status, never (a hang), or not at all (down: each connection reset,
// its port kept).

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

export interface Received {
  readonly id: string;
  readonly timestamp: string;
  /** The body, as verified and parsed by standardwebhooks. */
  readonly event: Record<string, any>;
  readonly path: string;
  /** The status this receiver answered it with (0: none, a hang). */
  readonly answered: number;
}

/** What the receiver does with the next request: a status, "hang" (never answers), or a full reply of its own. */
export type Behaviour = number | "hang" | ((req: IncomingMessage, res: ServerResponse) => void);

export class WebhookReceiver {
  /** Every verified request, in arrival order (failed answers included). */
  readonly received: Received[] = [];
  /** Requests whose signature did not verify, with the reason. */
  readonly refused: string[] = [];
  behaviour: Behaviour = 204;
  /** Statuses for the next requests, one each, before `behaviour` answers again. */
  next: number[] = [];
  private verifier: Webhook | null = null;
  private readonly server: Server;
  private port = 0;
  private readonly waiters = new Set<() => void>();

  private isDown = false;

  private constructor() {
    this.server = createServer((req, res) => this.handle(req, res));
    this.server.on("connection", (socket) => {
      if (this.isDown) socket.destroy();
    });
  }

  static async start(): Promise<WebhookReceiver> {
    const receiver = new WebhookReceiver();
    await receiver.listen();
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  /** The endpoint's secret, once it is created: requests are verified from then on. */
  set secret(secret: string) {
    this.verifier = new Webhook(secret);
  }

  /** The deliveries: requests answered 2xx. */
  get delivered(): Received[] {
    return this.received.filter((request) => request.answered >= 200 && request.answered < 300);
  }

  /** Stops listening and drops every connection: tabula finds nobody there. */
  //
  // The port stays bound: freed, it could be taken by a receiver of a test file running beside this
  // one, which would answer tabula's attempts in this receiver's place. Every connection is reset
  // as it comes instead, which tabula takes as it takes a refused one.
  async down(): Promise<void> {
    this.isDown = true;
    this.server.closeAllConnections();
  }

  /** Takes connections again. */
  async up(): Promise<void> {
    this.isDown = false;
  }

  /** Resolves once `check` holds of what arrived, or fails after `ms`. */
  async until(check: (receiver: WebhookReceiver) => boolean, ms = 10_000, what = "the receiver's condition"): Promise<void> {
    const deadline = Date.now() + ms;
    while (!check(this)) {
      if (Date.now() > deadline) throw new Error(`${what} not met within ${ms} ms; received ${this.received.length}: ${JSON.stringify(this.received.slice(-5).map((r) => [r.id, r.answered, r.event.type]))}`);
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.waiters.delete(wake);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(wake, 50);
        this.waiters.add(wake);
      });
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private listen(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(this.port, "127.0.0.1", () => {
        this.server.off("error", reject);
        this.port = (this.server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    if (this.isDown) return void req.socket.destroy();
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      const headers = { "webhook-id": String(req.headers["webhook-id"]), "webhook-timestamp": String(req.headers["webhook-timestamp"]), "webhook-signature": String(req.headers["webhook-signature"]) };
      let event: Record<string, any>;
      try {
        if (!this.verifier) throw new Error("no secret set yet");
        event = this.verifier.verify(body, headers) as Record<string, any>;
      } catch (error) {
        this.refused.push(`${(error as Error).message}: ${body.slice(0, 100)}`);
        res.writeHead(400).end();
        return;
      }
      const behaviour = this.next.shift() ?? this.behaviour;
      const answered = typeof behaviour === "number" ? behaviour : behaviour === "hang" ? 0 : -1;
      this.received.push({ id: headers["webhook-id"], timestamp: headers["webhook-timestamp"], event, path: req.url ?? "", answered });
      for (const wake of [...this.waiters]) wake();
      if (typeof behaviour === "number") res.writeHead(behaviour).end(behaviour >= 400 ? "receiver says no" : "");
      else if (typeof behaviour === "function") behaviour(req, res);
      // "hang": never answered; tabula cuts it.
    });
  }
}

/** A change event id ("seq.index") as a pair to compare. */
export function positionOf(id: string): [number, number] {
  const [seq, index] = id.split(".");
  return [Number(seq), Number(index ?? 0)];
}

export function isBefore(a: string, b: string): boolean {
  const [x, y] = [positionOf(a), positionOf(b)];
  return x[0] < y[0] || (x[0] === y[0] && x[1] < y[1]);
}
