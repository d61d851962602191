// A listening tabula (memory store, port 0) and a small fetch client for HTTP tests.

import { createServer, type ServerOptions, type TabulaServer } from "../../src/server.ts";

export const SECRET = "sk_test_secret";
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

export async function startTestServer(options: Partial<ServerOptions> = {}): Promise<TestServer> {
  const server = await createServer({
    schema: { Task: TASK },
    memory: true,
    port: 0,
    secretKey: SECRET,
    publishableKey: PUBLISHABLE,
    ...options,
  });
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
  return Object.assign(server, { call });
}

/** `q` as a URL parameter value. */
export function q(filter: unknown): string {
  return encodeURIComponent(JSON.stringify(filter));
}
