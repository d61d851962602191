// The types a user of the package sees (`import { startServer } from "tabula-server"`), and only
// them: this file imports nothing, so its declaration file (dist/tabula-api.d.ts) names no internal
// class and no node type, and type-checks with --strict with or without @types/node. src/api.ts
// implements startServer and checks that the implementation fits these types. docs/testing.md
// describes each option.

/** A format a string field may declare. */
export type StringFormat = "date" | "date-time" | "email" | "uri";

/** What every field declaration may say besides its type: documentation only. */
interface FieldAnnotations {
  readonly title?: string;
  readonly description?: string;
  readonly examples?: readonly unknown[];
  readonly $comment?: string;
}

export interface StringField extends FieldAnnotations {
  readonly type: "string";
  readonly format?: StringFormat;
  readonly enum?: readonly string[];
  readonly default?: string;
  readonly minLength?: number;
  readonly maxLength?: number;
  /** A regular expression the whole value must match. */
  readonly pattern?: string;
}

export interface NumberField extends FieldAnnotations {
  readonly type: "number" | "integer";
  readonly enum?: readonly number[];
  readonly default?: number;
  readonly minimum?: number;
  readonly maximum?: number;
}

export interface BooleanField extends FieldAnnotations {
  readonly type: "boolean";
  readonly enum?: readonly boolean[];
  readonly default?: boolean;
}

export interface ArrayField extends FieldAnnotations {
  readonly type: "array";
  /** The type every element has; any JSON values without it. */
  readonly items?: StringField | NumberField | BooleanField | ObjectField;
  readonly default?: readonly unknown[];
}

/** Any JSON object; dotted names in filters reach inside it. */
export interface ObjectField extends FieldAnnotations {
  readonly type: "object";
  readonly default?: { readonly [name: string]: unknown };
}

export type FieldDeclaration = StringField | NumberField | BooleanField | ArrayField | ObjectField;

/** What a publishable key may do with an entity's records. */
export type PublishableOperation = "read" | "create" | "update" | "delete";

/** An entity, declared as a JSON Schema object (the file entities/<Entity>.json holds one). */
export interface EntityDeclaration {
  /** The entity's name; the key it is given under (or the file's name) when left out. */
  readonly name?: string;
  readonly type?: "object";
  readonly properties: { readonly [field: string]: FieldDeclaration };
  readonly required?: readonly string[];
  /** Sets of fields no two live records may share values of, such as [["email"]]. */
  readonly unique?: ReadonlyArray<readonly string[]>;
  readonly access?: { readonly publishable?: readonly PublishableOperation[] };
  /** Undeclared fields are always refused; false says so, true is an error. */
  readonly additionalProperties?: false;
  readonly title?: string;
  readonly description?: string;
  readonly examples?: readonly unknown[];
  readonly $comment?: string;
  readonly $schema?: string;
  readonly $id?: string;
}

/** Entity name → its declaration. */
export interface Declarations {
  readonly [entity: string]: EntityDeclaration;
}

export interface ApiKey {
  /** Recorded as created_by_id on the records this key creates. */
  readonly id: string;
  readonly kind: "secret" | "publishable";
  readonly key: string;
}

export interface StartOptions {
  /** A schema folder of <Entity>.json (or .jsonc) files, one such file of them all, or the declarations themselves. */
  readonly schema: string | Declarations;
  /** Keep nothing on disk. The default, unless `data` or `store` is given. */
  readonly memory?: boolean;
  /** A data folder: the file store (write-ahead log, snapshots, keys.json). Not with `memory: true`. */
  readonly data?: string;
  /** The store as a URL: "file:<folder>", "memory:" or "postgres://…" (needs the postgres package). */
  readonly store?: string;
  /** The PostgreSQL schema tabula's tables live in. Default "tabula". */
  readonly pgSchema?: string;
  /**
   * A folder of migrations (NNNN-words.json), run before serving when not run yet. Default: the
   * folder migrations/ beside the schema, when the schema is a path and that folder exists.
   */
  readonly migrations?: string;
  /** Default 0: a free port, read back from the server's `port` and `url`. */
  readonly port?: number;
  /** Default "127.0.0.1". */
  readonly host?: string;
  /** Default: generated (and kept in the data folder, with one). */
  readonly secretKey?: string;
  /** Default: generated (and kept in the data folder, with one). */
  readonly publishableKey?: string;
  /** More keys, beside secretKey and publishableKey. */
  readonly keys?: readonly ApiKey[];
  /** Records loaded when the store is empty: a JSON file's path, or { "<Entity>": [records...] }. */
  readonly seed?: string | { readonly [entity: string]: readonly unknown[] };
  /** The largest body accepted, in bytes. Default 10 MiB. */
  readonly maxBodyBytes?: number;
  /**
   * The memory the server may use, in bytes: near it (85%, or 85% of V8's heap limit) heavy requests
   * are refused with 503 server_busy. Default: the cgroup's memory limit, else the machine's memory.
   */
  readonly maxMemoryBytes?: number;
  /** The bytes of idempotent answers kept (memory and file stores); past it the oldest go first. Default 64 MiB. */
  readonly idempotencyMemoryBytes?: number;
  /** Origins allowed by CORS: "*" (the default), a comma-separated list, or "off". */
  readonly cors?: string;
  /** Requests a second per client address, for publishable keys. Off by default. */
  readonly rateLimit?: number;
  /** Read the client's address from X-Forwarded-For. */
  readonly trustProxy?: boolean;
  /** Change feed events kept across restarts. Default 100,000. */
  readonly changesKeep?: number;
  /** Change feed streams, long polls and realtime sockets (@base44/sdk's subscribe()) held at once. Default 1,000. */
  readonly maxStreams?: number;
  /** Connections open at once (streams and realtime sockets among them); one more is closed as soon as it is accepted. Default 2,000. */
  readonly maxConnections?: number;
  /** Connections one client address (an IPv6 one by its /64) holds at once; not applied with trustProxy. Default a tenth of maxConnections, at least 100 (200). */
  readonly maxConnectionsPerClient?: number;
  /** Groups an aggregate may gather; one more is refused with 400 invalid_parameter. Default 10,000. */
  readonly maxGroups?: number;
  /** Items of one array in a written record (at any depth); more is refused with 400 invalid_field. Default 10,000. */
  readonly maxArrayItems?: number;
  /** Keys of one object in a written record (at any depth); more is refused with 400 invalid_field. Default 1,000. */
  readonly maxObjectKeys?: number;
  /** Bytes of one record's JSON; a write making a bigger record is refused with 413 payload_too_large. Default 1 MiB. */
  readonly maxRecordBytes?: number;
  /** The largest uploaded file, in bytes (docs/api.md, "Files"): one over it is refused 413. Default 50 MiB. */
  readonly maxFileBytes?: number;
  /** All uploaded files together, in bytes: an upload that would pass it is refused 507. Default 10 GiB (in memory, also at most four times maxFileBytes). */
  readonly maxFilesTotalBytes?: number;
  /** Unsent bytes after which a stream is closed with event: overflow (a realtime socket with close 1008). Default 1 MiB. */
  readonly streamBufferBytes?: number;
  /** How often a stream gets a keep-alive comment, and a realtime socket a ping, in ms. Default 15,000. */
  readonly heartbeatMs?: number;
  /** One line per request on stdout. Default "off". */
  readonly log?: "text" | "json" | "off";
  /** Serve the Base44 SDK's prefix for this app id only. */
  readonly appId?: string;
  /** Webhooks may reach receivers on loopback, private and link-local addresses (docs/webhooks.md). Default false. */
  readonly webhooksAllowPrivate?: boolean;
  /** The webhook retry schedule's delays multiplied by this, above 0 and at most 1 (tests shorten it). Default 1. */
  readonly webhookRetryScale?: number;
  /** The data browser at GET /_/ (and at GET / when no app is served). Default true. */
  readonly ui?: boolean;
  /**
   * A request with neither key nor token acts as an anonymous visitor, with a publishable key's
   * limits (a Base44 app's "visibility": "public"). Default false: such a request is 401.
   */
  readonly anonymous?: boolean;
  /** A built single-page app (a folder holding index.html) served at GET /, the API beside it. Default none. */
  readonly appDir?: string;
  /** Who may sign up as a user (docs/users.md): anyone, invited emails only, or no one. Default "open". */
  readonly signup?: "open" | "invite" | "off";
  /** How long a user's session (its token) lasts, in days. Default 7. */
  readonly sessionDays?: number;
  /** The secret that signs users' tokens, 32 bytes or more; by default one is made once and kept in the store. */
  readonly authSecret?: string;
  /** Where sign-up and reset codes go when no webhook endpoint asks for them. Default: stdout, one line each. */
  readonly printCode?: (line: string) => void;
  /** Warnings (a torn log tail cut off, fields no longer declared). Default: stderr. */
  readonly warn?: (message: string) => void;
  /** The store can no longer make writes durable (a failed disk): called once. */
  readonly onFatal?: (error: Error) => void;
}

/** One change, as the change feed gives it (a secret key's view of the record). */
export interface FeedChange {
  readonly type: "create" | "update" | "delete" | "restore" | "sync";
  readonly entity: string;
  readonly id: string;
  readonly data: { readonly [field: string]: unknown };
  readonly timestamp: string;
  readonly seq: number;
  /** Sync events only. */
  readonly deleted?: boolean;
  readonly event_id: string;
}

/** What the data folder held at start-up. */
export interface LoadedData {
  readonly records: number;
  readonly deletedRecords: number;
  /** Snapshot and log bytes read. */
  readonly bytes: number;
  readonly ms: number;
}

export interface TabulaServer {
  /** "http://127.0.0.1:<port>" */
  readonly url: string;
  readonly port: number;
  readonly secretKey: string;
  readonly publishableKey: string;
  /** The data folder, or null when there is none (memory, PostgreSQL). */
  readonly dataDir: string | null;
  /** Where the data is and how it is kept, in words. */
  readonly storeDescription: string;
  /** Stored fields the schema no longer declares, as "Entity.field": kept, never shown. */
  readonly undeclaredFields: readonly string[];
  /** What the data folder held at start-up; null without one. */
  readonly loaded: LoadedData | null;
  /** Records the seed loaded. */
  readonly seeded: number;
  /** Empties every entity, forgets idempotency keys, and loads the seed again. */
  reset(): Promise<void>;
  /** The change feed from `since` (an event id; default now), of `entities` (default all). */
  changes(options?: { readonly since?: string; readonly entities?: readonly string[] }): AsyncIterableIterator<FeedChange>;
  /** Stops accepting, finishes requests in flight, flushes the store. */
  close(): Promise<void>;
}

/** What startServer rejects with when its port is taken: check `code === "EADDRINUSE"`. */
export declare class PortInUseError extends Error {
  constructor(port: number, host: string);
  readonly code: "EADDRINUSE";
  readonly port: number;
  readonly host: string;
}

/** Starts a server: in memory on a free port unless told otherwise. */
export declare function startServer(options: StartOptions): Promise<TabulaServer>;
