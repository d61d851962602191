// The embedding API (`import { startServer } from "tabula-server"`): tabula as an in-process test
// fixture. Memory mode (unless a store or a data folder is given) and a free port by default;
// everything else as the CLI.

import { createServer, type ServerOptions, type TabulaServer } from "./server.ts";

export type { FeedChange, LoadedData, ServerOptions, TabulaServer } from "./server.ts";
export type { ApiKey } from "./keys/api-keys.ts";

export type StartOptions = Omit<ServerOptions, "memory" | "port"> & { readonly memory?: boolean; readonly port?: number };

export async function startServer(options: StartOptions): Promise<TabulaServer> {
  // data names the file store, so it is not quietly dropped for the memory default; with memory:
  // true as well the two ask for opposite things, and neither is picked over the other.
  if (options.data !== undefined && options.memory === true) {
    throw new Error(`startServer: data (${JSON.stringify(options.data)}) and memory: true each choose the store: data keeps records in that folder, memory: true keeps nothing on disk. Give one of them.`);
  }
  const memory = options.memory ?? (options.store === undefined && options.data === undefined);
  return createServer({ ...options, memory, port: options.port ?? 0 });
}
