// What a key vault keeps of an API key (docs/operating.md, "keys.json"): its SHA-256 and its first
// characters, never the key. This module hashes, generates and checks such entries; where they are
// kept (a file, a table, memory) is each KeyVault's.

import { createHash, randomBytes } from "node:crypto";
import type { KeyKind } from "./caller.ts";
import { isPlainObject } from "../schema/load.ts";

/** A key as a vault keeps it. Times are ISO 8601; last_used is to the minute. */
export interface StoredKey {
  readonly id: string;
  readonly kind: KeyKind;
  readonly name: string;
  /** The key's first PREFIX_LENGTH characters: enough to tell keys apart, not to use one. */
  readonly prefix: string;
  /** Hex SHA-256 of the key. */
  readonly sha256: string;
  readonly created: string;
  readonly expires_at: string | null;
  readonly last_used?: string | null;
}

/** A key made just now, known in full until it has been shown once. */
export interface NewKey {
  readonly stored: StoredKey;
  readonly key: string;
}

export const PREFIX_LENGTH = 8;
/** Names are for people reading a list; this keeps the list readable. */
export const MAX_KEY_NAME_LENGTH = 100;

export class KeyError extends Error {
  override name = "KeyError";
}

export function sha256Of(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

export function kindPrefix(kind: KeyKind): string {
  return kind === "secret" ? "sk_" : "pk_";
}

export function generateKey(kind: KeyKind, name: string, expiresAt: string | null = null, now = Date.now()): NewKey {
  const key = kindPrefix(kind) + randomBytes(24).toString("base64url");
  const id = `key_${randomBytes(6).toString("hex")}`;
  return { key, stored: { id, kind, name, prefix: key.slice(0, PREFIX_LENGTH), sha256: sha256Of(key), created: new Date(now).toISOString(), expires_at: expiresAt, last_used: null } };
}

/** An entry kept in full (keys.json or a table before keys were hashed), as it is kept now. */
export function hashedEntry(id: string, kind: KeyKind, key: string, now = Date.now()): StoredKey {
  return { id, kind, name: "upgraded", prefix: key.slice(0, PREFIX_LENGTH), sha256: sha256Of(key), created: new Date(now).toISOString(), expires_at: null, last_used: null };
}

export function isExpired(stored: StoredKey, now: number): boolean {
  return stored.expires_at !== null && Date.parse(stored.expires_at) <= now;
}

/** The minute a key was used in, as last_used keeps it. */
export function minuteOf(ms: number): string {
  return new Date(Math.floor(ms / 60_000) * 60_000).toISOString();
}

const ENTRY_FORM = `{"id", "kind": "secret" | "publishable", "name", "prefix", "sha256", "created", "expires_at"}`;

/**
 * Checks stored entries (from a file or a table: `where` names it). Entries kept in full, as
 * {"id", "kind", "key"} (before keys were hashed), are hashed: `upgraded` counts them.
 */
export function checkStoredKeys(entries: unknown, where: string, now = Date.now()): { keys: StoredKey[]; upgraded: number } {
  if (!Array.isArray(entries)) throw new KeyError(`${where} must be an array of ${ENTRY_FORM}.`);
  const ids = new Set<string>();
  let upgraded = 0;
  const keys = entries.map((entry: unknown, index) => {
    const at = `${where}, entry ${index}`;
    if (!isPlainObject(entry) || typeof entry.id !== "string" || entry.id === "" || (entry.kind !== "secret" && entry.kind !== "publishable")) {
      throw new KeyError(`${at}: expected ${ENTRY_FORM}.`);
    }
    if (ids.has(entry.id)) throw new KeyError(`${at}: the id "${entry.id}" is used twice.`);
    ids.add(entry.id);
    if ("key" in entry) {
      if (typeof entry.key !== "string" || entry.key.length < 8) throw new KeyError(`${at}: "key" must be at least 8 characters.`);
      upgraded++;
      return hashedEntry(entry.id, entry.kind as KeyKind, entry.key, now);
    }
    const isValid =
      typeof entry.name === "string" &&
      typeof entry.prefix === "string" &&
      typeof entry.sha256 === "string" && /^[0-9a-f]{64}$/.test(entry.sha256) &&
      isTime(entry.created) &&
      (entry.expires_at === null || entry.expires_at === undefined || isTime(entry.expires_at)) &&
      (entry.last_used === null || entry.last_used === undefined || isTime(entry.last_used));
    if (!isValid) throw new KeyError(`${at}: expected ${ENTRY_FORM} (times in ISO 8601, sha256 as 64 hex digits).`);
    return {
      id: entry.id,
      kind: entry.kind as KeyKind,
      name: entry.name as string,
      prefix: entry.prefix as string,
      sha256: entry.sha256 as string,
      created: entry.created as string,
      expires_at: (entry.expires_at as string | null | undefined) ?? null,
      last_used: (entry.last_used as string | null | undefined) ?? null,
    };
  });
  return { keys, upgraded };
}

function isTime(value: unknown): boolean {
  return typeof value === "string" && !Number.isNaN(Date.parse(value));
}
