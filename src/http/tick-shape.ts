// Keeps the shape of node's tick objects alive, so that process.nextTick stays fast in a server
// with a big heap.
//
// process.nextTick builds each queued callback as an object literal with two computed (symbol)
// keys, and node:http and its streams call it several times per request. V8 defines the literal's
// properties from feedback that names the hidden classes (maps) the object passes through; those
// maps are held only weakly. Full (mark-compact) collections at moments when no tick is queued
// free them (V8 keeps unused maps through a few), the next tick builds new ones, the feedback no
// longer matches and turns megamorphic, and it never turns back: from then on every tick defines
// its properties through the V8 runtime.
// A bare server never has such collections; tabula, holding every record in memory, has them soon
// after its first bulk writes, and then every tick of a read by id pays for it: several percent of
// the server's CPU under a load of reads by id.
// One tick object held for the life of the process keeps its maps, and the feedback, alive.

import { executionAsyncResource } from "node:async_hooks";

let keptTick: object | null = null;
let isScheduled = false;

/** Schedules the capture once per process; call it before the store loads (and collects). */
export function keepTickShape(): void {
  if (isScheduled) return;
  isScheduled = true;
  // Inside a nextTick callback, the execution's async resource is the tick object itself.
  process.nextTick(() => {
    keptTick = executionAsyncResource();
  });
}

/** The tick object held (null until the first tick after keepTickShape), for tests. */
export function heldTick(): object | null {
  return keptTick;
}
