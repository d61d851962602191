// One endpoint's deliverer (docs/webhooks.md, "Delivery"): it reads the change feed from the
// endpoint's position, as a secret key sees it, and sends each event that passes the endpoint's
// filters, one at a time in commit order (handed to the sending thread, send-thread.ts, a step's
// events at a time); a 2xx moves the position, anything else is tried again
// after the next delay of the schedule, from the same event, until the schedule runs out. The feed
// sends only what is durable, and a position older than its window resumes through its sync
// catch-up (docs/change-feed.md), so nothing written is ever skipped; a catch-up cut short (a
// failed attempt, a change of the endpoint, a restart) goes on with syncs from the last one
// delivered, so a retry sends the same sync again. The position is written to
// the store's metadata vault every PROGRESS_FLUSH_MS while it moves: after a crash the events since
// are sent again, with the same webhook-id (at least once, never lost).

import type { ChangeFeed, FeedSubscription } from "../feed/change-feed.ts";
import { eventIdOf, parseEventId } from "../feed/events.ts";
import { parseSavedFilter } from "../query/filter.ts";
import type { Schema } from "../schema/load.ts";
import { compileFilter, type Predicate } from "../query/predicate.ts";
import { compareFeedPositions, positionOf, type FeedEvent, type FeedPosition, type FeedState, type BatchWriter } from "../store/store.ts";
import { progressKey } from "./book.ts";
import type { Progress, StoredEndpoint } from "./endpoints.ts";
import { MAX_KEPT_ATTEMPTS, REFUSED_PREFIX, type Batch, type Sender } from "./send.ts";
import type { Attempt } from "../views.ts";

/** After the first failure, the delays before each next attempt: about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (as Svix's). */
export const RETRY_DELAYS_MS: readonly number[] = [5, 300, 1800, 7200, 18_000, 36_000, 36_000].map((seconds) => seconds * 1000);
/** Events read from the feed at a time. */
const STEP_EVENTS = 100;
/** How soon a moved position is written to the store (a crash sends at most this much again). */
const PROGRESS_FLUSH_MS = 500;
/** Caught up, a deliverer waits for the feed's news, or this long. */
const IDLE_WAIT_MS = 1000;
/** After the feed could not be read (a database away), the next try. */
const READ_RETRY_MS = 1000;

/** Who the feed shapes events for: a secret key (docs/webhooks.md: the event as a secret key sees it). */
export const WEBHOOK_CALLER = { keyId: "webhooks", kind: "secret" } as const;

export interface DeliveryContext {
  readonly store: BatchWriter;
  readonly feed: ChangeFeed;
  readonly schema: Schema;
  readonly sender: Sender;
  /** The retry schedule, scaled (--webhook-retry-scale). */
  readonly retryDelaysMs: readonly number[];
  readonly warn: (message: string) => void;
  /** Disables the endpoint, kept in the store with the reason; false when it was deleted meanwhile. */
  disable(id: string, reason: string): Promise<boolean>;
  /** Counts attempts (GET /metrics). */
  count(id: string, isDelivered: boolean, attempts: number): void;
  /** The event's body, serialized once for every endpoint (all see it as a secret key does). */
  bodyOf(event: FeedEvent): string;
}

/** A stored event id read back; stored ones were issued by this store. */
export function positionFrom(eventId: string): FeedPosition {
  const any = { seq: Number.MAX_SAFE_INTEGER, index: Number.MAX_SAFE_INTEGER };
  return parseEventId(eventId, "position", { issued: any } as FeedState);
}

export class Deliverer {
  lagSeconds = 0;
  private position: FeedPosition;
  /** The position is a sync of a catch-up not yet done: the next read goes on with syncs (FeedStep.isCatchingUp). */
  private isCatchingUp: boolean;
  private replayed: number;
  private failing: Progress["failing"];
  /**
   * The last attempt at an event failed (a ping's aside): the server's output says so when this
   * turns, and not at every retry. Unlike `failing`, it outlives a disable, so that the first
   * delivery after enabling again says the endpoint recovered.
   */
  private isFailing: boolean;
  /** The delivery log, newest first. */
  private attempts: Attempt[];
  private isStopped = false;
  private isDirty = false;
  private flushTimer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();
  private wakeUp: (() => void) | null = null;
  /** The deliveries in flight on the sending thread, cancelled when the endpoint changes or the deliverer stops. */
  private batch: Batch | null = null;
  private readonly done: Promise<void>;

  constructor(
    private endpoint: StoredEndpoint,
    progress: Progress | undefined,
    private readonly ctx: DeliveryContext,
  ) {
    this.position = positionFrom(progress?.position ?? endpoint.start);
    this.isCatchingUp = progress?.isCatchingUp ?? false;
    this.replayed = progress?.replayed ?? 0;
    this.failing = progress?.failing ?? null;
    this.isFailing = this.failing !== null;
    this.attempts = [...(progress?.deliveries ?? [])];
    this.done = this.run().catch((error: Error) => ctx.warn(`Webhook ${endpoint.id} stopped delivering: ${error.stack ?? error.message}`));
  }

  get id(): string {
    return this.endpoint.id;
  }

  /** The endpoint changed (here or in another process): the next step follows the new version. */
  update(endpoint: StoredEndpoint): void {
    const was = this.endpoint;
    // Every endpoint is read anew when one changes: the others stay as they were.
    if (JSON.stringify(endpoint) === JSON.stringify(was)) return;
    this.endpoint = endpoint;
    // Enabled again: a new schedule. Its URL or filters changed: the failing event is tried again now.
    if (endpoint.enabled && !was.enabled) this.failing = null;
    else if (this.failing) this.failing = { ...this.failing, next_at: new Date().toISOString() };
    this.batch?.cancel();
    this.wake();
  }

  progress(): Progress {
    return { position: eventIdOf(this.position), isCatchingUp: this.isCatchingUp, replayed: this.replayed, failing: this.failing, deliveries: this.attempts };
  }

  /** A ping's attempt, kept in the log like the others. */
  note(attempt: Attempt): void {
    this.keep([attempt]);
  }

  /** Stops after the attempt in flight; writes the progress unless the endpoint was deleted. */
  async stop(isDeleted: boolean): Promise<void> {
    this.isStopped = true;
    this.batch?.cancel();
    this.wake();
    await this.done;
    if (this.flushTimer) clearTimeout(this.flushTimer);
    await this.flushing;
    if (!isDeleted && this.isDirty) await this.flush();
  }

  /** The feed has news, the endpoint changed, or the deliverer stops: whatever it waits for, it goes on now. */
  wake(): void {
    this.wakeUp?.();
  }

  private async run(): Promise<void> {
    while (!this.isStopped) {
      const endpoint = this.endpoint;
      if (!endpoint.enabled) {
        this.lagSeconds = 0;
        await this.sleep(Infinity);
        continue;
      }
      if (endpoint.replay && endpoint.replay.number !== this.replayed) {
        this.position = positionFrom(endpoint.replay.since);
        this.isCatchingUp = false;
        this.replayed = endpoint.replay.number;
        this.failing = null;
        this.markDirty();
      }
      const dueIn = this.failing ? Date.parse(this.failing.next_at) - Date.now() : 0;
      if (dueIn > 0) {
        await this.sleep(dueIn);
        continue;
      }
      await this.step(endpoint);
    }
  }

  /** Reads the next events and sends them; returns at the first failure, or when the endpoint changed. */
  private async step(endpoint: StoredEndpoint): Promise<void> {
    let events: FeedEvent[];
    let next: FeedPosition;
    let isCatchingUp: boolean;
    try {
      ({ events, next, isCatchingUp } = await this.ctx.feed.read(subscriptionOf(endpoint, this.ctx.schema), this.position, STEP_EVENTS, 0, this.isCatchingUp));
    } catch (error) {
      this.ctx.warn(`Webhook ${endpoint.id} could not read the change feed (retrying in ${READ_RETRY_MS} ms): ${(error as Error).message}`);
      await this.sleep(READ_RETRY_MS);
      return;
    }
    // A sync stands for whatever happened to its record meanwhile: every endpoint gets it.
    const sent = events.filter((event) => event.type === "sync" || endpoint.events.includes(event.type));
    if (sent.length > 0 && !(await this.sendInOrder(endpoint, sent))) return;
    if (this.isStopped || this.endpoint !== endpoint) return;
    // Every event read was delivered, or is not of a type the endpoint takes.
    this.moveTo(compareFeedPositions(next, this.position) > 0 ? next : this.position, isCatchingUp);
    if (events.length === 0) {
      this.lagSeconds = 0;
      // Caught up: the position is written now rather than later, so a crash while idle sends nothing again.
      if (this.isDirty && this.flushTimer) {
        clearTimeout(this.flushTimer);
        this.flushTimer = null;
        this.flushing = this.flush();
      }
      await this.sleep(IDLE_WAIT_MS);
    }
  }

  /**
   * Sends `events` in order, as one batch to the sending thread; the position follows each
   * delivery. True when every one was delivered; false when one failed (the next attempt is
   * scheduled, or the endpoint disabled) or the batch was cut short.
   */
  private async sendInOrder(endpoint: StoredEndpoint, events: FeedEvent[]): Promise<boolean> {
    let delivered = 0;
    let failure: (Attempt & { error: string }) | null = null;
    this.lagSeconds = lagOf(events[0]!);
    const deliveries = events.map((event) => ({ id: eventIdOf(positionOf(event.row)), body: this.ctx.bodyOf(event) }));
    this.batch = this.ctx.sender.sendInOrder(endpoint.url, endpoint.secret, deliveries, (report) => {
      this.keep(report.attempts);
      if (report.delivered > 0) {
        this.ctx.count(endpoint.id, true, report.delivered);
        if (this.isFailing) this.tellRecovered(endpoint, deliveries[delivered]!.id);
        this.failing = null;
        delivered += report.delivered;
        const reached = events[delivered - 1]!;
        // Cut short after a sync, the catch-up goes on from it: a retry sends the next sync, not the window's event of the same id.
        this.moveTo(positionOf(reached.row), reached.type === "sync");
        if (delivered < events.length) this.lagSeconds = lagOf(events[delivered]!);
      }
      const last = report.attempts.at(-1);
      if (last && last.error !== null) {
        this.ctx.count(endpoint.id, false, 1);
        failure = { ...last, error: last.error };
      }
    });
    await this.batch.ended;
    this.batch = null;
    if (failure) {
      await this.failed(endpoint, failure);
      return false;
    }
    if (delivered === events.length) return true;
    // Cut short without a failure and not cancelled: the sending thread stopped; it is started again.
    if (!this.isStopped && this.endpoint === endpoint) await this.sleep(READ_RETRY_MS);
    return false;
  }

  /**
   * An attempt failed: the next is scheduled, or the schedule has run out (or the receiver said 410)
   * and the endpoint is disabled. The server's output says when an endpoint starts failing and when
   * it is disabled (docs/webhooks.md, "Delivery"); the retries between are in its delivery log.
   */
  private async failed(endpoint: StoredEndpoint, attempt: Attempt & { error: string }): Promise<void> {
    const attempts = (this.failing?.attempts ?? 0) + 1;
    const delay = this.ctx.retryDelaysMs[attempts - 1];
    const wasFailing = this.isFailing;
    this.isFailing = true;
    if (attempt.status === 410 || delay === undefined) {
      const reason = attempt.status === 410 ? `The receiver answered 410 Gone at ${attempt.at}.` : `${attempts} attempts at event ${attempt.event_id} failed, the last at ${attempt.at}: ${attempt.error}`;
      this.failing = null;
      this.markDirty();
      try {
        if (!(await this.ctx.disable(endpoint.id, reason))) return;
      } catch (error) {
        this.ctx.warn(`Webhook ${endpoint.id} could not be disabled: ${(error as Error).message}`);
        return;
      }
      this.ctx.warn(`${this.named(endpoint)} is disabled: ${oneLine(reason).replace(/\.$/, "")}. Once the receiver is mended, PATCH /api/webhooks/${endpoint.id} with {"enabled": true} resumes delivery from that event.`);
      return;
    }
    this.failing = { attempts, next_at: new Date(Date.now() + delay).toISOString(), error: attempt.error };
    this.markDirty();
    if (wasFailing) return;
    const mend = attempt.error.startsWith(REFUSED_PREFIX) ? "; --webhooks-allow-private allows such an address" : "";
    this.ctx.warn(`${this.named(endpoint)} is failing: ${oneLine(attempt.error)}${mend}. Event ${attempt.event_id} is tried again in ${durationOf(delay)}; after ${this.ctx.retryDelaysMs.length} retries the endpoint is disabled (GET /api/webhooks/${endpoint.id}/deliveries lists the attempts).`);
  }

  /** The first delivery after a failed attempt. */
  private tellRecovered(endpoint: StoredEndpoint, eventId: string): void {
    this.isFailing = false;
    const attempts = this.failing?.attempts ?? 0;
    const after = attempts > 0 ? ` after ${attempts} failed attempt${attempts === 1 ? "" : "s"}` : "";
    this.ctx.warn(`${this.named(endpoint)} recovered: event ${eventId} was delivered${after}.`);
  }

  /** How the server's output names an endpoint: its id and origin (a URL's path and credentials may hold secrets). */
  private named(endpoint: StoredEndpoint): string {
    return `Webhook ${endpoint.id} (${new URL(endpoint.url).origin})`;
  }

  /** Adds attempts (oldest first) to the delivery log. */
  private keep(attempts: readonly Attempt[]): void {
    const newest = attempts.slice(-MAX_KEPT_ATTEMPTS).reverse();
    this.attempts = newest.length === MAX_KEPT_ATTEMPTS ? newest : newest.concat(this.attempts.slice(0, MAX_KEPT_ATTEMPTS - newest.length));
    this.markDirty();
  }

  private moveTo(position: FeedPosition, isCatchingUp: boolean): void {
    if (compareFeedPositions(position, this.position) === 0 && isCatchingUp === this.isCatchingUp) return;
    this.position = position;
    this.isCatchingUp = isCatchingUp;
    this.markDirty();
  }

  private markDirty(): void {
    this.isDirty = true;
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = null;
      this.flushing = this.flush();
    }, PROGRESS_FLUSH_MS);
  }

  private async flush(): Promise<void> {
    this.isDirty = false;
    try {
      await this.ctx.store.commit({ puts: [], meta: [{ key: progressKey(this.endpoint.id), value: this.progress() }] });
    } catch (error) {
      // Kept in memory and written with the next move: a crash meanwhile sends those events again.
      this.isDirty = true;
      this.ctx.warn(`Webhook ${this.endpoint.id}'s position could not be written: ${(error as Error).message}`);
    }
  }

  /** Waits `ms`, or until woken (the feed's news, a change of the endpoint, stop). */
  private sleep(ms: number): Promise<void> {
    if (this.isStopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = ms === Infinity ? null : setTimeout(wake, ms);
      function wake(): void {
        if (timer) clearTimeout(timer);
        resolve();
      }
      this.wakeUp = () => {
        this.wakeUp = null;
        wake();
      };
    });
  }
}

/** A receiver's words on one line of the server's output, with no control characters (a terminal's escapes among them). */
function oneLine(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ").trim();
}

/** A retry delay as the output says it: "5 s", "30 min", "10 h". */
function durationOf(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 3_600_000)} h`;
}

/** Seconds since `event` was written. */
function lagOf(event: FeedEvent): number {
  return Math.max(0, (Date.now() - Date.parse(String(event.row.data.updated_date))) / 1000) || 0;
}

/** Each version of an endpoint is compiled once: a step and each of its sends use the same. */
const subscriptions = new WeakMap<StoredEndpoint, FeedSubscription>();

/** What an endpoint reads of the feed: its entities, its q on each (checked when it was saved). */
function subscriptionOf(endpoint: StoredEndpoint, schema: Schema): FeedSubscription {
  let sub = subscriptions.get(endpoint);
  if (!sub) subscriptions.set(endpoint, (sub = compileSubscription(endpoint, schema)));
  return sub;
}

function compileSubscription(endpoint: StoredEndpoint, schema: Schema): FeedSubscription {
  const names = (endpoint.entities ?? [...schema.entities.keys()]).filter((name) => schema.entities.has(name));
  let filters: Map<string, Predicate> | null = null;
  if (endpoint.q !== null) {
    filters = new Map();
    for (const name of names) {
      const node = parseSavedFilter(schema.entities.get(name)!, endpoint.q, { mayUseCreatedBy: true });
      if (node) filters.set(name, compileFilter(node));
    }
  }
  return { caller: WEBHOOK_CALLER, entities: new Set(names), filters, key: `webhook ${endpoint.id}` };
}
