// Idempotency-Key (docs/api.md): the first successful answer to a write is stored with
// the write itself (one batch, one log entry) and replayed for 24 hours, while the store keeps it
// (the memory and file stores keep answers within --idempotency-memory). Keys are scoped to the API
// key. Errors are not stored, so a refused request may be retried with the same key.

import { createHash } from "node:crypto";
import { ApiError } from "../errors.ts";
import type { Caller } from "../keys/caller.ts";
import type { Records } from "../records/records.ts";
import type { IdempotentAnswer } from "../store/store.ts";
import type { Reply } from "./response.ts";
import type { Maybe } from "../maybe.ts";

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

export interface IdempotentRequest {
  readonly scope: string;
  readonly fingerprint: string;
}

/**
 * What a request is known by: `bodyHash` is hashBody of its body, taken as soon as the body is read
 * so that the body's bytes need not be kept while the write runs.
 */
export function idempotentRequest(caller: Caller, idempotencyKey: string, method: string, url: string, bodyHash: string): IdempotentRequest {
  if (idempotencyKey.length === 0 || idempotencyKey.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw new ApiError(400, "invalid_parameter", `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters; a UUID is a good choice.`, { parameter: "Idempotency-Key" });
  }
  // A key's callers share its scope; each signed-in user has its own, whatever key it came with:
  // one user's Idempotency-Key never replays another's answer.
  const scope = caller.user === undefined ? `${caller.keyId}\n${idempotencyKey}` : `${caller.keyId}\nuser:${caller.user.id}\n${idempotencyKey}`;
  return { scope, fingerprint: `${method} ${url} ${bodyHash}` };
}

/** The body's part of a fingerprint; stored answers hold it, so it never changes. */
export function hashBody(body: Buffer): string {
  return createHash("sha256").update(body).digest("base64url");
}

export class IdempotencyGuard {
  private readonly inFlight = new Set<string>();

  constructor(private readonly records: Records) {}

  /**
   * The stored answer to replay, or null when this request is the first with its key (it is then
   * in flight until finish()). Refuses a key that is busy or was used for another request.
   */
  start(request: IdempotentRequest, now: number): Maybe<Reply | null> {
    if (this.inFlight.has(request.scope)) {
      throw new ApiError(409, "idempotency_key_in_use", "A request with this Idempotency-Key is still being processed; retry once it has been answered.");
    }
    // In flight from now on, so that a second request with the key cannot pass while the store looks.
    this.inFlight.add(request.scope);
    const replayed = (answer: IdempotentAnswer | undefined): Reply | null => {
      if (!answer) return null;
      this.finish(request);
      return replayOf(request, answer);
    };
    try {
      const found = this.records.findAnswer(request.scope, now);
      return found instanceof Promise ? found.then(replayed, (error: unknown) => this.abandon(request, error)) : replayed(found);
    } catch (error) {
      return this.abandon(request, error);
    }
  }

  /**
   * The answer another process stored for this key while this one worked on it (its write was
   * refused: see Store.commit), which this request now replays.
   */
  async replay(request: IdempotentRequest, now: number): Promise<Reply> {
    const answer = await this.records.findAnswer(request.scope, now);
    if (!answer) throw new ApiError(409, "idempotency_key_in_use", "A request with this Idempotency-Key is still being processed; retry once it has been answered.");
    return replayOf(request, answer);
  }

  private abandon(request: IdempotentRequest, error: unknown): never {
    this.finish(request);
    throw error;
  }

  finish(request: IdempotentRequest): void {
    this.inFlight.delete(request.scope);
  }

  /** What to store for this reply: successes only. */
  answerFor(request: IdempotentRequest, reply: Reply, now: number): IdempotentAnswer | undefined {
    if (reply.status < 200 || reply.status > 299 || reply.body === null) return undefined;
    return { ...request, status: reply.status, headers: reply.headers, body: reply.body, expiresAt: now + IDEMPOTENCY_TTL_MS };
  }
}

function replayOf(request: IdempotentRequest, answer: IdempotentAnswer): Reply {
  if (answer.fingerprint !== request.fingerprint) {
    throw new ApiError(
      422,
      "idempotency_key_reused",
      "This Idempotency-Key was used for a different request (method, path or body); use a new key for a new request.",
    );
  }
  return { status: answer.status, headers: { ...answer.headers, "Idempotent-Replayed": "true" }, body: answer.body };
}
