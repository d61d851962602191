// createServer(options): loads the schema, opens the store, loads the keys and the seed, and
// serves. It wires the parts and owns the one place where errors become replies; the CLI and the
// embedding API (api.ts) both start tabula through it.

import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, LookupFunction, Socket } from "node:net";
import { isAbsolute } from "node:path";
import { performance } from "node:perf_hooks";
import { ApiError, backupTargetExists, backupUnsupported, invalidJson, invalidRequest, forbidden, databaseUnreachable, expectationFailed, insufficientStorage, internalError, methodNotAllowed, notFound, storeUnavailable, uniqueViolation, writeContended } from "./errors.ts";
import { answerClientError, answerConnect } from "./http/client-error.ts";
import { countCheap, enqueueFirst, settle } from "./turns/loop-share.ts";
import { hashBody, IdempotencyGuard, idempotentRequest, type IdempotentRequest } from "./http/idempotency.ts";
import { BodyBudget, HEAVY_BODY_BYTES, type Release } from "./http/body-budget.ts";
import { defaultMaxMemoryBytes, MemoryGuard } from "./http/memory-guard.ts";
import { DEFAULT_IDEMPOTENCY_MEMORY_BYTES } from "./store/memory/idempotent-answers.ts";
import { buildOpenApi, describeEntity } from "./http/openapi.ts";
import { addCorsHeaders, isPreflight, parseCorsPolicy, preflightReply, type CorsPolicy } from "./http/cors.ts";
import { headerOf, parseJsonBody, presentedApiKey, readBody, recordBodyTooLarge, DEFAULT_MAX_BODY_BYTES } from "./http/request.ts";
import { sendReplyLingering } from "./http/linger.ts";
import { isMultipart, readUpload, UPLOAD_MEDIA } from "./http/upload.ts";
import type { ImportFile } from "./records/import-file.ts";
import { MIN_COMPRESSED_BYTES } from "./http/compression.ts";
import { listen } from "./http/listen.ts";
import { keepTickShape } from "./http/tick-shape.ts";
import { clientAddress, rateLimited, RateLimiter } from "./http/rate-limit.ts";
import { plainReadOf, PLAIN_READ_ROUTE } from "./http/plain-read.ts";
import { errorReply, jsonReply, sendReply, sendView, type Reply } from "./http/response.ts";
import { buildRouter, type Handler, type RequestContext } from "./http/routes.ts";
import type { Params, Router } from "./http/router.ts";
import { nativeMount, sdkMount, type Mount } from "./http/mounts.ts";
import type { Caller } from "./keys/caller.ts";
import { loadKeys, type KeyRing } from "./keys/api-keys.ts";
import type { KeyRef } from "./keys/caller.ts";
import { addKeyRoutes, KEYS_PATH } from "./http/keys-routes.ts";
import { DEFAULT_RECORD_LIMITS, Records, type RecordLimits } from "./records/records.ts";
import { loadSeed } from "./records/seed.ts";
import { loadSchemaObject, loadSchemaPath, type Declarations, type Schema } from "./schema/load.ts";
import { isPlatformField } from "./schema/fields.ts";
import type { ValueIndexedFields } from "./store/memory/memory-store.ts";
import { openStore, parseStoreUrl, type StoreLocation } from "./store/open-store.ts";
import { settleSchema } from "./migrations/settle.ts";
import { migrationsDirOf } from "./migrations/migration-file.ts";
import type * as Public from "./public-api.ts";
import { BackupTargetError, type BackupSummary } from "./store/file/backup.ts";
import { ConflictError, isOutOfSpace, StoreUnreachableError, UniqueViolation, WriteFailedError } from "./store/store.ts";
import { then, type Maybe } from "./maybe.ts";
import { ChangeFeed, DEFAULT_FEED_LIMITS } from "./feed/change-feed.ts";
import { DEFAULT_CHANGES_KEEP } from "./store/memory/memory-store.ts";
import type { FeedPosition } from "./store/store.ts";
import { parseEventId } from "./feed/events.ts";
import { AccessLog, LOG_FORMATS, type LogFormat } from "./metrics/access-log.ts";
import { EXPOSITION_CONTENT_TYPE } from "./metrics/exposition.ts";
import { RequestMetrics, type SeriesHandle } from "./metrics/request-metrics.ts";
import { renderMetrics } from "./metrics/server-metrics.ts";
import { uiPageReply } from "./ui/page.ts";
import { settingName } from "./option-names.ts";
import { Webhooks } from "./webhooks/webhooks.ts";
import { addWebhookRoutes, WEBHOOKS_PATH } from "./http/webhooks-routes.ts";
import { isSocketIoPath, pollingRefused, Realtime } from "./realtime/realtime-server.ts";

export const VERSION = "0.1.0";

/** A write refused this many times because others came first is answered 503 (see App.run). */
const MAX_WRITE_ATTEMPTS = 20;

/**
 * The options of the embedding API (public-api.ts, where each is described), and a loaded Schema
 * too. createServer's own defaults differ from startServer's where startServer says so: port 8080
 * here, and the file store unless memory or store is given.
 */
export interface ServerOptions extends Omit<Public.StartOptions, "schema"> {
  readonly schema: string | Declarations | Schema;
  /** Lines saying what a long start-up is doing (a migration running for more than a second). */
  readonly progress?: (line: string) => void;
  /** Tests: a webhook attempt's time limit (10 s), and how webhook hosts are resolved (node:dns). */
  readonly webhookTimeoutMs?: number;
  readonly webhookLookup?: LookupFunction;
}

export type { FeedChange, LoadedData } from "./public-api.ts";
type FeedChange = Public.FeedChange;

/** The server startServer resolves to, and what the command line reads from it for its banner. */
export interface TabulaServer extends Public.TabulaServer {
  readonly schema: Schema;
  readonly keys: KeyRing;
  /** What start-up did to the schema (docs/schema-changes.md): migrations run, changes applied, one line each. */
  readonly schemaLines: readonly string[];
}

export async function createServer(options: ServerOptions): Promise<TabulaServer> {
  // Before the store loads its data, whose collections could otherwise cost every later
  // process.nextTick its fast path (http/tick-shape.ts).
  keepTickShape();
  const schema = resolveSchema(options.schema);
  const cors = parseCorsPolicy(options.cors ?? "*");
  const warn = options.warn ?? ((message: string) => process.stderr.write(`warning: ${message}\n`));
  // The store first: it creates the data folder and takes its lock before keys.json is written.
  const changesKeep = checkCount(`The changes kept (${settingName("changesKeep")})`, options.changesKeep ?? DEFAULT_CHANGES_KEEP, 0);
  const idempotencyMemoryBytes = checkCount(`The memory for idempotent answers (${settingName("idempotencyMemoryBytes")}), in bytes,`, options.idempotencyMemoryBytes ?? DEFAULT_IDEMPOTENCY_MEMORY_BYTES, 1);
  const memory = new MemoryGuard(checkCount(`The memory budget (${settingName("maxMemoryBytes")}), in bytes,`, options.maxMemoryBytes ?? defaultMaxMemoryBytes(), 1));
  const feedLimits = {
    maxStreams: checkCount(`The most streams (${settingName("maxStreams")})`, options.maxStreams ?? DEFAULT_FEED_LIMITS.maxStreams, 1),
    streamBufferBytes: options.streamBufferBytes ?? DEFAULT_FEED_LIMITS.streamBufferBytes,
    heartbeatMs: options.heartbeatMs ?? DEFAULT_FEED_LIMITS.heartbeatMs,
  };
  const recordLimits = recordLimitsOf(options);
  const accessLog = logOf(options.log);
  const location = storeLocationOf(options);
  // The port before the store: a busy one stops the start-up before the data folder is made,
  // locked or given keys.json. Requests that arrive before the store is open wait for it.
  let app: App | null = null;
  let realtime: Realtime | null = null;
  const waiting: Array<[IncomingMessage, ServerResponse]> = [];
  const http = createHttpServer({ requireHostHeader: false }, (req, res) => (app === null ? void waiting.push([req, res]) : void app.handle(req, res)));
  http.on("clientError", answerClientError);
  http.on("connect", answerConnect);
  // @base44/sdk's subscribe() (docs/base44-sdk.md); a socket that comes before the store is open is
  // dropped, and socket.io-client tries again.
  http.on("upgrade", (req: IncomingMessage, socket: Socket, head: Buffer) => (realtime === null ? socket.destroy() : realtime.handleUpgrade(req, socket, head)));
  http.on("checkExpectation", (req: IncomingMessage, res: ServerResponse) => sendReplyLingering(req, res, errorReply(expectationFailed(headerOf(req, "expect") ?? ""))));
  await listen(http, options.port ?? 8080, options.host ?? "127.0.0.1");
  let opened: Awaited<ReturnType<typeof openStore>>;
  try {
    opened = await openStore(location, { schema, valueIndexed: valueIndexedFields(schema), pgSchema: options.pgSchema, changesKeep, idempotencyMemoryBytes, warn });
  } catch (error) {
    await stopListening(http);
    await accessLog?.close();
    throw error;
  }
  const { store, description: storeDescription, keyVault, dataDir, loaded, backup } = opened;
  let closeKeys = async () => {};
  let closeWebhooks = async () => {};
  try {
    const migrationsDir = migrationsDirOf(options.migrations, typeof options.schema === "string" ? options.schema : null);
    const { lines: schemaLines, check } = await settleSchema(store, schema, { migrationsDir, progress: options.progress });
    // The schema lines name entities no longer declared already.
    const unserved = new Set(check.unserved.map(({ entity }) => entity));
    const keys = await loadKeys({ vault: keyVault, secretKey: options.secretKey, publishableKey: options.publishableKey, keys: options.keys, warn });
    closeKeys = () => keys.close();
    const records = new Records(schema, store, recordLimits);
    const seed = options.seed === undefined ? null : loadSeed(schema, options.seed, recordLimits);
    const seedBy = keys.first("secret");
    const applySeed = async () => (seed ? seed.apply(records, seedBy) : 0);
    const seeded = await applySeed();
    const mounts = [nativeMount, sdkMount(options.appId ?? null)];
    const limiter = options.rateLimit === undefined ? null : new RateLimiter(checkRateLimit(options.rateLimit));
    const feed = await ChangeFeed.open(store, schema, feedLimits, warn);
    // A key revoked or expired, here or by another process: its streams and long polls end (docs/change-feed.md).
    feed.checkKeysWith((keyId) => keys.isLive(keyId));
    keys.onGone((gone) => feed.endStreamsOf(gone));
    const webhooks = await Webhooks.open(
      store,
      feed,
      schema,
      { allowPrivate: options.webhooksAllowPrivate, retryScale: options.webhookRetryScale, timeoutMs: options.webhookTimeoutMs, lookup: options.webhookLookup },
      warn,
    );
    closeWebhooks = () => webhooks.close();
    const sockets = new Realtime({ feed, keys, schema, appId: options.appId ?? null, cors, heartbeatMs: feedLimits.heartbeatMs, streamBufferBytes: feedLimits.streamBufferBytes });
    const requests = new RequestMetrics();
    const storeKind = location.kind;
    const metrics = () =>
      then(store.metrics(), (storeMetrics) =>
        renderMetrics({ version: VERSION, storeKind, requests, entities: [...schema.entities.keys()], store: storeMetrics, feed: feed.load, webhooks: webhooks.metrics(), realtime: sockets.load, droppedLogLines: accessLog?.dropped ?? null }),
      );
    // The Host check is App's, so that its refusal is JSON like every other.
    const ready = new App(records, feed, keys, mounts, options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES, cors, options.onFatal, limiter, options.trustProxy ?? false, { requests, log: accessLog, metrics }, options.ui ?? true, backup, webhooks, memory);
    app = ready;
    realtime = sockets;
    for (const [req, res] of waiting.splice(0)) ready.handle(req, res);
    const { port, address, family } = http.address() as AddressInfo;
    const host = family === "IPv6" ? `[${address}]` : address;
    return {
      url: `http://${host}:${port}`,
      port,
      schema,
      keys,
      // Keys at rest are hashed: a key known in full to this process (docs/embedding.md).
      get secretKey() {
        return keys.knownKey("secret");
      },
      get publishableKey() {
        return keys.knownKey("publishable");
      },
      dataDir,
      storeDescription,
      undeclaredFields: (await findUndeclaredFields(schema, records)).filter((name) => !unserved.has(name.replace(/ \(the whole entity\)$/, ""))),
      schemaLines,
      loaded,
      seeded,
      async reset() {
        await store.reset();
        await applySeed();
      },
      changes: (options = {}) => followChanges(feed, schema, keys.first("secret"), options),
      async close() {
        // Deliverers first: each writes its position while the store is open.
        await webhooks.close();
        sockets.close();
        feed.close();
        await stopListening(http);
        await accessLog?.close();
        await keys.close();
        await store.close();
      },
    };
  } catch (error) {
    for (const [, res] of waiting.splice(0)) res.destroy();
    await closeWebhooks();
    await closeKeys();
    await stopListening(http);
    await accessLog?.close();
    await store.close().catch(() => {});
    throw error;
  }
}

function resolveSchema(schema: ServerOptions["schema"]): Schema {
  if (typeof schema === "string") return loadSchemaPath(schema);
  if (schema.entities instanceof Map) return schema as Schema;
  return loadSchemaObject(schema as Declarations);
}

/** Enum and boolean fields get a value index: equality filters on them never scan. */
function valueIndexedFields(schema: Schema): ValueIndexedFields {
  const fields = new Map<string, string[]>();
  for (const entity of schema.entities.values()) {
    const indexed = [...entity.fields.values()].filter((field) => field.type === "boolean" || (field.enum && field.type !== "array" && field.format !== "date" && field.format !== "date-time"));
    fields.set(entity.name, indexed.map((field) => field.name));
  }
  return fields;
}

function storeLocationOf(options: ServerOptions): StoreLocation {
  if (options.store === undefined) return options.memory ? { kind: "memory" } : { kind: "file", dir: options.data ?? "./data" };
  if (options.memory || options.data !== undefined) {
    throw new Error(`The store is given twice: as store, and as ${options.memory ? "memory" : "data"}. Give one (memory is the store memory:, data the store file:<data>).`);
  }
  return parseStoreUrl(options.store, "The store option");
}

function logOf(format: LogFormat | undefined): AccessLog | null {
  if (format === undefined || format === "off") return null;
  if (!LOG_FORMATS.includes(format)) throw new Error(`The request log (${settingName("log")}) must be one of ${LOG_FORMATS.join(", ")} (got ${JSON.stringify(format)}).`);
  return new AccessLog(format);
}

/** A whole number option, at least `min`. */
/** docs/operating.md: --max-groups, --max-array-items, --max-object-keys, --max-record-size. */
function recordLimitsOf(options: ServerOptions): RecordLimits {
  return {
    maxGroups: checkCount(`The most groups of an aggregate (${settingName("maxGroups")})`, options.maxGroups ?? DEFAULT_RECORD_LIMITS.maxGroups, 1),
    maxArrayItems: checkCount(`The most items of an array (${settingName("maxArrayItems")})`, options.maxArrayItems ?? DEFAULT_RECORD_LIMITS.maxArrayItems, 1),
    maxObjectKeys: checkCount(`The most keys of an object (${settingName("maxObjectKeys")})`, options.maxObjectKeys ?? DEFAULT_RECORD_LIMITS.maxObjectKeys, 1),
    maxRecordBytes: checkCount(`The most bytes of a record (${settingName("maxRecordBytes")})`, options.maxRecordBytes ?? DEFAULT_RECORD_LIMITS.maxRecordBytes, 64),
  };
}

function checkCount(what: string, value: number, min: number): number {
  if (!Number.isSafeInteger(value) || value < min) throw new Error(`${what} must be a whole number, at least ${min} (got ${value}).`);
  return value;
}

/** server.changes(): the feed read page by page, each page a long poll. */
async function* followChanges(feed: ChangeFeed, schema: Schema, key: KeyRef, options: { since?: string; entities?: readonly string[] }): AsyncGenerator<FeedChange> {
  const names = options.entities ?? [...schema.entities.keys()];
  for (const name of names) if (!schema.entities.has(name)) throw new Error(`changes(): no entity is named ${name}; the schema declares ${[...schema.entities.keys()].join(", ")}.`);
  const sub = { caller: { keyId: key.id, kind: key.kind }, entities: new Set(names), filters: null, key: "" };
  const state = await feed.state();
  let position: FeedPosition = options.since === undefined ? state.head : parseEventId(options.since, "since", state);
  for (;;) {
    const { events, next } = await feed.read(sub, position, 100, 30_000);
    if (events.length === 0 && feed.isClosed) return;
    for (const event of events) yield JSON.parse(feed.changeJson(event, sub)) as FeedChange;
    position = next;
  }
}

/** --rate-limit: a whole number of requests per second, at least 1. */
function checkRateLimit(perSecond: number): number {
  if (!Number.isInteger(perSecond) || perSecond < 1) throw new Error(`The rate limit must be a whole number of requests per second, at least 1 (got ${perSecond}).`);
  return perSecond;
}

async function findUndeclaredFields(schema: Schema, records: Records): Promise<string[]> {
  const found: string[] = [];
  for (const [entity, names] of await records.storedFieldNames()) {
    const declared = schema.entities.get(entity);
    if (!declared) {
      found.push(`${entity} (the whole entity)`);
      continue;
    }
    for (const name of names) if (!declared.fields.has(name) && !isPlatformField(name)) found.push(`${entity}.${name}`);
  }
  return found;
}

/**
 * Requests in flight when the server closes get this long to be answered; then every connection is
 * closed, so that a stop (SIGTERM) takes at most about this long whatever clients do: a stream or an
 * answer a client does not read, a body that never ends. A write cut off so was not answered; one
 * answered is on disk.
 */
const CLOSE_GRACE_MS = 1000;

/** Closes the listener, lets requests in flight finish (CLOSE_GRACE_MS at most), and drops idle keep-alive connections. */
function stopListening(http: ReturnType<typeof createHttpServer>): Promise<void> {
  return new Promise((resolve) => {
    const idleSweep = setInterval(() => http.closeIdleConnections(), 20);
    const deadline = setTimeout(() => http.closeAllConnections(), CLOSE_GRACE_MS);
    http.close(() => {
      clearInterval(idleSweep);
      clearTimeout(deadline);
      resolve();
    });
    http.closeIdleConnections();
  });
}

const READ_METHODS = new Set(["GET", "HEAD"]);

const NOTHING_HELD: Release = () => {};

/**
 * The bytes a request's body may hold, for the bodies' budget: its Content-Length; --max-body for a
 * chunked one, whose length is known only once read; 0 for one over --max-body, which readBody
 * refuses before reading.
 */
function declaredBodyBytes(req: IncomingMessage, maxBodyBytes: number): number {
  const declared = headerOf(req, "content-length");
  if (declared !== undefined) {
    const bytes = Number(declared);
    return Number.isSafeInteger(bytes) && bytes <= maxBodyBytes ? bytes : 0;
  }
  return headerOf(req, "transfer-encoding") === undefined ? 0 : maxBodyBytes;
}

/** The route template of a request no route served, in metrics and logs. */
const NO_ROUTE = "(none)";
/** nginx's status for a request whose client closed the connection before the answer. */
const CLIENT_CLOSED = 499;

/** What App learns of a request on its way (its route, its key), for the metrics and the log. */
interface RequestNote {
  readonly started: number;
  route: string;
  keyId: string | null;
}

/** Where requests are counted and logged, and GET /metrics's text. */
interface Observability {
  readonly requests: RequestMetrics;
  readonly log: AccessLog | null;
  readonly metrics: () => Maybe<string>;
}

/**
 * The change feed's routes also take the key as ?key=: a browser's EventSource cannot send
 * headers (docs/change-feed.md). Nowhere else, so that keys stay out of the URLs of ordinary requests.
 */
function feedKeyOf(path: string, query: string): string | undefined {
  if (!path.endsWith("/changes") && !path.endsWith("/changes/")) return undefined;
  return new URLSearchParams(query).get("key") ?? undefined;
}

/** What a handler sees of a request. The query, the URL and headers are read only when asked for. */
class Context implements RequestContext {
  private parsedQuery: URLSearchParams | undefined;

  constructor(
    private readonly req: IncomingMessage,
    readonly path: string,
    private readonly queryText: string,
    readonly records: Records,
    readonly feed: ChangeFeed,
    readonly caller: Caller,
    readonly params: Params,
    readonly body: unknown,
    readonly documents: RequestContext["documents"],
    private readonly memory: MemoryGuard,
    readonly upload?: ImportFile,
  ) {}

  admitHeavy(): void {
    this.memory.admitHeavy();
  }

  get query(): URLSearchParams {
    return (this.parsedQuery ??= new URLSearchParams(this.queryText));
  }

  get url(): string {
    return `${this.header("x-forwarded-proto") === "https" ? "https" : "http"}://${this.header("host") ?? "localhost"}${this.path}`;
  }

  header(name: string): string | undefined {
    return headerOf(this.req, name);
  }
}

/** Set on a connection whose last request was costly: its next one waits for a turn (turns/loop-share.ts). */
const OWES_TURN = Symbol("owesTurn");
type OwingSocket = Socket & { [OWES_TURN]?: boolean };

/** The request path: auth → route → body → idempotency → handler → store → durable → reply. */
class App {
  private readonly router: Router<Handler>;
  private readonly idempotency: IdempotencyGuard;
  private readonly documents: RequestContext["documents"];
  private failure: Error | null = null;
  /** The plain reads' series in the request metrics, held once the first is answered. */
  private plainReads: SeriesHandle | null = null;
  /** The bytes of heavy writes' bodies being handled at once. */
  private readonly bodies = new BodyBudget();

  constructor(
    private readonly records: Records,
    private readonly feed: ChangeFeed,
    private readonly keys: KeyRing,
    mounts: readonly Mount[],
    private readonly maxBodyBytes: number,
    private readonly cors: CorsPolicy | null,
    private readonly onFatal: ((error: Error) => void) | undefined,
    private readonly limiter: RateLimiter | null,
    private readonly trustProxy: boolean,
    private readonly observability: Observability,
    private readonly hasUi: boolean,
    /** POST /api/admin/backup: the store's backup, or the words saying what backs the store up instead. */
    private readonly backupStore: ((to: string) => Promise<BackupSummary>) | string,
    webhooks: Webhooks,
    private readonly memory: MemoryGuard,
  ) {
    this.router = buildRouter(mounts);
    addKeyRoutes(this.router, keys);
    addWebhookRoutes(this.router, webhooks);
    this.idempotency = new IdempotencyGuard(records);
    const schema = records.schema;
    let openApi: string | undefined;
    this.documents = {
      entities: JSON.stringify([...schema.entities.values()].map(describeEntity)),
      get openApi() {
        return (openApi ??= JSON.stringify(buildOpenApi(schema, VERSION, mounts)));
      },
    };
  }

  /**
   * Reads are answered in the same tick when nothing waits for the disk: no promise, no hop. A
   * request on a connection whose last one was costly waits for a turn first (turns/loop-share.ts).
   */
  handle(req: IncomingMessage, res: ServerResponse): void {
    const socket = req.socket as OwingSocket;
    if (socket[OWES_TURN] !== true) return this.dispatch(req, res);
    socket[OWES_TURN] = false;
    enqueueFirst(() => this.dispatch(req, res));
  }

  private dispatch(req: IncomingMessage, res: ServerResponse): void {
    const started = performance.now();
    if (this.answerPlainRead(req, res, started)) return countCheap();
    const note: RequestNote = { started, route: NO_ROUTE, keyId: null };
    let reply: Reply | Promise<Reply>;
    try {
      reply = this.answer(req, note);
    } catch (error) {
      reply = this.replyToError(error);
    }
    if (reply instanceof Promise) {
      reply.then(
        (answered) => this.sendLater(req, res, answered, note),
        (error: unknown) => this.sendLater(req, res, this.replyToError(error), note),
      );
    } else {
      this.send(req, res, reply, note);
    }
    // What the request took at once counts in the loop's share (turns/loop-share.ts), as does each later stretch.
    this.settle(req, started);
  }

  /** A stretch of `req`'s work has ended: a costly one makes its connection's next request wait for a turn. */
  private settle(req: IncomingMessage, startedAt: number): void {
    if (settle(startedAt)) (req.socket as OwingSocket)[OWES_TURN] = true;
  }

  private sendLater(req: IncomingMessage, res: ServerResponse, reply: Reply, note: RequestNote): void {
    const at = performance.now();
    this.send(req, res, reply, note);
    this.settle(req, at);
  }

  /**
   * A plain read by id (http/plain-read.ts) of a record whose view is cached, answered in one step;
   * false, having done nothing, for any request the general path must answer (a miss, a key not
   * known or not allowed to read, a write not yet durable, CORS headers to add).
   */
  private answerPlainRead(req: IncomingMessage, res: ServerResponse, started: number): boolean {
    const read = plainReadOf(req);
    if (read === null || this.failure !== null || (this.cors !== null && !this.cors.anyOrigin)) return false;
    const caller = this.keys.find(read.key);
    const entity = this.records.schema.entities.get(read.entity);
    if (caller === undefined || entity === undefined) return false;
    if (caller.kind === "publishable" && this.limiter !== null) return false;
    // A view is cached for a kind of key only by a read that its access allowed (routes.ts).
    if (this.records.whenDurable() !== null) return false;
    // A secret key may read any record: a miss is made here too, from memory (records.ts), once the
    // router says the path is the read by id's (not GET <collection>/count, /changes, /export…).
    let view = this.records.cachedView(entity, read.id, caller);
    if (view === undefined && caller.kind === "secret" && this.router.match("GET", req.url!)?.route === PLAIN_READ_ROUTE) view = this.records.secretViewAtHand(entity, read.id, caller);
    if (view === undefined) return false;
    // A view long enough to compress is answered by the general path, which compresses.
    if (view.bytes >= MIN_COMPRESSED_BYTES && headerOf(req, "accept-encoding") !== undefined) return false;
    sendView(res, view);
    // Without a log line to write, counted through the series held: no note and no Map look-ups a
    // read, 2–3% of W1 on a slow host ("2026-11-26, sixth" in git log -p -- docs/benchmarks-history.md).
    if (this.observability.log) this.observe(req, { started, route: PLAIN_READ_ROUTE, keyId: caller.keyId }, 200);
    else (this.plainReads ??= this.observability.requests.series("GET", PLAIN_READ_ROUTE, 200)).observe((performance.now() - started) / 1000);
    return true;
  }

  private send(req: IncomingMessage, res: ServerResponse, reply: Reply, note: RequestNote): void {
    if (res.headersSent) return;
    if (res.destroyed) {
      reply.cancel?.();
      return this.observe(req, note, CLIENT_CLOSED);
    }
    if (this.cors) addCorsHeaders(this.cors, req, res);
    // Only a refusal can come before the body has been read to its end.
    if (reply.status >= 400) sendReplyLingering(req, res, reply);
    else sendReply(res, reply);
    this.observe(req, note, reply.status);
  }

  /** Counts the request by route and status, and logs it (--log). */
  private observe(req: IncomingMessage, note: RequestNote, status: number): void {
    const ms = performance.now() - note.started;
    const method = req.method ?? "GET";
    this.observability.requests.observe(method, note.route, status, ms / 1000);
    if (this.observability.log) {
      const url = req.url ?? "/";
      const queryAt = url.indexOf("?");
      this.observability.log.request({ method, path: queryAt === -1 ? url : url.slice(0, queryAt), route: note.route, status, ms, keyId: note.keyId });
    }
  }

  private answer(req: IncomingMessage, note: RequestNote): Reply | Promise<Reply> {
    const rawUrl = req.url ?? "/";
    const queryAt = rawUrl.indexOf("?");
    const path = queryAt === -1 ? rawUrl : rawUrl.slice(0, queryAt);
    const query = queryAt === -1 ? "" : rawUrl.slice(queryAt + 1);
    const method = req.method ?? "GET";
    // RFC 9112 §3.2: an HTTP/1.1 request without Host is refused.
    if (req.httpVersionMinor === 1 && req.httpVersionMajor === 1 && headerOf(req, "host") === undefined) {
      throw new ApiError(400, "invalid_request", "An HTTP/1.1 request needs a Host header; add one.", {}, { Connection: "close" });
    }
    // A preflight carries no key: it asks whether the request that follows (with one) may be sent.
    if (this.cors && isPreflight(req)) return preflightReply(req);
    if (path === "/health") {
      note.route = path;
      if (!READ_METHODS.has(method)) throw methodNotAllowed(method, ["GET", "HEAD"]);
      return jsonReply(200, `{"status":"ok"}`);
    }
    if (path === "/metrics") {
      note.route = path;
      return this.metrics(req, method, note);
    }
    if (path === "/api/admin/backup") {
      note.route = path;
      return this.backup(req, method, note);
    }
    // The data browser: one comparison on the way to /api/, and the page needs no key (ui/page.ts).
    if (path === "/" && this.hasUi) {
      note.route = path;
      return uiPageReply(method);
    }
    if (isSocketIoPath(path)) throw pollingRefused();
    if (!path.startsWith("/api/")) throw notFound(path);
    const caller = this.keys.authenticate(presentedApiKey(req) ?? feedKeyOf(path, query));
    note.keyId = caller.keyId;
    if (this.limiter && caller.kind === "publishable") {
      const wait = this.limiter.take(clientAddress(req, this.trustProxy));
      if (wait > 0) throw rateLimited(this.limiter.perSecond, wait);
    }
    const match = this.router.match(method, path);
    if (!match) throw notFound(path);
    note.route = match.route;
    if ("allowed" in match) throw methodNotAllowed(method, match.allowed);
    if (match.handler.isHeavy) this.memory.admitHeavy();
    if (READ_METHODS.has(method)) return this.read(match.handler, new Context(req, path, query, this.records, this.feed, caller, match.params, undefined, this.documents, this.memory));
    const contextOf = (body: unknown, upload?: ImportFile) => new Context(req, path, query, this.records, this.feed, caller, match.params, body, this.documents, this.memory, upload);
    // An answer holding a new key or a webhook secret is never kept for an Idempotency-Key replay.
    return this.write(req, caller, match.handler, contextOf, !match.route.startsWith(KEYS_PATH) && !match.route.startsWith(WEBHOOKS_PATH));
  }

  /** GET /metrics: Prometheus text, for a secret key only (it shows every entity's counts). */
  private metrics(req: IncomingMessage, method: string, note: RequestNote): Reply | Promise<Reply> {
    if (!READ_METHODS.has(method)) throw methodNotAllowed(method, ["GET", "HEAD"]);
    const caller = this.keys.authenticate(presentedApiKey(req));
    note.keyId = caller.keyId;
    if (caller.kind !== "secret") throw forbidden("GET /metrics needs a secret key; a publishable key may not read the server's metrics.");
    const text = this.observability.metrics();
    const reply = (body: string): Reply => ({ status: 200, headers: { "Content-Type": EXPOSITION_CONTENT_TYPE }, body });
    return text instanceof Promise ? text.then(reply) : reply(text);
  }

  /** POST /api/admin/backup {"to"}: a copy of the data folder on this server's machine, for a secret key only (docs/operating.md). */
  private async backup(req: IncomingMessage, method: string, note: RequestNote): Promise<Reply> {
    if (method !== "POST") throw methodNotAllowed(method, ["POST"]);
    const caller = this.keys.authenticate(presentedApiKey(req));
    note.keyId = caller.keyId;
    if (caller.kind !== "secret") throw forbidden("POST /api/admin/backup needs a secret key; a publishable key may not copy the server's data.");
    const body = parseJsonBody(req, await readBody(req, this.maxBodyBytes)) as Record<string, unknown> | undefined;
    const mend = 'Send {"to": "/absolute/path"}: a new (or empty) folder on the server\'s machine.';
    if (typeof body !== "object" || body === null || Array.isArray(body) || Object.keys(body).some((name) => name !== "to")) throw invalidJson(`The body must be an object with "to" alone. ${mend}`, { field: "to" });
    const to = body.to;
    if (typeof to !== "string" || !isAbsolute(to)) throw invalidJson(`"to" must be an absolute path (got ${JSON.stringify(to) ?? "none"}). ${mend}`, { field: "to" });
    if (typeof this.backupStore === "string") throw backupUnsupported(this.backupStore);
    try {
      return jsonReply(200, JSON.stringify(await this.backupStore(to)));
    } catch (error) {
      if (error instanceof BackupTargetError) throw error.isNotEmpty ? backupTargetExists(error.message, to) : invalidRequest(error.message, { to });
      throw error;
    }
  }

  /** A read waits only when an earlier write is not yet durable, so it never shows such a write. */
  private read(handler: Handler, ctx: RequestContext): Reply | Promise<Reply> {
    if (this.failure) throw storeUnavailable();
    return then(handler(ctx), ({ reply }) => {
      const pending = this.records.whenDurable();
      if (!pending) return reply;
      // A write refused for lack of space was taken back out of memory: answer again from what is stored.
      return pending.then(
        () => reply,
        (error: Error) => {
          reply.cancel?.();
          return isOutOfSpace(error) ? this.read(handler, ctx) : this.fail(error);
        },
      );
    });
  }

  private async write(req: IncomingMessage, caller: Caller, handler: Handler, contextOf: (body: unknown, upload?: ImportFile) => Context, isReplayable: boolean): Promise<Reply> {
    const idempotencyKey = isReplayable ? headerOf(req, "idempotency-key") : undefined;
    const release = await this.admitBody(req);
    try {
      const { ctx, bodyHash } = await this.readWrite(req, handler, contextOf, idempotencyKey !== undefined);
      if (idempotencyKey === undefined) return await this.run(req, handler, ctx, undefined);
      const request = idempotentRequest(caller, idempotencyKey, req.method!, req.url ?? "/", bodyHash!);
      const replay = await this.idempotency.start(request, Date.now());
      if (replay) {
        await this.records.whenDurable()?.catch((error: Error) => this.fail(error));
        return replay;
      }
      try {
        return await this.run(req, handler, ctx, request);
      } finally {
        this.idempotency.finish(request);
      }
    } finally {
      release();
    }
  }

  /**
   * A write whose body is heavy (HEAVY_BODY_BYTES or more, as declared; a chunked one may be up to
   * --max-body) is refused while memory is near --max-memory, and waits, its body unread, for its
   * share of the bodies' budget (http/body-budget.ts). Answers how to give the share back.
   */
  private async admitBody(req: IncomingMessage): Promise<Release> {
    const bytes = declaredBodyBytes(req, this.maxBodyBytes);
    if (bytes < HEAVY_BODY_BYTES) return NOTHING_HELD;
    this.memory.admitHeavy();
    const admitted = this.bodies.admit(bytes);
    if (!(admitted instanceof Promise)) return admitted;
    const release = await admitted;
    try {
      // It waited: memory may have grown meanwhile, and its client may have gone (the body's end would never come).
      this.memory.admitHeavy();
      if (req.destroyed) throw invalidRequest("The connection closed before the body ended; send the whole body.");
    } catch (error) {
      release();
      throw error;
    }
    return release;
  }

  /**
   * The write's context, and its body's hash when an Idempotency-Key needs it. The body's bytes are
   * dropped once parsed and hashed: nothing holds them while the write runs.
   */
  private async readWrite(req: IncomingMessage, handler: Handler, contextOf: (body: unknown, upload?: ImportFile) => Context, needsHash: boolean): Promise<{ ctx: Context; bodyHash: string | undefined }> {
    if (handler.takesUpload && isMultipart(req)) {
      // Read as it arrives; an Idempotency-Key's fingerprint hashes the body's digest (http/upload.ts).
      const upload = await readUpload(req, this.maxBodyBytes);
      return { ctx: contextOf(undefined, upload.file), bodyHash: needsHash ? hashBody(upload.digest) : undefined };
    }
    const maxRecordBody = 2 * this.records.limits.maxRecordBytes;
    const bytes = handler.takesOneRecord && maxRecordBody < this.maxBodyBytes ? await readBody(req, maxRecordBody, recordBodyTooLarge) : await readBody(req, this.maxBodyBytes);
    const at = performance.now();
    const ctx = contextOf(parseJsonBody(req, bytes, handler.takesUpload ? UPLOAD_MEDIA : undefined));
    const bodyHash = needsHash ? hashBody(bytes) : undefined;
    this.settle(req, at);
    return { ctx, bodyHash };
  }

  /**
   * Runs a handler and commits its rows with the idempotent answer. When another write came first
   * (another process, or another request between this one's read and its commit), the handler
   * runs again on what is stored now, as if this request had arrived after that write.
   */
  private async run(req: IncomingMessage, handler: Handler, ctx: RequestContext, request: IdempotentRequest | undefined): Promise<Reply> {
    for (let attempt = 1; ; attempt++) {
      if (this.failure) throw storeUnavailable();
      const handledAt = performance.now();
      const handled = handler(ctx);
      this.settle(req, handledAt);
      const { reply, change } = await handled;
      const answeredAt = performance.now();
      const answer = request ? this.idempotency.answerFor(request, reply, Date.now()) : undefined;
      this.settle(req, answeredAt);
      if ((!change || change.puts.length === 0) && !answer) {
        await this.records.whenDurable()?.catch((error: Error) => this.fail(error));
        return reply;
      }
      try {
        const committedAt = performance.now();
        const committed = this.records.commit(change, answer);
        this.settle(req, committedAt);
        await committed;
        return reply;
      } catch (error) {
        if (error instanceof UniqueViolation) throw uniqueViolation(error.entity, error.fields, error.values, error.existingId);
        if (!(error instanceof ConflictError)) this.fail(error as Error);
        if (error.reason === "answer" && request) return this.idempotency.replay(request, Date.now());
        if (attempt >= MAX_WRITE_ATTEMPTS) throw writeContended(attempt);
      }
    }
  }

  /**
   * A write this request waited on was not made durable. A full disk refuses the writes waiting
   * (507) and the store goes on. Any other failure is fatal (after a failed fsync what the disk
   * holds is unknown): every waiting request is answered 503, and onFatal decides what comes next.
   */
  private fail(error: Error): never {
    if (isOutOfSpace(error)) throw insufficientStorage();
    // The database went away: this request is answered 503, and the next may find it back.
    if (error instanceof StoreUnreachableError) throw databaseUnreachable(error.isOutcomeUnknown);
    // The database refused this write alone: a 500 for this request (replyToError logs it), not a shutdown.
    if (error instanceof WriteFailedError) throw error;
    if (!this.failure) {
      this.failure = error;
      this.onFatal?.(error);
    }
    throw storeUnavailable();
  }

  private replyToError(error: unknown): Reply {
    if (error instanceof ApiError) return errorReply(error);
    if (error instanceof StoreUnreachableError) return errorReply(databaseUnreachable());
    if (error !== this.failure) console.error(error);
    return errorReply(internalError());
  }
}
