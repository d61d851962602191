// The rate limit for the key anyone can read (docs/api.md, issue 20): --rate-limit N requests per
// second per client address for publishable keys, a token bucket holding at most N (a burst of N).
// Secret keys are never limited. Memory stays bounded however many addresses come: a bucket left
// alone for a second has refilled, so forgetting it changes nothing, and every bucket idle that
// long is dropped as requests arrive.

import { isIP } from "node:net";
import type { IncomingMessage } from "node:http";
import { ApiError } from "../errors.ts";
import { headerOf } from "./request.ts";
import { ipv4TextOf, ipv6GroupsOf, ipv6TextOf } from "../ipv6-groups.ts";

interface Bucket {
  tokens: number;
  /** When tokens was last brought up to date, in ms. */
  at: number;
}

export class RateLimiter {
  /** By address; insertion order is the order of last use (a used bucket moves to the end). */
  private readonly buckets = new Map<string, Bucket>();
  constructor(
    /** Requests per second, and the burst. */
    readonly perSecond: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Takes a token for `address`; the seconds to wait when there is none (0: go ahead). */
  take(address: string): number {
    const now = this.now();
    this.forgetIdle(now);
    const bucket = this.buckets.get(address);
    let tokens = this.perSecond;
    if (bucket) {
      tokens = Math.min(this.perSecond, bucket.tokens + ((now - bucket.at) * this.perSecond) / 1000);
      this.buckets.delete(address);
    }
    if (tokens < 1) {
      this.buckets.set(address, { tokens, at: now });
      return Math.max(1, Math.ceil((1 - tokens) / this.perSecond));
    }
    this.buckets.set(address, { tokens: tokens - 1, at: now });
    return 0;
  }

  /** Addresses with a bucket now (for tests of the bound). */
  get size(): number {
    return this.buckets.size;
  }

  private forgetIdle(now: number): void {
    for (const [address, bucket] of this.buckets) {
      // A bucket refills from empty in one second: one idle that long is full, as a new one is.
      if (now - bucket.at < 1000) break;
      this.buckets.delete(address);
    }
  }
}

/**
 * The client's address: the socket's peer, or with `trustProxy` the last address of
 * X-Forwarded-For, the one the proxy in front of tabula added (those before it are the client's
 * to write, so anyone could name any address there).
 */
export function clientAddress(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = headerOf(req, "x-forwarded-for");
    const last = forwarded?.split(",").at(-1)?.trim();
    if (last) return clientOf(last);
  }
  return clientOf(req.socket.remoteAddress ?? "unknown");
}

/**
 * A client as limits count it. An IPv6 address counts by its /64: one subscriber (a home, a
 * server) is given at least that many addresses, and would otherwise pass every limit by sending
 * each request from another of them. An IPv4 address written as IPv6 (::ffff:a.b.c.d, what a
 * dual-stack socket reports) is that IPv4 address.
 */
export function clientOf(address: string): string {
  if (isIP(address) !== 6) return address;
  const groups = ipv6GroupsOf(address);
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) return ipv4TextOf(groups[6]!, groups[7]!);
  return `${ipv6TextOf([...groups.slice(0, 4), 0, 0, 0, 0])}/64`;
}

export function rateLimited(perSecond: number, retryAfterSeconds: number): ApiError {
  return new ApiError(
    429,
    "rate_limited",
    `This client sent more than ${perSecond} requests per second with a publishable key (--rate-limit). Wait ${retryAfterSeconds} s (Retry-After) and slow down, or use a secret key from a server.`,
    { limitPerSecond: perSecond, retryAfterSeconds },
    { "Retry-After": String(retryAfterSeconds) },
  );
}
