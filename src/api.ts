// The embedding API (`import { startServer } from "tabula-server"`): tabula as an in-process test
// fixture. Memory mode (unless a store is given) and a free port by default; everything else as the CLI.

import { createServer, type ServerOptions, type TabulaServer } from "./server.ts";

import type * as Public from "./public-api.ts";

// The types users see are public-api.ts's, which name nothing internal (dist/tabula-api.d.ts).
export type { ApiKey, ArrayField, BooleanField, Declarations, EntityDeclaration, FeedChange, FieldDeclaration, LoadedData, NumberField, ObjectField, PublishableOperation, StartOptions, StringField, StringFormat, TabulaServer } from "./public-api.ts";

type ServerStartOptions = Omit<ServerOptions, "memory" | "port"> & { readonly memory?: boolean; readonly port?: number };

export function startServer(options: ServerStartOptions): Promise<TabulaServer> {
  return createServer({ ...options, memory: options.memory ?? options.store === undefined, port: options.port ?? 0 });
}

// The implementation takes every option the public types allow and gives what they promise.
startServer satisfies typeof Public.startServer;
