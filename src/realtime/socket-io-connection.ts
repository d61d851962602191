// One Socket.IO client on one WebSocket (docs/base44-sdk.md, "Realtime"): Engine.IO's open packet
// and heartbeat answers, the default namespace's connect (refused with CONNECT_ERROR for a key not
// known), and the `join`/`leave` events of @base44/sdk, each room a change feed stream. Anything
// else the protocol allows is answered with its error packet or an `error` event, never a crash.

import { randomBytes } from "node:crypto";
import type { ChangeFeed } from "../feed/change-feed.ts";
import type { FeedEnd } from "../feed/feed-sink.ts";
import { subscriptionOf } from "../http/feed-params.ts";
import type { Caller } from "../keys/caller.ts";
import type { Schema } from "../schema/load.ts";
import { RoomSink, type RoomConnection } from "./room-sink.ts";
import { decodeSocketPacket, DEFAULT_NAMESPACE, encodeSocketPacket, ENGINE, eventPacket, openPacket, SOCKET, type SocketPacket } from "./socket-io-packets.ts";
import { CLOSE, type WebSocket } from "./websocket.ts";

/** Rooms one connection may be in: an app's entities, under one app id or a few. */
export const MAX_ROOMS_PER_CONNECTION = 256;
const ROOM_RE = /^entities:([^:]+):(.+)$/;

/** What every connection shares: the feed, the schema, the app id (--app-id), the heartbeat. */
export interface ConnectionContext {
  readonly feed: ChangeFeed;
  readonly schema: Schema;
  /** --app-id: rooms (and the handshake's app_id) must name it; null serves any. */
  readonly appId: string | null;
  readonly heartbeatMs: number;
  readonly maxMessageBytes: number;
}

/** Who connected: the key's caller, or why there is none (answered at the namespace connect). */
export type Credentials = { readonly caller: Caller } | { readonly refusal: { readonly code: string; readonly message: string } };

interface Refusal {
  readonly code: string;
  readonly message: string;
}

export class SocketIoConnection implements RoomConnection {
  readonly sid = randomBytes(15).toString("base64url");
  private namespaceSid: string | null = null;
  private readonly rooms = new Map<string, RoomSink>();
  /** A ping was sent and its pong has not come back yet. */
  private isAwaitingPong = false;
  private ws!: WebSocket;

  constructor(
    private readonly ctx: ConnectionContext,
    readonly credentials: Credentials,
    /** The handshake's app_id query, when given. */
    private readonly handshakeAppId: string | null,
  ) {}

  /** Starts the Engine.IO session on `ws` (opened for this connection). */
  open(ws: WebSocket): void {
    this.ws = ws;
    ws.send(openPacket(this.sid, this.ctx.heartbeatMs, this.ctx.heartbeatMs, this.ctx.maxMessageBytes));
  }

  get roomCount(): number {
    return this.rooms.size;
  }

  get keyId(): string | null {
    return "caller" in this.credentials ? this.credentials.caller.keyId : null;
  }

  /** Who connected; null when the connection was refused. */
  get caller(): Caller | null {
    return "caller" in this.credentials ? this.credentials.caller : null;
  }

  // RoomConnection, for the rooms' sinks.
  write(frames: Buffer): void {
    this.ws.write(frames);
  }

  get bufferedBytes(): number {
    return this.ws.bufferedBytes;
  }

  drained(): Promise<void> {
    return this.ws.drained();
  }

  endFor(why: FeedEnd): void {
    if (!this.ws.isOpen) return;
    if (why === "unauthorized" && this.namespaceSid !== null) {
      // DISCONNECT, so that socket.io-client does not reconnect with the same key.
      const message = this.caller?.user
        ? "The session of this connection's user has ended (signed out, the password changed, or disabled); sign in again."
        : "The API key of this connection was revoked or has expired; connect again with a valid key.";
      this.ws.send(eventPacket(DEFAULT_NAMESPACE, "error", { code: "unauthorized", message }));
      this.ws.send(encodeSocketPacket(SOCKET.disconnect, DEFAULT_NAMESPACE));
    }
    const closes: Record<FeedEnd, [number, string]> = {
      overflow: [CLOSE.policyViolation, "too slow: fell too far behind; reconnect"],
      unauthorized: [CLOSE.policyViolation, this.caller?.user ? "the user's session has ended" : "the API key was revoked or has expired"],
      closed: [CLOSE.goingAway, "the server is stopping"],
      failed: [CLOSE.internalError, "the store could not be read; reconnect"],
    };
    this.ws.close(...closes[why]);
  }

  /** The server's heartbeat: a ping, unless the last one went unanswered (then the connection is dead). */
  beat(): void {
    if (!this.ws.isOpen) return;
    if (this.isAwaitingPong) return this.ws.close(CLOSE.policyViolation, "ping timeout");
    this.isAwaitingPong = true;
    this.ws.send(ENGINE.ping);
  }

  /** The WebSocket ended: every room's stream goes. */
  closed(): void {
    for (const sink of this.rooms.values()) sink.close();
    this.rooms.clear();
    this.namespaceSid = null;
  }

  receive(data: Buffer, isText: boolean): void {
    // Binary frames are Socket.IO attachments, which binaryPacket() refused already.
    if (!isText) return;
    const text = data.toString();
    switch (text[0]) {
      case ENGINE.pong:
        this.isAwaitingPong = false;
        return;
      case ENGINE.ping:
        // Engine.IO 3 clients and probes ping the server: answered with the same data.
        return this.ws.send(ENGINE.pong + text.slice(1));
      case ENGINE.message:
        return this.receivePacket(text.slice(1));
      case ENGINE.close:
        return this.ws.close(CLOSE.normal, "closed by the client");
      case ENGINE.upgrade:
      case ENGINE.noop:
        // Already on the only transport.
        return;
      default:
        return this.ws.close(CLOSE.protocolError, "not an Engine.IO 4 packet");
    }
  }

  private receivePacket(text: string): void {
    const packet = decodeSocketPacket(text);
    if (typeof packet === "string") return this.ws.close(CLOSE.protocolError, packet.slice(0, 100));
    if (packet.namespace !== DEFAULT_NAMESPACE) {
      // Socket.IO's own answer to an unknown namespace.
      if (packet.type === SOCKET.connect) this.ws.send(encodeSocketPacket(SOCKET.connectError, packet.namespace, { message: "Invalid namespace" }));
      return;
    }
    switch (packet.type) {
      case SOCKET.connect:
        return this.connect();
      case SOCKET.disconnect:
        this.closed();
        return;
      case SOCKET.event:
        if (this.namespaceSid === null) return this.ws.send(encodeSocketPacket(SOCKET.connectError, DEFAULT_NAMESPACE, { message: "Connect to the namespace (send 40) before emitting events." }));
        return this.event(packet);
      case SOCKET.binaryEvent:
      case SOCKET.binaryAck:
        return this.ws.send(eventPacket(DEFAULT_NAMESPACE, "error", { code: "unsupported", message: "Binary packets are not taken by this server; send JSON." }));
      default:
        // An ack of nothing this server asked for.
        return;
    }
  }

  private connect(): void {
    const refusal = this.connectRefusal();
    if (refusal !== null) {
      this.ws.send(encodeSocketPacket(SOCKET.connectError, DEFAULT_NAMESPACE, { message: refusal.message, data: { code: refusal.code } }));
      return this.ws.close(CLOSE.policyViolation, refusal.code);
    }
    this.namespaceSid ??= randomBytes(15).toString("base64url");
    this.ws.send(encodeSocketPacket(SOCKET.connect, DEFAULT_NAMESPACE, { sid: this.namespaceSid }));
  }

  private connectRefusal(): Refusal | null {
    if ("refusal" in this.credentials) return this.credentials.refusal;
    const { appId } = this.ctx;
    if (appId !== null && this.handshakeAppId !== null && this.handshakeAppId !== appId) {
      return { code: "app_not_found", message: `This server serves the app "${appId}", not "${this.handshakeAppId}"; the appId given to createClient must be "${appId}".` };
    }
    return null;
  }

  private event(packet: SocketPacket): void {
    const [name, room] = packet.data as [string, ...unknown[]];
    let refusal: Refusal | null;
    if (name === "join" || name === "leave") {
      refusal = typeof room !== "string" ? { code: "invalid_room", message: `${name} takes a room name: entities:<appId>:<Entity>.` } : name === "join" ? this.join(room) : this.leave(room);
    } else {
      refusal = { code: "unknown_event", message: `This server takes the events join and leave, not "${name}".` };
    }
    if (packet.ackId !== undefined) {
      this.ws.send(encodeSocketPacket(SOCKET.ack, DEFAULT_NAMESPACE, [refusal === null ? { ok: true } : { ok: false, error: refusal }], packet.ackId));
    } else if (refusal !== null) {
      // @base44/sdk logs an `error` event and goes on; its subscribe() callback gets nothing.
      this.ws.send(eventPacket(DEFAULT_NAMESPACE, "error", { ...refusal, ...(typeof room === "string" ? { room } : {}) }));
    }
  }

  /** Joins a room `entities:<appId>:<Entity>`: a change feed stream of that entity from now, shaped for the key. */
  private join(room: string): Refusal | null {
    const caller = (this.credentials as { caller: Caller }).caller;
    const match = ROOM_RE.exec(room);
    if (!match) return { code: "invalid_room", message: `Rooms are named entities:<appId>:<Entity> (got "${room.slice(0, 200)}").` };
    const [, appId, name] = match as unknown as [string, string, string];
    if (this.ctx.appId !== null && appId !== this.ctx.appId) return { code: "app_not_found", message: `This server serves the app "${this.ctx.appId}", not "${appId}"; join entities:${this.ctx.appId}:${name}.` };
    const entity = this.ctx.schema.entities.get(name);
    if (!entity) return { code: "entity_not_found", message: `No entity is named ${name}; the schema declares ${[...this.ctx.schema.entities.keys()].join(", ")}.` };
    if (caller.kind === "publishable" && !entity.publishableAccess.has("read")) {
      return { code: "forbidden", message: `A publishable key may not read ${name} records, so it cannot follow their changes: its declaration's "access" does not allow "read". Use a secret key.` };
    }
    if (this.rooms.has(room)) return null;
    if (this.rooms.size >= MAX_ROOMS_PER_CONNECTION) return { code: "too_many_rooms", message: `A connection joins ${MAX_ROOMS_PER_CONNECTION} rooms at most; leave some first.` };
    const sink = new RoomSink(this, room, entity);
    this.rooms.set(room, sink);
    // A room follows what the caller may read (docs/rules.md), as a stream does.
    const sub = subscriptionOf([entity], caller, null, `socket.io\n${room}\n`);
    this.ctx.feed.openStream(sink, sub, null, false);
    return null;
  }

  private leave(room: string): null {
    this.rooms.get(room)?.close();
    this.rooms.delete(room);
    return null;
  }
}
