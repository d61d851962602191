// The request pipeline: preflight → route → guard → handler → store → durable → reply, and the one
// place where errors become replies. Every endpoint is a route of the router it is given (routes.ts
// and the rooms that own the others), and each route says who may call it (context.ts, Guard).

import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { performance } from "node:perf_hooks";
import { ApiError, databaseUnreachable, insufficientStorage, internalError, invalidRequest, methodNotAllowed, notFound, storeUnavailable, uniqueViolation, withoutHolder, writeContended } from "../errors.ts";
import type { ChangeFeed } from "../feed/change-feed.ts";
import type { KeyRing } from "../keys/api-keys.ts";
import { NO_KEY, type Caller } from "../keys/caller.ts";
import type { AccessLog } from "../metrics/access-log.ts";
import type { RequestMetrics, SeriesHandle } from "../metrics/request-metrics.ts";
import type { ImportFile } from "../records/import-file.ts";
import type { Records } from "../records/records.ts";
import { noteHeavyWritten } from "../streamed-garbage.ts";
import { ConflictError, isOutOfSpace, StoreUnreachableError, UniqueViolation, WriteFailedError } from "../store/store.ts";
import { countCheap, countRequest, enqueueFirst, settle } from "../turns/loop-share.ts";
import { then, type Maybe } from "../maybe.ts";
import type { Users } from "../users/users.ts";
import { isSignInPath } from "./users-routes.ts";
import { isAnalyticsPath } from "./analytics-route.ts";
import { isFileContentPath } from "./file-routes.ts";
import { BodyBudget, HEAVY_BODY_BYTES, type Release } from "./body-budget.ts";
import { refusedStatusOf } from "./client-error.ts";
import { MIN_COMPRESSED_BYTES } from "./compression.ts";
import { hasRules } from "../rules/grants.ts";
import type { AppSite } from "./app-site.ts";
import { checkGuard, Context, feedKeyOf, mayAccess, type Handler, type RequestContext } from "./context.ts";
import { addCorsHeaders, isPreflight, preflightReply, type CorsPolicy } from "./cors.ts";
import { hashBody, IdempotencyGuard, idempotentRequest, type IdempotentRequest } from "./idempotency.ts";
import { sendReplyLingering } from "./linger.ts";
import type { MemoryGuard } from "./memory-guard.ts";
import type { Mount } from "./mounts.ts";
import { buildOpenApi, describeEntity } from "./openapi.ts";
import { plainReadOf, PLAIN_READ_ROUTE } from "./plain-read.ts";
import { clientAddress, rateLimited, type RateLimiter } from "./rate-limit.ts";
import { headerOf, isUserToken, parseJsonBody, presentedCredentials, readBody, recordBodyTooLarge } from "./request.ts";
import { errorReply, sendReply, sendView, type Reply } from "./response.ts";
import type { Router } from "./router.ts";
import { isMultipart, readUpload, UPLOAD_MEDIA } from "./upload.ts";

/** A write refused this many times because others came first is answered 503 (see App.run). */
const MAX_WRITE_ATTEMPTS = 20;

/** What the pipeline is made of: one object, so that a wiring reads by name. */
export interface AppOptions {
  readonly version: string;
  readonly records: Records;
  readonly feed: ChangeFeed;
  readonly keys: KeyRing;
  /** Every route: the entity routes (routes.ts) and those the other rooms add (keys, webhooks, /metrics, backup, /health, /). */
  readonly router: Router<Handler>;
  /** For the OpenAPI document. */
  readonly mounts: readonly Mount[];
  readonly maxBodyBytes: number;
  readonly cors: CorsPolicy | null;
  readonly onFatal: ((error: Error) => void) | undefined;
  readonly limiter: RateLimiter | null;
  readonly trustProxy: boolean;
  readonly observability: Observability;
  readonly memory: MemoryGuard;
  /** Who signs in (docs/users.md): a user's token is checked here. */
  readonly users: Users;
  /** A request with neither key nor token is an anonymous visitor, with a publishable key's limits (docs/base44-sdk.md). */
  readonly anonymous: boolean;
  /** The app's front end (http/app-site.ts): a GET or HEAD off /api/ that no route takes. */
  readonly site: AppSite | null;
}

const READ_METHODS = new Set(["GET", "HEAD"]);

const NOTHING_HELD: Release = () => {};

/**
 * A heavy write's share of the bodies' budget, held until its answer has left the process: an
 * answer is as large as the records it names, and twenty such answers queued for their clients
 * were 200 MiB outside V8's heap at once (docs/benchmarks.md, "Memory of bulk writes"). A client
 * that does not read its answer holds the share no longer than ANSWER_HOLD_MS.
 */
const HELD_BODY = Symbol("heldBody");
/** The bytes of a heavy write's body read whole (readWrite): what its share counts for collecting garbage once given back. */
const BODY_READ_BYTES = Symbol("bodyReadBytes");
type HoldingRequest = IncomingMessage & { [HELD_BODY]?: Release; [BODY_READ_BYTES]?: number };
const ANSWER_HOLD_MS = 1000;

/** Gives the request's share of the bodies' budget back once `res` is done, or ANSWER_HOLD_MS from now. */
function releaseWhenSent(req: IncomingMessage, res: ServerResponse): void {
  const release = (req as HoldingRequest)[HELD_BODY];
  if (release === undefined) return;
  (req as HoldingRequest)[HELD_BODY] = undefined;
  if (res.writableFinished || res.destroyed) return release();
  const timer = setTimeout(release, ANSWER_HOLD_MS).unref();
  res.once("close", () => {
    clearTimeout(timer);
    release();
  });
}

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
/** The route of every file of the app's front end, in metrics and logs. */
const APP_SITE_ROUTE = "/*app";
/** nginx's status for a request whose client closed the connection before the answer. */
const CLIENT_CLOSED = 499;

/** What App learns of a request on its way (its route, its key), for the metrics and the log. */
interface RequestNote {
  readonly started: number;
  route: string;
  keyId: string | null;
}

/** Where requests are counted and logged. */
export interface Observability {
  readonly requests: RequestMetrics;
  readonly log: AccessLog | null;
}

/** Set on a connection whose last request was costly: its next one waits for a turn (turns/loop-share.ts). */
const OWES_TURN = Symbol("owesTurn");
type OwingSocket = Socket & { [OWES_TURN]?: boolean };

/** The request path: auth → route → body → idempotency → handler → store → durable → reply. */
export class App {
  private readonly idempotency: IdempotencyGuard;
  private readonly documents: RequestContext["documents"];
  private failure: Error | null = null;
  /** The plain reads' series in the request metrics, held once the first is answered. */
  private plainReads: SeriesHandle | null = null;
  /** The bytes of heavy writes' bodies being handled at once. */
  private readonly bodies = new BodyBudget();

  private readonly records: Records;
  private readonly feed: ChangeFeed;
  private readonly keys: KeyRing;
  private readonly router: Router<Handler>;
  private readonly maxBodyBytes: number;
  private readonly cors: CorsPolicy | null;
  private readonly onFatal: ((error: Error) => void) | undefined;
  private readonly limiter: RateLimiter | null;
  private readonly trustProxy: boolean;
  private readonly observability: Observability;
  private readonly memory: MemoryGuard;
  private readonly users: Users;
  private readonly anonymous: boolean;
  private readonly site: AppSite | null;

  constructor(options: AppOptions) {
    ({ records: this.records, feed: this.feed, keys: this.keys, router: this.router, maxBodyBytes: this.maxBodyBytes, cors: this.cors, onFatal: this.onFatal, limiter: this.limiter, trustProxy: this.trustProxy, observability: this.observability, memory: this.memory, users: this.users, anonymous: this.anonymous, site: this.site } = options);
    this.idempotency = new IdempotencyGuard(this.records);
    const schema = this.records.schema;
    const mounts = options.mounts;
    let openApi: string | undefined;
    this.documents = {
      entities: JSON.stringify([...schema.entities.values()].filter((entity) => !entity.isBuiltIn).map(describeEntity)),
      get openApi() {
        return (openApi ??= JSON.stringify(buildOpenApi(schema, options.version, mounts)));
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
    countRequest();
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
    const caller = read.isUserToken ? this.userCallerAtHand(read.key) : this.keys.find(read.key);
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
    // Without a log line to write, counted through the series held: no note and no Map look-ups a read.
    if (this.observability.log) this.observe(req, { started, route: PLAIN_READ_ROUTE, keyId: caller.keyId || `user:${caller.user!.id}` }, 200);
    else (this.plainReads ??= this.observability.requests.series("GET", PLAIN_READ_ROUTE, 200)).observe((performance.now() - started) / 1000);
    return true;
  }

  /** A signed-in user as a caller with a publishable key's limits, when its session is known at once. */
  private userCallerAtHand(token: string): Caller | undefined {
    const user = this.users.authenticateAtHand(token);
    return user === undefined ? undefined : { keyId: "", kind: "publishable", user };
  }

  private send(req: IncomingMessage, res: ServerResponse, reply: Reply, note: RequestNote): void {
    try {
      this.sendNow(req, res, reply, note);
    } finally {
      releaseWhenSent(req, res);
    }
  }

  private sendNow(req: IncomingMessage, res: ServerResponse, reply: Reply, note: RequestNote): void {
    if (res.headersSent) return;
    if (res.destroyed) {
      reply.cancel?.();
      // Closed by the client, or after a refusal sent on the socket itself (a body gone silent).
      return this.observe(req, note, refusedStatusOf(req) ?? CLIENT_CLOSED);
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

  /** preflight → route → guard (key, rate limit, kind) → handler: a read at once, a write through its body. */
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
    // Under /api/ the key comes first: a request without a valid one learns nothing of the routes.
    // Signing up and in needs none (docs/users.md), nor the SDK's analytics (docs/base44-sdk.md).
    // Nor a file's content (docs/api.md, "Files"): an <img src> sends no key.
    const isApi = path.startsWith("/api/") && !isSignInPath(path) && !isAnalyticsPath(path) && !isFileContentPath(path);
    const caller = isApi ? this.authenticate(req, path, query, note) : null;
    if (caller instanceof Promise) return caller.then((found) => this.route(req, note, path, query, method, found));
    return this.route(req, note, path, query, method, caller);
  }

  /** route → guard → handler, once the caller of an /api/ request is known. */
  private route(req: IncomingMessage, note: RequestNote, path: string, query: string, method: string, authenticated: Caller | null): Reply | Promise<Reply> {
    let caller = authenticated;
    const match = this.router.match(method, path);
    if (!match) {
      if (this.site === null || (method !== "GET" && method !== "HEAD") || path.startsWith("/api/")) throw notFound(path);
      note.route = APP_SITE_ROUTE;
      return this.site.answer(req, path);
    }
    note.route = match.route;
    if ("allowed" in match) throw methodNotAllowed(method, match.allowed);
    const { handler } = match;
    const guard = handler.guard ?? "key";
    if (guard !== "none") {
      if (caller === null) {
        // Off /api/ (/metrics, the backup) or on a sign-in path: a key, or a user's token.
        const found = this.authenticate(req, path, query, note);
        if (found instanceof Promise) return found.then((known) => this.route(req, note, path, query, method, known));
        caller = found;
      }
      note.keyId = caller.keyId;
      checkGuard(caller, guard, handler.refusal);
    }
    const by = caller ?? NO_KEY;
    if (handler.isHeavy) this.memory.admitHeavy();
    if (READ_METHODS.has(method)) {
      const ctx = new Context(req, path, query, this.records, this.feed, by, match.params, undefined, this.documents, this.memory, this.trustProxy);
      // /health, /metrics and the page answer whatever became of the store, and wait for no write.
      return handler.readsNoRecord ? then(handler(ctx), ({ reply }) => reply) : this.read(handler, ctx);
    }
    const contextOf = (body: unknown, upload?: ImportFile) => new Context(req, path, query, this.records, this.feed, by, match.params, body, this.documents, this.memory, this.trustProxy, upload);
    return this.write(req, by, handler, contextOf, handler.isReplayable !== false);
  }

  /**
   * The caller of a request: by X-Api-Key (or ?key= on the change feed), or a signed-in user by its
   * token, alone or beside a publishable key (docs/users.md); a publishable key's rate, and so a
   * user's, is limited by address. A user's check may wait for a shared store.
   */
  private authenticate(req: IncomingMessage, path: string, query: string, note: RequestNote): Maybe<Caller> {
    const presented = presentedCredentials(req);
    const feedKey = feedKeyOf(path, query);
    // The change feed's ?key= may carry a user's token (an EventSource sends no headers).
    const token = presented.token ?? (feedKey !== undefined && isUserToken(feedKey) ? feedKey : undefined);
    const key = presented.key ?? (token === feedKey ? undefined : feedKey);
    if (token === undefined) return this.limited(req, note, key === undefined && this.anonymous ? NO_KEY : this.keys.authenticate(key));
    const app = key === undefined ? null : this.keys.authenticate(key);
    if (app?.kind === "secret") {
      throw invalidRequest("A user's token came with a secret key: a secret key acts as the service and a token as a user. Send one of them (an app signing people in sends its publishable key, or none).");
    }
    return then(this.users.authenticate(token), (user) => this.limited(req, note, { keyId: app?.keyId ?? "", kind: "publishable", user }));
  }

  private limited(req: IncomingMessage, note: RequestNote, caller: Caller): Caller {
    note.keyId = caller.keyId || (caller.user ? `user:${caller.user.id}` : "anonymous");
    if (this.limiter && caller.kind === "publishable") {
      const wait = this.limiter.take(clientAddress(req, this.trustProxy));
      if (wait > 0) throw rateLimited(this.limiter.perSecond, wait);
    }
    return caller;
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
    // Before its body is read: while the heap is full of records, nothing more is stored.
    this.memory.admitWrite();
    const idempotencyKey = isReplayable ? headerOf(req, "idempotency-key") : undefined;
    // An upload's body is written out as it arrives, never held: it takes no share of the bodies' budget.
    const release = handler.readsOwnBody ? NOTHING_HELD : await this.admitBody(req);
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
    } catch (error) {
      release();
      throw error;
    } finally {
      // Held on until the answer is sent (send: releaseWhenSent); a refusal's answer is short.
      (req as HoldingRequest)[HELD_BODY] = release;
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
    const held = admitted instanceof Promise ? await admitted : admitted;
    let isHeld = true;
    // A body refused unread (too large for its route, the client gone) made no garbage to collect.
    const release = () => {
      if (!isHeld) return;
      isHeld = false;
      held();
      noteHeavyWritten((req as HoldingRequest)[BODY_READ_BYTES] ?? 0);
    };
    if (!(admitted instanceof Promise)) return release;
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
    if (handler.readsOwnBody) return { ctx: contextOf(undefined), bodyHash: undefined };
    if (handler.takesUpload && isMultipart(req)) {
      // Read as it arrives; an Idempotency-Key's fingerprint hashes the body's digest (http/upload.ts).
      const upload = await readUpload(req, this.maxBodyBytes, this.records.limits);
      return { ctx: contextOf(undefined, upload.file), bodyHash: needsHash ? hashBody(upload.digest) : undefined };
    }
    const maxRecordBody = 2 * this.records.limits.maxRecordBytes;
    const bytes = handler.takesOneRecord && maxRecordBody < this.maxBodyBytes ? await readBody(req, maxRecordBody, recordBodyTooLarge) : await readBody(req, this.maxBodyBytes);
    (req as HoldingRequest)[BODY_READ_BYTES] = bytes.length;
    const at = performance.now();
    const ctx = contextOf(parseJsonBody(req, bytes, handler.takesUpload ? UPLOAD_MEDIA : undefined, this.records.limits));
    const bodyHash = needsHash ? hashBody(bytes) : undefined;
    this.settle(req, at);
    return { ctx, bodyHash };
  }

  /**
   * Runs a write (handleAndCommit). A unique_violation, whichever path found it (the store at commit,
   * or an import's taken id), names the record holding the values only to a caller who may read
   * the entity's records (docs/errors.md).
   */
  private async run(req: IncomingMessage, handler: Handler, ctx: RequestContext, request: IdempotentRequest | undefined): Promise<Reply> {
    try {
      return await this.handleAndCommit(req, handler, ctx, request);
    } catch (error) {
      if (!(error instanceof ApiError) || error.code !== "unique_violation") throw error;
      const entity = this.records.schema.entities.get(String(error.details.entity));
      // Under rules a caller may read some records and not others: the holder stays unnamed (docs/rules.md).
      const mayReadAll = entity !== undefined && mayAccess(ctx.caller, entity, "read") && (ctx.caller.kind === "secret" || !hasRules(entity));
      throw mayReadAll ? error : withoutHolder(error);
    }
  }

  /**
   * Runs a handler and commits its rows with the idempotent answer. When another write came first
   * (another process, or another request between this one's read and its commit), the handler
   * runs again on what is stored now, as if this request had arrived after that write.
   */
  private async handleAndCommit(req: IncomingMessage, handler: Handler, ctx: RequestContext, request: IdempotentRequest | undefined): Promise<Reply> {
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
