// The SDK's analytics (docs/base44-sdk.md): @base44/sdk sends its events, by default, to
// POST /api/apps/<appId>/analytics/track/batch. They are answered 204 and not kept: tabula keeps
// records, not page views, and an app's default analytics should raise no errors.

import type { Mount } from "./mounts.ts";
import { openRoute, type Handler } from "./context.ts";
import type { Reply } from "./response.ts";
import type { Router } from "./router.ts";

const ANALYTICS_PATH = "/api/apps/:appId/analytics/track/batch";
const ANALYTICS_PATH_RE = /^\/api\/apps\/[^/]+\/analytics\/track\/batch$/;

const DROPPED: Reply = { status: 204, headers: {}, body: null };

/**
 * Needs no key, as routed before any key is asked for (app.ts): the SDK sends its last events with
 * navigator.sendBeacon when a page is hidden, and a beacon carries no headers.
 */
export function isAnalyticsPath(path: string): boolean {
  return ANALYTICS_PATH_RE.test(path);
}

/** `sdk` is the SDK's mount, whose app id check (--app-id) this route shares. */
export function addAnalyticsRoute(router: Router<Handler>, sdk: Mount): void {
  const handler = openRoute((ctx) => {
    sdk.checkPath(ctx);
    return { reply: DROPPED };
  });
  // Nothing is kept, so nothing is replayed for an Idempotency-Key.
  router.add("POST", ANALYTICS_PATH, Object.assign(handler, { isReplayable: false }));
}
