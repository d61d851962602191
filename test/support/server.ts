// A listening tabula (port 0) on the store that TABULA_TEST_STORE names, and a small fetch client
// for HTTP tests. test/run.mjs runs the HTTP suites once per store (issue 18, docs/postgresql.md).
//
// Which tests follow TABULA_TEST_STORE. The rule: a test of what every store must do (docs/api.md
// and the other docs, seen through HTTP) starts its server with startTestServer() and no store option, so
// it runs on every store; a test of one mode names it, and stays on that mode:
// - test/http/ and test/sdk/ follow the store, except the tests that pass `memory`, `data` or `store`
//   (a data folder they fill or restart on: idempotency.test.ts, write-path.test.ts,
//   json-depth.test.ts, client-error.test.ts) and those that build a MemoryStore themselves
//   (idempotency.test.ts's "store's side").
// - test/api/ stays fixed: it tests startServer()'s own defaults (memory unless `data`, `store` or `memory: false`).
// - test/keys/ stays on a data folder: keys.json is written there.
// - test/cli/ and test/durability/ spawn the CLI with the flags they test (--memory, --data).
// - test/browser/ runs once, on the memory store: it is about CORS and a browser, not the store.
// - test/store/, test/query/, test/records/, test/schema/ are unit tests of one module; those that need
//   PostgreSQL take it from test/support/postgres.ts.
// On postgres, each server gets a schema of its own in the cluster test/run.mjs started (TABULA_TEST_PG_URL),
// dropped when it closes.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer, type ServerOptions, type TabulaServer } from "../../src/server.ts";
import { dropPgSchema, freshPgSchema, MISSING_PG_URL, pgTestUrl } from "./postgres.ts";

/** The stores startTestServer() can start; test/run.mjs names the same ones. */
export const TEST_STORES = ["memory", "file", "postgres"] as const;
export type TestStore = (typeof TEST_STORES)[number];

/** TABULA_TEST_STORE, memory when unset. */
export const TEST_STORE: TestStore = readTestStore(process.env.TABULA_TEST_STORE);

function readTestStore(value: string | undefined): TestStore {
  if (value === undefined || value === "") return "memory";
  if ((TEST_STORES as readonly string[]).includes(value)) return value as TestStore;
  throw new Error(`TABULA_TEST_STORE=${value} names no store; use one of ${TEST_STORES.join(", ")}`);
}

export const SECRET = "sk_test_secret_key";
export const PUBLISHABLE = "pk_test_publishable";

export const TASK = {
  name: "Task",
  type: "object",
  properties: {
    title: { type: "string" },
    status: { type: "string", enum: ["todo", "doing", "done"], default: "todo" },
    priority: { type: "integer" },
    estimate: { type: "number" },
    done: { type: "boolean" },
    due_date: { type: "string", format: "date" },
    start_at: { type: "string", format: "date-time" },
    email: { type: "string", format: "email" },
    tags: { type: "array", items: { type: "string" } },
    meta: { type: "object" },
  },
  required: ["title"],
};

export interface TestServer extends TabulaServer {
  /** fetch relative to the server, with the secret key unless `apiKey` says otherwise. */
  call(method: string, path: string, init?: { body?: unknown; apiKey?: string | null; headers?: Record<string, string> }): Promise<Answer>;
}

export interface Answer {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/**
 * A server on TEST_STORE. A test that passes `memory`, `data` or `store` gets what it asks for: it
 * tests that mode, not every store.
 */
export async function startTestServer(options: Partial<ServerOptions> = {}): Promise<TestServer> {
  const isModeGiven = options.memory !== undefined || options.data !== undefined || options.store !== undefined;
  const place = isModeGiven ? { options: {}, remove: async () => {} } : placeOnTestStore();
  let server: TabulaServer;
  try {
    server = await createServer({
      schema: { Task: TASK },
      ...place.options,
      port: 0,
      secretKey: SECRET,
      publishableKey: PUBLISHABLE,
      ...options,
    });
  } catch (error) {
    await place.remove();
    throw error;
  }
  const closeServer = server.close.bind(server);
  const close = async () => {
    try {
      await closeServer();
    } finally {
      await place.remove();
    }
  };
  const call: TestServer["call"] = async (method, path, init = {}) => {
    const headers: Record<string, string> = { ...init.headers };
    const apiKey = init.apiKey === undefined ? SECRET : init.apiKey;
    if (apiKey !== null) headers["X-Api-Key"] = apiKey;
    let body: string | undefined;
    if (init.body !== undefined) {
      body = typeof init.body === "string" ? init.body : JSON.stringify(init.body);
      headers["Content-Type"] ??= "application/json";
    }
    const response = await fetch(server.url + path, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: response.status, headers: response.headers, body: parsed, text };
  };
  return Object.assign(server, { call, close });
}

/** Where a server on TEST_STORE keeps its records, fresh for each server so that no test sees another's. */
interface StorePlace {
  readonly options: Partial<ServerOptions>;
  /** Deletes the place once the server has closed. */
  remove(): Promise<void>;
}

function placeOnTestStore(): StorePlace {
  switch (TEST_STORE) {
    case "memory":
      return { options: { memory: true }, remove: async () => {} };
    case "file": {
      // A folder of its own, so that no test sees another's records, keys.json or lock.
      const dataDir = mkdtempSync(join(tmpdir(), "tabula-test-store-"));
      return { options: { memory: false, data: dataDir }, remove: async () => rmSync(dataDir, { recursive: true, force: true }) };
    }
    case "postgres": {
      const url = pgTestUrl();
      if (url === null) throw new Error(`TABULA_TEST_STORE=postgres, but ${MISSING_PG_URL}`);
      const pgSchema = freshPgSchema();
      const options: Partial<ServerOptions> = { store: url, pgSchema };
      return { options, remove: () => dropPgSchema(url, pgSchema) };
    }
  }
}

/** `q` as a URL parameter value. */
export function q(filter: unknown): string {
  return encodeURIComponent(JSON.stringify(filter));
}
