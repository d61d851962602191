// --max-memory (docs/operating.md, "Memory"): while the process's resident memory is near the budget,
// or V8's heap near its own limit, heavy requests (bulk writes, large bodies, aggregates, exports,
// long lists: routes.ts names them) are refused 503 server_busy, so that a burst of them is turned
// away before the process runs out of memory; light ones (a read by id, a small write, /health) go on.

import { readFileSync } from "node:fs";
import { totalmem } from "node:os";
import { getHeapStatistics } from "node:v8";
import { serverBusy } from "../errors.ts";
import { settingName } from "../option-names.ts";

/** Heavy requests are refused from this share of --max-memory (or of the heap's limit) on. */
export const BUSY_SHARE = 0.85;
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

export class MemoryGuard {
  private sampledAt = -Infinity;
  private rssBytes = 0;
  private heapBytes = 0;

  constructor(
    readonly maxMemoryBytes: number,
    readonly heapLimitBytes: number = getHeapStatistics().heap_size_limit,
    private readonly now: () => number = () => performance.now(),
  ) {}

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
    this.heapBytes = getHeapStatistics().used_heap_size;
  }
}
