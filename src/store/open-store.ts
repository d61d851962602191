// The one place that knows every store (docs/operating.md): a store URL (file:<dir>, memory:,
// postgres://…) → where the store is, and then the open store. server.ts
// opens and closes stores only through here; records/ is what calls them in between.

import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { FileStore } from "./file/file-store.ts";
import { MemoryStore, type ValueIndexedFields } from "./memory/memory-store.ts";
import { PostgresStore } from "./postgres/postgres-store.ts";
import { DEFAULT_PG_SCHEMA } from "./postgres/tables.ts";
import type { Store, UniqueFields } from "./store.ts";
import type { Schema } from "../schema/load.ts";
import type { KeyVault } from "../keys/key-vault.ts";
import { keysFileVault } from "../keys/keys-file.ts";
import type { BackupSummary } from "./file/backup.ts";
import { prepareDataFolder } from "./file/lock.ts";
import type { LoadedData } from "../public-api.ts";
import type { FileStorage } from "./file-storage.ts";
import { MEMORY_FILES_PER_MAX_FILE, MemoryFiles } from "./memory/memory-files.ts";
import { copyStoredFiles, FolderFiles } from "./file/folder-files.ts";
import { PostgresFiles } from "./postgres/postgres-files.ts";

export type StoreLocation =
  | { readonly kind: "memory" }
  | { readonly kind: "file"; readonly dir: string }
  | { readonly kind: "postgres"; readonly url: string };

export const STORE_URL_FORMS =
  "file:<dir> (the file store in that folder, like --data), memory: (nothing on disk, like --memory) or postgres://user:password@host:port/database (PostgreSQL)";

const SCHEME_RE = /^([a-z][a-z0-9+.-]*):/i;

/**
 * Reads a store URL; `source` names where it came from (a flag, a variable) for the message. A
 * refusal never repeats a database password: only the scheme, or the URL without its password.
 */
export function parseStoreUrl(url: string, source = "The store URL"): StoreLocation {
  const scheme = SCHEME_RE.exec(url)?.[1]!.toLowerCase();
  const rest = scheme === undefined ? url : url.slice(scheme.length + 1);
  switch (scheme) {
    case "memory":
      if (rest !== "" && rest !== "//") throw new Error(`${source}: memory: takes nothing after the colon; write memory:.`);
      return { kind: "memory" };
    case "file":
      return { kind: "file", dir: fileDirOf(rest, source) };
    case "postgres":
    case "postgresql":
      checkPostgresUrl(url, source);
      return { kind: "postgres", url };
    case undefined:
      if (url === "") throw new Error(`${source} is empty; give ${STORE_URL_FORMS}.`);
      throw new Error(`${source} must be a store URL, ${STORE_URL_FORMS}: for the folder ${url}, write file:${url}.`);
    default:
      throw new Error(`${source} names a store of scheme "${scheme}:", which tabula does not know; give ${STORE_URL_FORMS}.`);
  }
}

/** `file:data` and `file:/srv/data` name a folder as written; `file:///srv/data` is a file URL. */
function fileDirOf(rest: string, source: string): string {
  if (!rest.startsWith("//")) {
    if (rest === "") throw new Error(`${source}: file: needs a folder after the colon, such as file:./data.`);
    return rest;
  }
  try {
    return fileURLToPath(`file:${rest}`);
  } catch (error) {
    throw new Error(`${source} is not a usable file URL (${(error as Error).message}); write file:<dir>, such as file:./data or file:///srv/tabula.`);
  }
}

const POSTGRES_URL_FORM = "write postgres://user:password@host:port/database, such as postgres://tabula:secret@127.0.0.1:5432/tabula";

/**
 * Refuses a PostgreSQL URL the driver could not read (it would say only "Invalid URL"), the way
 * the driver reads it: several hosts may be given as host1:5432,host2:5432.
 */
function checkPostgresUrl(url: string, source: string): void {
  const refuse = (why: string) => new Error(`${source} ${withoutPassword(url)}: ${why}; ${POSTGRES_URL_FORM}.`);
  const start = url.indexOf("://");
  if (start === -1) throw refuse("it does not start with postgres://");
  const authority = url.slice(start + 3).split(/[?/]/)[0]!;
  const malformed = "it is not a well-formed URL (in a user name or password, write % as %25, @ as %40, / as %2F, ? as %3F, : as %3A and # as %23)";
  // An @ past the host may end a password holding a / or ?: what looks like a port is then part of it.
  const mayHoldPassword = url.lastIndexOf("@") >= start + 3 + authority.length;
  const hosts = authority.slice(authority.indexOf("@") + 1);
  for (const host of hosts.split(",")) {
    const port = /^(?:\[[^\]]*\]|[^:]*)(?::(.*))?$/.exec(host)?.[1];
    if (port !== undefined && port !== "" && !(/^\d+$/.test(port) && Number(port) >= 1 && Number(port) <= 65535)) {
      throw refuse(mayHoldPassword ? malformed : `its port "${port}" is not a number from 1 to 65535`);
    }
  }
  try {
    const parsed = new URL(url.replace(hosts, hosts.split(",")[0]!));
    // The driver decodes these, and a stray % stops it with "URI malformed".
    for (const part of [hosts, parsed.username, parsed.password]) decodeURIComponent(part);
  } catch {
    throw refuse(malformed);
  }
}

/** The URL with any password as ***, to be repeated in a message. */
function withoutPassword(url: string): string {
  const start = url.indexOf("://");
  // The last @: a password may hold an @ of its own, written unescaped.
  const at = url.lastIndexOf("@");
  if (start === -1 || at < start) return url;
  const colon = url.indexOf(":", start + 3);
  return colon === -1 || colon > at ? url : `${url.slice(0, colon + 1)}***${url.slice(at)}`;
}

/** Each entity's "unique" declarations, for the stores that enforce them. */
function uniqueFieldsOf(schema: Schema): UniqueFields {
  return new Map([...schema.entities.values()].filter((entity) => entity.unique.length > 0).map((entity) => [entity.name, entity.unique]));
}

export interface OpenedStore {
  readonly store: Store;
  /** Where the data is and how it is kept, for the banner. */
  readonly description: string;
  /** Where API keys are kept beside the data; null when nowhere (memory). */
  readonly keyVault: KeyVault | null;
  /** The folder that keys.json is kept in beside the data; null when the store keeps nothing on disk. */
  readonly dataDir: string | null;
  /** What the store held at start-up and how long reading it took; null when it read nothing. */
  readonly loaded: LoadedData | null;
  /**
   * POST /api/admin/backup (docs/operating.md): the file store copies its folder; for the others, the
   * words saying what backs them up instead.
   */
  readonly backup: ((to: string) => Promise<BackupSummary>) | string;
  /** Folds the file store's log into a snapshot now (tabula import ends with it); nothing for the others. */
  readonly compact: () => Promise<void>;
  /**
   * Uploaded files (docs/api.md, "Files"), kept as the store keeps records: opened by a server, and
   * closed by it (on PostgreSQL they hold connections of their own), never by a command that opens
   * the store for its records alone. `maxFileBytes` is --max-file-size: in memory, files take at
   * most MEMORY_FILES_PER_MAX_FILE of it in all.
   */
  openFiles(maxFileBytes: number): Promise<FileStorage>;
}

const NOTHING_TO_COMPACT = async (): Promise<void> => {};

const MEMORY_BACKUP =
  "The memory store keeps nothing on disk, so there is no folder to copy: save its records with tabula export (or GET /api/entities/<Entity>/export), and load them back with tabula import.";
const POSTGRES_BACKUP =
  "The PostgreSQL store's records are in the database, not in a folder of this server's: back them up with pg_dump (e.g. pg_dump --schema=tabula \"$DATABASE_URL\" > tabula.sql), which is consistent while writes go on.";

export interface OpenStoreOptions {
  /** The entities a store serves (a database store creates their tables). */
  readonly schema: Schema;
  readonly valueIndexed: ValueIndexedFields;
  /** The PostgreSQL schema that holds tabula's tables (--pg-schema); default "tabula". */
  readonly pgSchema?: string;
  /** Events the change feed keeps (--changes-keep). */
  readonly changesKeep: number;
  /** Lines for whoever watches the start-up: work that takes long (PostgreSQL rewriting a table). */
  readonly progress?: (line: string) => void;
  /** The bytes of idempotent answers the memory and file stores keep (--idempotency-memory); PostgreSQL keeps them in a table. */
  readonly idempotencyMemoryBytes?: number;
  /** Things the operator should hear about that do not stop the server (a torn tail was cut). */
  readonly warn: (message: string) => void;
}

export async function openStore(location: StoreLocation, options: OpenStoreOptions): Promise<OpenedStore> {
  switch (location.kind) {
    case "memory":
      return { store: new MemoryStore(options.valueIndexed, uniqueFieldsOf(options.schema), options.changesKeep, options.idempotencyMemoryBytes), description: "in memory only: nothing is kept on disk", keyVault: null, dataDir: null, loaded: null, backup: MEMORY_BACKUP, compact: NOTHING_TO_COMPACT, openFiles: async (maxFileBytes) => new MemoryFiles(MEMORY_FILES_PER_MAX_FILE * maxFileBytes) };
    case "file": {
      const openedAt = performance.now();
      await prepareDataFolder(location.dir);
      const store = await FileStore.open({ dir: location.dir, ...options, unique: uniqueFieldsOf(options.schema) });
      const { records, deletedRecords, snapshotBytes, logBytes } = store.describe();
      const loaded = { records, deletedRecords, bytes: snapshotBytes + logBytes, ms: performance.now() - openedAt };
      // A backup copies files/ too, into the folder it makes before renaming it into place.
      const backup = (to: string) => store.backup(to, (into) => copyStoredFiles(location.dir, into));
      return { store, description: `${location.dir} (write-ahead log, fsync before every answer)`, keyVault: keysFileVault(location.dir), dataDir: location.dir, loaded, backup, compact: () => store.compactAll(), openFiles: () => FolderFiles.open(location.dir, options.warn) };
    }
    case "postgres": {
      const { schema, valueIndexed, changesKeep, progress } = options;
      const pgSchema = options.pgSchema ?? DEFAULT_PG_SCHEMA;
      const store = await PostgresStore.open({ url: location.url, schema, valueIndexed, pgSchema, changesKeep, progress });
      return { store, description: `PostgreSQL ${store.describe()}, schema ${pgSchema} (a write is answered once committed)`, keyVault: store.keyVault(), dataDir: null, loaded: null, backup: POSTGRES_BACKUP, compact: NOTHING_TO_COMPACT, openFiles: () => PostgresFiles.open(location.url, pgSchema) };
    }
  }
}
