// A Socket.IO room as a change feed stream (docs/base44-sdk.md, "Realtime"): each event the room's
// entity gets becomes one `update_model` emit, in the shape @base44/sdk's subscribe() reads:
// `{ room, data: "<JSON of {type, id, data, timestamp}>" }`, type being create, update or delete.

import type { FeedEnd, FeedSink } from "../feed/feed-sink.ts";
import type { Caller } from "../keys/caller.ts";
import { recordJson } from "../records/serialize.ts";
import type { EntityDef } from "../schema/fields.ts";
import type { FeedEvent } from "../store/store.ts";
import { DEFAULT_NAMESPACE, eventPacket } from "./socket-io-packets.ts";
import { textFrame } from "./websocket.ts";

/** What a room's sink needs of its connection. */
export interface RoomConnection {
  write(frames: Buffer): void;
  readonly bufferedBytes: number;
  drained(): Promise<void>;
  /** The feed ended the room's stream: the whole connection ends, saying why. */
  endFor(why: FeedEnd): void;
}

/**
 * The SDK knows three types. A restore brings the record back (update); a sync, the latest version
 * of a record after a migration or a resume, is an update, or a delete when that version is deleted.
 */
export function sdkTypeOf(event: FeedEvent): "create" | "update" | "delete" {
  switch (event.type) {
    case "create":
    case "delete":
      return event.type;
    case "sync":
      return event.row.deleted ? "delete" : "update";
    default:
      return "update";
  }
}

export class RoomSink implements FeedSink {
  private readonly listeners: Array<() => void> = [];
  private isClosed = false;

  constructor(
    private readonly connection: RoomConnection,
    readonly room: string,
    private readonly entity: EntityDef,
  ) {}

  encode(events: readonly FeedEvent[], caller: Caller): Buffer {
    const frames = events.map((event) => {
      const { row } = event;
      const data = `{"type":"${sdkTypeOf(event)}","id":${JSON.stringify(row.id)},"data":${recordJson(this.entity, row, caller, false)},"timestamp":${JSON.stringify(row.data.updated_date ?? null)}}`;
      return textFrame(eventPacket(DEFAULT_NAMESPACE, "update_model", { room: this.room, data }));
    });
    return frames.length === 1 ? frames[0]! : Buffer.concat(frames);
  }

  write(chunk: string | Buffer): void {
    this.connection.write(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  }

  get bufferedBytes(): number {
    return this.connection.bufferedBytes;
  }

  drained(): Promise<void> {
    return this.connection.drained();
  }

  end(why: FeedEnd): void {
    this.close();
    this.connection.endFor(why);
  }

  /** The client's socket has its Engine.IO heartbeat. */
  heartbeat(): void {}

  onClose(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** The room is left (or its connection gone): the feed lets go of its stream. */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    for (const listener of this.listeners.splice(0)) listener();
  }
}
