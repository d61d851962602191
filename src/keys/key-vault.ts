// Where a store keeps API keys (docs/operating.md): the KeyVault interface, and the memory store's
// vault, which keeps them for as long as the process runs. The file store's is keys-file.ts, the
// PostgreSQL store's is its $keys table (store/postgres/key-vault.ts).

import type { StoredKey } from "./stored-keys.ts";

/** What a change to the stored keys returns: the keys to store (null: leave them as they are) and its answer. */
export interface KeyUpdate<T> {
  readonly keys: readonly StoredKey[] | null;
  readonly value: T;
}

export interface KeyUpdated<T> {
  /** The stored keys after the change. */
  readonly keys: readonly StoredKey[];
  readonly value: T;
  /** Entries that were kept in full and are now hashed (the first start after an upgrade). */
  readonly upgraded: number;
}

export interface KeyVault {
  /** Where, in words (a file name, a table); null when in memory. */
  readonly where: string | null;
  /** How often poll() is worth calling to see other processes' changes. */
  readonly pollMs: number;
  /**
   * Reads the stored keys and replaces them with what `change` makes of them, atomically: processes
   * and commands changing keys at once take turns. `change` may throw; then nothing is written.
   */
  update<T>(change: (stored: readonly StoredKey[]) => KeyUpdate<T>): Promise<KeyUpdated<T>>;
  /** The stored keys when they may have changed since the last update or poll, else null. */
  poll(): Promise<readonly StoredKey[] | null>;
  close(): Promise<void>;
}

/** The memory store's keys: managed like the others, gone when the process ends. */
export function memoryKeyVault(): KeyVault {
  let stored: readonly StoredKey[] = [];
  let tail: Promise<unknown> = Promise.resolve();
  return {
    where: null,
    pollMs: 0,
    update<T>(change: (stored: readonly StoredKey[]) => KeyUpdate<T>): Promise<KeyUpdated<T>> {
      const done = tail.then(() => {
        const { keys, value } = change(stored);
        if (keys !== null) stored = keys;
        return { keys: stored, value, upgraded: 0 };
      });
      tail = done.catch(() => {});
      return done;
    },
    poll: async () => null,
    close: async () => {},
  };
}
