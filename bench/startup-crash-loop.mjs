// Start-up on a crash loop's data folder against the same records freshly compacted, in one run:
//
//   node bench/startup-crash-loop.mjs [--records 40000] [--log-mib 300] [--rounds 3] [--keep | --reuse DIR] [--dist DIR]
//                                     [--chart PATH|none]
//
// The folder a crash loop leaves (docs/benchmarks.md, "Start-up after interrupted compactions"):
// a snapshot, then a log longer than it of 4 KB updates, every one of them a kept change feed event
// (--changes-keep's default), and each server killed before its start-up compaction finished.
// Made so: --records Task records with a 4 KB title through POST /bulk, listed back and written as
// the one snapshot a compaction would write of them (format 5, src/store/file/snapshot.ts), then a
// server on that folder takes 4 KB PATCHes of records at random until the log holds --log-mib
// (a server that begins a compaction meanwhile is killed with SIGKILL halfway through it, and the
// next writes on), and a last one is killed halfway through the compaction its start-up began.
// (a) is that folder; (b) a copy of it that a server compacted and left with a clean stop. Taking
// turns for --rounds rounds, each start is timed from spawn to the "listening on" banner, with the
// CPU time it had used by then, and killed at once with SIGKILL, as the crash loop's servers were
// (the start-up compaction a start on (a) begins is lost, and the next start deletes its .tmp).
// Build first (npm run build): it runs dist/tabula.mjs.

import { cpSync, copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { crc32 } from "node:zlib";
import os from "node:os";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { recordRatios } from "./chart.mjs";
import { buildRequest, runLoad } from "./load.mjs";
import { createRandom, makeTask, TASK_SCHEMA } from "./task-schema.mjs";
import { dataFiles, readCpuMs, readRss, startChild, stopChild } from "./machine.mjs";

const SECRET_KEY = "sk_bench_secret_";
const BULK_RECORDS = 250;
const UPDATE_CONNECTIONS = 8;
const TITLE_CHARS = 4000;
/** tabula's default --changes-keep: the events a compacted snapshot keeps. */
const CHANGES_KEEP = 100_000;
const COMPACTION_POLL_MS = 100;
const KILL_POLL_MS = 20;
/** runLoad stops after this long; the server is killed well before. */
const UPDATE_MS_AT_MOST = 3_600_000;

const options = parseOptions(process.argv.slice(2));
/** Starts tabula on a data folder (set in main, once the bundle is copied). */
let startServer;

function parseOptions(argv) {
  const options = { records: 40_000, logMib: 300, rounds: 3, keep: false, reuse: null, dist: new URL("../dist/", import.meta.url).pathname, nodeFlags: [], chart: fileURLToPath(new URL("../docs/benchmarks.svg", import.meta.url)) };
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i];
    if (name === "--records") options.records = Number(argv[++i]);
    else if (name === "--log-mib") options.logMib = Number(argv[++i]);
    else if (name === "--rounds") options.rounds = Number(argv[++i]);
    else if (name === "--keep") options.keep = true;
    else if (name === "--reuse") options.reuse = argv[++i];
    else if (name === "--dist") options.dist = argv[++i];
    else if (name === "--node-flag") options.nodeFlags.push(argv[++i]);
    else if (name === "--chart") options.chart = ((path) => (path === "none" ? path : resolve(path)))(argv[++i]);
    else throw new Error(`unknown option ${name}; see the comment at the top of bench/startup-crash-loop.mjs`);
  }
  return options;
}

async function main() {
  const dir = options.reuse ?? mkdtempSync(join(os.tmpdir(), "tabula-crash-loop-"));
  const crashed = join(dir, "crashed");
  const compacted = join(dir, "compacted");
  // A private copy of the bundle (--dist: another build's, to compare): a build meanwhile changes nothing.
  copyFileSync(join(options.dist, "tabula.mjs"), join(dir, "tabula.mjs"));
  rmSync(join(dir, "chunks"), { recursive: true, force: true });
  // A build with lazily loaded chunks beside the bundle (older ones): copied too.
  if (existsSync(join(options.dist, "chunks"))) cpSync(join(options.dist, "chunks"), join(dir, "chunks"), { recursive: true });
  writeFileSync(join(dir, "schema.json"), JSON.stringify(TASK_SCHEMA));
  startServer = (dataDir, flags = options.nodeFlags) =>
    startChild("tabula", [...flags, join(dir, "tabula.mjs"), "--schema", join(dir, "schema.json"), "--data", dataDir, "--port", "0", "--secret-key", SECRET_KEY, "--log", "off"]);
  let server = null;
  try {
    if (!options.reuse) {
      console.log(`seeding ${options.records} records of ${TITLE_CHARS} B in ${dir} …`);
      server = await startServer(crashed, []);
      await seed(server, options.records);
      const records = await listRecords(server);
      await stopChild(server.proc);
      writeCompactedSnapshot(crashed, records);
      console.log(`updating records until the log holds ${options.logMib} MiB …`);
      await updateUntil(crashed, records.map(([id]) => id), options.logMib * 1048576);
      // (b): the same records, compacted by a server that then stopped cleanly.
      cpSync(crashed, compacted, { recursive: true });
      server = await startServer(compacted, []);
      const startedAt = performance.now();
      await waitForCompaction(compacted);
      console.log(`(b) compacted by a server in ${((performance.now() - startedAt) / 1000).toFixed(1)} s after its banner`);
      await stopChild(server.proc);
      server = null;
    }
    for (const [name, dataDir] of [["(a) crash loop", crashed], ["(b) compacted", compacted]]) {
      const { snapshot, log, tmp } = sizesOf(dataDir);
      console.log(`${name}: snapshot ${mib(snapshot)}, log ${mib(log)}${tmp > 0 ? `, a killed compaction's .tmp ${mib(tmp)}` : ""}`);
    }
    const rounds = { crashed: [], compacted: [] };
    for (let round = 0; round < options.rounds; round++) {
      const line = [];
      for (const [name, dataDir] of [["crashed", crashed], ["compacted", compacted]]) {
        server = await startServer(dataDir);
        const figure = { ms: server.startMs, cpuMs: readCpuMs(server.proc.pid), rss: readRss(server.proc.pid) };
        await stopChild(server.proc, "SIGKILL");
        server = null;
        rounds[name].push(figure);
        line.push(`${name} ${figure.ms.toFixed(0)} ms (CPU ${figure.cpuMs.toFixed(0)} ms, RSS ${mib(figure.rss)})`);
      }
      console.log(`round ${round + 1}: ${line.join(", ")}: ${(rounds.crashed.at(-1).ms / rounds.compacted.at(-1).ms).toFixed(2)}×`);
    }
    const a = median(rounds.crashed.map((f) => f.ms));
    const b = median(rounds.compacted.map((f) => f.ms));
    const ratios = rounds.crashed.map((f, i) => f.ms / rounds.compacted[i].ms);
    const cpuA = median(rounds.crashed.map((f) => f.cpuMs));
    const cpuB = median(rounds.compacted.map((f) => f.cpuMs));
    console.log(`\nstart-up on the crash loop's folder: ${a.toFixed(0)} ms (${rounds.crashed.map((f) => f.ms.toFixed(0)).join(", ")}), on the same records compacted ${b.toFixed(0)} ms (${rounds.compacted.map((f) => f.ms.toFixed(0)).join(", ")}): ${(a / b).toFixed(2)}×, per round ${ratios.map((r) => r.toFixed(2)).join(", ")} (target ≤ 1.5)`);
    console.log(`CPU time to the banner: ${cpuA.toFixed(0)} ms against ${cpuB.toFixed(0)} ms: ${(cpuA / cpuB).toFixed(2)}×`);
    console.log(`uptime: ${execFileSync("uptime", { encoding: "utf8" }).trim()}`);
    if (options.chart !== "none") {
      const { entries, markdown } = recordRatios([
        { workload: "start-up on a crash loop's folder ÷ the same records compacted", ratio: a / b, target: 1.5, direction: "lower", floor: `start-up on the compacted folder ${b.toFixed(0)} ms (median of ${options.rounds})` },
      ], { chart: options.chart });
      console.log(`\n1 ratio of this run and ${entries.length - 1} kept from earlier runs drawn on ${relative(process.cwd(), options.chart) || options.chart}; in Markdown:\n${markdown}`);
    }
  } finally {
    if (server) await stopChild(server.proc);
    if (options.keep || options.reuse) console.log(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

async function seed(server, records) {
  const random = createRandom(1);
  const bulkRequest = (n) => {
    const batch = Array.from({ length: Math.min(BULK_RECORDS, records - n * BULK_RECORDS) }, (_, i) => ({ ...makeTask(n * BULK_RECORDS + i, random), title: titleOf(n * BULK_RECORDS + i, 0) }));
    return buildRequest("POST", "/api/entities/Task/bulk", { headers: { "X-Api-Key": SECRET_KEY }, body: batch });
  };
  const load = await runLoad({ port: server.port, requests: bulkRequest, connections: 1, warmupMs: 0, limit: Math.ceil(records / BULK_RECORDS) });
  if (Object.keys(load.statuses).some((status) => status !== "201")) throw new Error(`seeding: POST /bulk answered ${JSON.stringify(load.statuses)}`);
}

/** A title of TITLE_CHARS characters, different for each record and version. */
function titleOf(record, version) {
  const head = `task ${record} version ${version} `;
  return head + "lorem ipsum dolor sit amet ".repeat(Math.ceil(TITLE_CHARS / 27)).slice(0, TITLE_CHARS - head.length);
}

/** Every record as tabula answers it: [id, JSON] in id order. */
async function listRecords(server) {
  const records = [];
  for (let cursor = null; ; ) {
    const answer = await fetch(`${server.url}/api/entities/Task?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { headers: { "X-Api-Key": SECRET_KEY } });
    for (const record of await answer.json()) records.push([record.id, JSON.stringify(record)]);
    cursor = answer.headers.get("x-next-cursor");
    if (!cursor) break;
  }
  if (records.length !== options.records) throw new Error(`seeding: ${options.records} records sent, ${records.length} listed`);
  return records.sort((x, y) => (x[0] < y[0] ? -1 : 1));
}

/**
 * Replaces the folder's log and snapshots with the one snapshot a compaction writes of the seeded
 * records (as bench/startup.mjs does): each record created in a batch of BULK_RECORDS, the
 * change feed's kept window of their creates, and the schema metadata a server stores.
 */
function writeCompactedSnapshot(dataDir, records) {
  for (const name of readdirSync(dataDir)) if (/^(log|snapshot)-/.test(name)) rmSync(join(dataDir, name));
  const count = records.length;
  const positionOf = (i) => [1 + Math.floor(i / BULK_RECORDS), i % BULK_RECORDS];
  const seq = 1 + Math.ceil(count / BULK_RECORDS);
  const kept = Math.min(CHANGES_KEEP, count);
  const horizon = kept < count ? positionOf(count - kept - 1) : [0, 0];
  const fields = Object.keys(JSON.parse(records[0][1]));
  const parts = [frame({ format: "tabula-snapshot/5", seq, rev: count, horizon }), `${JSON.stringify({ entity: "Task", fields })}\n`];
  records.forEach(([, json], i) => parts.push(`${i + 1} ${positionOf(i).join(".")} ${json}\n`));
  for (let i = count - kept; i < count; i++) parts.push(`${JSON.stringify({ event: [...positionOf(i), "Task", "create", records[i][0]] })}\n`);
  parts.push(`${JSON.stringify({ meta: { key: "schema", value: TASK_SCHEMA } })}\n`);
  const body = Buffer.from(parts.join(""));
  const end = frame({ end: true, rows: count, answers: 0, events: kept, meta: 1, checksum: crc32(body).toString(16).padStart(8, "0") });
  writeFileSync(join(dataDir, `snapshot-${String(seq).padStart(16, "0")}`), Buffer.concat([body, Buffer.from(end)]));
}

/** A line framed as the file store frames its header and end marker: its CRC-32 inside it. */
function frame(value) {
  const head = JSON.stringify(value).slice(0, -1);
  return `${head},"crc":"${crc32(head).toString(16).padStart(8, "0")}"}\n`;
}

/**
 * PATCHes records at random, 4 KB each, until the log holds `logBytes`, as a crash loop writes:
 * once the log is as big as the snapshot, the server starts compacting at its first quiet moment
 * (writes waiting on the disk leave the event loop idle), and it is killed with SIGKILL when its
 * snapshot's .tmp file holds half the snapshot's bytes; the next server replays the whole log and
 * writes on. The last one is killed once the log holds `logBytes`.
 */
async function updateUntil(dataDir, ids, logBytes) {
  const random = createRandom(2);
  const versions = new Map();
  const update = () => {
    const record = Math.floor(random() * ids.length);
    const version = (versions.get(record) ?? 0) + 1;
    versions.set(record, version);
    return buildRequest("PATCH", `/api/entities/Task/${ids[record]}`, { headers: { "X-Api-Key": SECRET_KEY }, body: { title: titleOf(record, version) } });
  };
  for (let lives = 1; dataFiles(dataDir).logBytes < logBytes; lives++) {
    const server = await startServer(dataDir, []);
    const snapshotBytes = sizesOf(dataDir).snapshot;
    const watcher = setInterval(() => {
      const { log, tmp } = sizesOf(dataDir);
      if (log >= logBytes || tmp >= snapshotBytes / 2) server.proc.kill("SIGKILL");
    }, KILL_POLL_MS);
    try {
      await runLoad({ port: server.port, requests: update, connections: UPDATE_CONNECTIONS, warmupMs: 0, durationMs: UPDATE_MS_AT_MOST }).catch(() => undefined);
    } finally {
      clearInterval(watcher);
      await stopChild(server.proc, "SIGKILL");
    }
    const { snapshot, log, tmp } = sizesOf(dataDir);
    console.log(`server ${lives} killed: snapshot ${mib(snapshot)}, log ${mib(log)}, compaction's .tmp ${mib(tmp)}`);
  }
  // The crash loop's last server: started, killed halfway through the compaction its start began.
  const server = await startServer(dataDir, []);
  const snapshotBytes = sizesOf(dataDir).snapshot;
  const before = snapshotsOf(dataDir).join();
  while (sizesOf(dataDir).tmp < snapshotBytes / 2) {
    if (snapshotsOf(dataDir).join() !== before) throw new Error("the start-up compaction finished before it was half written; run again");
    await new Promise((resolve) => setTimeout(resolve, KILL_POLL_MS));
  }
  await stopChild(server.proc, "SIGKILL");
  const { log, tmp } = sizesOf(dataDir);
  console.log(`the last server killed during its start-up compaction: log ${mib(log)}, compaction's .tmp ${mib(tmp)}`);
}

/** Bytes of the data folder's snapshots, log segments and temporary snapshot files, apart. */
function sizesOf(dataDir) {
  const sizes = { snapshot: 0, log: 0, tmp: 0 };
  for (const { name, bytes } of dataFiles(dataDir).sized) sizes[name.endsWith(".tmp") ? "tmp" : name.startsWith("log-") ? "log" : "snapshot"] += bytes;
  return sizes;
}

/** Waits until the server has written a snapshot newer than every one there was, and deleted the older ones. */
async function waitForCompaction(dataDir) {
  const before = snapshotsOf(dataDir).at(-1);
  for (;;) {
    const snapshots = snapshotsOf(dataDir);
    if (snapshots.length === 1 && snapshots[0] !== before && !readdirSync(dataDir).some((name) => name.endsWith(".tmp"))) return;
    await new Promise((resolve) => setTimeout(resolve, COMPACTION_POLL_MS));
  }
}

function snapshotsOf(dataDir) {
  return existsSync(dataDir) ? readdirSync(dataDir).filter((name) => /^snapshot-\d+$/.test(name)).sort() : [];
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const mib = (bytes) => `${(bytes / 1048576).toFixed(1)} MiB`;

await main();
