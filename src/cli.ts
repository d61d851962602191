// The command line (docs/operating.md): argv and env → ServerOptions, the start-up banner, signals.
// A bad flag, schema, seed or key file exits 1 before listening, with a message naming the fault.

import { existsSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { nameSettingsAsFlags } from "./option-names.ts";
import { createServer, VERSION, type ServerOptions, type TabulaServer } from "./server.ts";
import { DEFAULT_MAX_BODY_BYTES } from "./http/request.ts";
import { parseStoreUrl } from "./store/open-store.ts";
import { DataFolderError } from "./store/file/lock.ts";
import { runCommand, type Command } from "./commands/command.ts";
import { didYouMean } from "./commands/nearest.ts";
import { DEMO_SCHEMA, DEMO_SCHEMA_NAME, DEMO_SEED } from "./commands/demo.ts";
import { PortInUseError } from "./http/listen.ts";
import { LOG_FORMATS, type LogFormat } from "./metrics/access-log.ts";
import { SIGNUPS, type Signup } from "./users/users.ts";
import { MIN_SECRET_BYTES } from "./users/tokens.ts";
import { USER_EVENT_TYPES } from "./views.ts";
import type { EntityDef } from "./schema/fields.ts";
import { findBase44Project, type Base44Project } from "./base44-project.ts";

/** npx tabula-server <command> ...; without one (or with serve), it serves. */
// Each loaded when named: in the bundle (one file, build.mjs) each import() is a function run on its
// first call, so that serving never runs the commands' code.
const COMMANDS: ReadonlyArray<{ readonly name: string; load(): Promise<Command> }> = [
  { name: "init", load: async () => (await import("./commands/init.ts")).initCommand },
  { name: "export", load: async () => (await import("./commands/export.ts")).exportCommand },
  { name: "import", load: async () => (await import("./commands/import.ts")).importCommand },
  { name: "backup", load: async () => (await import("./commands/backup.ts")).backupCommand },
  { name: "verify", load: async () => (await import("./commands/verify.ts")).verifyCommand },
  { name: "migrate", load: async () => (await import("./commands/migrate.ts")).migrateCommand },
  { name: "schema", load: async () => (await import("./commands/migrate.ts")).schemaCommand },
  { name: "keys", load: async () => (await import("./commands/keys.ts")).keysCommand },
  { name: "users", load: async () => (await import("./commands/users.ts")).usersCommand },
  { name: "types", load: async () => (await import("./commands/types.ts")).typesCommand },
];
const COMMAND_NAMES = ["serve", ...COMMANDS.map((command) => command.name), "help"];

const HELP = `tabula ${VERSION}: each entity of a JSON schema served as a REST collection of records.

Usage: npx tabula-server [serve] [options]   serve the entities of --schema
       npx tabula-server init                write entities/ with an example entity to start from
       npx tabula-server --demo              serve the example entities, in memory
       npx tabula-server migrate [--dry-run] run the pending migrations (docs/schema-changes.md)
       npx tabula-server schema diff         what a start-up would do to the stored schema
       npx tabula-server keys list|create|revoke|roll   manage API keys, even while servers run
       npx tabula-server users create|list|disable|enable|set-role|end-sessions   manage users (docs/users.md)
       npx tabula-server types [--out FILE]  TypeScript types of the entities, for the SDK too (docs/base44-sdk.md)
       npx tabula-server <command> --help    export, import, backup, verify, migrate, schema, keys, users, types: each one's help
       npx tabula-server help [command]

  --schema PATH            folder of <Entity>.json(c) declarations, or one file      [TABULA_SCHEMA, default ./entities,
                                                                                     or base44/'s in a Base44 project]
  --migrations DIR         migrations run before serving, each once (see            [TABULA_MIGRATIONS, default migrations/
                           docs/schema-changes.md)                                   beside the schema]
  --demo                   serve the bundled example entities (Task, Note) in memory
  --store URL              the store: file:DIR (as --data DIR), memory: (as         [TABULA_STORE, DATABASE_URL]
                           --memory) or postgres://user:pass@host:5432/db (needs
                           npm install postgres); one of --store, --data, --memory
  --pg-schema NAME         the PostgreSQL schema of tabula's tables                 [TABULA_PG_SCHEMA, default tabula]
  --data DIR               the file store: write-ahead log, snapshots, keys.json     [TABULA_DATA, default ./data]
  --memory                 keep nothing on disk (tests, CI fixtures)
  --port N                 0 picks a free port                                      [TABULA_PORT or PORT, default 8080]
  --host H                                                                          [TABULA_HOST, default 127.0.0.1]
  --secret-key K           a secret API key, 16 characters or more                  [TABULA_SECRET_KEY, default generated]
  --publishable-key K      a publishable API key, 16 characters or more             [TABULA_PUBLISHABLE_KEY, default generated]
  --seed FILE              { "<Entity>": [records...] }, loaded when the store is empty
  --max-body SIZE          largest request body, in bytes or with kb/mb              [default 10mb]
  --max-record-size SIZE   largest record, as JSON; a write making a bigger one     [TABULA_MAX_RECORD_SIZE, default 1mb]
                           gets 413 (docs/entities.md)
  --max-file-size SIZE     largest uploaded file (docs/api.md#files); over it 413  [TABULA_MAX_FILE_SIZE, default 50mb]
  --max-files-total SIZE   all uploaded files together; past it 507  [TABULA_MAX_FILES_TOTAL, default 10gb]
  --max-memory SIZE        memory the server may use: near it (85%), heavy          [TABULA_MAX_MEMORY, default the cgroup's
                           requests (bulk writes, aggregates, exports...) get 503   limit, else the machine's memory]
                           server_busy; with kb, mb or gb (docs/operating.md)
  --idempotency-memory SIZE
                           idempotent answers kept; past it the oldest go first     [TABULA_IDEMPOTENCY_MEMORY, default 64mb]
                           (docs/api.md#idempotency-keys)
  --cors ORIGINS           origins browsers may call from: *, off, or a list         [TABULA_CORS, default *]
                           such as https://app.example.com,http://localhost:5173
  --app-id ID              serve /api/apps/<ID>/entities only for this id (the     [TABULA_APP_ID, default any id]
                           appId given to @base44/sdk's createClient)
  --rate-limit N           requests per second per client address for publishable   [TABULA_RATE_LIMIT, default off]
                           keys (burst N; over it 429); secret keys are never limited
  --trust-proxy            take the client's address from X-Forwarded-For (the last [TABULA_TRUST_PROXY=1]
                           entry, which your proxy adds): only behind a proxy
  --changes-keep N         change feed events kept across restarts; a client      [TABULA_CHANGES_KEEP, default 100000]
                           resuming from before them catches up by records
  --max-streams N          change feed streams, long polls and realtime sockets     [TABULA_MAX_STREAMS, default 1000]
                           held at once
  --max-connections N      connections open at once, streams and sockets among      [TABULA_MAX_CONNECTIONS, default 2000]
                           them; one more is closed at once (docs/operating.md)
  --max-connections-per-client N
                           connections one client address holds (an IPv6 one by     [TABULA_MAX_CONNECTIONS_PER_CLIENT, default 200]
                           its /64): a tenth of --max-connections, at least 100; not with --trust-proxy
  --max-groups N           groups an aggregate may gather (docs/aggregates.md)      [TABULA_MAX_GROUPS, default 10000]
  --max-array-items N      items of one array, at any depth, in a written           [TABULA_MAX_ARRAY_ITEMS, default 10000]
                           record (docs/entities.md)
  --max-object-keys N      keys of one object, at any depth, in a written           [TABULA_MAX_OBJECT_KEYS, default 1000]
                           record (docs/entities.md)
  --log FORMAT             one line per request on stdout: text, json or off        [TABULA_LOG, default text]
  --pid-file FILE          write the server's process id to FILE once it listens;   [default none]
                           removed when it stops (a script's kill: docs/testing.md)
  --webhooks-allow-private webhooks may reach loopback, private and link-local     [TABULA_WEBHOOKS_ALLOW_PRIVATE=1]
                           addresses (a receiver on this machine; see docs/webhooks.md)
  --webhook-retry-scale F  the webhook retry schedule (5 s … 10 h) times F, above    [TABULA_WEBHOOK_RETRY_SCALE, default 1]
                           0 and at most 1: shorter retries for tests
  --signup MODE            who may sign up as a user (docs/users.md): open          [TABULA_SIGNUP, default open]
                           (anyone), invite (invited emails only) or off
  --session-days N         how long a user's session (its token) lasts, in days     [TABULA_SESSION_DAYS, default 7]
  --auth-secret S          the secret that signs users' tokens, 32 bytes or more;   [TABULA_AUTH_SECRET, default made once
                           the same for every server of one store                    and kept in the store]
  --anonymous              a request with neither key nor token acts as a           [TABULA_ANONYMOUS=1, default on where
                           publishable key (a public app's visitors)                base44/config.jsonc says "visibility": "public"]
  --app-dir DIR            serve a built app (a folder with index.html) at /, its   [TABULA_APP_DIR, default the Base44 config's
                           pages falling back to index.html; the API stays at /api/ site.outputDirectory, else dist/, if built]
  --no-ui                  serve no data browser at GET /_/ (and /)
  -h, --help               this help
  -v, --version            the version

Without --store, --data or --memory the store comes from TABULA_STORE, else TABULA_DATA, else
DATABASE_URL when it is a postgres:// URL (read last, as other programs set it too), else ./data.

Every request under /api/ carries X-Api-Key (or Authorization: Bearer). Docs: GET /api/openapi.json,
and the docs/ folder of the package (node_modules/tabula-server/docs).`;

/** Without --schema (or TABULA_SCHEMA), a Base44 project or ./entities: how to begin. */
const FIRST_RUN = `tabula: there is no ./entities folder here, so there is nothing to serve yet. Either
  npx tabula-server init     writes entities/ with one example entity to edit, then serve it, or
  npx tabula-server --demo   serves the bundled example entities (Task, Note) in memory.
`;

/** Shorter keys are refused: a typo, or an unset variable in a CI file, must not become a guessable or an empty key. */
const MIN_KEY_LENGTH = 16;

/** After a fatal store failure, how long new requests are still answered (503) before closing. */
const FATAL_GRACE_MS = 1000;

/**
 * A stop (SIGTERM, SIGINT) exits within this long whatever is under way: close() gives requests in
 * flight a second (server.ts, CLOSE_GRACE_MS) and gives up a running compaction, so this deadline
 * only catches what neither foresaw. Every write answered is durable by then; exiting earlier than
 * the rest of close() loses nothing answered.
 */
const STOP_DEADLINE_MS = 1800;

class UsageError extends Error {}

const VALUE_FLAGS = ["schema", "migrations", "store", "pg-schema", "data", "port", "host", "secret-key", "publishable-key", "seed", "max-body", "max-memory", "idempotency-memory", "cors", "app-id", "rate-limit", "changes-keep", "max-streams", "max-connections", "max-connections-per-client", "max-groups", "max-array-items", "max-object-keys", "max-record-size", "max-file-size", "max-files-total", "log", "pid-file", "webhook-retry-scale", "signup", "session-days", "auth-secret", "app-dir"] as const;
type ValueFlag = (typeof VALUE_FLAGS)[number];

const SWITCHES = ["memory", "demo", "trust-proxy", "no-ui", "anonymous", "webhooks-allow-private", "help", "version"] as const;
type Switch = (typeof SWITCHES)[number];
const SHORT_SWITCHES: Readonly<Record<string, Switch>> = { "-h": "help", "-v": "version" };

interface Parsed extends Record<Switch, boolean> {
  values: Partial<Record<ValueFlag, string>>;
}

function parseArgs(argv: string[]): Parsed {
  const parsed: Parsed = { values: {}, memory: false, demo: false, "trust-proxy": false, "no-ui": false, anonymous: false, "webhooks-allow-private": false, help: false, version: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const short = SHORT_SWITCHES[arg];
    if (short !== undefined) {
      parsed[short] = true;
      continue;
    }
    if (!arg.startsWith("--")) throw new UsageError(`Unexpected argument "${arg}"; options start with --.`);
    const [name, inline] = arg.slice(2).split(/=(.*)/s, 2) as [string, string | undefined];
    if ((SWITCHES as readonly string[]).includes(name)) {
      if (inline !== undefined) throw new UsageError(`--${name} takes no value.`);
      parsed[name as Switch] = true;
    } else if ((VALUE_FLAGS as readonly string[]).includes(name)) {
      const value = inline ?? argv[++i];
      if (value === undefined || (inline === undefined && value.startsWith("--"))) throw new UsageError(`--${name} needs a value.`);
      parsed.values[name as ValueFlag] = value;
    } else {
      throw new UsageError(`Unknown option --${name}.${didYouMean(name, [...VALUE_FLAGS, ...SWITCHES], "--")}`);
    }
  }
  return parsed;
}

/** A key from a flag or a variable: refused when empty or short, rather than replaced or guessable. */
function keyOf(text: string | undefined, source: string): string | undefined {
  if (text === undefined || text.length >= MIN_KEY_LENGTH) return text;
  const what = text === "" ? "is empty (an unset variable?)" : `is ${text.length} characters long`;
  throw new UsageError(`${source} ${what}: a key needs at least ${MIN_KEY_LENGTH} characters. Give a longer one, or leave ${source} out to have one generated and printed.`);
}

/** `source` is where the text came from (the flag or an environment variable), for the message. */
function parsePort(text: string, source: string): number {
  const port = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(port >= 0 && port <= 65535)) throw new UsageError(`${source} must be a number from 0 to 65535 (got "${text}").`);
  return port;
}

function rateLimitOf(text: string | undefined, source: string): { rateLimit?: number } {
  if (text === undefined || text === "") return {};
  const perSecond = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(perSecond >= 1)) throw new UsageError(`${source} must be a whole number of requests per second, at least 1 (got "${text}").`);
  return { rateLimit: perSecond };
}

function wholeNumberOf<K extends string>(option: K, text: string | undefined, source: string, min: number, unit: string): Partial<Record<K, number>> {
  if (text === undefined || text === "") return {};
  const value = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(value >= min) || !Number.isSafeInteger(value)) throw new UsageError(`${source} must be a whole number of ${unit}, at least ${min} (got "${text}").`);
  return { [option]: value } as Partial<Record<K, number>>;
}

function retryScaleOf(text: string | undefined, source: string): { webhookRetryScale?: number } {
  if (text === undefined || text === "") return {};
  const scale = /^\d*\.?\d+(e-?\d+)?$/i.test(text) ? Number(text) : NaN;
  if (!(scale > 0 && scale <= 1)) throw new UsageError(`${source} must be a number above 0 and at most 1, such as 0.001 (got "${text}").`);
  return { webhookRetryScale: scale };
}

function signupOf(text: string | undefined, source: string): Signup {
  if (text === undefined || text === "") return "open";
  if (!(SIGNUPS as readonly string[]).includes(text)) throw new UsageError(`${source} must be one of ${SIGNUPS.join(", ")} (got "${text}").`);
  return text as Signup;
}

/** Refused when empty or short, as a key is: an unset variable must not become a guessable signing secret. */
function authSecretOf(text: string | undefined, source: string): { authSecret?: string } {
  if (text === undefined) return {};
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes >= MIN_SECRET_BYTES) return { authSecret: text };
  const what = text === "" ? "is empty (an unset variable?)" : `is ${bytes} bytes long`;
  throw new UsageError(`${source} ${what}: the secret that signs users' tokens needs at least ${MIN_SECRET_BYTES} bytes (openssl rand -base64 32 makes one). Leave ${source} out to have one made and kept in the store.`);
}

function logFormatOf(text: string | undefined, source: string): LogFormat {
  if (text === undefined || text === "") return "text";
  if (!(LOG_FORMATS as readonly string[]).includes(text)) throw new UsageError(`${source} must be one of ${LOG_FORMATS.join(", ")} (got "${text}").`);
  return text as LogFormat;
}

/** A size in bytes, or with kb, mb or gb (1024-based, as kib, mib, gib); `source` names its flag or variable. */
function parseSize(text: string, source = "--max-body"): number {
  const match = /^(\d+)\s*(b|kb|kib|mb|mib|gb|gib)?$/i.exec(text.trim());
  if (!match || Number(match[1]) === 0) throw new UsageError(`${source} must be a size such as 1048576, 512kb, 10mb or 2gb (got "${text}").`);
  const unit = (match[2] ?? "b").toLowerCase();
  return Number(match[1]) * (unit.startsWith("k") ? 1024 : unit.startsWith("m") ? 1024 ** 2 : unit.startsWith("g") ? 1024 ** 3 : 1);
}

/** A size option from its flag, else its variable; absent (the server's default) when neither is given. */
function sizeOf<K extends string>(option: K, flag: string | undefined, variable: string | undefined, names: readonly [string, string]): Partial<Record<K, number>> {
  if (flag !== undefined) return { [option]: parseSize(flag, names[0]) } as Partial<Record<K, number>>;
  if (variable === undefined || variable === "") return {};
  return { [option]: parseSize(variable, names[1]) } as Partial<Record<K, number>>;
}

const POSTGRES_URL_RE = /^postgres(ql)?:/i;

/** The store's options, and where they came from (a flag or a variable), for messages. */
type StoreChoice = Pick<ServerOptions, "store" | "memory" | "data"> & { readonly source: string };

/** docs/operating.md: --data and --memory are shorthands of --store, so two of the three conflict. */
function chooseStore(parsed: Parsed, env: NodeJS.ProcessEnv): StoreChoice {
  const { values } = parsed;
  const given = [values.store !== undefined && "--store", values.data !== undefined && "--data", parsed.memory && "--memory"].filter(Boolean);
  if (given.length > 1) throw new UsageError(`${given.join(" and ")} each choose the store; give one of --store, --data and --memory.`);
  if (parsed.demo) {
    if (values.store !== undefined || values.data !== undefined) throw new UsageError(`--demo keeps its records in memory, so ${given[0]} has no place beside it; drop one of them.`);
    return { memory: true, source: "--demo" };
  }
  if (values.store !== undefined) return storeUrl(values.store, "--store");
  if (parsed.memory) return { memory: true, source: "--memory" };
  if (values.data !== undefined) return { data: values.data, source: "--data" };
  if (env.TABULA_STORE !== undefined) return storeUrl(env.TABULA_STORE, "TABULA_STORE");
  if (env.TABULA_DATA !== undefined) return { data: env.TABULA_DATA, source: "TABULA_DATA" };
  // Last, and only a PostgreSQL URL: DATABASE_URL is often set for other programs and databases.
  if (env.DATABASE_URL !== undefined && POSTGRES_URL_RE.test(env.DATABASE_URL)) {
    // A shell's DATABASE_URL beside a data folder of records: either could be meant, and serving
    // the wrong one looks like lost records. Neither is picked.
    if (holdsDataFolder("./data")) {
      throw new UsageError(
        `DATABASE_URL names a PostgreSQL database, and ./data holds a data folder: either could be the store meant. Choose one: --data ./data (or TABULA_DATA), or --store "$DATABASE_URL" (or TABULA_STORE).`,
      );
    }
    return storeUrl(env.DATABASE_URL, "DATABASE_URL");
  }
  return { data: "./data", source: "the default" };
}

/** Whether `dir` is a data folder a server wrote (its lock, log or snapshots), not just any folder. */
function holdsDataFolder(dir: string): boolean {
  try {
    return readdirSync(dir).some((name) => /^(LOCK|keys\.json|wal-|log-|snapshot-)/.test(name));
  } catch {
    return false;
  }
}

/** The server's options, and where the command line found what the banner names. */
type CommandLineOptions = ServerOptions & { readonly storeSource: string; readonly anonymousSource: string | null };

/** Checked here, so that a malformed URL is a usage error like any bad flag. */
function storeUrl(url: string, source: string): StoreChoice {
  parseStoreUrl(url, source);
  return { store: url, source };
}

function toOptions(parsed: Parsed, env: NodeJS.ProcessEnv, project: Base44Project | null): CommandLineOptions {
  const { values } = parsed;
  const [port, portSource] =
    values.port !== undefined ? [values.port, "--port"] : env.TABULA_PORT !== undefined ? [env.TABULA_PORT, "TABULA_PORT"] : [env.PORT, "PORT"];
  const { source: storeSource, ...store } = chooseStore(parsed, env);
  return {
    schema: parsed.demo ? demoSchema(values.schema) : (values.schema ?? env.TABULA_SCHEMA ?? project?.entitiesDir ?? "./entities"),
    ...store,
    storeSource,
    pgSchema: values["pg-schema"] ?? env.TABULA_PG_SCHEMA,
    migrations: values.migrations ?? env.TABULA_MIGRATIONS,
    progress: (line: string) => process.stdout.write(`${line}\n`),
    port: port === undefined ? 8080 : parsePort(port, portSource),
    host: values.host ?? env.TABULA_HOST ?? "127.0.0.1",
    secretKey: values["secret-key"] !== undefined ? keyOf(values["secret-key"], "--secret-key") : keyOf(env.TABULA_SECRET_KEY, "TABULA_SECRET_KEY"),
    publishableKey: values["publishable-key"] !== undefined ? keyOf(values["publishable-key"], "--publishable-key") : keyOf(env.TABULA_PUBLISHABLE_KEY, "TABULA_PUBLISHABLE_KEY"),
    // The demo starts with a few records to look at, unless given a seed of its own.
    seed: values.seed ?? (parsed.demo ? DEMO_SEED : undefined),
    maxBodyBytes: values["max-body"] === undefined ? DEFAULT_MAX_BODY_BYTES : parseSize(values["max-body"]),
    ...sizeOf("maxMemoryBytes", values["max-memory"], env.TABULA_MAX_MEMORY, ["--max-memory", "TABULA_MAX_MEMORY"]),
    ...sizeOf("maxRecordBytes", values["max-record-size"], env.TABULA_MAX_RECORD_SIZE, ["--max-record-size", "TABULA_MAX_RECORD_SIZE"]),
    ...sizeOf("maxFileBytes", values["max-file-size"], env.TABULA_MAX_FILE_SIZE, ["--max-file-size", "TABULA_MAX_FILE_SIZE"]),
    ...sizeOf("maxFilesTotalBytes", values["max-files-total"], env.TABULA_MAX_FILES_TOTAL, ["--max-files-total", "TABULA_MAX_FILES_TOTAL"]),
    ...sizeOf("idempotencyMemoryBytes", values["idempotency-memory"], env.TABULA_IDEMPOTENCY_MEMORY, ["--idempotency-memory", "TABULA_IDEMPOTENCY_MEMORY"]),
    cors: values.cors ?? env.TABULA_CORS ?? "*",
    appId: values["app-id"] ?? env.TABULA_APP_ID ?? project?.appId,
    ...rateLimitOf(values["rate-limit"] ?? env.TABULA_RATE_LIMIT, values["rate-limit"] !== undefined ? "--rate-limit" : "TABULA_RATE_LIMIT"),
    trustProxy: parsed["trust-proxy"] || env.TABULA_TRUST_PROXY === "1",
    ui: !parsed["no-ui"],
    anonymousSource: anonymousSource(parsed, env, project),
    anonymous: anonymousSource(parsed, env, project) !== null,
    appDir: values["app-dir"] ?? env.TABULA_APP_DIR ?? (parsed.demo ? undefined : builtAppDir(project)),
    webhooksAllowPrivate: parsed["webhooks-allow-private"] || env.TABULA_WEBHOOKS_ALLOW_PRIVATE === "1",
    ...retryScaleOf(values["webhook-retry-scale"] ?? env.TABULA_WEBHOOK_RETRY_SCALE, values["webhook-retry-scale"] !== undefined ? "--webhook-retry-scale" : "TABULA_WEBHOOK_RETRY_SCALE"),
    ...wholeNumberOf("changesKeep", values["changes-keep"] ?? env.TABULA_CHANGES_KEEP, values["changes-keep"] !== undefined ? "--changes-keep" : "TABULA_CHANGES_KEEP", 0, "events"),
    log: logFormatOf(values.log ?? env.TABULA_LOG, values.log !== undefined ? "--log" : "TABULA_LOG"),
    signup: signupOf(values.signup ?? env.TABULA_SIGNUP, values.signup !== undefined ? "--signup" : "TABULA_SIGNUP"),
    ...wholeNumberOf("sessionDays", values["session-days"] ?? env.TABULA_SESSION_DAYS, values["session-days"] !== undefined ? "--session-days" : "TABULA_SESSION_DAYS", 1, "days"),
    ...(values["auth-secret"] !== undefined ? authSecretOf(values["auth-secret"], "--auth-secret") : authSecretOf(env.TABULA_AUTH_SECRET, "TABULA_AUTH_SECRET")),
    ...wholeNumberOf("maxStreams", values["max-streams"] ?? env.TABULA_MAX_STREAMS, values["max-streams"] !== undefined ? "--max-streams" : "TABULA_MAX_STREAMS", 1, "streams"),
    ...wholeNumberOf("maxConnections", values["max-connections"] ?? env.TABULA_MAX_CONNECTIONS, values["max-connections"] !== undefined ? "--max-connections" : "TABULA_MAX_CONNECTIONS", 1, "connections"),
    ...wholeNumberOf("maxConnectionsPerClient", values["max-connections-per-client"] ?? env.TABULA_MAX_CONNECTIONS_PER_CLIENT, values["max-connections-per-client"] !== undefined ? "--max-connections-per-client" : "TABULA_MAX_CONNECTIONS_PER_CLIENT", 1, "connections"),
    ...wholeNumberOf("maxGroups", values["max-groups"] ?? env.TABULA_MAX_GROUPS, values["max-groups"] !== undefined ? "--max-groups" : "TABULA_MAX_GROUPS", 1, "groups"),
    ...wholeNumberOf("maxArrayItems", values["max-array-items"] ?? env.TABULA_MAX_ARRAY_ITEMS, values["max-array-items"] !== undefined ? "--max-array-items" : "TABULA_MAX_ARRAY_ITEMS", 1, "items"),
    ...wholeNumberOf("maxObjectKeys", values["max-object-keys"] ?? env.TABULA_MAX_OBJECT_KEYS, values["max-object-keys"] !== undefined ? "--max-object-keys" : "TABULA_MAX_OBJECT_KEYS", 1, "keys"),
  };
}

/** Without --app-dir: the Base44 project's site.outputDirectory, else dist/, when it holds a built app. */
function builtAppDir(project: Base44Project | null): string | undefined {
  const dir = project?.siteDir ?? "dist";
  return existsSync(join(dir, "index.html")) ? dir : undefined;
}

function demoSchema(given: string | undefined): ServerOptions["schema"] {
  if (given !== undefined) throw new UsageError(`--demo serves the example entities, so --schema ${given} has no place beside it; drop one of them.`);
  return DEMO_SCHEMA;
}

function isSchemaNamed(parsed: Parsed, env: NodeJS.ProcessEnv): boolean {
  return parsed.demo || parsed.values.schema !== undefined || env.TABULA_SCHEMA !== undefined;
}

/**
 * With no schema named, a Base44 project here (base44/config.jsonc) is served as it is, before
 * ./entities (docs/base44-sdk.md): its entities, and its app id unless --app-id names one.
 */
function projectHere(parsed: Parsed, env: NodeJS.ProcessEnv): Base44Project | null {
  return isSchemaNamed(parsed, env) ? null : findBase44Project();
}

/** No schema named, and none where the defaults look: how to begin, rather than a missing folder. */
function isFirstRun(parsed: Parsed, env: NodeJS.ProcessEnv, project: Base44Project | null): boolean {
  return !isSchemaNamed(parsed, env) && project === null && !existsSync("./entities");
}

/** The data folder as the user named it (--data DIR, TABULA_DATA=DIR, the default), for a message about it. */
function dataFolderGiven({ store, data, storeSource }: ReturnType<typeof toOptions>): string {
  const value = store ?? data;
  if (storeSource === "the default") return `The data folder ${value} (the default, as none of --store, --data and --memory was given)`;
  return storeSource.startsWith("--") ? `${storeSource} ${value}` : `${storeSource}=${value}`;
}

function count(n: number): string {
  return n.toLocaleString("en-US");
}

function size(bytes: number): string {
  return bytes < 1048576 ? `${Math.ceil(bytes / 1024)} KiB` : `${(bytes / 1048576).toFixed(1)} MiB`;
}

/** Labels as wide as the widest ("publishable key"), so that the values line up. */
const LABEL_WIDTH = 17;

function bannerLine(label: string, value: string): string {
  return `${label.padEnd(LABEL_WIDTH)}${value}`;
}

/**
 * Who may sign up, and where the codes sent to people go (docs/users.md): to the webhook endpoints
 * that ask for user.* events, else this output. Endpoints may change later; this says what holds now.
 */
async function usersLine(server: TabulaServer): Promise<string> {
  const mode = `sign-up ${server.users.signup}${server.users.signup === "invite" ? " (invited emails only)" : ""}`;
  const endpoints = await server.users.codeEndpoints();
  if (endpoints.length === 0) return `${mode}; codes printed here (no webhook endpoint asks for user.* events)`;
  const sent = `sent to ${endpoints.length} webhook endpoint${endpoints.length === 1 ? "" : "s"}`;
  const asked = USER_EVENT_TYPES.filter((type) => endpoints.some((endpoint) => endpoint.events.includes(type)));
  if (asked.length === USER_EVENT_TYPES.length) return `${mode}; codes ${sent}`;
  return `${mode}; codes of ${asked.join(", ")} ${sent}, the others printed here`;
}

async function printBanner(server: TabulaServer, options: CommandLineOptions, isDemo: boolean, project: Base44Project | null): Promise<void> {
  const lines = [isDemo ? `tabula ${VERSION} (demo: the example entities, in memory; nothing is kept)` : `tabula ${VERSION}`];
  if (project) lines.push(bannerLine("project", projectWords(project, options.appId)));
  const entities = [...server.schema.entities.values()].filter((e) => !e.isBuiltIn).map((e) => `${e.name} (${e.fieldNames.length} field${e.fieldNames.length === 1 ? "" : "s"}${rulesWords(e)})`);
  lines.push(bannerLine("schema", `${typeof options.schema === "string" ? options.schema : DEMO_SCHEMA_NAME}: ${entities.join(", ")}`));
  lines.push(bannerLine("data", server.storeDescription));
  const loaded = server.loaded;
  if (loaded && loaded.records + loaded.deletedRecords > 0) {
    const deleted = loaded.deletedRecords > 0 ? ` (and ${count(loaded.deletedRecords)} deleted)` : "";
    lines.push(bannerLine("loaded", `${count(loaded.records)} record${loaded.records === 1 ? "" : "s"}${deleted} from ${size(loaded.bytes)} of snapshot and log in ${(loaded.ms / 1000).toFixed(2)} s`));
  }
  if (server.seeded > 0) lines.push(bannerLine("seed", `${server.seeded} record${server.seeded === 1 ? "" : "s"} loaded from ${typeof options.seed === "string" ? options.seed : "the demo's examples"}`));
  for (const line of server.schemaLines) lines.push(bannerLine("schema", line));
  for (const field of server.undeclaredFields) lines.push(bannerLine("note", `${field} is stored but no longer declared: kept on disk, neither returned nor writable`));
  // Keys at rest are hashed (docs/operating.md): a generated key is printed in full this once, a
  // kept one by its first characters and id.
  const ring = server.keys;
  if (ring.upgraded > 0) lines.push(bannerLine("note", `${ring.where} held ${ring.upgraded} key${ring.upgraded === 1 ? "" : "s"} in full: now kept as SHA-256 hashes only (the keys themselves still work)`));
  for (const view of ring.list()) {
    const made = ring.generated.find((key) => key.stored.id === view.id);
    // In memory nothing is kept, and a given key is printed as given (as a generated one is, every start).
    const shown = made?.key ?? (!ring.where ? ring.givenKey(view.id) : undefined) ?? `${view.prefix}…`;
    const where = made && ring.where ? ` (generated, saved in ${ring.where} as a hash: shown this once)` : made ? " (generated)" : view.source === "flag" ? " (given)" : ring.where ? ` (kept hashed in ${ring.where})` : "";
    lines.push(bannerLine(`${view.kind} key`, `${shown}  id ${view.id}${where}`));
  }
  lines.push(bannerLine("users", await usersLine(server)));
  for (const { id, origin, refusal } of await server.refusedWebhooks()) lines.push(bannerLine("webhook", `${id} (${origin}) is refused, so its deliveries fail: ${refusal}; --webhooks-allow-private would allow it`));
  if (options.appDir !== undefined) lines.push(bannerLine("app", `${server.url}/ (the app built in ${options.appDir})`));
  if (options.anonymousSource !== null) lines.push(bannerLine("visitors", `anonymous: a request with no key acts as a publishable key (${options.anonymousSource})`));
  if (options.ui !== false) lines.push(bannerLine("browser", `${server.url}/_/ (the data browser: paste a key)`));
  lines.push(`listening on ${server.url}`);
  process.stdout.write(lines.join("\n") + "\n");
}

/** Who let anonymous visitors in, for the banner; null when nobody did. */
function anonymousSource(parsed: Parsed, env: NodeJS.ProcessEnv, project: Base44Project | null): string | null {
  if (parsed.anonymous) return "--anonymous";
  if (env.TABULA_ANONYMOUS !== undefined) return env.TABULA_ANONYMOUS === "1" ? "TABULA_ANONYMOUS=1" : null;
  return project?.isPublic ? `"visibility": "public" in ${project.folder}config.jsonc` : null;
}

/** "base44/ (entities from base44/entities, app id 64f…)": what was found, and the app id served. */
function projectWords(project: Base44Project, appId: string | undefined): string {
  const app =
    appId === undefined ? "any app id (no base44/.app.jsonc)"
    : appId === project.appId ? `app id ${appId} from ${project.appFile}`
    : `app id ${appId}, as given`;
  return `${project.folder} (entities from ${project.entitiesDir}, ${app})`;
}

/**
 * A closed stdout or stderr (tabula … | head -1, a terminal gone) never stops the server or its
 * shutdown: a write to it fails with EPIPE, emitted as an 'error' event that, unheard, would end
 * the process. Nobody reads what was to be printed there, so it is dropped. (The request log
 * writes to fd 1 itself and counts what it drops.)
 */
function keepServingWhenOutputCloses(): void {
  for (const stream of [process.stdout, process.stderr]) stream.on("error", () => {});
}

/** `help` alone, or `help <command>`: the page asked for, or null for a name no command has. */
async function helpPage(name: string | undefined): Promise<string | null> {
  if (name === undefined || name === "serve" || name === "help") return HELP;
  const command = COMMANDS.find((candidate) => candidate.name === name);
  return command ? (await command.load()).help.trimEnd() : null;
}

async function main(): Promise<void> {
  nameSettingsAsFlags();
  const [first, ...rest] = process.argv.slice(2);
  const command = COMMANDS.find((candidate) => candidate.name === first);
  if (command) return runCommand(await command.load(), rest);
  if (first === "help") {
    const page = await helpPage(rest[0]);
    if (page === null) return usageFailure(new UsageError(`No command is named "${rest[0]}".${didYouMean(rest[0]!, COMMAND_NAMES)} Commands: ${COMMAND_NAMES.join(", ")}.`));
    return void process.stdout.write(page + "\n");
  }
  if (first !== undefined && !first.startsWith("-") && first !== "serve") {
    return usageFailure(new UsageError(`No command is named "${first}".${didYouMean(first, COMMAND_NAMES)} Commands: ${COMMAND_NAMES.join(", ")}; without one, tabula serves.`));
  }
  keepServingWhenOutputCloses();
  let options: ReturnType<typeof toOptions>;
  let isDemo: boolean;
  let project: Base44Project | null;
  let pidFile: string | undefined;
  try {
    const parsed = parseArgs(first === "serve" ? rest : process.argv.slice(2));
    if (parsed.help) return void process.stdout.write(HELP + "\n");
    if (parsed.version) return void process.stdout.write(VERSION + "\n");
    project = projectHere(parsed, process.env);
    if (isFirstRun(parsed, process.env, project)) {
      process.stderr.write(FIRST_RUN);
      process.exit(1);
    }
    isDemo = parsed.demo;
    pidFile = parsed.values["pid-file"];
    options = toOptions(parsed, process.env, project);
  } catch (error) {
    return usageFailure(error as Error);
  }
  let server: TabulaServer;
  let isStopping = false;
  const { storeSource, ...serverOptions } = options;
  try {
    server = await createServer({
      ...serverOptions,
      onFatal(error) {
        process.stderr.write(`tabula: the store failed and can make no further write durable: ${error.message}\n`);
        // Every request waiting on the failed write is being answered 503, and so is every request
        // arriving for FATAL_GRACE_MS (accepted meanwhile, or already in the listen backlog); then
        // the server closes, letting those finish, and exits. Exiting at once would reset them all.
        isStopping = true;
        setTimeout(() => void server.close().finally(() => process.exit(1)), FATAL_GRACE_MS);
      },
    });
  } catch (error) {
    const message =
      error instanceof DataFolderError ? error.namedBy(dataFolderGiven(options)) : error instanceof PortInUseError ? `Port ${error.port} is in use; pass --port N, or --port 0 for a free one.` : (error as Error).message;
    process.stderr.write(`tabula: ${message}\n`);
    if (storeSource === "DATABASE_URL") {
      process.stderr.write("tabula: the store was DATABASE_URL's, read because none of --store, --data, --memory, TABULA_STORE and TABULA_DATA was given; give one of them to choose the store.\n");
    }
    process.exit(1);
  }
  const stop = (signal: string) => {
    if (isStopping) return;
    isStopping = true;
    process.stdout.write(`${signal}: finishing requests in flight, flushing the log\n`);
    setTimeout(() => {
      process.stderr.write(`tabula: stopping took over ${STOP_DEADLINE_MS} ms; exiting now (every write answered is stored)\n`);
      process.exit(1);
    }, STOP_DEADLINE_MS).unref();
    server.close().then(
      () => process.exit(0),
      (error: Error) => {
        process.stderr.write(`tabula: ${error.message}\n`);
        process.exit(1);
      },
    );
  };
  // Before the banner: a client (or a supervisor) may signal as soon as it reads "listening on".
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));
  if (pidFile !== undefined) {
    try {
      writePidFile(pidFile);
    } catch (error) {
      process.stderr.write(`tabula: --pid-file ${pidFile}: ${(error as Error).message}\n`);
      isStopping = true;
      await server.close().catch(() => {});
      process.exit(1);
    }
  }
  await printBanner(server, options, isDemo, project);
}

/**
 * --pid-file: this process's id, written once the server listens (before "listening on") and
 * removed at exit, unless another process has written its own there since. A script that starts
 * the server through npx gets npm's id in $!, and npm's SIGTERM never reaches the server: it would
 * keep its port (docs/testing.md, "As a process, in CI").
 */
function writePidFile(file: string): void {
  const pid = String(process.pid);
  writeFileSync(file, `${pid}\n`);
  process.on("exit", () => {
    try {
      if (readFileSync(file, "utf8").trim() === pid) unlinkSync(file);
    } catch {
      // Removed by someone else already: nothing of ours is left to remove.
    }
  });
}

function usageFailure(error: Error): never {
  process.stderr.write(`tabula: ${error.message} (npx tabula-server --help lists the options)\n`);
  process.exit(1);
}

void main();

/** ", rules: read, update; salary" when the entity declares rules (docs/rules.md): the banner says which. */
function rulesWords(entity: EntityDef): string {
  const operations = Object.keys(entity.rls ?? {});
  const fields = [...entity.fields.values()].filter((field) => field.rls !== undefined).map((field) => field.name);
  if (operations.length === 0 && fields.length === 0) return "";
  return `, rules: ${[operations.join(", "), fields.join(", ")].filter((part) => part !== "").join("; ")}`;
}
