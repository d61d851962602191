// The embedding API (`import { startServer } from "tabula-server"`): tabula as an in-process test
// fixture. Memory mode (unless a store or a data folder is given) and a free port by default;
// everything else as the CLI.

import { createServer, type ServerOptions, type TabulaServer } from "./server.ts";
import { PortInUseError } from "./http/listen.ts";

import type * as Public from "./public-api.ts";

// The types users see are public-api.ts's, which name nothing internal (dist/tabula-api.d.ts).
export { PortInUseError } from "./http/listen.ts";
export type { ApiKey, ArrayField, BooleanField, Declarations, EntityDeclaration, FeedChange, FieldDeclaration, LoadedData, NumberField, ObjectField, PublishableOperation, StartOptions, StringField, StringFormat, TabulaServer } from "./public-api.ts";

type ServerStartOptions = Omit<ServerOptions, "memory" | "port"> & { readonly memory?: boolean; readonly port?: number };

export async function startServer(options: ServerStartOptions): Promise<TabulaServer> {
  // data names the file store, so it is not quietly dropped for the memory default; with memory:
  // true as well the two ask for opposite things, and neither is picked over the other.
  if (options.data !== undefined && options.memory === true) {
    throw new Error(`startServer: data (${JSON.stringify(options.data)}) and memory: true each choose the store: data keeps records in that folder, memory: true keeps nothing on disk. Give one of them.`);
  }
  const memory = options.memory ?? (options.store === undefined && options.data === undefined);
  return createServer({ ...options, memory, port: options.port ?? 0 });
}

// The implementation takes every option the public types allow and gives what they promise.
startServer satisfies typeof Public.startServer;
PortInUseError satisfies typeof Public.PortInUseError;
