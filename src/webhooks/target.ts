// Where a webhook may be sent (docs/webhooks.md, "Safety"): an http(s) URL whose host is not on
// loopback, a private network, link-local or a cloud's metadata address. The check runs when an
// endpoint is saved and again at every connection, on the address the connection will use (the
// name resolved here, then connected to as resolved), so a name that later resolves to such an
// address is refused too. --webhooks-allow-private lifts it (receivers on 127.0.0.1 in tests).

import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP } from "node:net";
import type { LookupFunction } from "node:net";
import { invalidWebhookUrl } from "../errors.ts";

/** The longest endpoint URL kept. */
export const MAX_WEBHOOK_URL_CHARS = 2048;
/** A name that does not resolve within this long, when an endpoint is saved, is kept unchecked (checked at each connection). */
const SAVE_LOOKUP_MS = 2000;

/**
 * Addresses no webhook reaches (IANA special-purpose registries): "this network", private (RFC
 * 1918, unique local), shared (RFC 6598, where Alibaba's metadata address lives), loopback,
 * link-local (169.254.169.254 is the metadata address of AWS, GCP and Azure), benchmarking,
 * multicast and reserved. An IPv4-mapped IPv6 address is checked as its IPv4 address.
 */
const REFUSED = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16], ["172.16.0.0", 12],
  ["192.0.0.0", 24], ["192.168.0.0", 16], ["198.18.0.0", 15], ["224.0.0.0", 4], ["240.0.0.0", 4],
] as const) {
  REFUSED.addSubnet(network, prefix, "ipv4");
}
// ::/128 and ::1, unique local (fd00:ec2::254 is AWS's metadata address), site- and link-local, multicast.
for (const [network, prefix] of [["::", 127], ["fc00::", 7], ["fec0::", 10], ["fe80::", 10], ["ff00::", 8]] as const) REFUSED.addSubnet(network, prefix, "ipv6");

/** Why `address` may not be reached, or null when it may. */
export function refusalOf(address: string): string | null {
  const family = isIP(address);
  if (family === 0) return `${address} is not an IP address`;
  return REFUSED.check(address, family === 4 ? "ipv4" : "ipv6") ? `${address} is a loopback, private, link-local or metadata address` : null;
}

export interface TargetPolicy {
  /** --webhooks-allow-private: any address may be reached. */
  readonly allowPrivate: boolean;
  /** How names are resolved (node:dns lookup; tests hand in their own). */
  readonly lookup?: LookupFunction;
}

/** The URL of an endpoint as sent: http(s), with a host; its address checked as far as it can be now. */
export async function checkWebhookUrl(value: unknown, policy: TargetPolicy): Promise<string> {
  if (typeof value !== "string" || value.length > MAX_WEBHOOK_URL_CHARS) throw invalidWebhookUrl(`url must be a URL of at most ${MAX_WEBHOOK_URL_CHARS} characters (got ${JSON.stringify(value)?.slice(0, 80) ?? "none"}).`, value);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalidWebhookUrl(`url ${JSON.stringify(value)} is not a URL.`, value);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw invalidWebhookUrl(`url must use http or https (got ${url.protocol.slice(0, -1)}).`, value);
  if (url.hash !== "") throw invalidWebhookUrl("url may not hold a #fragment: it is never sent.", value);
  if (policy.allowPrivate) return url.href;
  const host = hostOf(url);
  // RFC 6761: localhost and its subdomains are the loopback, whatever a resolver says.
  if (host === "localhost" || host.endsWith(".localhost")) throw invalidWebhookUrl(`url's host ${host} is this machine.`, value);
  if (isIP(host) !== 0) {
    const refusal = refusalOf(host);
    if (refusal) throw invalidWebhookUrl(`url's host ${refusal}.`, value);
    return url.href;
  }
  const addresses = await resolveForSave(host, policy.lookup ?? dnsLookup);
  for (const { address } of addresses) {
    const refusal = refusalOf(address);
    if (refusal) throw invalidWebhookUrl(`url's host ${host} resolves to ${refusal}.`, value);
  }
  return url.href;
}

/** The host of a URL without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
}

/** A name that does not resolve now (no DNS yet, a typo) is saved: each connection checks it again. */
function resolveForSave(host: string, lookup: LookupFunction): Promise<LookupAddress[]> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve([]), SAVE_LOOKUP_MS);
    lookup(host, { all: true }, (error, addresses) => {
      clearTimeout(timer);
      resolve(error ? [] : (addresses as unknown as LookupAddress[]));
    });
  });
}

/**
 * The lookup a connection uses: the name resolved, every address checked, and the connection made
 * to the checked address (node:net connects to what its lookup answers, never resolving again).
 */
export function checkedLookup(policy: TargetPolicy): LookupFunction {
  const lookup = policy.lookup ?? dnsLookup;
  return (hostname, options, callback) => {
    lookup(hostname, { ...options, all: true }, (error, found) => {
      if (error) return callback(error, "", 0);
      const addresses = found as unknown as LookupAddress[];
      if (!policy.allowPrivate) {
        for (const { address } of addresses) {
          const refusal = refusalOf(address);
          if (refusal) return callback(Object.assign(new Error(`${hostname} resolves to ${refusal}: refused`), { code: "EWEBHOOKTARGET" }), "", 0);
        }
      }
      if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} resolves to no address`), { code: "ENOTFOUND" }), "", 0);
      if (options.all) return (callback as unknown as (error: null, addresses: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}
