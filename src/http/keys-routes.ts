// The routes that manage API keys while the server runs (docs/api.md, "Managing keys"): list,
// create, revoke, roll, for a secret key only. A new key is in the answer once, never again: the
// store keeps its SHA-256 (keys/key-ring.ts does the work; this file reads requests and answers).

import { ApiError, invalidField, invalidJson } from "../errors.ts";
import type { KeyRing } from "../keys/key-ring.ts";
import type { KeyView } from "../views.ts";
import { MAX_KEY_NAME_LENGTH } from "../keys/stored-keys.ts";
import { isPlainObject } from "../schema/load.ts";
import { jsonReply, type Reply } from "./response.ts";
import type { Router } from "./router.ts";
import { secretOnly, type Handler, type Outcome, type RequestContext } from "./context.ts";
import type { Maybe } from "../maybe.ts";

/** A rolled key lives on this long by default, as Stripe's rolled keys do. */
export const DEFAULT_ROLL_EXPIRES_IN_S = 24 * 60 * 60;
/** The longest a rolled key may live on: a year. */
const MAX_ROLL_EXPIRES_IN_S = 366 * 24 * 60 * 60;

/** Answers holding a key are never stored by a cache. */
const NO_STORE = { "Cache-Control": "no-store" };

export const KEYS_PATH = "/api/keys";

export function addKeyRoutes(router: Router<Handler>, keys: KeyRing): void {
  // An answer holding a new key is never kept for an Idempotency-Key replay.
  const secret = (what: string, handler: (ctx: RequestContext) => Maybe<Outcome>) =>
    secretOnly(handler, `Only a secret key may ${what}; a publishable key may not see or change keys.`, { isReplayable: false });
  router
    .add("GET", KEYS_PATH, secret("list keys", () => ({ reply: answer(200, keys.list()) })))
    .add(
      "POST",
      KEYS_PATH,
      secret("create keys", async (ctx) => {
        const { kind, name, expiresAt } = readCreate(ctx.body);
        const { made, view } = await keys.create(kind, name, expiresAt);
        return { reply: answer(201, { ...view, key: made.key }) };
      }),
    )
    .add(
      "DELETE",
      `${KEYS_PATH}/:id`,
      secret("revoke keys", async (ctx) => {
        const view = await keys.revoke(ctx.params.id!);
        return { reply: answer(200, { ...view, revoked: true }) };
      }),
    )
    .add(
      "POST",
      `${KEYS_PATH}/:id/roll`,
      secret("roll keys", async (ctx) => {
        const expiresInS = readRoll(ctx.body);
        const { made, view, old } = await keys.roll(ctx.params.id!, expiresInS * 1000);
        return { reply: answer(201, { ...view, key: made.key, rolled: old }) };
      }),
    );
}

function answer(status: number, body: KeyView | KeyView[] | Record<string, unknown>): Reply {
  return jsonReply(status, JSON.stringify(body), NO_STORE);
}


const CREATE_FORM = 'Send {"kind": "secret" | "publishable", "name": "<who or what uses it>", "expires_at": "<ISO 8601 time, optional>"}.';

export function readCreate(body: unknown): { kind: "secret" | "publishable"; name: string; expiresAt: string | null } {
  if (!isPlainObject(body)) throw invalidJson(`The body must be a JSON object. ${CREATE_FORM}`);
  refuseOthers(body, ["kind", "name", "expires_at"], CREATE_FORM);
  const { kind, name, expires_at: expires } = body;
  if (kind !== "secret" && kind !== "publishable") throw invalidField("kind", `must be "secret" or "publishable" (got ${JSON.stringify(kind) ?? "none"}). ${CREATE_FORM}`);
  if (typeof name !== "string" || name.trim() === "" || name.length > MAX_KEY_NAME_LENGTH) {
    throw invalidField("name", `must be text of 1 to ${MAX_KEY_NAME_LENGTH} characters saying who or what uses the key (got ${JSON.stringify(name) ?? "none"}).`);
  }
  if (expires === undefined || expires === null) return { kind, name, expiresAt: null };
  const at = typeof expires === "string" && /^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(expires) ? Date.parse(expires) : NaN;
  if (Number.isNaN(at)) throw invalidField("expires_at", `must be a time in ISO 8601, such as "2030-01-31T12:00:00Z" (got ${JSON.stringify(expires)}).`);
  if (at <= Date.now()) throw invalidField("expires_at", `is in the past (${expires}); give a time to come, or leave it out for a key that does not expire.`);
  return { kind, name, expiresAt: new Date(at).toISOString() };
}

const ROLL_FORM = `Send {"expires_in": <seconds the old key still works, 0 to ${MAX_ROLL_EXPIRES_IN_S}>} or no body (${DEFAULT_ROLL_EXPIRES_IN_S} s, a day).`;

export function readRoll(body: unknown): number {
  if (body === undefined) return DEFAULT_ROLL_EXPIRES_IN_S;
  if (!isPlainObject(body)) throw invalidJson(`The body must be a JSON object. ${ROLL_FORM}`);
  refuseOthers(body, ["expires_in"], ROLL_FORM);
  const seconds = body.expires_in;
  if (seconds === undefined) return DEFAULT_ROLL_EXPIRES_IN_S;
  if (!Number.isInteger(seconds) || (seconds as number) < 0 || (seconds as number) > MAX_ROLL_EXPIRES_IN_S) {
    throw invalidField("expires_in", `must be a whole number of seconds from 0 to ${MAX_ROLL_EXPIRES_IN_S} (got ${JSON.stringify(seconds)}). ${ROLL_FORM}`);
  }
  return seconds as number;
}

function refuseOthers(body: Record<string, unknown>, known: readonly string[], form: string): void {
  const other = Object.keys(body).find((name) => !known.includes(name));
  if (other !== undefined) throw new ApiError(400, "unknown_field", `Unknown field "${other}". ${form}`, { field: other, fields: known });
}
