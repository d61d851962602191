// Benchmarks the file store alone (no HTTP): durable write throughput at several concurrencies with
// fdatasync on, then start-up time, resident memory and log size before and after compaction for
// RECORDS records. Run: npx tsx bench/store-bench.ts [RECORDS]   (default 1,000,000)

import { spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { FileStore } from "../src/store/file/file-store.ts";
import type { Row } from "../src/store/store.ts";

const THROUGHPUT_SECONDS = 3;
const CONCURRENCIES = [1, 16, 64];
const LOAD_BATCH_ROWS = 1000;
const STATUSES = ["todo", "doing", "done"];
const MIB = 1024 * 1024;

function openStore(dir: string): Promise<FileStore> {
  return FileStore.open({ dir, valueIndexed: new Map([["Task", ["status"]]]), warn: (message) => console.warn(message) });
}

let idCounter = 0;
function smallRow(store: FileStore): Row {
  const id = Date.now().toString(16).padStart(12, "0") + (++idCounter).toString(16).padStart(12, "0");
  const now = new Date().toISOString();
  const n = idCounter;
  const data = { id, title: `Task number ${n}`, status: STATUSES[n % 3], priority: n % 5, created_date: now, updated_date: now, created_by_id: "key_1" };
  return { id, rev: store.nextRev(), deleted: false, data };
}

async function measureThroughput(concurrency: number): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "tabula-bench-"));
  const store = await openStore(dir);
  const deadline = performance.now() + THROUGHPUT_SECONDS * 1000;
  let writes = 0;
  const worker = async (): Promise<void> => {
    while (performance.now() < deadline) {
      await store.commit({ puts: [{ entity: "Task", row: smallRow(store) }] });
      writes++;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  const { fsyncs } = store.describe();
  console.log(`concurrency ${String(concurrency).padStart(2)}: ${Math.round(writes / seconds)} durable writes/s, ${(writes / fsyncs).toFixed(1)} writes per fdatasync`);
  await store.close();
  await rm(dir, { recursive: true, force: true });
}

async function load(dir: string, records: number): Promise<void> {
  const store = await openStore(dir);
  const started = performance.now();
  for (let done = 0; done < records; done += LOAD_BATCH_ROWS) {
    const puts = Array.from({ length: Math.min(LOAD_BATCH_ROWS, records - done) }, () => ({ entity: "Task", row: smallRow(store) }));
    await store.commit({ puts });
  }
  const { logBytes, snapshotBytes } = store.describe();
  await store.close();
  console.log(`loaded ${records} records in ${((performance.now() - started) / 1000).toFixed(1)} s (batches of ${LOAD_BATCH_ROWS}; automatic compactions on): log ${(logBytes / MIB).toFixed(1)} MiB, snapshot ${(snapshotBytes / MIB).toFixed(1)} MiB`);
}

interface OpenReport {
  openMs: number;
  rssMiB: number;
  heapMiB: number;
  description: ReturnType<FileStore["describe"]>;
  compaction?: { ms: number; maxStallMs: number; after: ReturnType<FileStore["describe"]> };
}

/** Opens the folder in a fresh process, so that start-up time and memory are those of a real start. */
function describeAfterOpen(dir: string, compact = false): OpenReport {
  const child = spawnSync(process.execPath, ["--expose-gc", "--import", "tsx", fileURLToPath(import.meta.url), "--open", dir, compact ? "--compact" : ""], { encoding: "utf8" });
  if (child.status !== 0) throw new Error(`opening ${dir} failed: ${child.stderr}`);
  return JSON.parse(child.stdout.trim().split("\n").at(-1)!) as OpenReport;
}

async function openAndReport(dir: string, compact: boolean): Promise<void> {
  const started = performance.now();
  const store = await openStore(dir);
  const openMs = performance.now() - started;
  global.gc?.();
  const memory = process.memoryUsage();
  const report: OpenReport = { openMs, rssMiB: memory.rss / MIB, heapMiB: memory.heapUsed / MIB, description: store.describe() };
  if (compact) {
    const stalls = monitorEventLoopDelay({ resolution: 5 });
    stalls.enable();
    const compactStarted = performance.now();
    await store.compact();
    stalls.disable();
    report.compaction = { ms: performance.now() - compactStarted, maxStallMs: stalls.max / 1e6, after: store.describe() };
  }
  await store.close();
  console.log(JSON.stringify(report));
}

function printOpen(label: string, report: OpenReport): void {
  const { records, logBytes, snapshotBytes } = report.description;
  console.log(
    `${label}: ${records} records open in ${(report.openMs / 1000).toFixed(2)} s, RSS ${report.rssMiB.toFixed(0)} MiB (heap ${report.heapMiB.toFixed(0)} MiB); ` +
      `log ${(logBytes / MIB).toFixed(1)} MiB + snapshot ${(snapshotBytes / MIB).toFixed(1)} MiB`,
  );
}

async function main(): Promise<void> {
  const records = Number(process.argv[2] ?? 1_000_000);
  for (const concurrency of CONCURRENCIES) await measureThroughput(concurrency);
  const dir = await mkdtemp(join(tmpdir(), "tabula-bench-"));
  try {
    await load(dir, records);
    const beforeCompaction = describeAfterOpen(dir, true);
    printOpen("start-up (snapshot + log)", beforeCompaction);
    const { ms, maxStallMs, after } = beforeCompaction.compaction!;
    console.log(`compaction: ${(ms / 1000).toFixed(2)} s, longest event-loop stall ${maxStallMs.toFixed(0)} ms; log ${(beforeCompaction.description.logBytes / MIB).toFixed(1)} MiB → ${(after.logBytes / MIB).toFixed(1)} MiB, snapshot ${(after.snapshotBytes / MIB).toFixed(1)} MiB`);
    printOpen("start-up (snapshot only)", describeAfterOpen(dir));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === "--open") await openAndReport(process.argv[3]!, process.argv[4] === "--compact");
else await main();
