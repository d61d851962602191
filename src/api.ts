// The embedding API (`import { startServer } from "tabula-server"`): tabula as an in-process test
// fixture. Memory mode (unless a store is given) and a free port by default; everything else as the CLI.

import { createServer, type ServerOptions, type TabulaServer } from "./server.ts";

export type { FeedChange, LoadedData, ServerOptions, TabulaServer } from "./server.ts";
export type { ApiKey } from "./keys/api-keys.ts";

export type StartOptions = Omit<ServerOptions, "memory" | "port"> & { readonly memory?: boolean; readonly port?: number };

export function startServer(options: StartOptions): Promise<TabulaServer> {
  return createServer({ ...options, memory: options.memory ?? options.store === undefined, port: options.port ?? 0 });
}
