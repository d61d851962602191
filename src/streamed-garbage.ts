// Bytes streamed through the process (an upload received, a file served) come and go
// in buffers node allocates outside V8's heap, one for each piece read from a socket or a file. Each is
// garbage as soon as it is passed on, yet freed only when V8 next collects, and V8 collects by the
// JavaScript it allocates, of which streaming makes little: in a server whose young generation
// had grown with its start-up, a first 50 MiB upload left 30 MiB more resident (a bare node:http
// server, 15 MiB). A young-generation collection (a scavenge: under a millisecond, as it finds
// little alive) after every few MiB streamed keeps that under 4 MiB (docs/operating.md, "Files stream through").
// V8 offers no other way to ask for one than gc(), which node exposes only under --expose-gc: the
// flag is set here once and gc() taken from a fresh context, as jest's leak detector does.
//
// A heavy write (a bulk write of megabytes) leaves its garbage in the old generation instead: the
// body's text, its parsed records, the log's line and the answer, each as large as the body. V8
// collects the old generation once it has grown by a share of what it holds, so twenty bulk writes
// of 9.5 MB left 100 MiB of garbage beside 226 MiB of records. Starting an incremental collection
// (marked on V8's helper threads and in small steps between requests, no long pause) after every
// 8 MiB of heavy bodies written keeps a write's peak near twice its size (docs/benchmarks.md,
// "Memory of bulk writes").

import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** Bytes streamed between two collections: a few pieces of 64 KiB to 1 MiB. */
const COLLECT_EVERY_BYTES = 4 * 1024 * 1024;
/** Bytes of heavy writes' bodies between two collections of the old generation: about one bulk write of the default --max-body. */
const COLLECT_OLD_EVERY_BYTES = 8 * 1024 * 1024;

type Collect = (options: { type: "minor" | "major"; execution?: "async" }) => void;

let bytesSinceCollect = 0;
let heavyBytesSinceCollect = 0;
let collect: Collect | undefined;

/** Counts `bytes` just passed on (written to disk, sent to a client); collects the young generation every 4 MiB. */
export function noteStreamed(bytes: number): void {
  bytesSinceCollect += bytes;
  if (bytesSinceCollect < COLLECT_EVERY_BYTES) return;
  bytesSinceCollect = 0;
  collectYoungGarbage();
}

/** Counts a heavy write's body, its answer sent; starts collecting the old generation every 8 MiB. */
export function noteHeavyWritten(bytes: number): void {
  heavyBytesSinceCollect += bytes;
  if (heavyBytesSinceCollect < COLLECT_OLD_EVERY_BYTES) return;
  heavyBytesSinceCollect = 0;
  // Near node's heap limit V8 collects often by itself, and asked to collect a heap that is all
  // records it takes the fruitless collections for thrashing and ends the process.
  const heap = getHeapStatistics();
  if (heap.used_heap_size > heap.heap_size_limit / 2) return;
  collector()({ type: "major", execution: "async" });
}

function collectYoungGarbage(): void {
  collector()({ type: "minor" });
}

function collector(): Collect {
  if (collect === undefined) {
    setFlagsFromString("--expose-gc");
    collect = runInNewContext("gc") as Collect;
  }
  return collect;
}
