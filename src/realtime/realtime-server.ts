// The socket @base44/sdk's subscribe() connects to (docs/base44-sdk.md, "Realtime"): node:http's
// `upgrade` event for a WebSocket at /ws-user-apps/socket.io/ (any other upgrade is served as
// HTTP/1.1: http/declined-upgrade.ts), checked (Engine.IO version and transport, Origin against
// --cors, the WebSocket handshake, --max-streams) before it becomes a WebSocket speaking Socket.IO. Holds the connections, their shared heartbeat, and ends those of keys revoked.

import { openRoute, type Handler } from "../http/context.ts";
import type { Router } from "../http/router.ts";
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { ApiError, tooManyStreams, unauthorized } from "../errors.ts";
import type { ChangeFeed } from "../feed/change-feed.ts";
import { isOriginAllowed, type CorsPolicy } from "../http/cors.ts";
import { LINGER_MS } from "../http/linger.ts";
import { headerOf, isUserToken, presentedCredentials } from "../http/request.ts";
import { errorReply, replyMessage } from "../http/response.ts";
import type { KeyRing } from "../keys/api-keys.ts";
import { NO_KEY, type Caller, type SessionUser } from "../keys/caller.ts";
import type { Maybe } from "../maybe.ts";
import type { Users } from "../users/users.ts";
import type { Schema } from "../schema/load.ts";
import { SocketIoConnection, type Credentials } from "./socket-io-connection.ts";
import { handshakeAnswer, handshakeRefusal, WebSocket } from "./websocket.ts";

/** Where @base44/sdk's socket.io-client connects (its client.js: mountPath). */
export const SOCKET_IO_PATH = "/ws-user-apps/socket.io/";
/** A WebSocket message (one frame or fragments), and Engine.IO's maxPayload: larger is closed with 1009. */
export const MAX_MESSAGE_BYTES = 1 << 20;

export interface RealtimeOptions {
  readonly feed: ChangeFeed;
  readonly keys: KeyRing;
  /** A signed-in user's token is accepted as the handshake's token too (docs/users.md). */
  readonly users: Users;
  readonly schema: Schema;
  readonly appId: string | null;
  /** A handshake with no key and no token is an anonymous visitor's (docs/base44-sdk.md). */
  readonly anonymous: boolean;
  readonly cors: CorsPolicy | null;
  /** Engine.IO's ping interval, and its timeout: the feed's heartbeat. */
  readonly heartbeatMs: number;
  /** A connection whose unsent bytes pass this is closed, like a feed stream (--max-streams' streams). */
  readonly streamBufferBytes: number;
}

/** Whether `path` is the socket's, with or without its trailing slash (engine.io-client adds one). */
export function isSocketIoPath(path: string): boolean {
  return path === SOCKET_IO_PATH || path === SOCKET_IO_PATH.slice(0, -1);
}

/** Whether an upgrade is the socket's: a WebSocket at its path. */
export function isRealtimeUpgrade(req: IncomingMessage): boolean {
  const url = req.url ?? "/";
  const queryAt = url.indexOf("?");
  return (headerOf(req, "upgrade") ?? "").toLowerCase() === "websocket" && isSocketIoPath(queryAt === -1 ? url : url.slice(0, queryAt));
}

/** A plain GET of the socket's path: Engine.IO's polling transport, which is not served. */
export const pollingRefused = () =>
  new ApiError(400, "invalid_request", `${SOCKET_IO_PATH} is served over WebSocket alone (EIO=4&transport=websocket): connect with transports: ["websocket"], as @base44/sdk does; HTTP long-polling is not served.`);

/** Engine.IO's polling transport is answered pollingRefused (a route anyone may call), never served. */
export function addPollingRefusal(router: Router<Handler>): void {
  const refuse = openRoute(() => {
    throw pollingRefused();
  });
  router.add("GET", SOCKET_IO_PATH, refuse).add("POST", SOCKET_IO_PATH, refuse);
}

export class Realtime {
  private readonly connections = new Set<SocketIoConnection>();
  private readonly heartbeat: NodeJS.Timeout;
  private isClosed = false;

  constructor(private readonly options: RealtimeOptions) {
    // One timer for every connection: each gets a ping per interval, and is closed if it did not answer the last.
    this.heartbeat = setInterval(() => {
      for (const connection of this.connections) connection.beat();
    }, options.heartbeatMs).unref();
    options.keys.onGone((gone) => this.endConnectionsOf(gone));
  }

  /** Sockets open and rooms joined (GET /metrics). */
  get load(): { readonly sockets: number; readonly rooms: number } {
    let rooms = 0;
    for (const connection of this.connections) rooms += connection.roomCount;
    return { sockets: this.connections.size, rooms };
  }

  /** node:http's `upgrade` when isRealtimeUpgrade: a Socket.IO connection, or an answer saying why not, and the socket closed. */
  handleUpgrade(req: IncomingMessage, socket: Socket, head: Buffer): void {
    socket.on("error", () => socket.destroy());
    // Stopping: the listener is closing, and a client reconnects to the next server.
    if (this.isClosed) return void socket.destroy();
    const refusal = this.refusalOf(req);
    if (refusal !== null) return refuse(socket, refusal);
    const query = new URLSearchParams((req.url ?? "").split("?")[1] ?? "");
    const credentials = this.credentialsOf(req, query);
    // A user's token on a shared store may wait for its session to be read.
    if (credentials instanceof Promise) {
      socket.pause();
      void credentials.then((known) => {
        socket.resume();
        if (!socket.destroyed && !this.isClosed) this.open(req, socket, head, query, known);
      });
      return;
    }
    this.open(req, socket, head, query, credentials);
  }

  private open(req: IncomingMessage, socket: Socket, head: Buffer, query: URLSearchParams, credentials: Credentials): void {
    const { feed } = this.options;
    if (!feed.hold()) return refuse(socket, tooManyStreams(feed.limits.maxStreams));
    const connection = new SocketIoConnection(
      { feed, schema: this.options.schema, appId: this.options.appId, heartbeatMs: this.options.heartbeatMs, maxMessageBytes: MAX_MESSAGE_BYTES },
      credentials,
      query.get("app_id"),
    );
    this.connections.add(connection);
    socket.write(handshakeAnswer(req));
    const ws = new WebSocket(socket, head, { maxMessageBytes: MAX_MESSAGE_BYTES, maxBufferedBytes: this.options.streamBufferBytes }, {
      message: (data, isText) => connection.receive(data, isText),
      close: () => {
        if (!this.connections.delete(connection)) return;
        connection.closed();
        feed.release();
      },
    });
    connection.open(ws);
  }

  /** Keys revoked or expired, here or by another process: their connections end as their feed streams do. */
  endConnectionsOf(keyIds: ReadonlySet<string>): void {
    for (const connection of [...this.connections]) {
      const keyId = connection.keyId;
      if (keyId !== null && keyIds.has(keyId)) connection.endFor("unauthorized");
    }
  }

  /** Ends the connections whose caller is no longer accepted (a user's session ended, docs/users.md). */
  endConnectionsWhere(isGone: (caller: Caller) => boolean): void {
    for (const connection of [...this.connections]) {
      const caller = connection.caller;
      if (caller !== null && isGone(caller)) connection.endFor("unauthorized");
    }
  }

  /** Closes every connection (1001, going away): clients reconnect to the next server. */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    clearInterval(this.heartbeat);
    for (const connection of [...this.connections]) connection.endFor("closed");
  }

  private refusalOf(req: IncomingMessage): ApiError | null {
    const url = req.url ?? "/";
    const queryAt = url.indexOf("?");
    const query = new URLSearchParams(queryAt === -1 ? "" : url.slice(queryAt + 1));
    if (query.get("EIO") !== "4") return new ApiError(400, "invalid_request", `This server speaks Engine.IO 4 (EIO=4), not EIO=${query.get("EIO") ?? "none"}; use socket.io-client 4 (as @base44/sdk does).`);
    if (query.get("transport") !== "websocket") return pollingRefused();
    if (!isOriginAllowed(this.options.cors, req)) {
      return new ApiError(403, "forbidden", "This page's origin may not connect: it is not among the origins --cors allows. Start the server with --cors naming it.");
    }
    return handshakeRefusal(req);
  }

  /** The key, from the handshake's `token` (the SDK's), X-Api-Key or Authorization: Bearer; one key if several are sent. */
  private credentialsOf(req: IncomingMessage, query: URLSearchParams): Maybe<Credentials> {
    let presented: { key: string | undefined; token: string | undefined };
    try {
      presented = presentedCredentials(req);
    } catch (error) {
      return { refusal: { code: "unauthorized", message: (error as Error).message } };
    }
    const given = query.get("token")?.trim() || undefined;
    // The handshake's token is a key, or a signed-in user's token (what the SDK holds after login).
    const userToken = presented.token ?? (given !== undefined && isUserToken(given) ? given : undefined);
    const header = presented.key;
    const token = given === userToken ? undefined : given;
    if (header !== undefined && token !== undefined && header !== token) {
      return { refusal: { code: "unauthorized", message: "The token query parameter and the key header name different keys; send one key." } };
    }
    const value = header ?? token;
    if (userToken !== undefined) return this.userCredentials(userToken, value);
    const caller = value === undefined ? (this.options.anonymous ? NO_KEY : undefined) : this.options.keys.find(value);
    if (caller !== undefined) return { caller };
    const message = value === undefined ? "Send an API key: createClient's token (the token query parameter), X-Api-Key, or Authorization: Bearer <key>." : unauthorized(true).message;
    return { refusal: { code: "unauthorized", message } };
  }

  /** A user's credentials: its token, with the app's publishable key or none (a secret key is refused). */
  private userCredentials(token: string, key: string | undefined): Maybe<Credentials> {
    const app = key === undefined ? undefined : this.options.keys.find(key);
    if (key !== undefined && app === undefined) return { refusal: { code: "unauthorized", message: unauthorized(true).message } };
    if (app?.kind === "secret") return { refusal: { code: "invalid_request", message: "A user's token came with a secret key; send one of them." } };
    try {
      const user = this.options.users.authenticate(token);
      const credentialsOf = (known: SessionUser): Credentials => ({ caller: { keyId: app?.keyId ?? "", kind: "publishable", user: known } });
      if (!(user instanceof Promise)) return credentialsOf(user);
      return user.then(credentialsOf, (error: Error) => ({ refusal: { code: "unauthorized", message: error.message } }));
    } catch (error) {
      return { refusal: { code: "unauthorized", message: (error as Error).message } };
    }
  }
}

/** An HTTP answer on a socket node:http has handed over, then the socket closed (as client-error.ts does). */
function refuse(socket: Socket, error: ApiError): void {
  if (!socket.writable) return void socket.destroy();
  socket.end(replyMessage(errorReply(error)));
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
  socket.once("close", () => socket.destroy());
}
