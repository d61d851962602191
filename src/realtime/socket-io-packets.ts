// The text packets of Engine.IO 4 and Socket.IO 5 as they travel in WebSocket messages
// (docs/base44-sdk.md, "Realtime: subscribe()"): an Engine.IO packet is one type digit and its data; a Socket.IO packet rides
// in an Engine.IO "message" (4) as a type digit, an optional "/namespace,", an optional ack id,
// and JSON. Only text: binary packets (with attachments) are recognised, to be refused.

import { findOverreach } from "../json-depth.ts";

/** Engine.IO packet types (the first character of every message). */
export const ENGINE = { open: "0", close: "1", ping: "2", pong: "3", message: "4", upgrade: "5", noop: "6" } as const;

/** Socket.IO packet types (the first character after Engine.IO's "4"). */
export const SOCKET = { connect: 0, disconnect: 1, event: 2, ack: 3, connectError: 4, binaryEvent: 5, binaryAck: 6 } as const;

export const DEFAULT_NAMESPACE = "/";

export interface SocketPacket {
  readonly type: number;
  readonly namespace: string;
  /** The ack id the sender waits an answer under; absent when it waits none. */
  readonly ackId?: number;
  readonly data?: unknown;
}

/** At most this many digits in an ack id: socket.io-client counts from 0 and never gets near. */
const MAX_ACK_ID_DIGITS = 10;

/** Engine.IO's open packet: the session, no upgrade (WebSocket is the only transport), the heartbeat and the largest message. */
export function openPacket(sid: string, pingIntervalMs: number, pingTimeoutMs: number, maxPayload: number): string {
  return ENGINE.open + JSON.stringify({ sid, upgrades: [], pingInterval: pingIntervalMs, pingTimeout: pingTimeoutMs, maxPayload });
}

/**
 * The most keys of an object, and items of an array inside the data, that a packet's data may hold:
 * the SDK's events carry a room's name, and its connect an auth object of a key or two. Wider data
 * is refused before it is parsed: a message of a megabyte of keys held the event loop a tenth of a
 * second in JSON.parse, and a socket sends one after another.
 */
const MAX_DATA_KEYS = 100;
const MAX_DATA_ITEMS = 100;

/** A Socket.IO packet as the text of an Engine.IO message. */
export function encodeSocketPacket(type: number, namespace: string, data?: unknown, ackId?: number): string {
  const prefix = namespace === DEFAULT_NAMESPACE ? "" : `${namespace},`;
  return `${ENGINE.message}${type}${prefix}${ackId ?? ""}${data === undefined ? "" : JSON.stringify(data)}`;
}

/** An event emitted to the client: `42["name",...args]`. */
export function eventPacket(namespace: string, name: string, ...args: unknown[]): string {
  return encodeSocketPacket(SOCKET.event, namespace, [name, ...args]);
}

/**
 * The Socket.IO packet in `text` (the Engine.IO message's data, after its "4"), or a string
 * saying what is wrong with it: the grammar of socket.io-parser's decodeString, and its checks of
 * each type's payload.
 */
export function decodeSocketPacket(text: string): SocketPacket | string {
  const type = Number(text[0]);
  if (text.length === 0 || !Number.isInteger(type) || type < SOCKET.connect || type > SOCKET.binaryAck) return `unknown Socket.IO packet type "${text.slice(0, 1)}"`;
  let at = 1;
  if (type === SOCKET.binaryEvent || type === SOCKET.binaryAck) {
    // "<type><attachments>-[/namespace,]…": the rest is not read, as its attachments are not taken.
    const count = /^\d+-/.exec(text.slice(1));
    if (count === null) return "a binary packet without its count of attachments";
    const rest = text.slice(1 + count[0].length);
    return { type, namespace: rest.startsWith("/") ? rest.split(",")[0]! : DEFAULT_NAMESPACE };
  }
  let namespace = DEFAULT_NAMESPACE;
  if (text[at] === "/") {
    const comma = text.indexOf(",", at);
    namespace = comma === -1 ? text.slice(at) : text.slice(at, comma);
    at = comma === -1 ? text.length : comma + 1;
  }
  let digits = "";
  while (at < text.length && text[at]! >= "0" && text[at]! <= "9") digits += text[at++];
  if (digits.length > MAX_ACK_ID_DIGITS) return "an ack id is a small whole number";
  const ackId = digits === "" ? undefined : Number(digits);
  let data: unknown;
  if (at < text.length) {
    const json = text.slice(at);
    if (findOverreach(json, MAX_DATA_KEYS, MAX_DATA_ITEMS) !== null) return "the packet's data is deeper or wider than any event's";
    try {
      data = JSON.parse(json);
    } catch {
      return "the packet's data is not JSON";
    }
  }
  if (!isPayloadValid(type, data)) return `the data of a packet of type ${type} is not of the shape Socket.IO 5 gives it`;
  return ackId === undefined ? { type, namespace, data } : { type, namespace, ackId, data };
}

function isPayloadValid(type: number, data: unknown): boolean {
  const isObject = typeof data === "object" && data !== null && !Array.isArray(data);
  switch (type) {
    case SOCKET.connect:
      return data === undefined || isObject;
    case SOCKET.disconnect:
      return data === undefined;
    case SOCKET.event:
      return Array.isArray(data) && typeof data[0] === "string";
    case SOCKET.ack:
      return Array.isArray(data);
    default:
      // CONNECT_ERROR goes from server to client only.
      return false;
  }
}
