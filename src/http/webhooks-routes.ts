// The routes of webhook endpoints (docs/webhooks.md), for a secret key only: create, list, read,
// change, delete, test, deliveries and replay. webhooks/webhooks.ts does the work; this file reads
// requests and answers.

import type { Webhooks } from "../webhooks/webhooks.ts";
import { jsonReply, type Reply } from "./response.ts";
import type { Router } from "./router.ts";
import { secretOnly, type Handler, type RequestContext } from "./context.ts";

export const WEBHOOKS_PATH = "/api/webhooks";

/** The answer to a create holds the endpoint's secret: no cache keeps it. */
const NO_STORE = { "Cache-Control": "no-store" };

export function addWebhookRoutes(router: Router<Handler>, webhooks: Webhooks): void {
  // An answer holding an endpoint's secret is never kept for an Idempotency-Key replay.
  const route = (method: string, path: string, what: string, answer: (ctx: RequestContext) => Promise<Reply>): void => {
    router.add(method, path, secretOnly(async (ctx) => ({ reply: await answer(ctx) }), `Only a secret key may ${what}; a publishable key may not see or change webhooks.`, { isReplayable: false }));
  };
  const id = `${WEBHOOKS_PATH}/:id`;
  route("GET", WEBHOOKS_PATH, "list webhook endpoints", async () => json(200, await webhooks.list()));
  route("POST", WEBHOOKS_PATH, "create webhook endpoints", async (ctx) => json(201, await webhooks.create(ctx.body)));
  route("GET", id, "read webhook endpoints", async (ctx) => json(200, await webhooks.get(ctx.params.id!)));
  route("PATCH", id, "change webhook endpoints", async (ctx) => json(200, await webhooks.update(ctx.params.id!, ctx.body)));
  route("DELETE", id, "delete webhook endpoints", async (ctx) => json(200, await webhooks.remove(ctx.params.id!)));
  route("POST", `${id}/test`, "test webhook endpoints", async (ctx) => json(200, await webhooks.ping(ctx.params.id!)));
  route("GET", `${id}/deliveries`, "read webhook deliveries", async (ctx) => json(200, await webhooks.deliveries(ctx.params.id!)));
  route("POST", `${id}/replay`, "replay webhooks", async (ctx) => json(202, await webhooks.replay(ctx.params.id!, ctx.query.get("since"))));
}

function json(status: number, body: unknown): Reply {
  return jsonReply(status, JSON.stringify(body), NO_STORE);
}
