// The pause writes see while a backup is taken (issue 21, docs/operating.md). tabula runs as a child on
// a fresh data folder (file store, fsync before every answer), seeded through POST /bulk; durable
// creates then run at a fixed concurrency, first alone (the baseline), then while a backup is taken
// by POST /api/admin/backup (the server copies its own folder), then while `tabula backup --data`
// copies it from another process beside the server. Each answer is sorted by whether it overlapped
// the backup; the report gives p50/p99/max of each group and the backup's own duration.
//
// A first run of creates is not counted (warm-up); a baseline run comes before the backups and one after.
//
//   node bench/backup-pause.mjs [--records 200000] [--duration 6] [--connections 32] [--keep]

import { execFile } from "node:child_process";
import { copyFileSync, mkdtempSync, readdirSync, rmSync, statfsSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { buildRequest, runLoad } from "./load.mjs";
import { dataFiles, startChild, stopChild } from "./machine.mjs";
import { createRandom, makeTask, TASK_SCHEMA } from "./task-schema.mjs";

const SECRET_KEY = "sk_bench_secret_";
const BULK_RECORDS = 1000;
const POOL_SIZE = 4096;
/** Creates run this long before a backup starts (the warm-up is before that). */
const LEAD_MS = 1500;
const WARMUP_MS = 500;
const TMPFS_MAGIC = 0x01021994;
/** The seeding's last compaction is over once no snapshot .tmp file has been seen for this long. */
const SETTLE_QUIET_MS = 3000;

const { values: options } = parseArgs({
  options: { records: { type: "string", default: "200000" }, duration: { type: "string", default: "6" }, connections: { type: "string", default: "32" }, keep: { type: "boolean", default: false } },
});
const RECORDS = Number(options.records);
const DURATION_MS = Number(options.duration) * 1000;
const CONNECTIONS = Number(options.connections);

async function main() {
  const dir = mkdtempSync(join(os.tmpdir(), "tabula-backup-bench-"));
  const dataDir = join(dir, "data");
  const cli = join(dir, "tabula.mjs");
  copyFileSync(new URL("../dist/tabula.mjs", import.meta.url), cli);
  writeFileSync(join(dir, "schema.json"), JSON.stringify(TASK_SCHEMA));
  if (statfsSync(dir).type === TMPFS_MAGIC) console.log(`warning: ${dir} is on tmpfs, where fsync costs nothing; set TMPDIR to a disk folder.`);
  const server = await startChild("tabula", [cli, "--schema", join(dir, "schema.json"), "--data", dataDir, "--port", "0", "--secret-key", SECRET_KEY, "--log", "off"]);
  const rows = [];
  try {
    const seedMs = await seed(server, RECORDS);
    await settle(dataDir);
    const files = dataFiles(dataDir);
    const random = createRandom(21);
    const creates = Array.from({ length: POOL_SIZE }, (_, i) => buildRequest("POST", "/api/entities/Task", { headers: { "X-Api-Key": SECRET_KEY }, body: makeTask(RECORDS + i, random) }));
    // A run whose figures are dropped: the create path's first run pays for JIT and for the
    // seeding's dirty pages still going to disk.
    await measure(server, creates, null);
    rows.push(row("no backup (baseline, before)", (await measure(server, creates, null)).all));
    const byHttp = await measure(server, creates, async () => {
      const answer = await fetch(`${server.url}/api/admin/backup`, { method: "POST", headers: { "X-Api-Key": SECRET_KEY, "Content-Type": "application/json" }, body: JSON.stringify({ to: join(dir, "backup-http") }) });
      if (!answer.ok) throw new Error(`POST /api/admin/backup answered ${answer.status}: ${await answer.text()}`);
      return answer.json();
    });
    rows.push(row("POST /api/admin/backup: writes overlapping the backup", byHttp.during, byHttp.backup), row("  the same run, writes not overlapping it", byHttp.outside));
    const byCli = await measure(server, creates, () => runCli(cli, ["backup", "--data", dataDir, "--to", join(dir, "backup-cli")]));
    rows.push(row("tabula backup --data (another process): writes overlapping it", byCli.during, byCli.backup), row("  the same run, writes not overlapping it", byCli.outside));
    rows.push(row("no backup (baseline, after)", (await measure(server, creates, null)).all));
    const after = dataFiles(dataDir);
    console.log(`\n## Backup pause: durable creates at c=${CONNECTIONS} on ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? "?"}\n`);
    console.log(`Seeded ${RECORDS.toLocaleString("en-US")} records in ${(seedMs / 1000).toFixed(1)} s; data folder before the runs: ${describeFiles(files)}; after them: ${describeFiles(after)}.\n`);
    console.log("| writes | answers | p50 ms | p99 ms | max ms | backup |");
    console.log("|---|---|---|---|---|---|");
    for (const line of rows) console.log(line);
    console.log(`\nEach run: ${(WARMUP_MS / 1000).toFixed(1)} s warm-up, then ${(DURATION_MS / 1000).toFixed(1)} s measured; the backup starts ${(LEAD_MS / 1000).toFixed(1)} s into it. "Overlapping": sent before the backup ended and answered after it began.`);
  } finally {
    await stopChild(server.proc);
    if (options.keep) console.log(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

/** Bulk creates of BULK_RECORDS, one request at a time; answers the time taken. */
async function seed(server, records) {
  const random = createRandom(1);
  const requests = Math.ceil(records / BULK_RECORDS);
  const bulk = (n) => buildRequest("POST", "/api/entities/Task/bulk", { headers: { "X-Api-Key": SECRET_KEY }, body: Array.from({ length: Math.min(BULK_RECORDS, records - n * BULK_RECORDS) }, (_, i) => makeTask(n * BULK_RECORDS + i, random)) });
  const startedAt = performance.now();
  const load = await runLoad({ port: server.port, requests: bulk, connections: 1, warmupMs: 0, limit: requests });
  if (Object.keys(load.statuses).some((status) => status !== "201")) throw new Error(`seeding: POST /bulk answered ${JSON.stringify(load.statuses)}`);
  return performance.now() - startedAt;
}

/** Waits until no compaction has been running for SETTLE_QUIET_MS. */
async function settle(dataDir) {
  for (let quietSince = performance.now(); performance.now() - quietSince < SETTLE_QUIET_MS; ) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    if (readdirSync(dataDir).some((name) => name.endsWith(".tmp"))) quietSince = performance.now();
  }
}

/**
 * Creates at CONNECTIONS for WARMUP_MS + DURATION_MS; `backup` (when given) starts LEAD_MS after
 * the warm-up. Answers the latencies of every measured answer, of those overlapping the backup and
 * of the others, and the backup's duration and answer.
 */
async function measure(server, requests, backup) {
  const answers = [];
  const load = runLoad({ port: server.port, requests, connections: CONNECTIONS, durationMs: DURATION_MS, warmupMs: WARMUP_MS, onAnswer: (sentAt, answeredAt, status) => answers.push({ sentAt, answeredAt, status }) });
  let window = null;
  let result = null;
  if (backup) {
    await new Promise((resolve) => setTimeout(resolve, WARMUP_MS + LEAD_MS));
    const startedAt = performance.now();
    result = await backup();
    window = { startedAt, endedAt: performance.now() };
  }
  const { statuses } = await load;
  const failed = Object.keys(statuses).filter((status) => status !== "201");
  if (failed.length > 0) throw new Error(`creates answered ${JSON.stringify(statuses)}`);
  const measureFrom = answers.length > 0 ? answers[0].sentAt + WARMUP_MS : 0;
  const measured = answers.filter((answer) => answer.answeredAt >= measureFrom);
  const overlaps = (answer) => window !== null && answer.sentAt <= window.endedAt && answer.answeredAt >= window.startedAt;
  const latencies = (list) => Float64Array.from(list, (answer) => answer.answeredAt - answer.sentAt).sort();
  return {
    all: latencies(measured),
    during: latencies(measured.filter(overlaps)),
    outside: latencies(measured.filter((answer) => !overlaps(answer))),
    backup: window && { ms: window.endedAt - window.startedAt, result },
  };
}

function runCli(cli, args) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [cli, ...args], (error, stdout, stderr) => (error ? reject(new Error(`tabula ${args[0]} failed: ${stderr}`)) : resolve(stdout.trim())));
  });
}

function row(name, latencies, backup = null) {
  const pick = (fraction) => latencies[Math.min(latencies.length - 1, Math.floor(fraction * latencies.length))] ?? NaN;
  const what = backup === null ? "" : `${(backup.ms / 1000).toFixed(2)} s${typeof backup.result === "object" ? `, ${(backup.result.bytes / 1048576).toFixed(1)} MiB up to seq ${backup.result.seq}` : ""}`;
  return `| ${name} | ${latencies.length.toLocaleString("en-US")} | ${pick(0.5).toFixed(2)} | ${pick(0.99).toFixed(2)} | ${(latencies.at(-1) ?? NaN).toFixed(2)} | ${what} |`;
}

function describeFiles(files) {
  const mib = (bytes) => `${(bytes / 1048576).toFixed(1)} MiB`;
  return `log ${mib(files.logBytes)}, snapshot ${mib(files.snapshotBytes)} (${files.sized.map((file) => `${file.name.replace(/-0+/, "-")} ${mib(file.bytes)}`).join(", ")})`;
}

await main();
