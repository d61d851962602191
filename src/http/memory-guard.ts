// --max-memory (docs/operating.md, "Memory"): while the process's resident memory is near the budget,
// or V8's heap near its own limit, heavy requests (bulk writes, large bodies, aggregates, exports,
// long lists: routes.ts names them) are refused 503 server_busy, so that a burst of them is turned
// away before the process runs out of memory; light ones (a read by id, a small write, /health) go on.
//
// Records themselves fill the heap too, and small writes can do it: an object of a hundred keys no
// other record has costs V8 about twelve times its JSON, so 80 MB of creates of 55 kB each ended a
// server under a 512 MiB heap. V8 ends a process whose heap stays over 80% of its limit after full
// collections ("ineffective mark-compacts"); so once the heap holds FULL_HEAP_SHARE of its limit
// after a full collection, every write is refused until it holds less: the server stays up for
// reads, and says what to do.

import { readFileSync } from "node:fs";
import { totalmem } from "node:os";
import { constants as perfConstants, PerformanceObserver } from "node:perf_hooks";
import { getHeapSpaceStatistics, getHeapStatistics } from "node:v8";
import { heapFull, serverBusy } from "../errors.ts";
import { settingName } from "../option-names.ts";

/** Heavy requests are refused from this share of --max-memory (or of the heap's limit) on. */
export const BUSY_SHARE = 0.85;
/**
 * Writes are refused while the old generation holds this share of its limit after a full
 * collection: V8 gives up on one that stays over 80% of it, and the writes under way need room.
 */
export const FULL_HEAP_SHARE = 0.65;
/** A full heap is told to the operator at most this often. */
const HEAP_FULL_WARN_MS = 60_000;
/** Memory is read at most this often: a read of /proc costs microseconds, and heavy requests come in bursts. */
const SAMPLE_MS = 5;
/** Where a cgroup (a container, a systemd unit) states its memory limit: v2, then v1. */
const CGROUP_LIMIT_FILES = ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"];

/** The default --max-memory: the cgroup's limit where one is set, else the machine's memory. */
export function defaultMaxMemoryBytes(): number {
  let bytes = totalmem();
  for (const file of CGROUP_LIMIT_FILES) {
    const limit = readCgroupLimit(file);
    if (limit !== null && limit < bytes) bytes = limit;
  }
  return bytes;
}

/** A cgroup's limit in bytes; null where none is set ("max", or v1's near-2^63 "unlimited") or the file is missing. */
function readCgroupLimit(file: string): number | null {
  let text: string;
  try {
    text = readFileSync(file, "utf8").trim();
  } catch {
    return null; // no cgroup file here (not Linux, or no memory controller): no limit of its own
  }
  const bytes = /^\d+$/.test(text) ? Number(text) : NaN;
  return Number.isFinite(bytes) && bytes > 0 && bytes < 2 ** 60 ? bytes : null;
}

/**
 * V8's young generation at its largest (two semi-spaces of 16 MiB and their large objects, on
 * 64-bit): getHeapStatistics().heap_size_limit is it plus the old generation's limit, which is
 * node's --max-old-space-size and what records fill.
 */
const YOUNG_GENERATION_BYTES = 48 * 1024 * 1024;
const YOUNG_SPACES = new Set(["new_space", "new_large_object_space"]);

/** The old generation's limit: node --max-old-space-size, or V8's default for this machine. */
export function oldGenerationLimitBytes(): number {
  const { heap_size_limit: limit } = getHeapStatistics();
  return Math.max(limit - YOUNG_GENERATION_BYTES, limit / 2);
}

/** What the old generation holds now, garbage included. */
function oldGenerationUsedBytes(): number {
  let used = 0;
  for (const space of getHeapSpaceStatistics()) if (!YOUNG_SPACES.has(space.space_name)) used += space.space_used_size;
  return used;
}

/** What the old generation held just after V8's last full collection: its live data then; 0 before the first. */
let oldGenerationKeptBytes = 0;
let isWatchingCollections = false;

/** Follows full collections for the whole process (its heap is one, whatever servers it runs). */
function watchFullCollections(): void {
  if (isWatchingCollections) return;
  isWatchingCollections = true;
  new PerformanceObserver((list) => {
    if (list.getEntries().some((entry) => (entry as unknown as { detail?: { kind?: number } }).detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR)) {
      oldGenerationKeptBytes = oldGenerationUsedBytes();
    }
  }).observe({ entryTypes: ["gc"] });
}

export class MemoryGuard {
  private sampledAt = -Infinity;
  private rssBytes = 0;
  private heapBytes = 0;

  private heapFullWarnedAt = -Infinity;

  constructor(
    readonly maxMemoryBytes: number,
    /** Tells the operator, once a minute at most, that writes are being refused for a full heap. */
    private readonly warn: (message: string) => void = () => {},
    /** The old generation's limit (oldGenerationLimitBytes). */
    readonly heapLimitBytes: number = oldGenerationLimitBytes(),
    private readonly now: () => number = () => performance.now(),
  ) {
    watchFullCollections();
  }

  /** Refuses any write (503 server_busy) while the heap is full of what it keeps (FULL_HEAP_SHARE). */
  admitWrite(): void {
    if (oldGenerationKeptBytes < FULL_HEAP_SHARE * this.heapLimitBytes) return;
    const refusal = heapFull(oldGenerationKeptBytes, this.heapLimitBytes);
    const now = this.now();
    if (now - this.heapFullWarnedAt >= HEAP_FULL_WARN_MS) {
      this.heapFullWarnedAt = now;
      this.warn(refusal.message);
    }
    throw refusal;
  }

  /** Refuses a heavy request (503 server_busy) while memory is near either limit. */
  admitHeavy(): void {
    this.sample();
    if (this.rssBytes >= BUSY_SHARE * this.maxMemoryBytes) throw serverBusy("resident", this.rssBytes, this.maxMemoryBytes, settingName("maxMemoryBytes"));
    if (this.heapBytes >= BUSY_SHARE * this.heapLimitBytes) throw serverBusy("heap", this.heapBytes, this.heapLimitBytes, settingName("maxMemoryBytes"));
  }

  private sample(): void {
    const now = this.now();
    if (now - this.sampledAt < SAMPLE_MS) return;
    this.sampledAt = now;
    this.rssBytes = process.memoryUsage.rss();
    this.heapBytes = oldGenerationUsedBytes();
  }
}
