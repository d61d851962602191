// The change feed's hub (docs/change-feed.md): one per server, between the store's events and the readers.
//
// A reader starts at a resume point and reads the store page by page (catching up), from the
// window of kept events, or, when its point is older than the window, from the latest versions
// (sync). Once it has read up to the hub's head it is live: the hub reads each new stretch of
// events from the store once (when the store says some may be readable) and hands it to every live
// stream, formatted once per group of streams that asked for the same thing (key kind, entities,
// q), so a thousand subscribers cost one serialization and a thousand socket writes. A live stream
// whose unsent bytes pass a bound is cut off (an SSE stream with `event: overflow`, and it resumes
// from its last id), and one catching up waits for its socket to drain before reading on: memory
// stays bounded however slowly a reader reads. What the bytes look like is the sink's (feed-sink.ts).

import { ApiError, unauthorized } from "../errors.ts";
import type { Caller } from "../keys/caller.ts";
import type { Schema } from "../schema/load.ts";
import type { Predicate } from "../query/predicate.ts";
import { compareFeedPositions, isAfter, type Row, type FeedEvent, type FeedPosition, type FeedRead, type FeedState, type FeedSource } from "../store/store.ts";
import { Turns } from "../turns/loop-share.ts";
import { changeJson } from "./events.ts";
import { allows, grantsOf } from "../rules/grants.ts";
import type { FeedEnd, FeedSink } from "./feed-sink.ts";

export interface FeedLimits {
  /** SSE streams and waiting long polls held at once (--max-streams). */
  readonly maxStreams: number;
  /** A comment is sent on every stream this often, so that proxies keep it open. */
  readonly heartbeatMs: number;
  /** A live stream whose unsent bytes pass this is cut off (SSE: with event: overflow). */
  readonly streamBufferBytes: number;
}

export const DEFAULT_FEED_LIMITS: FeedLimits = { maxStreams: 1000, heartbeatMs: 15_000, streamBufferBytes: 1 << 20 };

/** What one reader asked for. */
export interface FeedSubscription {
  readonly caller: Caller;
  /** The declared entities it reads: those its key may read, narrowed by the route or entities=. */
  readonly entities: ReadonlySet<string>;
  /** Per entity, the q it narrows by (parsed against each entity); null without q. */
  readonly filters: ReadonlyMap<string, Predicate> | null;
  /** Equal for subscriptions that receive the same bytes: key kind, entities and q, and the user where rules narrow. */
  readonly key: string;
  /**
   * Where rules narrow the feed (docs/rules.md): the records a stream has been sent, by entity and
   * id, so that one leaving the reader's view arrives as a delete, and no other record is named to
   * it. Such a subscription's rules are those of its user as it is now (currentCaller), not as it
   * was when the stream opened: a user made an admin, or no longer one, is sent accordingly.
   */
  readonly shown?: Set<string>;
}

/** Records remembered per narrowed stream as sent (FeedSubscription.shown); the oldest go first. */
const MAX_SHOWN = 10_000;

/** A stretch of the feed as a reader sees it: its events (q applied), where it ends, the window. */
export interface FeedStep {
  readonly events: FeedEvent[];
  readonly next: FeedPosition;
  readonly oldest: FeedPosition | null;
  /**
   * The catch-up goes on after `next`. A reader resuming from `next` while it does, or from one of
   * the step's syncs, passes read() isCatchingUp: syncs mostly lie inside the window (they are the
   * records' latest versions), where a plain resume reads the window's events instead of the
   * syncs still owed (docs/change-feed.md, "Resuming").
   */
  readonly isCatchingUp: boolean;
}

/** Events read from the store per step of a reader catching up, and per read of the hub. */
const STEP_EVENTS = 500;
const FETCH_EVENTS = 1000;
/** After a failed read of the store (a database away), the hub tries again this much later. */
const FETCH_RETRY_MS = 1000;
/**
 * After handing events out, the hub waits this long per open stream before it hands out more. A
 * write to a socket costs about 8 µs of the server's time, nearly whatever it carries
 * (docs/benchmarks.md, "Fan-out (W9)"): under a steady stream of writes, the events of 20 ms per
 * thousand streams go out together, one write per socket, and the writes take at most about a
 * third of the server's time. The first event after a quiet spell waits for nothing.
 */
const FANOUT_GAP_US_PER_STREAM = 20;

class Stream {
  closed = false;
  constructor(
    readonly sink: FeedSink,
    readonly sub: FeedSubscription,
    /** Where it has read to, while catching up or pending; a live stream is at the hub's head. */
    public position: FeedPosition,
    /** Whether it holds one of --max-streams (a Socket.IO room does not: its connection does). */
    readonly isCounted: boolean,
  ) {}
}

export class ChangeFeed {
  /** Every event up to here has been handed to the live streams. */
  private head: FeedPosition;
  /** Live streams by subscription key. */
  private readonly groups = new Map<string, Set<Stream>>();
  /** Streams that read past the hub's head: they become live once the hub reaches them. */
  private readonly pending = new Set<Stream>();
  private readonly streams = new Set<Stream>();
  /** Long polls waiting for news. */
  /** The long polls waiting for news, each with its caller. */
  private readonly waiters = new Map<() => void, Caller>();
  /** Streams counted, long polls waiting and connections held (hold()): what --max-streams bounds. */
  private held = 0;
  private countedStreams = 0;
  private connections = 0;
  private fetching = false;
  private fetchAgain = false;
  /** When the hub last handed events out (performance.now()), and its timer for the next time. */
  private dispatchedAt = -Infinity;
  private fetchTimer: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly heartbeat: NodeJS.Timeout;
  /** Whether a caller's key (and user's session) is still accepted: a long poll whose key went is answered 401 (set by the server). */
  private isCallerLive: (caller: Caller) => boolean = () => true;
  /** The caller with its user as the store holds it now (its role and fields, which rules read). */
  private currentCaller: (caller: Caller) => Caller = (caller) => caller;

  static async open(store: FeedSource, schema: Schema, limits: FeedLimits, warn: (message: string) => void): Promise<ChangeFeed> {
    const { head } = await store.feedState();
    return new ChangeFeed(store, schema, limits, warn, head);
  }

  private constructor(
    private readonly store: FeedSource,
    private readonly schema: Schema,
    readonly limits: FeedLimits,
    private readonly warn: (message: string) => void,
    head: FeedPosition,
  ) {
    this.head = head;
    store.onFeed(() => this.fetchSoon());
    this.heartbeat = setInterval(() => this.beat(), limits.heartbeatMs).unref();
  }

  /** The store's feed state: a resume point is checked against what it issued. */
  state(): Promise<FeedState> {
    return Promise.resolve(this.store.feedState());
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** SSE streams open, long polls waiting, and connections held (GET /metrics). */
  get load(): { readonly streams: number; readonly longPolls: number; readonly connections: number } {
    return { streams: this.countedStreams, longPolls: this.held - this.countedStreams - this.connections, connections: this.connections };
  }

  /**
   * Takes one of --max-streams for a connection whose streams are not counted one by one (a
   * WebSocket and its rooms); false when none is left. release() gives it back.
   */
  hold(): boolean {
    if (this.isFull) return false;
    this.held++;
    this.connections++;
    return true;
  }

  release(): void {
    this.held--;
    this.connections--;
  }

  /** Whether another stream or long poll may be held (--max-streams). */
  get isFull(): boolean {
    return this.held >= this.limits.maxStreams;
  }

  /**
   * The next events for `sub` after `since`, up to `limit`; with `waitMs`, waits that long for one
   * when there is none (a long poll). With `isCatchingUp`, `since` lies inside a catch-up (see
   * FeedStep.isCatchingUp), which goes on from it with syncs.
   */
  async read(sub: FeedSubscription, since: FeedPosition, limit: number, waitMs: number, isCatchingUp = false): Promise<FeedStep> {
    let position = since;
    const deadline = Date.now() + waitMs;
    let holding = false;
    const turns = new Turns();
    try {
      for (;;) {
        const from = await turns.idle(this.readFrom(position, sub, limit, isCatchingUp));
        const { read, state } = from;
        const reader = this.readerOf(sub);
        const events = read.events.filter((event) => this.matches(sub, event, reader));
        const progressed = compareFeedPositions(read.through, position) > 0;
        if (progressed) position = read.through;
        isCatchingUp = from.isCatchingUp;
        if (events.length > 0 || this.closed || Date.now() >= deadline) return { events, next: position, oldest: state.oldest, isCatchingUp };
        if (progressed) {
          // Read past events that `q` left out: a turn before the next step, so that a filter
          // matching nothing in a long feed does not hold every other request back.
          await turns.next();
          continue;
        }
        if (!holding) {
          this.held++;
          holding = true;
        }
        await turns.idle(this.news(deadline, sub.caller));
        if (!this.isCallerLive(sub.caller)) throw unauthorized(true);
      }
    } finally {
      turns.end();
      if (holding) this.held--;
    }
  }

  /**
   * Serves a stream on `sink` from after `since`; with null, from the hub's head: the events it
   * hands out from now on, with no read of the store.
   */
  openStream(sink: FeedSink, sub: FeedSubscription, since: FeedPosition | null, isCounted = true): void {
    const stream = new Stream(sink, sub, since ?? this.head, isCounted);
    this.streams.add(stream);
    if (isCounted) {
      this.held++;
      this.countedStreams++;
    }
    sink.onClose(() => this.drop(stream));
    if (this.closed) return void this.end(stream, "closed");
    if (since === null) return this.join(stream);
    void this.catchUp(stream);
  }

  /** The change's JSON object for `sub`'s key kind. */
  changeJson(event: FeedEvent, sub: FeedSubscription): string {
    return changeJson(this.schema.entities.get(event.entity)!, event, this.readerOf(sub));
  }

  /** How the feed learns that a key is no longer accepted (the server's KeyRing), or a user's session has ended. */
  checkCallersWith(isCallerLive: (caller: Caller) => boolean, currentCaller: (caller: Caller) => Caller = (caller) => caller): void {
    this.isCallerLive = isCallerLive;
    this.currentCaller = currentCaller;
  }

  /**
   * Keys revoked or expired (docs/change-feed.md): their streams end (SSE: with event:
   * unauthorized), and their long polls wake to be answered 401.
   */
  endStreamsOf(keyIds: ReadonlySet<string>): void {
    this.endStreamsWhere((caller) => keyIds.has(caller.keyId));
  }

  /** Ends the streams whose caller is no longer accepted (a user's session ended, docs/users.md), and wakes the long polls to check theirs. */
  endStreamsWhere(isGone: (caller: Caller) => boolean): void {
    for (const stream of [...this.streams]) if (isGone(stream.sub.caller)) this.end(stream, "unauthorized");
    for (const [wake, caller] of [...this.waiters]) if (isGone(caller)) wake();
  }

  /** Ends every stream and answers every long poll (SIGTERM): readers resume elsewhere or later. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    if (this.fetchTimer) clearTimeout(this.fetchTimer);
    for (const stream of [...this.streams]) this.end(stream, "closed");
    for (const wake of [...this.waiters.keys()]) wake();
  }

  /**
   * Older than the window, or inside a catch-up (FeedStep.isCatchingUp): the latest version of
   * each record written since, up to the head; then the window. The result's isCatchingUp: the
   * catch-up stopped short of the head (at `limit`).
   */
  private async readFrom(position: FeedPosition, sub: FeedSubscription, limit: number, isCatchingUp = false): Promise<{ read: FeedRead; state: FeedState; isCatchingUp: boolean }> {
    const state = await this.store.feedState();
    if (!isCatchingUp && compareFeedPositions(position, state.horizon) >= 0) return { read: await this.store.readChanges(position, sub.entities, limit), state, isCatchingUp: false };
    const read = await this.store.readLatest(position, state.head, sub.entities, limit);
    return { read, state, isCatchingUp: compareFeedPositions(read.through, state.head) < 0 };
  }

  /** Who a subscription reads as: under rules, its user as it is now (one look-up per batch of events, not per event). */
  private readerOf(sub: FeedSubscription): Caller {
    return sub.shown === undefined ? sub.caller : this.currentCaller(sub.caller);
  }

  private matches(sub: FeedSubscription, event: FeedEvent, reader: Caller): boolean {
    if (!sub.entities.has(event.entity)) return false;
    // Under rules, what the reader may read as its user is now (docs/rules.md).
    if (sub.shown !== undefined && !allows(grantsOf(this.schema.entities.get(event.entity)!, reader).read, event.row)) return false;
    const filter = sub.filters?.get(event.entity);
    if (filter === undefined) return true;
    try {
      return filter(event.row);
    } catch (error) {
      // A $regex refused for what it would cost on this record's text (docs/query-language.md):
      // a stream cannot be refused after the fact, so the record does not match.
      if (error instanceof ApiError && error.code === "invalid_filter") return false;
      throw error;
    }
  }

  /** The sink's bytes of the events `stream` follows; null when it follows none of them. */
  private encode(events: readonly FeedEvent[], stream: Stream): string | Buffer | null {
    const reader = this.readerOf(stream.sub);
    const matched = stream.sub.shown === undefined ? events.filter((event) => this.matches(stream.sub, event, reader)) : this.narrowed(events, stream.sub, stream.sub.shown, reader);
    return matched.length === 0 ? null : stream.sink.encode(matched, reader);
  }

  /** The events a narrowed stream is sent: those it may read, and a delete for each record it was sent that leaves its view. */
  private narrowed(events: readonly FeedEvent[], sub: FeedSubscription, shown: Set<string>, reader: Caller): FeedEvent[] {
    const out: FeedEvent[] = [];
    for (const event of events) {
      if (!sub.entities.has(event.entity)) continue;
      const name = `${event.entity}\n${event.row.id}`;
      if (this.matches(sub, event, reader)) {
        shown.delete(name);
        if (event.type !== "delete" && !event.row.deleted) {
          if (shown.size >= MAX_SHOWN) shown.delete(shown.values().next().value!);
          shown.add(name);
        }
        out.push(event);
      } else if (shown.delete(name)) {
        out.push({ entity: event.entity, type: "delete", row: leftRow(event.row) });
      }
    }
    return out;
  }

  private async catchUp(stream: Stream): Promise<void> {
    const turns = new Turns();
    try {
      while (!stream.closed) {
        const { read } = await turns.idle(this.readFrom(stream.position, stream.sub, STEP_EVENTS));
        if (stream.closed) return;
        const chunk = this.encode(read.events, stream);
        if (chunk !== null) this.send(stream, chunk);
        if (compareFeedPositions(read.through, stream.position) > 0) {
          stream.position = read.through;
          if (!stream.closed && stream.sink.bufferedBytes > this.limits.streamBufferBytes / 2) await turns.idle(stream.sink.drained());
          // The memory and file stores answer at once and a fast reader drains at once: without
          // waiting for a turn, a long catch-up would hold every other request back.
          await turns.next();
          continue;
        }
        // Nothing more in the store: join the live streams where the hub is.
        const ahead = compareFeedPositions(stream.position, this.head);
        if (ahead === 0) return this.join(stream);
        if (ahead > 0) return void this.pending.add(stream);
        await turns.next();
      }
    } catch (error) {
      // The store could not be read (a database away): the client resumes from its last id.
      this.warn(`A change feed stream was ended: ${(error as Error).message}`);
      this.end(stream, "failed");
    } finally {
      turns.end();
    }
  }

  private join(stream: Stream): void {
    let group = this.groups.get(stream.sub.key);
    if (!group) this.groups.set(stream.sub.key, (group = new Set()));
    group.add(stream);
  }

  private drop(stream: Stream): void {
    if (stream.closed) return;
    stream.closed = true;
    this.streams.delete(stream);
    this.pending.delete(stream);
    const group = this.groups.get(stream.sub.key);
    group?.delete(stream);
    if (group?.size === 0) this.groups.delete(stream.sub.key);
    if (stream.isCounted) {
      this.held--;
      this.countedStreams--;
    }
  }

  /** Lets go of a stream, then tells its sink why. */
  private end(stream: Stream, why: FeedEnd): void {
    this.drop(stream);
    stream.sink.end(why);
  }

  private send(stream: Stream, chunk: string | Buffer): void {
    if (stream.closed) return;
    stream.sink.write(chunk);
    // Cut off, it resumes from the last id it received.
    if (stream.sink.bufferedBytes > this.limits.streamBufferBytes) this.end(stream, "overflow");
  }

  /** fetch(), once the gap after the last hand-out has passed (FANOUT_GAP_US_PER_STREAM). */
  private fetchSoon(): void {
    if (this.fetchTimer) return;
    const waitMs = this.dispatchedAt + (this.streams.size * FANOUT_GAP_US_PER_STREAM) / 1000 - performance.now();
    if (waitMs <= 0) return this.fetch();
    this.fetchTimer = setTimeout(() => {
      this.fetchTimer = null;
      this.fetch();
    }, waitMs);
  }

  /** Reads what the store has after the hub's head and hands it to the live streams; one read at a time. */
  private fetch(): void {
    if (this.closed) return;
    if (this.fetching) {
      this.fetchAgain = true;
      return;
    }
    this.fetching = true;
    this.fetchAll().then(
      () => {
        this.fetching = false;
        if (this.fetchAgain) this.fetchSoon();
      },
      (error: Error) => {
        this.fetching = false;
        // A read still running when the server stopped fails as the store closes under it: no news.
        if (this.closed) return;
        this.warn(`The change feed could not read the store (retrying in ${FETCH_RETRY_MS} ms): ${error.message}`);
        setTimeout(() => this.fetch(), FETCH_RETRY_MS).unref();
      },
    );
  }

  private async fetchAll(): Promise<void> {
    for (;;) {
      this.fetchAgain = false;
      const state = await this.store.feedState();
      if (compareFeedPositions(this.head, state.horizon) < 0) {
        // The window moved past what the hub handed out: every live stream resumes by itself.
        for (const stream of [...this.pending, ...[...this.groups.values()].flatMap((group) => [...group])]) this.end(stream, "overflow");
        this.head = state.head;
      }
      const read = await this.store.readChanges(this.head, null, FETCH_EVENTS);
      if (compareFeedPositions(read.through, this.head) <= 0) return;
      this.dispatch(read.events, read.through);
      if (read.events.length < FETCH_EVENTS) return;
    }
  }

  private dispatch(events: readonly FeedEvent[], through: FeedPosition): void {
    this.dispatchedAt = performance.now();
    for (const group of this.groups.values()) {
      const first = group.values().next().value as Stream | undefined;
      if (!first) continue;
      const encoded = this.encode(events, first);
      if (encoded === null) continue;
      const chunk = typeof encoded === "string" ? Buffer.from(encoded) : encoded;
      for (const stream of group) this.send(stream, chunk);
    }
    for (const stream of this.pending) {
      const chunk = this.encode(
        events.filter((event) => isAfter(event.row, stream.position)),
        stream,
      );
      if (chunk !== null) this.send(stream, chunk);
      if (stream.closed || compareFeedPositions(through, stream.position) < 0) continue;
      this.pending.delete(stream);
      this.join(stream);
    }
    this.head = through;
    for (const wake of [...this.waiters.keys()]) wake();
  }

  /** Resolves at the hub's next news, at the deadline, or when the feed closes. */
  private news(deadline: number, caller: Caller): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, Math.max(0, deadline - Date.now()));
      this.waiters.set(wake, caller);
    });
  }

  private beat(): void {
    for (const stream of this.streams) if (!stream.closed) stream.sink.heartbeat();
  }
}

/** What a reader is sent of a record that left its view: its id and the event's place, nothing it may no longer read. */
function leftRow(row: Row): Row {
  return { id: row.id, rev: row.rev, deleted: true, data: { id: row.id }, seq: row.seq, index: row.index, isTransient: true };
}
