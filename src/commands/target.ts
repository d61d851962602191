// Where tabula export and import find the records: a running server (--url and --key), or a store
// opened by the command itself (--data DIR, --store URL, with --schema), served on a loopback
// port for as long as the command runs, so that both paths go through the same HTTP API and
// validate, shape and store records in exactly one way.

import { existsSync } from "node:fs";
import { createServer, type TabulaServer } from "../server.ts";
import { DataFolderError } from "../store/file/lock.ts";
import { parseStoreUrl } from "../store/open-store.ts";
import { UsageError, type CommandArgs } from "./command.ts";
import { defaultSchemaPath } from "../base44-project.ts";

/** The options every command that reads or writes records takes. */
export const TARGET_VALUES = ["url", "key", "data", "store", "schema"] as const;

export const TARGET_HELP = `  --url URL        a running tabula, such as http://127.0.0.1:8080
  --key K          its secret key (or a publishable one, where that may do this)   [TABULA_SECRET_KEY]
  --data DIR       instead of --url: a data folder no server is using               [TABULA_DATA, default ./data]
  --store URL      instead of --data: file:DIR or postgres://... (which several processes may share)
  --schema PATH    with --data or --store: the schema it was written with          [TABULA_SCHEMA, default ./entities or base44/'s]`;

export interface Target {
  readonly url: string;
  readonly key: string;
  /** Whether the server is one the command opened itself (--data, --store), in this process. */
  readonly isOpenedHere: boolean;
  /** Folds the log of a data folder the command opened into a snapshot; a running server (--url) compacts its own. */
  compact(): Promise<void>;
  /** Stops the server the command started, if it started one. */
  close(): Promise<void>;
}

/**
 * The records' place, as --url or a store the command opens. `mustExist`: a data folder that is
 * not there is refused (an export of it would make an empty one and print nothing).
 */
export async function openTarget(args: CommandArgs, mustExist: boolean, env: NodeJS.ProcessEnv = process.env): Promise<Target> {
  const url = args.values.get("url");
  const local = ["data", "store", "schema"].filter((name) => args.values.has(name));
  if (url !== undefined) {
    if (local.length > 0) throw new UsageError(`--url reaches a running server: leave out --${local[0]}, which is for a store the command opens itself.`);
    const key = args.values.get("key") ?? env.TABULA_SECRET_KEY;
    if (key === undefined || key === "") throw new UsageError("--url needs --key K (or TABULA_SECRET_KEY): the server's secret key.");
    return { url: checkUrl(url), key, isOpenedHere: false, compact: async () => {}, close: async () => {} };
  }
  if (args.values.has("key")) throw new UsageError("--key goes with --url; a data folder the command opens needs none.");
  if (args.values.has("data") && args.values.has("store")) throw new UsageError("Give --data DIR or --store URL, not both.");
  if (args.values.has("store")) parseStoreUrl(args.values.get("store")!, "--store");
  const dataDir = args.values.get("data") ?? (args.values.has("store") ? null : (env.TABULA_DATA ?? "./data"));
  if (mustExist && dataDir !== null && !existsSync(dataDir)) {
    throw new UsageError(`There is no data folder ${dataDir}. Give --data DIR (a folder a server wrote), or --url URL --key K for a running server.`);
  }
  let server: TabulaServer;
  try {
    server = await createServer({
      schema: args.values.get("schema") ?? env.TABULA_SCHEMA ?? defaultSchemaPath(),
      ...(args.values.has("store") ? { store: args.values.get("store")! } : { data: dataDir! }),
      host: "127.0.0.1",
      port: 0,
      log: "off",
      warn: () => {},
    });
  } catch (error) {
    if (error instanceof DataFolderError) {
      const given = args.values.has("store") ? `--store ${args.values.get("store")}` : `--data ${dataDir}`;
      // Reading a folder one may not write in: a backup of it needs no lock, and can be read instead.
      const copyFirst = mustExist && error.problem === "not_writable" ? ` Or copy it with npx tabula-server backup --data ${dataDir ?? "DIR"} --to COPY, which writes nothing there, and read the copy.` : "";
      throw new Error(error.namedBy(given) + copyFirst);
    }
    const message = (error as Error).message;
    // The folder's lock names the process that holds it: that server can answer instead.
    if (/lock|in use/i.test(message)) throw new Error(`${message} Ask the running server instead: --url http://HOST:PORT --key K.`);
    throw error;
  }
  return { url: server.url, key: server.secretKey, isOpenedHere: true, compact: () => server.compact(), close: () => server.close() };
}

function checkUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`--url must be a URL such as http://127.0.0.1:8080 (got "${text}").`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new UsageError(`--url must be http:// or https:// (got "${text}").`);
  return url.origin + url.pathname.replace(/\/+$/, "");
}

/** Calls a running server's API with a secret key; a failed answer throws, said in one sentence (apiFailure). */
export function apiCaller(url: string, key: string): (method: string, path: string, what: string, body?: unknown) => Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
  return async (method, path, what, body) => {
    const response = await request(`${url}${path}`, { method, headers: { "X-Api-Key": key, ...(body === undefined ? {} : { "Content-Type": "application/json" }) }, body: body === undefined ? undefined : JSON.stringify(body) });
    if (response.status >= 300) throw await apiFailure(response, what);
    return response.json();
  };
}

/** A failed answer of the API as one sentence: its error message, or what came instead. */
export async function apiFailure(response: Response, what: string): Promise<Error> {
  const text = await response.text().catch(() => "");
  try {
    const message = (JSON.parse(text) as { error?: { message?: string } }).error?.message;
    if (message) return new Error(`${what}: ${response.status} ${message}`);
  } catch {
    // Not the API's JSON: say what came.
  }
  return new Error(`${what}: the server answered ${response.status}${text ? ` ${text.slice(0, 200)}` : ""}. Is --url a tabula server?`);
}

/** fetch, with a connection failure said in one line naming the URL. */
export async function request(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(`Cannot reach ${new URL(url).origin} (${cause?.code ?? cause?.message ?? (error as Error).message}). Is the server running, and --url right?`);
  }
}
