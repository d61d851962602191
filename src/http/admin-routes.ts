// The server's own routes (docs/operating.md): GET /health for anyone, GET /metrics and
// POST /api/admin/backup for a secret key only.

import { isAbsolute } from "node:path";
import { backupTargetExists, backupUnsupported, invalidJson, invalidRequest } from "../errors.ts";
import { then, type Maybe } from "../maybe.ts";
import { EXPOSITION_CONTENT_TYPE } from "../metrics/exposition.ts";
import { BackupTargetError, type BackupSummary } from "../store/file/backup.ts";
import { openRoute, secretOnly, type Handler } from "./context.ts";
import { jsonReply, type Reply } from "./response.ts";
import type { Router } from "./router.ts";

/** GET /health: the process answers; no key needed, for load balancers and probes. */
export function addHealthRoute(router: Router<Handler>): void {
  router.add("GET", "/health", openRoute(() => ({ reply: jsonReply(200, `{"status":"ok"}`) })));
}

/** GET /metrics: Prometheus text (server-metrics.ts), for a secret key only: it shows every entity's counts. */
export function addMetricsRoute(router: Router<Handler>, metrics: () => Maybe<string>): void {
  const reply = (body: string): Reply => ({ status: 200, headers: { "Content-Type": EXPOSITION_CONTENT_TYPE }, body });
  router.add("GET", "/metrics", secretOnly(() => then(metrics(), (text) => ({ reply: reply(text) })), "GET /metrics needs a secret key; a publishable key may not read the server's metrics.", { readsNoRecord: true }));
}

/**
 * POST /api/admin/backup {"to"}: a copy of the data folder on this server's machine, for a secret
 * key only. `backup` is the store's backup, or the words saying what backs the store up instead.
 */
export function addBackupRoute(router: Router<Handler>, backup: ((to: string) => Promise<BackupSummary>) | string): void {
  const handler = async (ctx: { readonly body: unknown }) => {
    const body = ctx.body as Record<string, unknown> | undefined;
    const mend = 'Send {"to": "/absolute/path"}: a new (or empty) folder on the server\'s machine.';
    if (typeof body !== "object" || body === null || Array.isArray(body) || Object.keys(body).some((name) => name !== "to")) throw invalidJson(`The body must be an object with "to" alone. ${mend}`, { field: "to" });
    const to = body.to;
    if (typeof to !== "string" || !isAbsolute(to)) throw invalidJson(`"to" must be an absolute path (got ${JSON.stringify(to) ?? "none"}). ${mend}`, { field: "to" });
    if (typeof backup === "string") throw backupUnsupported(backup);
    try {
      return { reply: jsonReply(200, JSON.stringify(await backup(to))) };
    } catch (error) {
      if (error instanceof BackupTargetError) throw error.isNotEmpty ? backupTargetExists(error.message, to) : invalidRequest(error.message, { to });
      throw error;
    }
  };
  // A copy made is no answer to replay: a second request with the same key finds the folder taken.
  router.add("POST", "/api/admin/backup", secretOnly(handler, "POST /api/admin/backup needs a secret key; a publishable key may not copy the server's data.", { isReplayable: false }));
}
