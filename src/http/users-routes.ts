// The routes of signing up and in (docs/users.md), as the Base44 SDK's auth module calls them on its
// prefix (/api/apps/<appId>/auth/…, …/entities/User/me, …/users/invite-user) and on the native one
// (/api/auth/…, /api/entities/User/me, /api/users/…). users/users.ts does the work; this file reads
// requests and answers. No answer here is ever kept for an Idempotency-Key replay: they hold tokens.

import { ApiError } from "../errors.ts";
import type { Maybe } from "../maybe.ts";
import { USER_ENTITY } from "../schema/user-entity.ts";
import { checkMayManage, type Users } from "../users/users.ts";
import type { Handler, Outcome, RequestContext } from "./context.ts";
import type { CorsPolicy } from "./cors.ts";
import { jsonReply } from "./response.ts";
import type { Router } from "./router.ts";

/** Answers holding a token or a user are never stored by a cache. */
const NO_STORE = { "Cache-Control": "no-store" };

/** The prefixes the auth routes are served under: the native one and the SDK's (whose :appId is checked). */
const PREFIXES = [
  { auth: "/api/auth", me: `/api/entities/${USER_ENTITY}/me`, users: "/api/users" },
  { auth: "/api/apps/:appId/auth", me: `/api/apps/:appId/entities/${USER_ENTITY}/me`, users: "/api/apps/:appId/users" },
];

/** Signing up and in needs no key: these paths are routed before any key is asked for (app.ts). */
export function isSignInPath(path: string): boolean {
  if (path.startsWith("/api/auth/")) return true;
  if (!path.startsWith("/api/apps/")) return false;
  const rest = path.slice("/api/apps/".length);
  const slash = rest.indexOf("/");
  return rest.startsWith("auth/") || (slash > 0 && rest.startsWith("auth/", slash + 1));
}

export function addUserRoutes(router: Router<Handler>, users: Users, options: { appId: string | null; cors: CorsPolicy | null }): void {
  const checkApp = (ctx: RequestContext) => {
    const given = ctx.params.appId;
    if (given !== undefined && options.appId !== null && given !== options.appId) {
      throw new ApiError(404, "app_not_found", `This server serves the app "${options.appId}", not "${given}"; the appId given to createClient must be "${options.appId}".`, { appId: given });
    }
  };
  /** A route anyone may call: signing up and in. */
  const open = (run: (ctx: RequestContext) => Promise<unknown>): Handler =>
    Object.assign((ctx: RequestContext): Maybe<Outcome> => {
      checkApp(ctx);
      return run(ctx).then((body) => ({ reply: jsonReply(200, JSON.stringify(body), NO_STORE) }));
    }, { guard: "none" as const, isReplayable: false });
  /** A signed-in user's route. */
  const signedIn = (run: (ctx: RequestContext) => Promise<unknown>): Handler =>
    Object.assign((ctx: RequestContext): Maybe<Outcome> => {
      checkApp(ctx);
      return run(ctx).then((body) => ({ reply: jsonReply(200, JSON.stringify(body), NO_STORE) }));
    }, { guard: "user" as const, isReplayable: false });
  /** The secret key's or an admin user's. */
  const managing = (run: (ctx: RequestContext) => Promise<unknown>): Handler =>
    Object.assign((ctx: RequestContext): Maybe<Outcome> => {
      checkApp(ctx);
      checkMayManage(ctx.caller);
      return run(ctx).then((body) => ({ reply: jsonReply(200, JSON.stringify(body), NO_STORE) }));
    }, { guard: "key" as const, isReplayable: false });

  for (const prefix of PREFIXES) {
    router
      .add("POST", `${prefix.auth}/register`, open((ctx) => users.register(ctx.body, ctx.address)))
      .add("POST", `${prefix.auth}/verify-otp`, open((ctx) => users.verifyOtp(ctx.body, ctx.address)))
      .add("POST", `${prefix.auth}/resend-otp`, open((ctx) => users.resendOtp(ctx.body, ctx.address)))
      .add("POST", `${prefix.auth}/login`, open((ctx) => users.login(ctx.body, ctx.address)))
      .add("POST", `${prefix.auth}/reset-password-request`, open((ctx) => users.resetPasswordRequest(ctx.body, ctx.address)))
      .add("POST", `${prefix.auth}/reset-password`, open((ctx) => users.resetPassword(ctx.body, ctx.address)))
      .add("POST", `${prefix.auth}/change-password`, userRoute(signedIn, (ctx, user) => users.changePassword(user, ctx.body)))
      .add("POST", `${prefix.auth}/logout`, userRoute(signedIn, (_ctx, user) => users.logout(user)))
      .add("GET", prefix.me, userRoute(signedIn, (_ctx, user) => users.me(user)))
      .add("PUT", prefix.me, userRoute(signedIn, (ctx, user) => users.updateMe(user, ctx.body)))
      .add("PATCH", prefix.me, userRoute(signedIn, (ctx, user) => users.updateMe(user, ctx.body)))
      .add("GET", prefix.users, managing(() => users.list()))
      .add("PATCH", `${prefix.users}/:id`, managing((ctx) => users.setFields(ctx.params.id!, ctx.body)))
      .add("POST", `${prefix.users}/invite-user`, managing((ctx) => users.invite(ctx.caller, ctx.body)))
      .add("DELETE", `${prefix.users}/:id/sessions`, managing((ctx) => users.endSessions(ctx.params.id!)));
  }
  // The SDK's logout() in a browser goes to this page, which sends it back to where it came from.
  // Its token is not sent along (a navigation carries no Authorization): the app has already
  // forgotten it, and POST auth/logout ends the session on the server.
  router.add(
    "GET",
    "/api/apps/auth/logout",
    Object.assign((ctx: RequestContext): Outcome => ({ reply: logoutRedirect(ctx, options.cors) }), { guard: "none" as const, readsNoRecord: true }),
  );
}

function userRoute(kind: (run: (ctx: RequestContext) => Promise<unknown>) => Handler, run: (ctx: RequestContext, user: NonNullable<RequestContext["caller"]["user"]>) => Promise<unknown>): Handler {
  return kind((ctx) => run(ctx, ctx.caller.user!));
}

/**
 * Back to `from_url` when it is an address this server may send a browser to: an origin --cors
 * names, this server's own host, or a loopback one (a laptop's app). Anywhere else would make the
 * server an open redirect for phishing links; the page then just says the user is signed out.
 */
function logoutRedirect(ctx: RequestContext, cors: CorsPolicy | null): ReturnType<typeof jsonReply> {
  const target = ctx.query.get("from_url");
  let url: URL | null = null;
  try {
    url = target === null ? null : new URL(target);
  } catch {
    url = null;
  }
  const host = ctx.header("host");
  const isAllowed =
    url !== null &&
    (url.protocol === "http:" || url.protocol === "https:") &&
    ((cors !== null && !cors.anyOrigin && cors.origins.has(url.origin.toLowerCase())) || url.host === host || ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname));
  if (!isAllowed) return jsonReply(200, JSON.stringify({ message: "Signed out. Close this page, or go back to the app." }), NO_STORE);
  return { ...jsonReply(302, "", { ...NO_STORE, Location: url!.toString() }) };
}
