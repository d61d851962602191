// What a route's handler sees of a request (RequestContext), what it answers (Outcome), and how a
// route says who may call it (Guard): shared by the pipeline (app.ts), the route tables (routes.ts,
// keys-routes.ts, webhooks-routes.ts and the rest) and the mounts.

import type { IncomingMessage } from "node:http";
import type { Readable } from "node:stream";
import { ApiError, forbidden } from "../errors.ts";
import type { AccessOperation, EntityDef } from "../schema/fields.ts";
import type { ChangeFeed } from "../feed/change-feed.ts";
import type { Caller } from "../keys/caller.ts";
import type { Maybe } from "../maybe.ts";
import type { ImportFile } from "../records/import-file.ts";
import type { Change, Records } from "../records/records.ts";
import type { MemoryGuard } from "./memory-guard.ts";
import type { PresentContext } from "./presenters.ts";
import { headerOf } from "./request.ts";
import { clientAddress } from "./rate-limit.ts";
import type { Reply } from "./response.ts";
import type { Params } from "./router.ts";

/** A Host header naming a host (a name, IPv4, or bracketed IPv6 address) and maybe a port. */
const HOST_RE = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

export interface RequestContext extends PresentContext {
  readonly records: Records;
  readonly feed: ChangeFeed;
  readonly caller: Caller;
  readonly params: Params;
  readonly query: URLSearchParams;
  /** A request header by its lower-case name. */
  header(name: string): string | undefined;
  /** The client's address (X-Forwarded-For's behind --trust-proxy), as rate limits count it. */
  readonly address: string;
  /** The server's origin as the client reached it (scheme and host), for absolute URLs. */
  readonly origin: string;
  /** Refuses heavy work (503 server_busy) while memory is near --max-memory (http/memory-guard.ts). */
  admitHeavy(): void;
  /** The parsed JSON body of a write; undefined when it had none. */
  readonly body: unknown;
  /** The file a multipart/form-data body carried, on a route that takes uploads (http/upload.ts). */
  readonly upload?: ImportFile;
  /** The body as it arrives, on a route that reads it itself (Handler.readsOwnBody): the pipeline read none of it. */
  readonly bodyStream: Readable;
  readonly documents: { readonly entities: string; readonly openApi: string };
}

export interface Outcome {
  readonly reply: Reply;
  /** Rows to store before answering. */
  readonly change?: Change<unknown>;
}

/**
 * Who may call a route, checked by the pipeline (app.ts) before its handler runs: anyone (`none`),
 * any live API key or a user's token (`key`, the default), a secret key only (`secret`, with the
 * words refusing a publishable key), or a signed-in user only (`user`). No handler compares key kinds itself.
 */
export type Guard = "none" | "key" | "secret" | "user";

export type Handler = ((ctx: RequestContext) => Maybe<Outcome>) & {
  /** Who may call the route; `key` when not said. */
  readonly guard?: Guard;
  /** For a `secret` route: the refusal a publishable key gets. */
  readonly refusal?: string;
  /** The route reads no record (/health, /metrics, the page): answered even after the store failed, without waiting for writes. */
  readonly readsNoRecord?: boolean;
  /** False for writes whose answer must never be kept for an Idempotency-Key replay (it holds a new key or secret). */
  readonly isReplayable?: boolean;
  /** The route also takes a multipart/form-data body holding a file (http/upload.ts). */
  readonly takesUpload?: boolean;
  /** The handler reads the body itself, as it arrives (a file upload: http/file-upload.ts); the pipeline reads none. */
  readonly readsOwnBody?: boolean;
  /** Heavy work: refused while memory is near --max-memory (EntityRoute.heavy). */
  readonly isHeavy?: boolean;
  /** The body is one record's values: at most twice --max-record-size (EntityRoute.oneRecord). */
  readonly takesOneRecord?: boolean;
};

/** Refuses `caller` unless the guard lets it through (with checkEntityAccess, the one place key kinds are compared for a route). */
export function checkGuard(caller: Caller, guard: Guard, refusal: string | undefined): void {
  if (guard === "secret" && caller.kind !== "secret") throw forbidden(refusal ?? "This route needs a secret key.");
  if (guard === "user" && caller.user === undefined) {
    throw new ApiError(401, "unauthorized", "This route is a signed-in user's: send Authorization: Bearer <access_token> as auth/login answered it.");
  }
}

/** Whether the entity's "access" lets the caller's key kind do `operation` (docs/entities.md). */
export function mayAccess(caller: Caller, entity: EntityDef, operation: AccessOperation): boolean {
  return caller.kind === "secret" || entity.publishableAccess.has(operation);
}

/** An entity route's operations must be in the entity's "access" for the caller's key kind (docs/entities.md). */
export function checkEntityAccess(caller: Caller, entity: EntityDef, operations: readonly AccessOperation[]): void {
  const denied = operations.find((operation) => !mayAccess(caller, entity, operation));
  if (denied === undefined) return;
  const allowed = [...entity.publishableAccess];
  throw new ApiError(
    403,
    "forbidden",
    `A publishable key may not ${denied} ${entity.name} records: its declaration's "access" allows publishable keys ${allowed.length === 0 ? "nothing" : allowed.join(", ")}. Use a secret key (from a server), or add "${denied}" to "access"."publishable".`,
    { entity: entity.name, operation: denied, keyKind: caller.kind },
  );
}

/** A route for a secret key only: a publishable key is refused 403 with `refusal`. */
export function secretOnly(handler: (ctx: RequestContext) => Maybe<Outcome>, refusal: string, options: { isReplayable?: boolean; readsNoRecord?: boolean } = {}): Handler {
  return Object.assign(handler, { guard: "secret" as const, refusal, ...options });
}

/** A route anyone may call, with no key: its handler's caller is NO_KEY. */
export function openRoute(handler: (ctx: RequestContext) => Maybe<Outcome>): Handler {
  return Object.assign(handler, { guard: "none" as const, readsNoRecord: true });
}

/**
 * The change feed's routes also take the key as ?key=: a browser's EventSource cannot send
 * headers (docs/change-feed.md). Nowhere else, so that keys stay out of the URLs of ordinary requests.
 */
export function feedKeyOf(path: string, query: string): string | undefined {
  if (!path.endsWith("/changes") && !path.endsWith("/changes/")) return undefined;
  return new URLSearchParams(query).get("key") ?? undefined;
}

/** What a handler sees of a request. The query, the URL and headers are read only when asked for. */
export class Context implements RequestContext {
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
    private readonly trustProxy: boolean,
    readonly upload?: ImportFile,
  ) {}

  get address(): string {
    return clientAddress(this.req, this.trustProxy);
  }

  admitHeavy(): void {
    this.memory.admitHeavy();
  }

  get bodyStream(): Readable {
    return this.req;
  }

  get query(): URLSearchParams {
    return (this.parsedQuery ??= new URLSearchParams(this.queryText));
  }

  get url(): string {
    return `${this.origin}${this.path}`;
  }

  /**
   * The server's origin as the client reached it, for absolute URLs (Link headers, files' URLs): the
   * Host header, or behind --trust-proxy the proxy's X-Forwarded-Host and X-Forwarded-Proto (their
   * first values). Without --trust-proxy those headers are anyone's to send, and ignored; a host
   * that is not a host name or address is taken for localhost.
   */
  get origin(): string {
    const forwardedProto = this.trustProxy ? this.header("x-forwarded-proto")?.split(",")[0]!.trim().toLowerCase() : undefined;
    const forwardedHost = this.trustProxy ? this.header("x-forwarded-host")?.split(",")[0]!.trim() : undefined;
    const host = [forwardedHost, this.header("host")].find((candidate) => candidate !== undefined && HOST_RE.test(candidate)) ?? "localhost";
    return `${forwardedProto === "https" ? "https" : "http"}://${host}`;
  }

  header(name: string): string | undefined {
    return headerOf(this.req, name);
  }
}

