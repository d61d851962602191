// Which process delivers webhooks, on a store several processes share (docs/webhooks.md, "Several
// processes"): the one holding the lease, a value of the store's metadata vault that its holder
// renews every RENEW_MS. Another process takes the lease once it has seen the value unchanged for
// LEASE_MS (by its own clock: no two clocks are compared), so a holder that died is replaced within
// about LEASE_MS + RENEW_MS. A holder that has not managed to renew for HOLD_MS stops delivering
// before anyone may take over. A store with one process (memory, file) needs no lease.

import { randomBytes } from "node:crypto";
import type { BatchWriter, MetadataStore } from "../store/store.ts";

const LEASE_KEY = "webhook-lease";
const RENEW_MS = 1000;
/** Unchanged this long, a lease is taken over. */
export const LEASE_MS = 4000;
/** A holder stops delivering when its last renewal is this old: well before another may take over. */
const HOLD_MS = 2500;

interface LeaseValue {
  readonly owner: string;
  readonly beat: number;
}

export interface Lease {
  /** Whether this process may deliver now. */
  isHeld(): boolean;
  /** Called when the lease is won or lost. */
  onChange(listener: () => void): void;
  close(): Promise<void>;
}

/** The lease of a store with one process: always held. */
export const SOLE_LEASE: Lease = { isHeld: () => true, onChange: () => {}, close: async () => {} };

export function storeLease(store: MetadataStore & BatchWriter, warn: (message: string) => void): Lease {
  const owner = randomBytes(8).toString("hex");
  let renewedAt = -Infinity;
  let wasHeld = false;
  /** The value another holder last showed, and when this process first saw it. */
  let seen = "";
  let seenAt = 0;
  let beat = 0;
  let isClosed = false;
  const listeners: Array<() => void> = [];
  const isHeld = () => !isClosed && performance.now() - renewedAt < HOLD_MS;
  const tell = () => {
    if (isHeld() === wasHeld) return;
    wasHeld = !wasHeld;
    for (const listener of listeners) listener();
  };

  let isTicking = false;
  const tick = async () => {
    if (isTicking) return;
    isTicking = true;
    try {
      await store.exclusively(LEASE_KEY, async () => {
        const value = (await store.meta(LEASE_KEY)) as LeaseValue | undefined;
        const text = JSON.stringify(value ?? null);
        const now = performance.now();
        if (text !== seen) [seen, seenAt] = [text, now];
        const isMine = value?.owner === owner;
        if (!isMine && value && now - seenAt < LEASE_MS) return;
        beat = Math.max(beat, value?.beat ?? 0) + 1;
        await store.commit({ puts: [], meta: [{ key: LEASE_KEY, value: { owner, beat } satisfies LeaseValue }] });
        renewedAt = performance.now();
        seen = JSON.stringify({ owner, beat });
      });
    } catch (error) {
      if (!isClosed) warn(`The webhook delivery lease could not be renewed: ${(error as Error).message}`);
    } finally {
      isTicking = false;
    }
    tell();
  };
  const timer = setInterval(() => void tick(), RENEW_MS).unref();
  // Between ticks: a holder that could not renew stops in time, even while a tick hangs.
  const watch = setInterval(tell, RENEW_MS / 4).unref();
  void tick();

  return {
    isHeld,
    onChange: (listener) => void listeners.push(listener),
    async close() {
      clearInterval(timer);
      clearInterval(watch);
      const held = isHeld();
      isClosed = true;
      tell();
      // Given back, so that another process takes over at its next tick rather than after LEASE_MS.
      if (held) await store.exclusively(LEASE_KEY, async () => {
        const value = (await store.meta(LEASE_KEY)) as LeaseValue | undefined;
        if (value?.owner === owner) await store.commit({ puts: [], meta: [{ key: LEASE_KEY, value: null }] });
      }).catch(() => {});
    },
  };
}
