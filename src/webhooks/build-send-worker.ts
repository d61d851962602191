// Bundles the webhook sending thread's program (send-worker.ts, with the client it runs) into one
// CommonJS script, as node:worker_threads runs a string: send-thread.ts runs it from source (the
// bundle's thread runs the bundle's own file instead, see build.mjs).

import { build } from "esbuild";
import { fileURLToPath } from "node:url";

export async function buildSendWorker(): Promise<string> {
  const built = await build({
    entryPoints: [fileURLToPath(new URL("send-worker.ts", import.meta.url))],
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    write: false,
    logLevel: "warning",
    minifyWhitespace: true,
    minifySyntax: true,
  });
  return built.outputFiles[0]!.text;
}
