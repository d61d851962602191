// Bytes streamed through the process (an upload received, a file served) come and go
// in buffers node allocates outside V8's heap, one for each piece read from a socket or a file. Each is
// garbage as soon as it is passed on, yet freed only when V8 next collects, and V8 collects by the
// JavaScript it allocates, of which streaming makes little: in a server whose young generation
// had grown with its start-up, a first 50 MiB upload left 30 MiB more resident (a bare node:http
// server, 15 MiB). A young-generation collection (a scavenge: under a millisecond, as it finds
// little alive) after every few MiB streamed keeps that under 4 MiB (docs/operating.md, "Files stream through").
// V8 offers no other way to ask for one than gc(), which node exposes only under --expose-gc: the
// flag is set here once and gc() taken from a fresh context, as jest's leak detector does.

import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** Bytes streamed between two collections: a few pieces of 64 KiB to 1 MiB. */
const COLLECT_EVERY_BYTES = 4 * 1024 * 1024;

type Collect = (options: { type: "minor" }) => void;

let bytesSinceCollect = 0;
let collect: Collect | undefined;

/** Counts `bytes` just passed on (written to disk, sent to a client); collects the young generation every 4 MiB. */
export function noteStreamed(bytes: number): void {
  bytesSinceCollect += bytes;
  if (bytesSinceCollect < COLLECT_EVERY_BYTES) return;
  bytesSinceCollect = 0;
  collectYoungGarbage();
}

function collectYoungGarbage(): void {
  if (collect === undefined) {
    setFlagsFromString("--expose-gc");
    collect = runInNewContext("gc") as Collect;
  }
  collect({ type: "minor" });
}
