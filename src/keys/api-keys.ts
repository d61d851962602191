// API keys (docs/api.md): read from where the store keeps them (a KeyVault: <data>/keys.json, or a
// table of the PostgreSQL store, which every process sharing the database reads) and from flags or
// env, generated when a kind has none, and resolved from X-Api-Key into a Caller. Generated keys
// are saved in the vault so that they are printed once; in memory mode they are made anew each start.

import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { unauthorized } from "../errors.ts";
import type { Caller, KeyKind } from "../records/caller.ts";
import { isPlainObject } from "../schema/load.ts";
import { replaceFileWith } from "../store/file/durable-file.ts";

export interface ApiKey {
  readonly id: string;
  readonly kind: KeyKind;
  readonly key: string;
}

/**
 * Where a store keeps API keys. update() reads the stored keys, adds those `addMissing` makes for
 * what they lack, and answers both, atomically: processes starting together agree on one set.
 */
export interface KeyVault {
  /** Where, in words: a file name or a table. */
  readonly where: string;
  update(addMissing: (stored: readonly ApiKey[]) => ApiKey[]): Promise<{ stored: ApiKey[]; added: ApiKey[] }>;
}

export interface KeyOptions {
  /** Where the store keeps keys; null in memory mode. */
  readonly vault: KeyVault | null;
  readonly secretKey?: string | undefined;
  readonly publishableKey?: string | undefined;
  /** Keys given by an embedding program. */
  readonly keys?: readonly ApiKey[] | undefined;
}

export class KeyError extends Error {
  override name = "KeyError";
}

export class KeyRing {
  /** Each key's Caller, made once: a request only looks its key up. */
  private readonly byValue = new Map<string, Caller>();

  constructor(
    readonly keys: readonly ApiKey[],
    /** Keys made by this start, printed in full once. */
    readonly generated: readonly ApiKey[],
    /** Where the keys are kept (KeyVault.where); null when nowhere. */
    readonly where: string | null,
  ) {
    for (const apiKey of keys) this.byValue.set(apiKey.key, Object.freeze({ keyId: apiKey.id, kind: apiKey.kind }));
  }

  first(kind: KeyKind): ApiKey {
    return this.keys.find((apiKey) => apiKey.kind === kind)!;
  }

  /** The caller a key's (trimmed) value names, or undefined: for a caller that answers a miss itself. */
  find(value: string): Caller | undefined {
    return this.byValue.get(value);
  }

  authenticate(header: string | string[] | undefined): Caller {
    const value = Array.isArray(header) ? header[0] : header;
    const caller = value ? this.find(value.trim()) : undefined;
    if (!caller) throw unauthorized(Boolean(value));
    return caller;
  }
}

export async function loadKeys(options: KeyOptions): Promise<KeyRing> {
  const given: ApiKey[] = [...(options.keys ?? [])];
  if (options.secretKey) given.push(keyFromFlag("secret", options.secretKey));
  if (options.publishableKey) given.push(keyFromFlag("publishable", options.publishableKey));
  const missing = (stored: readonly ApiKey[]) =>
    (["secret", "publishable"] as const).filter((kind) => ![...stored, ...given].some((apiKey) => apiKey.kind === kind)).map(generateKey);
  if (!options.vault) {
    const generated = missing([]);
    return new KeyRing([...given, ...generated], generated, null);
  }
  const { stored, added } = await options.vault.update(missing);
  return new KeyRing([...stored, ...given, ...added], added, options.vault.where);
}

/** The file store's vault: <data>/keys.json. */
export function keysFileVault(dataDir: string): KeyVault {
  const file = join(dataDir, "keys.json");
  return {
    where: file,
    async update(addMissing) {
      const stored = existsSync(file) ? readKeysFile(file) : [];
      const added = addMissing(stored);
      if (added.length > 0) await writeKeysFile(file, [...stored, ...added]);
      return { stored, added };
    },
  };
}

/** Checks stored keys (from a file or a table: `where` names it) as keys.json's entries are checked. */
export function checkStoredKeys(entries: unknown, where: string): ApiKey[] {
  if (!Array.isArray(entries)) throw new KeyError(`${where} must be an array of {"id", "kind", "key"}.`);
  const ids = new Set<string>();
  return entries.map((entry, index) => {
    const isValid =
      isPlainObject(entry) &&
      typeof entry.id === "string" && entry.id !== "" &&
      (entry.kind === "secret" || entry.kind === "publishable") &&
      typeof entry.key === "string" && entry.key.length >= 8;
    if (!isValid) {
      throw new KeyError(`${where}, entry ${index}: expected {"id": "<text>", "kind": "secret" | "publishable", "key": "<at least 8 characters>"}.`);
    }
    if (ids.has(entry.id as string)) throw new KeyError(`${where}, entry ${index}: the id "${entry.id}" is used twice.`);
    ids.add(entry.id as string);
    return { id: entry.id as string, kind: entry.kind as KeyKind, key: entry.key as string };
  });
}

/** A flag key's id is derived from the key, so records keep the same created_by_id across starts. */
function keyFromFlag(kind: KeyKind, key: string): ApiKey {
  return { id: `key_${createHash("sha256").update(key).digest("hex").slice(0, 12)}`, kind, key };
}

function generateKey(kind: KeyKind): ApiKey {
  const prefix = kind === "secret" ? "sk_" : "pk_";
  return { id: `key_${randomBytes(6).toString("hex")}`, kind, key: prefix + randomBytes(24).toString("base64url") };
}

function readKeysFile(file: string): ApiKey[] {
  let entries: unknown;
  try {
    entries = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new KeyError(`${file} is not valid JSON (${(error as Error).message}); fix it or delete it to have new keys generated.`);
  }
  return checkStoredKeys(entries, file);
}

/** Crash-safe (fsync, rename, fsync of the folder): a torn or empty keys.json would lock every client out. */
function writeKeysFile(file: string, keys: readonly ApiKey[]): Promise<void> {
  return replaceFileWith(file, JSON.stringify(keys, null, 2) + "\n", 0o600);
}
