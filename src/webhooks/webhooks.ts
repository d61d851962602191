// Webhooks (docs/webhooks.md): the endpoints' operations the API calls (no HTTP here), and one
// deliverer per endpoint, run by the process that holds the delivery lease (every process of a
// store of its own; on PostgreSQL, one at a time). Endpoints are kept by book.ts, sent to by
// delivery.ts and send.ts.

import { randomBytes } from "node:crypto";
import type { LookupFunction } from "node:net";
import { invalidRequest, webhookNotFound } from "../errors.ts";
import type { ChangeFeed } from "../feed/change-feed.ts";
import { changeJson, eventIdOf, parseEventId } from "../feed/events.ts";
import type { Schema } from "../schema/load.ts";
import type { BatchWriter, FeedEvent, FeedSource, MetadataStore } from "../store/store.ts";
import { progressKey, WebhookBook } from "./book.ts";
import { Deliverer, RETRY_DELAYS_MS, WEBHOOK_CALLER } from "./delivery.ts";
import { checkFilter, EVENT_TYPES, MAX_WEBHOOKS, readEndpointFields, viewOf, type Progress, type StoredEndpoint } from "./endpoints.ts";
import type { Attempt, EndpointView, UserEventType } from "../views.ts";
import { SOLE_LEASE, storeLease, type Lease } from "./lease.ts";
import { ATTEMPT_TIMEOUT_MS, newSecret, REFUSED_PREFIX, type Sender } from "./send.ts";
import { threadSender } from "./send-thread.ts";
import { checkWebhookUrl, refusalOfUrl, type TargetPolicy } from "./target.ts";

export interface WebhookOptions {
  /** --webhooks-allow-private: receivers on loopback and private networks may be reached. */
  readonly allowPrivate?: boolean;
  /** --webhook-retry-scale: the retry schedule's delays multiplied by this (tests shorten it). */
  readonly retryScale?: number;
  /** Tests: an attempt's time limit instead of 10 s. */
  readonly timeoutMs?: number;
  /** Tests: how names are resolved. */
  readonly lookup?: LookupFunction;
}

/** A stored endpoint whose URL the address check refuses now (docs/webhooks.md, "Safety"). */
export interface RefusedEndpoint {
  readonly id: string;
  /** Its URL's scheme, host and port: the path and credentials may hold secrets. */
  readonly origin: string;
  readonly refusal: string;
}

export interface EndpointMetrics {
  readonly id: string;
  readonly delivered: number;
  readonly failed: number;
  /** Seconds since the oldest event not yet delivered was written; null where this process does not deliver. */
  readonly lagSeconds: number | null;
}

/** A user's event failing is sent again after these waits (scaled as the retries of changes are): within its code's 10 minutes. */
const USER_EVENT_RETRY_MS = [5_000, 30_000, 120_000];

/** Event bodies kept for the endpoints that follow (several steps of events). */
const MAX_KEPT_BODIES = 1000;

/**
 * The roles of the store that webhooks use: the change feed's state and word of new events, and the
 * endpoints and each one's progress kept as metadata, written by commits.
 */
type WebhookStore = FeedSource & MetadataStore & BatchWriter;

export class Webhooks {
  private readonly deliverers = new Map<string, Deliverer>();
  private readonly counts = new Map<string, { delivered: number; failed: number }>();
  /**
   * The bodies of the last events sent, made once for all endpoints, the oldest let go first. Not
   * a WeakMap keyed by row: a row lives as long as its record's version, and would keep its body.
   */
  private readonly bodies = new Map<object, { type: string; body: string }>();
  private lease: Lease | null = null;
  private reconciling: Promise<void> = Promise.resolve();
  private isClosed = false;

  static async open(store: WebhookStore, feed: ChangeFeed, schema: Schema, options: WebhookOptions, warn: (message: string) => void): Promise<Webhooks> {
    const scale = options.retryScale ?? 1;
    if (!(scale > 0 && scale <= 1)) throw new Error(`The webhook retry scale must be a number above 0 and at most 1 (got ${scale}).`);
    const book = await WebhookBook.open(store, warn);
    const policy: TargetPolicy = { allowPrivate: options.allowPrivate ?? false, lookup: options.lookup };
    const sender = threadSender(policy, options.timeoutMs ?? ATTEMPT_TIMEOUT_MS, warn);
    const webhooks = new Webhooks(store, feed, schema, book, policy, sender, RETRY_DELAYS_MS.map((ms) => ms * scale), warn);
    book.onChange(() => webhooks.reconcile());
    store.onFeed(() => {
      for (const deliverer of webhooks.deliverers.values()) deliverer.wake();
    });
    webhooks.reconcile();
    return webhooks;
  }

  private constructor(
    private readonly store: WebhookStore,
    private readonly feed: ChangeFeed,
    private readonly schema: Schema,
    private readonly book: WebhookBook,
    private readonly policy: TargetPolicy,
    private readonly sender: Sender,
    private readonly retryDelaysMs: readonly number[],
    private readonly warn: (message: string) => void,
  ) {}

  async list(): Promise<EndpointView[]> {
    return Promise.all(this.book.list().map(async (endpoint) => viewOf(endpoint, await this.progressOf(endpoint.id))));
  }

  async get(id: string): Promise<EndpointView> {
    return viewOf(this.find(id), await this.progressOf(id));
  }

  /** A new endpoint, answered with its secret (the only time it is shown); it gets the events after now. */
  async create(body: unknown): Promise<EndpointView & { secret: string }> {
    const fields = readEndpointFields(body, this.schema, true);
    const url = await checkWebhookUrl(fields.url, this.policy);
    const entities = fields.entities ?? null;
    const q = fields.q ?? null;
    checkFilter(q, entities, this.schema);
    const { head } = await this.store.feedState();
    const now = new Date().toISOString();
    const endpoint: StoredEndpoint = {
      id: `wh_${randomBytes(8).toString("hex")}`,
      url,
      entities,
      events: fields.events ?? EVENT_TYPES,
      q,
      description: fields.description ?? "",
      enabled: fields.enabled ?? true,
      disabled_reason: null,
      secret: newSecret(),
      created_date: now,
      updated_date: now,
      start: eventIdOf(head),
      replay: null,
    };
    await this.book.change((stored) => {
      if (stored.length >= MAX_WEBHOOKS) throw invalidRequest(`A server keeps at most ${MAX_WEBHOOKS} webhook endpoints; delete one first (GET /api/webhooks lists them).`, { max: MAX_WEBHOOKS });
      return { endpoints: [...stored, endpoint], value: undefined };
    });
    return { ...viewOf(endpoint, undefined), secret: endpoint.secret };
  }

  /** PATCH: the fields given change; enabling again clears the reason it was disabled for. */
  async update(id: string, body: unknown): Promise<EndpointView> {
    this.find(id);
    const fields = readEndpointFields(body, this.schema, false);
    const url = fields.url === undefined ? undefined : await checkWebhookUrl(fields.url, this.policy);
    const updated = await this.changeOne(id, (endpoint) => {
      const next: StoredEndpoint = {
        ...endpoint,
        ...(url === undefined ? {} : { url }),
        ...(fields.entities === undefined ? {} : { entities: fields.entities }),
        ...(fields.events === undefined ? {} : { events: fields.events }),
        ...(fields.q === undefined ? {} : { q: fields.q }),
        ...(fields.description === undefined ? {} : { description: fields.description }),
        ...(fields.enabled === undefined ? {} : { enabled: fields.enabled, disabled_reason: null }),
        updated_date: new Date().toISOString(),
      };
      checkFilter(next.q, next.entities, this.schema);
      return next;
    });
    return viewOf(updated, await this.progressOf(id));
  }

  async remove(id: string): Promise<{ id: string; deleted: true }> {
    this.find(id);
    await this.book.change((stored) => {
      if (!stored.some((endpoint) => endpoint.id === id)) throw webhookNotFound(id);
      return { endpoints: stored.filter((endpoint) => endpoint.id !== id), value: undefined, meta: [{ key: progressKey(id), value: null }] };
    });
    return { id, deleted: true };
  }

  /** The last attempts, newest first. */
  async deliveries(id: string): Promise<readonly Attempt[]> {
    this.find(id);
    return (await this.progressOf(id))?.deliveries ?? [];
  }

  /** Sends every event after `since` again (through the sync catch-up when it is older than the feed's window). */
  async replay(id: string, sinceText: string | null): Promise<{ id: string; since: string }> {
    this.find(id);
    if (sinceText === null) throw invalidRequest("Give since=<event id>: the events after it are sent again (0 for every record from the start, as sync events).", { parameter: "since" });
    const since = eventIdOf(parseEventId(sinceText, "since", await this.store.feedState()));
    await this.changeOne(id, (endpoint) => ({ ...endpoint, replay: { since, number: (endpoint.replay?.number ?? 0) + 1 } }));
    return { id, since };
  }

  /** POST …/test: a ping, sent now, whatever the endpoint's state; answered with what the receiver did. */
  async ping(id: string): Promise<Attempt> {
    const endpoint = this.find(id);
    const body = JSON.stringify({ type: "ping", timestamp: new Date().toISOString(), data: { endpoint: id, description: endpoint.description } });
    const attempt = await this.sender.send(endpoint.url, endpoint.secret, `ping_${randomBytes(8).toString("hex")}`, body);
    this.deliverers.get(id)?.note(attempt);
    return attempt;
  }

  /**
   * A user's event (a code to send, docs/users.md), to every enabled endpoint that asks for its
   * type, now and a few times again while the receiver fails; not kept in the change feed, so a
   * restart forgets one still failing (a code lives 10 minutes: the user asks for another).
   * Answers whether any endpoint asks for it (else the server prints the code).
   */
  async sendUserEvent(event: { readonly type: UserEventType }): Promise<boolean> {
    const endpoints = this.book.list().filter((endpoint) => endpoint.enabled && endpoint.events.includes(event.type));
    if (endpoints.length === 0) return false;
    const { type, ...data } = event;
    const body = JSON.stringify({ type, timestamp: new Date().toISOString(), data });
    const eventId = `user_${randomBytes(8).toString("hex")}`;
    for (const endpoint of endpoints) void this.sendWithRetries(endpoint, eventId, body, 0);
    return true;
  }

  private async sendWithRetries(endpoint: StoredEndpoint, eventId: string, body: string, attempt: number): Promise<void> {
    if (this.isClosed) return;
    const sent = await this.sender.send(endpoint.url, endpoint.secret, eventId, body).catch(() => null);
    if (sent !== null) this.deliverers.get(endpoint.id)?.note(sent);
    const isDelivered = sent !== null && sent.status !== null && sent.status >= 200 && sent.status < 300;
    if (isDelivered || attempt >= USER_EVENT_RETRY_MS.length) return;
    setTimeout(() => void this.sendWithRetries(endpoint, eventId, body, attempt + 1), USER_EVENT_RETRY_MS[attempt]! * this.retryDelaysMs[0]! / RETRY_DELAYS_MS[0]!).unref();
  }

  /**
   * The stored endpoints whose URL is refused now: saved under --webhooks-allow-private, and this
   * process started without it (each of their attempts fails with `refused: …`). For the banner.
   */
  async refusedEndpoints(): Promise<RefusedEndpoint[]> {
    const checked = await Promise.all(
      this.book.list().map(async ({ id, url }) => {
        const parsed = new URL(url);
        return { id, origin: parsed.origin, refusal: await refusalOfUrl(parsed, this.policy) };
      }),
    );
    return checked.filter((endpoint): endpoint is RefusedEndpoint => endpoint.refusal !== null);
  }

  metrics(): EndpointMetrics[] {
    return this.book.list().map(({ id, enabled }) => {
      const counts = this.counts.get(id) ?? { delivered: 0, failed: 0 };
      const deliverer = this.deliverers.get(id);
      return { id, ...counts, lagSeconds: deliverer && enabled ? deliverer.lagSeconds : null };
    });
  }

  /** Stops delivering after the attempts in flight, writes each position, and gives the lease back. */
  async close(): Promise<void> {
    this.isClosed = true;
    await this.reconciling;
    await Promise.all([...this.deliverers.values()].map((deliverer) => deliverer.stop(false)));
    this.deliverers.clear();
    await this.lease?.close();
    this.book.close();
    this.sender.close();
  }

  private find(id: string): StoredEndpoint {
    const endpoint = this.book.get(id);
    if (!endpoint) throw webhookNotFound(id);
    return endpoint;
  }

  private async changeOne(id: string, change: (endpoint: StoredEndpoint) => StoredEndpoint): Promise<StoredEndpoint> {
    return this.book.change((stored) => {
      const index = stored.findIndex((endpoint) => endpoint.id === id);
      if (index === -1) throw webhookNotFound(id);
      const changed = change(stored[index]!);
      return { endpoints: stored.map((endpoint, i) => (i === index ? changed : endpoint)), value: changed };
    });
  }

  private async progressOf(id: string) {
    return this.deliverers.get(id)?.progress() ?? (await this.book.progress(id));
  }

  /** Deliverers for the endpoints there are, while this process holds the lease; one change at a time. */
  private reconcile(): void {
    this.reconciling = this.reconciling.then(() => this.startAndStop()).catch((error: Error) => this.warn(`Webhook deliverers could not be started: ${error.message}`));
  }

  private async startAndStop(): Promise<void> {
    const endpoints = this.book.list();
    // A lease is sought once there is something to deliver: a store without webhooks writes nothing.
    if (!this.lease && endpoints.length > 0 && !this.isClosed) {
      this.lease = this.store.idNode === null ? SOLE_LEASE : storeLease(this.store, this.warn);
      this.lease.onChange(() => this.reconcile());
    }
    const isHeld = !this.isClosed && (this.lease?.isHeld() ?? false);
    const byId = new Map(endpoints.map((endpoint) => [endpoint.id, endpoint]));
    for (const [id, deliverer] of this.deliverers) {
      const endpoint = byId.get(id);
      if (endpoint && isHeld) continue;
      this.deliverers.delete(id);
      // Deleted: its progress goes too. The lease lost: the new holder writes it from now on.
      await deliverer.stop(true);
      if (!endpoint) await this.store.commit({ puts: [], meta: [{ key: progressKey(id), value: null }] });
    }
    if (!isHeld) return;
    for (const endpoint of endpoints) {
      const running = this.deliverers.get(endpoint.id);
      if (running) {
        running.update(endpoint);
        continue;
      }
      const progress = liftedRefusal(await this.book.progress(endpoint.id), this.policy);
      this.deliverers.set(endpoint.id, new Deliverer(endpoint, progress, this.deliveryContext()));
    }
  }

  private deliveryContext() {
    return {
      store: this.store,
      feed: this.feed,
      schema: this.schema,
      sender: this.sender,
      retryDelaysMs: this.retryDelaysMs,
      warn: this.warn,
      disable: async (id: string, reason: string) => {
        try {
          await this.changeOne(id, (endpoint) => ({ ...endpoint, enabled: false, disabled_reason: reason, updated_date: new Date().toISOString() }));
          return true;
        } catch (error) {
          // Deleted meanwhile: nothing to disable.
          if ((error as { code?: string }).code !== "webhook_not_found") throw error;
          return false;
        }
      },
      bodyOf: (event: FeedEvent) => {
        // Keyed by the row, which the feed hands every reader alike; a sync of the same row differs.
        const kept = this.bodies.get(event.row);
        if (kept && kept.type === event.type) return kept.body;
        const body = changeJson(this.schema.entities.get(event.entity)!, event, WEBHOOK_CALLER);
        // Endpoints far apart in the feed each make their own; those near one another share.
        if (this.bodies.size >= MAX_KEPT_BODIES) this.bodies.delete(this.bodies.keys().next().value!);
        this.bodies.set(event.row, { type: event.type, body });
        return body;
      },
      count: (id: string, isDelivered: boolean, attempts: number) => {
        let counts = this.counts.get(id);
        if (!counts) this.counts.set(id, (counts = { delivered: 0, failed: 0 }));
        if (isDelivered) counts.delivered += attempts;
        else counts.failed += attempts;
      },
    };
  }
}

/**
 * An endpoint whose last attempt was refused by the address check (a process started without
 * --webhooks-allow-private), now that it is given, is tried again at once rather than when the
 * stored schedule says: the refusal was this server's, not the receiver's.
 */
function liftedRefusal(progress: Progress | undefined, policy: TargetPolicy): Progress | undefined {
  if (!policy.allowPrivate || !progress?.failing?.error.startsWith(REFUSED_PREFIX)) return progress;
  return { ...progress, failing: { ...progress.failing, next_at: new Date().toISOString() } };
}
