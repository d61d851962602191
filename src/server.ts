// createServer(options): loads the schema, opens the store, loads the keys and the seed, registers
// every route, and serves through the request pipeline (http/app.ts). It only wires the parts; the
// CLI and the embedding API (api.ts) both start tabula through it.

import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, LookupFunction, Socket } from "node:net";
import { expectationFailed } from "./errors.ts";
import { answerClientError, answerConnect } from "./http/client-error.ts";
import { BODY_TIMEOUT_MS, DEFAULT_MAX_CONNECTIONS, defaultConnectionsPerClient, HEADERS_TIMEOUT_MS, httpTimeoutsOf, limitConnections } from "./http/connection-limits.ts";
import { serveWithoutUpgrade } from "./http/declined-upgrade.ts";
import { defaultMaxMemoryBytes, MemoryGuard } from "./http/memory-guard.ts";
import { DEFAULT_IDEMPOTENCY_MEMORY_BYTES } from "./store/memory/idempotent-answers.ts";
import { parseCorsPolicy } from "./http/cors.ts";
import { headerOf, DEFAULT_MAX_BODY_BYTES } from "./http/request.ts";
import { sendReplyLingering } from "./http/linger.ts";
import { listen } from "./http/listen.ts";
import { keepTickShape } from "./http/tick-shape.ts";
import { RateLimiter } from "./http/rate-limit.ts";
import { errorReply } from "./http/response.ts";
import { buildRouter } from "./http/routes.ts";
import { nativeMount, sdkMount } from "./http/mounts.ts";
import { addAnalyticsRoute } from "./http/analytics-route.ts";
import { loadKeys, type KeyRing } from "./keys/api-keys.ts";
import type { Caller, KeyRef, SessionUser } from "./keys/caller.ts";
import { addKeyRoutes } from "./http/keys-routes.ts";
import { DEFAULT_RECORD_LIMITS, Records, type RecordLimits } from "./records/records.ts";
import { loadSeed } from "./records/seed.ts";
import { loadSchemaObject, loadSchemaPath, type Declarations, type Schema } from "./schema/load.ts";
import { isPlatformField, PLATFORM_FIELDS } from "./schema/fields.ts";
import { checkRules, ruleEqualityFields } from "./rules/rule-tree.ts";
import type { ValueIndexedFields } from "./store/memory/memory-store.ts";
import { openStore, parseStoreUrl, type StoreLocation } from "./store/open-store.ts";
import { settleSchema } from "./migrations/settle.ts";
import { migrationsDirOf } from "./migrations/migration-file.ts";
import type * as Public from "./public-api.ts";
import { then } from "./maybe.ts";
import { ChangeFeed, DEFAULT_FEED_LIMITS } from "./feed/change-feed.ts";
import { DEFAULT_CHANGES_KEEP } from "./store/memory/memory-store.ts";
import type { FeedPosition } from "./store/store.ts";
import { parseEventId } from "./feed/events.ts";
import { AccessLog, LOG_FORMATS, type LogFormat } from "./metrics/access-log.ts";
import { RequestMetrics } from "./metrics/request-metrics.ts";
import { renderMetrics } from "./http/server-metrics.ts";
import { App } from "./http/app.ts";
import { addBackupRoute, addHealthRoute, addMetricsRoute } from "./http/admin-routes.ts";
import { addUiRoute } from "./ui/page.ts";
import { AppSite } from "./http/app-site.ts";
import { settingName } from "./option-names.ts";
import { Webhooks, type RefusedEndpoint } from "./webhooks/webhooks.ts";
import { addWebhookRoutes } from "./http/webhooks-routes.ts";
import { addPollingRefusal, isRealtimeUpgrade, Realtime } from "./realtime/realtime-server.ts";
import { DEFAULT_SESSION_DAYS, SIGNUPS, Users, type Signup } from "./users/users.ts";
import { USER_EVENT_TYPES, type UserEventType } from "./views.ts";
import { addUserRoutes } from "./http/users-routes.ts";
import { addFileRoutes } from "./http/file-routes.ts";
import { DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_FILES_TOTAL_BYTES, Files } from "./files/files.ts";
import { FileSigning } from "./files/file-signing.ts";
import type { FileStorage } from "./store/file-storage.ts";

export const VERSION = "0.1.0";
/** How often open streams and sockets are checked for sessions that ended (docs/users.md: refused within a second). */
const SESSION_SWEEP_MS = 500;


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
  /** Tests: how long a request's head may take (30 s), and its body stay silent (60 s): http/connection-limits.ts. */
  readonly headersTimeoutMs?: number;
  readonly bodyTimeoutMs?: number;
  /** Tests: the file descriptor the request log (log) writes to, stdout's otherwise. */
  readonly logFd?: number;
}

export type { FeedChange, LoadedData } from "./public-api.ts";
type FeedChange = Public.FeedChange;

/** The server startServer resolves to, and what the command line reads from it for its banner. */
export interface TabulaServer extends Public.TabulaServer {
  readonly schema: Schema;
  readonly keys: KeyRing;
  /** What start-up did to the schema (docs/schema-changes.md): migrations run, changes applied, one line each. */
  readonly schemaLines: readonly string[];
  /** For the banner: who may sign up, and the enabled webhook endpoints asking now for users' events (the rest are printed). */
  readonly users: { readonly signup: Signup; codeEndpoints(): Promise<ReadonlyArray<{ readonly id: string; readonly events: readonly UserEventType[] }>> };
  /** For the banner: the stored webhook endpoints whose URL is refused now (docs/webhooks.md, "Safety"). */
  refusedWebhooks(): Promise<readonly RefusedEndpoint[]>;
  /** Folds the file store's log into a snapshot now, so that the next start reads no long log (tabula import). */
  compact(): Promise<void>;
}

export async function createServer(options: ServerOptions): Promise<TabulaServer> {
  // Before the store loads its data, whose collections could otherwise cost every later
  // process.nextTick its fast path (http/tick-shape.ts).
  keepTickShape();
  const schema = resolveSchema(options.schema);
  checkRules(schema);
  const site = options.appDir === undefined ? null : AppSite.open(options.appDir);
  const cors = parseCorsPolicy(options.cors ?? "*");
  const warn = options.warn ?? ((message: string) => process.stderr.write(`warning: ${message}\n`));
  // The store first: it creates the data folder and takes its lock before keys.json is written.
  const changesKeep = checkCount(`The changes kept (${settingName("changesKeep")})`, options.changesKeep ?? DEFAULT_CHANGES_KEEP, 0);
  const idempotencyMemoryBytes = checkCount(`The memory for idempotent answers (${settingName("idempotencyMemoryBytes")}), in bytes,`, options.idempotencyMemoryBytes ?? DEFAULT_IDEMPOTENCY_MEMORY_BYTES, 1);
  const memory = new MemoryGuard(checkCount(`The memory budget (${settingName("maxMemoryBytes")}), in bytes,`, options.maxMemoryBytes ?? defaultMaxMemoryBytes(), 1), warn);
  const feedLimits = {
    maxStreams: checkCount(`The most streams (${settingName("maxStreams")})`, options.maxStreams ?? DEFAULT_FEED_LIMITS.maxStreams, 1),
    streamBufferBytes: options.streamBufferBytes ?? DEFAULT_FEED_LIMITS.streamBufferBytes,
    heartbeatMs: options.heartbeatMs ?? DEFAULT_FEED_LIMITS.heartbeatMs,
  };
  const recordLimits = recordLimitsOf(options);
  const accessLog = logOf(options.log, options.logFd);
  const location = storeLocationOf(options);
  // The port before the store: a busy one stops the start-up before the data folder is made,
  // locked or given keys.json. Requests that arrive before the store is open wait for it.
  let app: App | null = null;
  let realtime: Realtime | null = null;
  const waiting: Array<[IncomingMessage, ServerResponse]> = [];
  const maxConnections = checkCount(`The most connections (${settingName("maxConnections")})`, options.maxConnections ?? DEFAULT_MAX_CONNECTIONS, 1);
  const maxConnectionsPerClient = checkCount(`The most connections of one client (${settingName("maxConnectionsPerClient")})`, options.maxConnectionsPerClient ?? defaultConnectionsPerClient(maxConnections), 1);
  const connectionLimits = {
    maxConnections,
    // Behind a proxy every connection is the proxy's: it limits its clients.
    maxConnectionsPerClient: options.trustProxy ? Infinity : maxConnectionsPerClient,
    headersTimeoutMs: options.headersTimeoutMs ?? HEADERS_TIMEOUT_MS,
    bodyTimeoutMs: options.bodyTimeoutMs ?? BODY_TIMEOUT_MS,
  };
  const http = createHttpServer({ requireHostHeader: false, ...httpTimeoutsOf(connectionLimits) }, (req, res) => (app === null ? void waiting.push([req, res]) : void app.handle(req, res)));
  limitConnections(http, connectionLimits, warn);
  http.on("clientError", answerClientError);
  http.on("connect", answerConnect);
  // @base44/sdk's subscribe() (docs/base44-sdk.md); a socket that comes before the store is open is
  // dropped, and socket.io-client tries again. Any other upgrade is served as HTTP/1.1.
  http.on("upgrade", (req: IncomingMessage, socket: Socket, head: Buffer) => {
    if (!isRealtimeUpgrade(req)) serveWithoutUpgrade(http, req, socket, head);
    else if (realtime === null) socket.destroy();
    else realtime.handleUpgrade(req, socket, head);
  });
  http.on("checkExpectation", (req: IncomingMessage, res: ServerResponse) => sendReplyLingering(req, res, errorReply(expectationFailed(headerOf(req, "expect") ?? ""))));
  await listen(http, options.port ?? 8080, options.host ?? "127.0.0.1");
  let opened: Awaited<ReturnType<typeof openStore>>;
  try {
    opened = await openStore(location, { schema, valueIndexed: valueIndexedFields(schema), pgSchema: options.pgSchema, changesKeep, idempotencyMemoryBytes, warn, progress: options.progress });
  } catch (error) {
    await stopListening(http);
    await accessLog?.close();
    throw error;
  }
  const { store, description: storeDescription, keyVault, dataDir, loaded, backup, compact } = opened;
  let fileStorage: FileStorage | null = null;
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
    const sdk = sdkMount(options.appId ?? null);
    const mounts = [nativeMount, sdk];
    const limiter = options.rateLimit === undefined ? null : new RateLimiter(checkRateLimit(options.rateLimit));
    const feed = await ChangeFeed.open(store, schema, feedLimits, warn);
    // A key revoked or expired, here or by another process: its streams and long polls end (docs/change-feed.md).
    keys.onGone((gone) => feed.endStreamsOf(gone));
    const webhooks = await Webhooks.open(
      store,
      feed,
      schema,
      { allowPrivate: options.webhooksAllowPrivate, retryScale: options.webhookRetryScale, timeoutMs: options.webhookTimeoutMs, lookup: options.webhookLookup },
      warn,
    );
    closeWebhooks = () => webhooks.close();
    const signup = options.signup ?? "open";
    if (!SIGNUPS.includes(signup)) throw new Error(`${settingName("signup")} takes ${SIGNUPS.join(", ")} (got ${JSON.stringify(signup)}).`);
    const users = await Users.open(records, {
      signup,
      sessionDays: checkCount(`The session length in days (${settingName("sessionDays")})`, options.sessionDays ?? DEFAULT_SESSION_DAYS, 1),
      authSecret: options.authSecret,
      send: (event) => webhooks.sendUserEvent(event),
      print: options.printCode ?? ((line) => process.stdout.write(`${line}\n`)),
      appId: options.appId ?? null,
    });
    const anonymous = options.anonymous ?? false;
    const sockets = new Realtime({ feed, keys, users, schema, appId: options.appId ?? null, anonymous, cors, heartbeatMs: feedLimits.heartbeatMs, streamBufferBytes: feedLimits.streamBufferBytes });
    // A key gone or a user's session ended (docs/users.md): its long polls are refused, and its
    // streams and sockets end within a second, here and when another process ended it.
    const isCallerLive = (caller: Caller) => (caller.keyId === "" || keys.isLive(caller.keyId)) && (caller.user === undefined || users.isLiveNow(caller.user));
    // Rules read a user's role and fields as they are now, on a stream opened before they changed (docs/rules.md).
    const currentCaller = (caller: Caller): Caller => (caller.user === undefined ? caller : withUser(caller, users.currentUser(caller.user)));
    feed.checkCallersWith(isCallerLive, currentCaller);
    const hasEndedSession = (caller: Caller) => caller.user !== undefined && !users.isLiveNow(caller.user);
    const sessionSweep = setInterval(() => {
      feed.endStreamsWhere(hasEndedSession);
      sockets.endConnectionsWhere(hasEndedSession);
    }, SESSION_SWEEP_MS).unref();
    const requests = new RequestMetrics();
    const storeKind = location.kind;
    const metrics = () =>
      then(store.metrics(), (storeMetrics) =>
        renderMetrics({ version: VERSION, storeKind, requests, entities: [...schema.entities.values()].filter((entity) => !entity.isBuiltIn).map((entity) => entity.name), store: storeMetrics, feed: feed.load, webhooks: webhooks.metrics(), realtime: sockets.load, droppedLogLines: accessLog?.dropped ?? null }),
      );
    // Every endpoint is a route, registered by the room that owns it.
    const router = buildRouter(mounts);
    addKeyRoutes(router, keys);
    addUserRoutes(router, users, { appId: options.appId ?? null, cors });
    addWebhookRoutes(router, webhooks);
    addHealthRoute(router);
    addMetricsRoute(router, metrics);
    addBackupRoute(router, backup);
    // The data browser is always at /_/; at / too when no app is served there (docs/data-browser.md).
    if (options.ui ?? true) addUiRoute(router, site === null);
    addPollingRefusal(router);
    addAnalyticsRoute(router, sdk);
    const maxFileBytes = checkCount(`The largest file (${settingName("maxFileBytes")}), in bytes,`, options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES, 1);
    fileStorage = await opened.openFiles(maxFileBytes);
    const maxFilesTotalBytes = checkCount(`All uploaded files together (${settingName("maxFilesTotalBytes")}), in bytes,`, options.maxFilesTotalBytes ?? DEFAULT_MAX_FILES_TOTAL_BYTES, 1);
    const files = new Files(fileStorage, new FileSigning(store), maxFileBytes, maxFilesTotalBytes);
    addFileRoutes(router, files, { sdk });
    // The Host check is App's, so that its refusal is JSON like every other.
    const ready = new App({
      version: VERSION,
      records,
      feed,
      keys,
      router,
      mounts,
      maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
      cors,
      onFatal: options.onFatal,
      limiter,
      trustProxy: options.trustProxy ?? false,
      observability: { requests, log: accessLog },
      memory,
      users,
      anonymous,
      site,
    });
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
      // Keys at rest are hashed: a key known in full to this process (docs/testing.md).
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
      users: {
        signup,
        // As Webhooks.sendUserEvent chooses: enabled, and asking for the event's type.
        codeEndpoints: async () =>
          (await webhooks.list())
            .filter((endpoint) => endpoint.enabled)
            .map(({ id, events }) => ({ id, events: USER_EVENT_TYPES.filter((type) => events.includes(type)) }))
            .filter((endpoint) => endpoint.events.length > 0),
      },
      refusedWebhooks: () => webhooks.refusedEndpoints(),
      compact,
      loaded,
      seeded,
      async reset() {
        await store.reset();
        await files.deleteAll();
        await applySeed();
      },
      changes: (options = {}) => followChanges(feed, schema, keys.first("secret"), options),
      async close() {
        clearInterval(sessionSweep);
        // Deliverers first: each writes its position while the store is open.
        await webhooks.close();
        sockets.close();
        feed.close();
        await stopListening(http);
        await accessLog?.close();
        await keys.close();
        await fileStorage?.close();
        await store.close();
      },
    };
  } catch (error) {
    for (const [, res] of waiting.splice(0)) res.destroy();
    await closeWebhooks();
    await closeKeys();
    await stopListening(http);
    await accessLog?.close();
    await fileStorage?.close().catch(() => {});
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
    // A read rule comparing a field with the user's value ("each user sees their own") narrows
    // every read by it: a set per value makes that a lookup (docs/rules.md).
    fields.set(entity.name, [...new Set([...indexed.map((field) => field.name), ...ruleEqualityFields(entity, schema)])]);
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

function logOf(format: LogFormat | undefined, fd: number | undefined): AccessLog | null {
  if (format === undefined || format === "off") return null;
  if (!LOG_FORMATS.includes(format)) throw new Error(`The request log (${settingName("log")}) must be one of ${LOG_FORMATS.join(", ")} (got ${JSON.stringify(format)}).`);
  return new AccessLog(format, fd);
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
  const known = new Map([...schema.entities].map(([name, entity]) => [name, [...entity.fields.keys(), ...PLATFORM_FIELDS]]));
  for (const [entity, names] of await records.storedFieldNames(known)) {
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

/** `caller` acting as `user`: itself when that is its user already. */
function withUser(caller: Caller, user: SessionUser): Caller {
  return caller.user === user ? caller : { ...caller, user };
}
