// Where a change feed stream's bytes go, and how its events become them: an SSE response
// (http/sse-sink.ts) or a Socket.IO room on a WebSocket (realtime/room-sink.ts). The hub
// (change-feed.ts) reads, groups and bounds; a sink knows its wire.

import type { Caller } from "../keys/caller.ts";
import type { FeedEvent } from "../store/store.ts";

/** Why the hub ends a stream: it fell behind (the client resumes), its key went, the feed closed, or the store could not be read. */
export type FeedEnd = "overflow" | "unauthorized" | "closed" | "failed";

export interface FeedSink {
  /**
   * The bytes of `events` (at least one, already narrowed to the stream's subscription) for a
   * caller of this kind: the same for every sink of one subscription key, so that the hub encodes
   * once per group of streams.
   */
  encode(events: readonly FeedEvent[], caller: Caller): string | Buffer;
  write(chunk: string | Buffer): void;
  /** Bytes written and not yet taken by the client. */
  readonly bufferedBytes: number;
  /** Resolves once the client can take more, or is gone. */
  drained(): Promise<void>;
  end(why: FeedEnd): void;
  /** Keeps an idle stream open through proxies (an SSE comment); a sink whose wire has its own heartbeat does nothing. */
  heartbeat(): void;
  /** `listener` runs once when the sink is gone, whoever ended it. */
  onClose(listener: () => void): void;
}
