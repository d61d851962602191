// A Socket.IO client written out by hand over the `ws` package, for tests of the wire itself
// (docs/base44-sdk.md, "Realtime"): every text message is kept, in order, to be awaited one by one;
// packets are sent as the text socket.io-client would send.

import assert from "node:assert/strict";
import WebSocket from "ws";

export const SOCKET_PATH = "/ws-user-apps/socket.io/";

/** ws://… for the socket of the server at `httpUrl`, with EIO=4&transport=websocket and `query`. */
export function socketUrl(httpUrl: string, query: Record<string, string> = {}): string {
  const params = new URLSearchParams({ EIO: "4", transport: "websocket", ...query });
  return `${httpUrl.replace(/^http/, "ws")}${SOCKET_PATH}?${params}`;
}

const WAIT_MS = 5_000;

export class RawSocket {
  readonly messages: string[] = [];
  private readonly waiting: Array<() => void> = [];
  private read = 0;
  /** The close code and reason, once closed. */
  readonly closed: Promise<{ code: number; reason: string }>;

  /** `answersPings`: Engine.IO pings ("2") are answered ("3") as socket.io-client does; they are kept as messages too. */
  constructor(readonly ws: WebSocket, answersPings = true) {
    ws.on("message", (data, isBinary) => {
      const text = isBinary ? `<binary ${(data as Buffer).length}>` : data.toString();
      if (answersPings && text === "2") ws.send("3");
      this.messages.push(text);
      for (const wake of this.waiting.splice(0)) wake();
    });
    this.closed = new Promise((resolve) => ws.on("close", (code, reason) => resolve({ code, reason: reason.toString() })));
    ws.on("error", () => {});
  }

  /** Opens a WebSocket to the socket and waits for Engine.IO's open packet; its data. */
  static async open(httpUrl: string, query: Record<string, string> = {}, options: WebSocket.ClientOptions = {}, answersPings = true): Promise<{ socket: RawSocket; open: any }> {
    const ws = new WebSocket(socketUrl(httpUrl, query), options);
    const socket = new RawSocket(ws, answersPings);
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("unexpected-response", (_, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
      ws.once("error", reject);
    });
    const first = await socket.next();
    assert.equal(first[0], "0", `the first message is Engine.IO's open packet: ${first}`);
    return { socket, open: JSON.parse(first.slice(1)) };
  }

  /** Opens, and connects to the default namespace with the key: the CONNECT answer's data. */
  static async connect(httpUrl: string, token: string, query: Record<string, string> = {}): Promise<RawSocket> {
    const { socket } = await RawSocket.open(httpUrl, { token, ...query });
    socket.send("40");
    const answer = await socket.next();
    assert.match(answer, /^40\{"sid":"[\w-]+"\}$/);
    return socket;
  }

  send(text: string): void {
    this.ws.send(text);
  }

  /** The next message not read yet (skipping Engine.IO pings unless `pings`). */
  async next(pings = false): Promise<string> {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      while (this.read < this.messages.length) {
        const message = this.messages[this.read++]!;
        if (pings || message !== "2") return message;
      }
      if (Date.now() > deadline) assert.fail(`no message within ${WAIT_MS} ms; got ${JSON.stringify(this.messages)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, deadline - Date.now());
        this.waiting.push(() => (clearTimeout(timer), resolve()));
      });
    }
  }

  /** Emits `join` with ack id `ackId` and waits for its ack: `{ ok, error? }`. */
  async join(room: string, ackId = 1, event = "join"): Promise<{ ok: boolean; error?: { code: string; message: string } }> {
    this.send(`42${ackId}${JSON.stringify([event, room])}`);
    const answer = await this.next();
    assert.ok(answer.startsWith(`43${ackId}[`), `an ack of ${ackId}: ${answer}`);
    return JSON.parse(answer.slice(`43${ackId}`.length))[0];
  }

  /** The next `update_model` emit: its room, and its data parsed. */
  async nextUpdate(): Promise<{ room: string; event: any }> {
    const message = await this.next();
    assert.ok(message.startsWith('42["update_model",'), `an update_model emit: ${message}`);
    const [, payload] = JSON.parse(message.slice(2));
    return { room: payload.room, event: JSON.parse(payload.data) };
  }

  close(): Promise<{ code: number; reason: string }> {
    this.ws.close();
    return this.closed;
  }
}
