// Where a webhook may be sent (docs/webhooks.md, "Safety"): an http(s) URL whose host is not on
// loopback, a private network, link-local, a cloud's metadata address or this machine's own, nor an
// IPv6 address that carries one of those. The check runs when an endpoint is saved and again at
// every connection, on the address the connection will use (the name resolved here, then connected
// to as resolved), so a name that later resolves to such an address is refused too.
// --webhooks-allow-private lifts it (receivers on 127.0.0.1 in tests).

import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP } from "node:net";
import type { LookupFunction } from "node:net";
import { networkInterfaces } from "node:os";
import { invalidWebhookUrl } from "../errors.ts";
import { ipv4TextOf, ipv6GroupsOf, ipv6TextOf } from "../ipv6-groups.ts";

/** The longest endpoint URL kept. */
export const MAX_WEBHOOK_URL_CHARS = 2048;
/** A name that does not resolve within this long, when an endpoint is saved, is kept unchecked (checked at each connection). */
const SAVE_LOOKUP_MS = 2000;

/**
 * Addresses no webhook reaches (IANA special-purpose registries): "this network", private (RFC
 * 1918, unique local), shared (RFC 6598, where Alibaba's metadata address lives), loopback,
 * link-local (169.254.169.254 is the metadata address of AWS, GCP and Azure), benchmarking,
 * multicast and reserved. 0.0.0.0 and :: reach this machine, as its loopback does.
 */
const REFUSED = new BlockList();
const REFUSED_KIND = "a loopback, private, link-local or metadata address";
for (const [network, prefix] of [
  ["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16], ["172.16.0.0", 12],
  ["192.0.0.0", 24], ["192.168.0.0", 16], ["198.18.0.0", 15], ["224.0.0.0", 4], ["240.0.0.0", 4],
] as const) {
  REFUSED.addSubnet(network, prefix, "ipv4");
}
// ::/128 and ::1, unique local (fd00:ec2::254 is AWS's metadata address), site- and link-local,
// multicast, and NAT64 for local use (RFC 8215: a translator of the local network, which may place
// the IPv4 address at any of RFC 6052's offsets, so the whole prefix is refused).
for (const [network, prefix] of [["::", 127], ["fc00::", 7], ["fec0::", 10], ["fe80::", 10], ["ff00::", 8], ["64:ff9b:1::", 48]] as const) REFUSED.addSubnet(network, prefix, "ipv6");

/**
 * Why `address` may not be reached under `policy`, or null when it may: the one check made when an
 * endpoint is saved and at each connection. An IPv6 address that carries an IPv4 address (see
 * embeddedIpv4Of) is refused when that IPv4 address is.
 */
export function refusalOf(address: string, policy: TargetPolicy): string | null {
  if (policy.allowPrivate) return null;
  const family = isIP(address);
  if (family === 0) return `${address} is not an IP address`;
  // Read at each check: an interface may come, go or change its address while tabula runs.
  const own = ownAddresses();
  if (family === 4) {
    const kind = refusedIpv4Kind(address, own);
    return kind && `${address} is ${kind}`;
  }
  const groups = ipv6GroupsOf(address);
  const text = ipv6TextOf(groups);
  if (REFUSED.check(text, "ipv6")) return `${address} is ${REFUSED_KIND}`;
  const name = own.get(text);
  if (name !== undefined) return `${address} is an address of this machine (${name})`;
  const embedded = embeddedIpv4Of(groups);
  const kind = embedded && refusedIpv4Kind(embedded.address, own);
  return kind ? `${address} embeds ${embedded!.address} (${embedded!.form}), ${kind}` : null;
}

function refusedIpv4Kind(address: string, own: ReadonlyMap<string, string>): string | null {
  if (REFUSED.check(address, "ipv4")) return REFUSED_KIND;
  const name = own.get(address);
  return name === undefined ? null : `an address of this machine (${name})`;
}

/**
 * Every address of this machine's interfaces (IPv6 as eight hex groups), with the interface's name.
 * A receiver bound to 0.0.0.0 answers on each, the public-facing one too, where a cloud firewall
 * hides it from everyone but this machine.
 */
function ownAddresses(): Map<string, string> {
  const own = new Map<string, string>();
  for (const [name, addresses] of Object.entries(networkInterfaces())) {
    for (const { address } of addresses ?? []) {
      const family = isIP(address);
      if (family === 4) own.set(address, name);
      else if (family === 6) own.set(ipv6TextOf(ipv6GroupsOf(address)), name);
    }
  }
  return own;
}

/**
 * The IPv4 address an IPv6 address leads to, where this host, a translator or a relay takes it
 * there: IPv4-compatible (::a.b.c.d), IPv4-mapped (::ffff:a.b.c.d), IPv4-translated
 * (::ffff:0:a.b.c.d, RFC 2765), NAT64's well-known prefix (64:ff9b::/96, RFC 6052), 6to4
 * (2002::/16, RFC 3056: the 32 bits after the prefix) and Teredo (2001::/32, RFC 4380: the client,
 * the last 32 bits inverted).
 */
function embeddedIpv4Of(groups: readonly number[]): { address: string; form: string } | null {
  const [g0, g1, g2, g3, g4, g5, g6, g7] = groups as [number, number, number, number, number, number, number, number];
  const zeroTo = (end: number) => groups.slice(0, end).every((group) => group === 0);
  if (zeroTo(6)) return { address: ipv4TextOf(g6, g7), form: "IPv4-compatible" };
  if (zeroTo(5) && g5 === 0xffff) return { address: ipv4TextOf(g6, g7), form: "IPv4-mapped" };
  if (zeroTo(4) && g4 === 0xffff && g5 === 0) return { address: ipv4TextOf(g6, g7), form: "IPv4-translated" };
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return { address: ipv4TextOf(g6, g7), form: "NAT64" };
  if (g0 === 0x2002) return { address: ipv4TextOf(g1, g2), form: "6to4" };
  if (g0 === 0x2001 && g1 === 0) return { address: ipv4TextOf(g6 ^ 0xffff, g7 ^ 0xffff), form: "Teredo client" };
  return null;
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
  const refusal = await refusalOfUrl(url, policy);
  if (refusal) throw invalidWebhookUrl(`url's host ${refusal}.`, value);
  return url.href;
}

/**
 * Why `url`'s host may not be reached now, or null: its address, or those its name resolves to now
 * (a name that does not resolve is let through: each connection checks it again).
 */
export async function refusalOfUrl(url: URL, policy: TargetPolicy): Promise<string | null> {
  if (policy.allowPrivate) return null;
  const host = hostOf(url);
  // RFC 6761: localhost and its subdomains are the loopback, whatever a resolver says.
  if (host === "localhost" || host.endsWith(".localhost")) return `${host} is this machine`;
  if (isIP(host) !== 0) return refusalOf(host, policy);
  for (const { address } of await resolveForSave(host, policy.lookup ?? dnsLookup)) {
    const refusal = refusalOf(address, policy);
    if (refusal) return `${host} resolves to ${refusal}`;
  }
  return null;
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
      for (const { address } of addresses) {
        const refusal = refusalOf(address, policy);
        if (refusal) return callback(Object.assign(new Error(`${hostname} resolves to ${refusal}`), { code: "EWEBHOOKTARGET" }), "", 0);
      }
      if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} resolves to no address`), { code: "ENOTFOUND" }), "", 0);
      if (options.all) return (callback as unknown as (error: null, addresses: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}
