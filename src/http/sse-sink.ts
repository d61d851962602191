// A change feed stream as Server-Sent Events on an HTTP response (docs/change-feed.md): its opening
// comment, each event as `id:`, `event:` and `data:` lines, the heartbeat comment, and the events
// that say why a stream ended (overflow, unauthorized).

import type { ServerResponse } from "node:http";
import type { FeedEnd, FeedSink } from "../feed/feed-sink.ts";
import { changeJson, sseFrame } from "../feed/events.ts";
import type { Caller } from "../keys/caller.ts";
import type { Schema } from "../schema/load.ts";
import type { FeedEvent } from "../store/store.ts";
import { drainedOrClosed } from "./response.ts";

/** A stream cut off for overflow is destroyed if its client has not read to its end by then. */
const OVERFLOW_GRACE_MS = 30_000;

const END_EVENTS: Partial<Record<FeedEnd, string>> = {
  overflow: `event: overflow\ndata: ${JSON.stringify({ type: "overflow", message: "This stream fell too far behind and was closed; reconnect with Last-Event-ID (or since) set to the last id you received." })}\n\n`,
  unauthorized: `event: unauthorized\ndata: ${JSON.stringify({ type: "unauthorized", message: "The API key of this stream was revoked or has expired; reconnect with a valid key." })}\n\n`,
};

export class SseSink implements FeedSink {
  constructor(
    private readonly res: ServerResponse,
    private readonly schema: Schema,
  ) {
    res.write(": tabula change feed\n\n");
  }

  encode(events: readonly FeedEvent[], caller: Caller): string {
    let text = "";
    for (const event of events) text += sseFrame(event, changeJson(this.schema.entities.get(event.entity)!, event, caller));
    return text;
  }

  write(chunk: string | Buffer): void {
    this.res.write(chunk);
  }

  get bufferedBytes(): number {
    return this.res.writableLength;
  }

  drained(): Promise<void> {
    return drainedOrClosed(this.res);
  }

  end(why: FeedEnd): void {
    this.res.end(END_EVENTS[why]);
    if (why === "overflow") setTimeout(() => this.res.destroy(), OVERFLOW_GRACE_MS).unref();
  }

  heartbeat(): void {
    this.res.write(": heartbeat\n\n");
  }

  onClose(listener: () => void): void {
    this.res.on("close", listener);
  }
}
