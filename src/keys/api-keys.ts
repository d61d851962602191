// API keys at start-up (docs/api.md, "Keys"): the keys the store keeps (a KeyVault: <data>/keys.json,
// a table of the PostgreSQL store, or memory), the keys given by flag, env or an embedding program,
// and one of each kind generated when none is there, printed once and kept as a hash only.

import { createHash } from "node:crypto";
import type { KeyKind } from "./caller.ts";
import { KeyRing, type GivenKey } from "./key-ring.ts";
import { memoryKeyVault, type KeyVault } from "./key-vault.ts";
import { generateKey, isExpired } from "./stored-keys.ts";

export { KeyRing } from "./key-ring.ts";
export type { KeyVault } from "./key-vault.ts";
export { KeyError } from "./stored-keys.ts";

/** A key given in full (the embedding API's `keys`). */
export interface ApiKey {
  readonly id: string;
  readonly kind: KeyKind;
  readonly key: string;
}

export interface KeyOptions {
  /** Where the store keeps keys; null: in memory, for as long as the process runs. */
  readonly vault: KeyVault | null;
  readonly secretKey?: string | undefined;
  readonly publishableKey?: string | undefined;
  /** Keys given by an embedding program. */
  readonly keys?: readonly ApiKey[] | undefined;
  readonly warn?: (message: string) => void;
}

export async function loadKeys(options: KeyOptions): Promise<KeyRing> {
  const given: GivenKey[] = (options.keys ?? []).map((apiKey) => ({ ...apiKey, source: "flag" }));
  if (options.secretKey) given.push(keyFromFlag("secret", options.secretKey));
  if (options.publishableKey) given.push(keyFromFlag("publishable", options.publishableKey));
  const vault = options.vault ?? memoryKeyVault();
  const now = Date.now();
  const { keys, value: generated, upgraded } = await vault.update((stored) => {
    const live = stored.filter((key) => !isExpired(key, now));
    const missing = (["secret", "publishable"] as const).filter((kind) => ![...live, ...given].some((key) => key.kind === kind));
    const made = missing.map((kind) => generateKey(kind, "default", null, now));
    return { keys: made.length > 0 ? [...stored, ...made.map((key) => key.stored)] : null, value: made };
  });
  return new KeyRing(vault, given, keys, generated, upgraded, options.warn ?? ((message) => process.stderr.write(`warning: ${message}\n`)));
}

/** A flag key's id is derived from the key, so records keep the same created_by_id across starts. */
function keyFromFlag(kind: KeyKind, key: string): GivenKey {
  return { id: `key_${createHash("sha256").update(key).digest("hex").slice(0, 12)}`, kind, key, source: "flag" };
}
