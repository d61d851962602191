// Start-up and cold reads (issue 45, targets 1 and 3; issue 58, item 3), each against its floor in the same run:
//
//   node bench/startup.mjs [--records 300000] [--rounds 3] [--cold-reads 100000] [--keep | --reuse DIR] [--dist DIR]
//                          [--chart PATH|none]
//
// Seeds a data folder with the Task records of task-schema.mjs (POST /bulk, then a start that
// compacts the log into a snapshot) and writes the same records as JSON lines. Then, taking turns
// for --rounds rounds: (a) the naive floor, a node process that reads the JSON lines, JSON.parse's
// each into a Map and prints "done", timed from spawn to that line; (b) tabula on the folder,
// timed from spawn to its "listening on" banner, with its resident memory then; (c) the same naive
// floor reading a log of the same records, one create a line (as a day of single writes leaves
// it), and (d) tabula replaying that log, no snapshot beside it (a fresh copy each round: a start
// compacts a big log once it is quiet); (e) tabula on the folder `tabula import --data` of the
// records left (issue 58: it ends compacted, so this reads a snapshot). Last, W1-cold:
// straight after a fresh start, each of --cold-reads ids read once in random order at c=32,
// against bench/bare-map-server.mjs answering the same bodies from a Map it filled at its start.
// Both ratios, named with the record count, are drawn on --chart (docs/benchmarks.svg, beside the
// other benches' kept ratios: bench/chart.mjs; "none" for nowhere). Build first (npm run build):
// it runs dist/tabula.mjs.

import { spawn } from "node:child_process";
import { cpSync, copyFileSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { crc32 } from "node:zlib";
import os from "node:os";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { recordRatios } from "./chart.mjs";
import { buildRequest, runLoad } from "./load.mjs";
import { createRandom, makeTask, TASK_SCHEMA } from "./task-schema.mjs";
import { dataFiles, readCpuMs, readRss, startChild, stopChild } from "./machine.mjs";

const SECRET_KEY = "sk_bench_secret_";
const BULK_RECORDS = 1000;
const COLD_CONNECTIONS = 32;
/** tabula's default --changes-keep: the events a compacted snapshot keeps. */
const CHANGES_KEEP = 100_000;

const options = parseOptions(process.argv.slice(2));

function parseOptions(argv) {
  const options = { records: 300_000, rounds: 3, coldReads: 100_000, keep: false, reuse: null, dist: new URL("../dist/", import.meta.url).pathname, nodeFlags: [], chart: fileURLToPath(new URL("../docs/benchmarks.svg", import.meta.url)) };
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i];
    if (name === "--records") options.records = Number(argv[++i]);
    else if (name === "--rounds") options.rounds = Number(argv[++i]);
    else if (name === "--cold-reads") options.coldReads = Number(argv[++i]);
    else if (name === "--keep") options.keep = true;
    else if (name === "--reuse") options.reuse = argv[++i];
    else if (name === "--dist") options.dist = argv[++i];
    else if (name === "--node-flag") options.nodeFlags.push(argv[++i]);
    else if (name === "--chart") options.chart = ((path) => (path === "none" ? path : resolve(path)))(argv[++i]);
    else throw new Error(`unknown option ${name}; see the comment at the top of bench/startup.mjs`);
  }
  return options;
}

async function main() {
  // --reuse DIR: the folder a run with --keep left, seeded already.
  const dir = options.reuse ?? mkdtempSync(join(os.tmpdir(), "tabula-startup-"));
  const dataDir = join(dir, "data");
  const jsonLines = join(dir, "records.jsonl");
  // A private copy of the bundle (--dist: another build's, to compare): a build meanwhile changes nothing.
  copyFileSync(join(options.dist, "tabula.mjs"), join(dir, "tabula.mjs"));
  // A build with lazily loaded chunks beside the bundle (older ones): copied too.
  if (existsSync(join(options.dist, "chunks"))) cpSync(join(options.dist, "chunks"), join(dir, "chunks"), { recursive: true });
  writeFileSync(join(dir, "schema.json"), JSON.stringify(TASK_SCHEMA));
  const logDir = join(dir, "data-log");
  const logCopy = join(dir, "data-log-run");
  const importDir = join(dir, "data-import");
  const start = (flags = options.nodeFlags, data = dataDir) =>
    startChild("tabula", [...flags, join(dir, "tabula.mjs"), "--schema", join(dir, "schema.json"), "--data", data, "--port", "0", "--secret-key", SECRET_KEY, "--log", "off"]);
  let server = null;
  try {
    let ids;
    if (options.reuse) {
      ids = readFileSync(jsonLines, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line).id);
    } else {
      console.log(`seeding ${options.records} records in ${dir} …`);
      server = await start([]);
      await seed(server, options.records);
      ids = await writeJsonLines(server, jsonLines);
      await stopChild(server.proc);
      server = null;
    }
    // The folder as a compaction leaves it: one snapshot of the same records, no log.
    writeCompactedSnapshot(dataDir, jsonLines, ids.length);
    const files = dataFiles(dataDir);
    console.log(`data folder: snapshot ${mib(files.snapshotBytes)}, log ${mib(files.logBytes)}`);
    const logFile = writeReplayLog(logDir, jsonLines);
    console.log(`log-only folder: log ${mib(dataFiles(logDir).logBytes)}`);
    if (!existsSync(importDir)) {
      const importMs = await runImport(join(dir, "tabula.mjs"), join(dir, "schema.json"), jsonLines, importDir);
      console.log(`tabula import --data of the records: ${fmt(importMs)} ms`);
    }
    const imported = dataFiles(importDir);
    console.log(`folder after import: snapshot ${mib(imported.snapshotBytes)}, log ${mib(imported.logBytes)}`);

    const floors = [];
    const floorCpus = [];
    const starts = [];
    const cpus = [];
    const rss = [];
    const logFloors = [];
    const logFloorCpus = [];
    const replays = [];
    const replayCpus = [];
    const afterImports = [];
    const afterImportCpus = [];
    for (let round = 0; round < options.rounds; round++) {
      const floorRound = await timeFloor(jsonLines);
      floors.push(floorRound.ms);
      floorCpus.push(floorRound.cpuMs);
      server = await start();
      starts.push(server.startMs);
      // CPU time is what a busy shared machine changes least: given beside the wall time.
      cpus.push(readCpuMs(server.proc.pid));
      rss.push(readRss(server.proc.pid));
      await stopChild(server.proc);
      server = null;
      console.log(`round ${round + 1}: floor ${floors.at(-1).toFixed(0)} ms (CPU ${floorCpus.at(-1).toFixed(0)} ms), tabula ${starts.at(-1).toFixed(0)} ms (CPU ${cpus.at(-1).toFixed(0)} ms), RSS ${mib(rss.at(-1))}`);
      const logFloorRound = await timeFloor(logFile, LOG_FLOOR_SCRIPT);
      logFloors.push(logFloorRound.ms);
      logFloorCpus.push(logFloorRound.cpuMs);
      rmSync(logCopy, { recursive: true, force: true });
      cpSync(logDir, logCopy, { recursive: true });
      server = await start(options.nodeFlags, logCopy);
      replays.push(server.startMs);
      replayCpus.push(readCpuMs(server.proc.pid));
      await stopChild(server.proc);
      server = await start(options.nodeFlags, importDir);
      afterImports.push(server.startMs);
      afterImportCpus.push(readCpuMs(server.proc.pid));
      await stopChild(server.proc);
      server = null;
      console.log(`  log floor ${logFloors.at(-1).toFixed(0)} ms (CPU ${logFloorCpus.at(-1).toFixed(0)} ms), tabula replaying the log ${replays.at(-1).toFixed(0)} ms (CPU ${replayCpus.at(-1).toFixed(0)} ms), tabula after import ${afterImports.at(-1).toFixed(0)} ms (CPU ${afterImportCpus.at(-1).toFixed(0)} ms)`);
    }
    rmSync(logCopy, { recursive: true, force: true });
    const floor = median(floors);
    const tabula = median(starts);
    const ratios = starts.map((ms, i) => ms / floors[i]);
    console.log(`\nstart-up at ${fmt(ids.length)} records: tabula ${tabula.toFixed(0)} ms (${starts.map((ms) => ms.toFixed(0)).join(", ")}), naive floor ${floor.toFixed(0)} ms (${floors.map((ms) => ms.toFixed(0)).join(", ")}): ${(tabula / floor).toFixed(2)}× the floor, per round ${ratios.map((r) => r.toFixed(2)).join(", ")} (target ≤ 0.50)`);
    console.log(`CPU time to the banner: tabula ${median(cpus).toFixed(0)} ms, floor ${median(floorCpus).toFixed(0)} ms: ${(median(cpus) / median(floorCpus)).toFixed(2)}× the floor`);
    const perRound = (values, over) => values.map((ms, i) => (ms / over[i]).toFixed(2)).join(", ");
    console.log(`start-up replaying a log of ${fmt(ids.length)} creates: tabula ${median(replays).toFixed(0)} ms, ${(median(replays) / floor).toFixed(2)}× the naive floor (per round ${perRound(replays, floors)}); the naive floor reading the log's own lines ${median(logFloors).toFixed(0)} ms: ${(median(replays) / median(logFloors)).toFixed(2)}× it (per round ${perRound(replays, logFloors)}) (target ≤ 1.0)`);
    console.log(`CPU time to the banner: replaying the log ${median(replayCpus).toFixed(0)} ms, ${(median(replayCpus) / median(floorCpus)).toFixed(2)}× the floor's, ${(median(replayCpus) / median(logFloorCpus)).toFixed(2)}× the log floor's (${median(logFloorCpus).toFixed(0)} ms); after import ${median(afterImportCpus).toFixed(0)} ms, ${(median(afterImportCpus) / median(floorCpus)).toFixed(2)}× the floor's`);
    console.log(`start-up after tabula import --data: tabula ${median(afterImports).toFixed(0)} ms, ${(median(afterImports) / floor).toFixed(2)}× the naive floor (per round ${perRound(afterImports, floors)}) (target ≤ 0.50)`);
    console.log(`resident memory after start-up: ${mib(median(rss))}, ${(median(rss) / files.snapshotBytes).toFixed(2)}× the snapshot's ${mib(files.snapshotBytes)} (target ≤ 1.5 at 1,000,000)`);

    // W1-cold: no warm-up, every id once, in random order.
    const order = shuffle(ids.slice(0, Math.min(options.coldReads, ids.length)), createRandom(7));
    const request = (i) => buildRequest("GET", `/api/entities/Task/${order[i]}`, { headers: { "X-Api-Key": SECRET_KEY } });
    const coldRead = async (child) => {
      const startedAt = performance.now();
      const load = await runLoad({ port: child.port, requests: request, connections: COLD_CONNECTIONS, warmupMs: 0, limit: order.length });
      const wallMs = performance.now() - startedAt;
      const failed = Object.keys(load.statuses).filter((status) => status !== "200");
      if (failed.length > 0) throw new Error(`W1-cold answered ${JSON.stringify(load.statuses)}`);
      return { rate: (order.length * 1000) / wallMs, p99: load.p99 };
    };
    const colds = [];
    for (let round = 0; round < options.rounds; round++) {
      const bare = await startChild("bare", [new URL("./bare-map-server.mjs", import.meta.url).pathname, jsonLines]);
      const bareCold = await coldRead(bare);
      await stopChild(bare.proc);
      server = await start();
      const tabulaCold = await coldRead(server);
      await stopChild(server.proc);
      server = null;
      colds.push({ bare: bareCold, tabula: tabulaCold, ratio: tabulaCold.rate / bareCold.rate });
      console.log(`W1-cold round ${round + 1}: tabula ${fmt(tabulaCold.rate)} req/s (p99 ${tabulaCold.p99.toFixed(1)} ms), bare Map ${fmt(bareCold.rate)} req/s (p99 ${bareCold.p99.toFixed(1)} ms): ${(tabulaCold.rate / bareCold.rate).toFixed(2)} of bare`);
    }
    const ratio = median(colds.map((cold) => cold.ratio));
    const bareRate = median(colds.map((c) => c.bare.rate));
    console.log(`\nW1-cold, ${fmt(order.length)} ids once each at c=${COLD_CONNECTIONS} straight after start-up: median ${ratio.toFixed(2)} of bare (tabula ${fmt(median(colds.map((c) => c.tabula.rate)))} req/s, bare ${fmt(bareRate)} req/s; target ≥ 0.70)`);
    if (options.chart !== "none") {
      const { entries, markdown } = recordRatios([
        { workload: `start-up, ${fmt(ids.length)} records ÷ naive floor`, ratio: tabula / floor, target: 0.5, direction: "lower", floor: `naive floor ${fmt(floor)} ms to "done" (median of ${options.rounds})` },
        { workload: `start-up from the log, ${fmt(ids.length)} records ÷ naive floor of its lines`, ratio: median(replays) / median(logFloors), target: 1, direction: "lower", floor: `naive floor of the log's lines ${fmt(median(logFloors))} ms to "done" (median of ${options.rounds})` },
        { workload: `start-up after import, ${fmt(ids.length)} records ÷ naive floor`, ratio: median(afterImports) / floor, target: 0.5, direction: "lower", floor: `naive floor ${fmt(floor)} ms to "done" (median of ${options.rounds})` },
        { workload: `W1-cold, ${fmt(ids.length)} records ÷ bare Map`, ratio, target: 0.7, direction: "higher", floor: `bare Map server ${fmt(bareRate)} req/s (${fmt(order.length)} ids once each, median of ${options.rounds})` },
      ], { chart: options.chart });
      console.log(`\n4 ratios of this run and ${entries.length - 4} kept from earlier runs drawn on ${relative(process.cwd(), options.chart) || options.chart}; in Markdown:\n${markdown}`);
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
    const batch = Array.from({ length: Math.min(BULK_RECORDS, records - n * BULK_RECORDS) }, (_, i) => makeTask(n * BULK_RECORDS + i, random));
    return buildRequest("POST", "/api/entities/Task/bulk", { headers: { "X-Api-Key": SECRET_KEY }, body: batch });
  };
  const load = await runLoad({ port: server.port, requests: bulkRequest, connections: 1, warmupMs: 0, limit: Math.ceil(records / BULK_RECORDS) });
  if (Object.keys(load.statuses).some((status) => status !== "201")) throw new Error(`seeding: POST /bulk answered ${JSON.stringify(load.statuses)}`);
}

/** Every record as tabula answers it, one JSON line each; answers the ids. */
async function writeJsonLines(server, file) {
  const out = createWriteStream(file);
  const ids = [];
  for (let cursor = null; ; ) {
    const answer = await fetch(`${server.url}/api/entities/Task?limit=5000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { headers: { "X-Api-Key": SECRET_KEY } });
    let text = "";
    for (const record of await answer.json()) {
      ids.push(record.id);
      text += `${JSON.stringify(record)}\n`;
    }
    if (!out.write(text)) await new Promise((resolve) => out.once("drain", resolve));
    cursor = answer.headers.get("x-next-cursor");
    if (!cursor) break;
  }
  await new Promise((resolve, reject) => out.end((error) => (error ? reject(error) : resolve())));
  if (ids.length !== options.records) throw new Error(`seeding: ${options.records} records sent, ${ids.length} listed`);
  return ids;
}

/**
 * Replaces the folder's log and snapshots with the one snapshot a compaction would write of the
 * seeded records (format 5, src/store/file/snapshot.ts): rows in id order, each created in a batch
 * of BULK_RECORDS, and the change feed's kept window (--changes-keep's default) of their creates.
 * Seeding alone leaves a log beside a snapshot, and a start compacts only a log as big as the
 * snapshot, so the bench writes what the compaction would have.
 */
function writeCompactedSnapshot(dataDir, jsonLines, count) {
  for (const name of readdirSync(dataDir)) if (/^(log|snapshot)-/.test(name)) rmSync(join(dataDir, name));
  const lines = readFileSync(jsonLines, "utf8").split("\n").filter(Boolean);
  const records = lines.map((line) => [JSON.parse(line).id, line]).sort((a, b) => (a[0] < b[0] ? -1 : 1));
  const positionOf = (i) => [1 + Math.floor(i / BULK_RECORDS), i % BULK_RECORDS];
  const seq = 1 + Math.ceil(count / BULK_RECORDS);
  const kept = Math.min(CHANGES_KEEP, count);
  const horizon = kept < count ? positionOf(count - kept - 1) : [0, 0];
  const fields = Object.keys(JSON.parse(records[0][1]));
  const parts = [frame({ format: "tabula-snapshot/5", seq, rev: count, horizon }), `${JSON.stringify({ entity: "Task", fields, rows: count })}\n`];
  records.forEach(([, line], i) => parts.push(`${i + 1} ${positionOf(i).join(".")} ${line}\n`));
  for (let i = count - kept; i < count; i++) parts.push(`${JSON.stringify({ event: [...positionOf(i), "Task", "create", records[i][0]] })}\n`);
  // The declarations a server stores as metadata, as the seeding server did.
  parts.push(`${JSON.stringify({ meta: { key: "schema", value: TASK_SCHEMA } })}\n`);
  const body = Buffer.from(parts.join(""));
  const end = frame({ end: true, rows: count, answers: 0, events: kept, meta: 1, checksum: crc32(body).toString(16).padStart(8, "0") });
  writeFileSync(join(dataDir, `snapshot-${String(seq).padStart(16, "0")}`), Buffer.concat([body, Buffer.from(end)]), { mode: 0o600 });
}

/** A line framed as the file store frames its header and end marker: its CRC-32 inside it. */
function frame(value) {
  const head = JSON.stringify(value).slice(0, -1);
  return `${head},"crc":"${crc32(head).toString(16).padStart(8, "0")}"}\n`;
}

/**
 * A log of the seeded records as a server that took them one POST at a time writes it (the format
 * of docs/architecture.md, "The data folder"): the schema's metadata, then one create a line. Kept
 * when it is there already (--reuse). Answers the segment's path.
 */
function writeReplayLog(logDir, jsonLines) {
  const path = join(logDir, `log-${String(1).padStart(16, "0")}`);
  if (existsSync(path)) return path;
  mkdirSync(logDir, { recursive: true, mode: 0o700 });
  const parts = [frame({ seq: 1, puts: [], meta: [{ key: "schema", value: TASK_SCHEMA }] })];
  readFileSync(jsonLines, "utf8").split("\n").filter(Boolean).forEach((line, i) => {
    const head = `{"seq":${i + 2},"puts":[{"e":"Task","row":{"id":${JSON.stringify(JSON.parse(line).id)},"rev":${i + 1},"deleted":false,"data":${line}}}]`;
    parts.push(`${head},"crc":"${crc32(head).toString(16).padStart(8, "0")}"}\n`);
  });
  writeFileSync(path, parts.join(""), { mode: 0o600 });
  return path;
}

/** `tabula import FILE --data DIR --keep-ids`, as a user runs it; answers how long it took. */
function runImport(bundle, schema, jsonLines, importDir) {
  const startedAt = performance.now();
  const proc = spawn(process.execPath, [bundle, "import", jsonLines, "--entity", "Task", "--data", importDir, "--schema", schema, "--keep-ids"], { stdio: ["ignore", "ignore", "inherit"] });
  return new Promise((resolve, reject) => proc.once("exit", (code) => (code === 0 ? resolve(performance.now() - startedAt) : reject(new Error(`tabula import exited with ${code}`)))));
}

/** The naive floor of a log: each line JSON.parse'd, each put's data set in a Map by id. */
const LOG_FLOOR_SCRIPT = `
const lines = require("node:fs").readFileSync(process.argv[1], "utf8").split("\\n");
const records = new Map();
for (const line of lines) if (line) { const entry = JSON.parse(line); for (const put of entry.puts) records.set(put.row.id, put.row.data); }
const cpu = process.cpuUsage();
process.stdout.write("done " + records.size + " cpu " + (cpu.user + cpu.system) / 1000 + "\\n");
`;

const FLOOR_SCRIPT = `
const lines = require("node:fs").readFileSync(process.argv[1], "utf8").split("\\n");
const records = new Map();
for (const line of lines) if (line) { const record = JSON.parse(line); records.set(record.id, record); }
const cpu = process.cpuUsage();
process.stdout.write("done " + records.size + " cpu " + (cpu.user + cpu.system) / 1000 + "\\n");
`;

/** The naive floor: spawn to "done", and the CPU it had used by then, in ms. */
function timeFloor(file, script = FLOOR_SCRIPT) {
  const startedAt = performance.now();
  const proc = spawn(process.execPath, ["-e", script, file], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    let output = "";
    proc.stdout.setEncoding("utf8").on("data", (chunk) => {
      output += chunk;
      const done = /done \d+ cpu ([\d.]+)\n/.exec(output);
      if (done) resolve({ ms: performance.now() - startedAt, cpuMs: Number(done[1]) });
    });
    proc.once("exit", (code) => (output.includes("done") ? undefined : reject(new Error(`the floor exited with ${code}`))));
  });
}

function shuffle(list, random) {
  for (let i = list.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [list[i], list[j]] = [list[j], list[i]];
  }
  return list;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const mib = (bytes) => `${(bytes / 1048576).toFixed(1)} MiB`;
const fmt = (n) => Math.round(n).toLocaleString("en-US");

await main();
