// The side-by-side benchmark of issue 7 (`npm run bench`, which builds first). It seeds a
// deterministic Task table through POST /bulk (that is W8) into tabula run as a child on a fresh data
// folder (file store, fsync before every answer), restarts it on the seeded folder (start-up time and
// memory of the seeded store), waits for the compaction that may follow, measures each workload for
// a fixed time at a fixed concurrency with bench/load.mjs, and prints a Markdown table. W1 is also
// given as a ratio to a bare node:http server measured in the same run, so that the machine's noise
// cancels out.
//
// AGG times aggregates and distinct one request at a time (the median and p90 of up to 100 each).
//
//   node bench/run.mjs [--records 100000] [--duration 5] [--connections 32] [--only W1,W3,AGG] [--keep] [--unique]
//                      [--sustain S] [--subscribers 1000] [--log off|text|json] [--node-flags "FLAGS for the tabula child"]
//                      [--cpu-prof DIR]   (then: node bench/profile-summary.mjs DIR/*.cpuprofile)
// --only takes workload names, AGG, and SUSTAINED (updates until a compaction, or for --sustain seconds).
// --log: tabula's request log (off by default here; its metrics are always counted).
// W1: --w1-ids N random ids to read (4,096), --w1-rounds N slices taking turns with bare and rounds
// side by side (5); more rounds give a steadier median on a noisy host.
// W9: W4's creates at c=32 alone, then with --subscribers SSE streams of Task's changes (bench/feed-subscribers.mjs),
// then the same creates and streams against a bare broadcaster (bench/bare-broadcaster.mjs), the floor.
// W10: the same, alone, with --subscribers SSE streams, and with as many Socket.IO connections in Task's room.
// W11: rounds (--w11-rounds N, 4) of W4's creates at c=32 alone, then with 3 new webhook endpoints on
// Task (bench/webhook-receivers.mjs); the delivery lag under that load, and of creates paced at
// PACED_PER_SECOND. --w11-receivers idle|normal: the receivers' scheduling policy on Linux (idle: they
// stand for services on other machines and take only the cores tabula leaves; normal: they compete).
// --w11-generator pinned|free: the load generator on the last core during W11 (Linux, taskset), or not.
// --chart PATH: the chart this run's ratios are drawn on with those kept from other runs (docs/benchmarks.svg,
// the ratios kept beside it in docs/benchmarks-ratios.json; "none" for nowhere).

import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, cpSync, mkdtempSync, readdirSync, rmSync, statfsSync, writeFileSync } from "node:fs";
import os from "node:os";
import path, { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildRequest, runLoad } from "./load.mjs";
import { createRandom, makeTask, TASK_SCHEMA, WORDS } from "./task-schema.mjs";
import { recordRatios } from "./chart.mjs";
import { dataFiles, measureDiskSync, readCpuMs, readRss, startChild, stopChild } from "./machine.mjs";

const SECRET_KEY = "sk_bench_secret_";
const BULK_RECORDS = 1000;
const POOL_SIZE = 4096;
/** W1 and the bare server take turns this many times by default (--w1-rounds), --duration split among the turns... */
const W1_ROUNDS = 5;
/** ...each turn after this much warm-up (new connections). */
const W1_SLICE_WARMUP_MS = 250;
const TMPFS_MAGIC = 0x01021994;
const DISK_PROBE_MS = 1000;
const SLICE_MS = 2000;
const SUSTAIN_MAX_MS = 90_000;
/** Longer than the server's wait for a quiet moment (250 ms) before a start-up compaction. */
const SETTLE_QUIET_MS = 2000;
const SETTLE_MAX_MS = 300_000;
/** AGG: requests timed one after another on one connection, after LATENCY_WARMUP untimed ones... */
const LATENCY_SAMPLES = 100;
const LATENCY_WARMUP = 10;
/** ...fewer when they take longer than this in all (but at least LATENCY_MIN_SAMPLES), to keep AGG within ~10 s. */
const LATENCY_BUDGET_MS = 1500;
const LATENCY_MIN_SAMPLES = 20;
/** W11: webhook endpoints, and the paced writes whose lag is measured apart (one at a time, this many a second for PACED_MS). */
const W11_ENDPOINTS = 3;
/** W11: rounds of the creates alone and followed, in turn first (--w11-rounds); the figure is the ratio of the rates' sums. */
const W11_ROUNDS = 4;
const PACED_PER_SECOND = 200;
const PACED_MS = 3000;
/** W11: how long the endpoints may take to deliver the load's backlog before the run gives up. */
const DRAIN_MAX_MS = 300_000;
/** W11: how long a measurement waits for a compaction that is due (the server's quiet moment). */
const W11_SETTLE_MAX_MS = 30_000;
/** The file store compacts no log smaller than this (src/store/file/file-store.ts). */
const COMPACTION_MIN_LOG_BYTES = 8 * 1024 * 1024;


const options = parseOptions(process.argv.slice(2));
/** Under --cpu-prof: each workload's window in the profile, for bench/profile-summary.mjs. */
const profileWindows = [];
const only = (name) => options.only === null || options.only.includes(name);
/**
 * Every ratio this run measured, for the chart written at the end (bench/chart.mjs, by default
 * docs/benchmarks.svg): they replace the same workloads' kept from earlier runs, and the chart
 * draws them with the rest. A workload with a floor calls
 * ratio(workload, value, target, direction, floor) once it has both figures:
 * - workload: the bar's label, naming both sides ("W1 read by id ÷ bare node:http");
 * - value: tabula's figure ÷ the floor's, measured in the same run;
 * - target: the ratio the workload must reach (docs/benchmarks.md);
 * - direction: "higher" (met when value ≥ target) or "lower" (met when value ≤ target: times);
 * - floor: the floor's own figure, as a reader needs it beside the ratio ("51,900 req/s").
 */
const ratios = [];
function ratio(workload, value, target, direction, floor) {
  ratios.push({ workload, ratio: value, target, direction, floor });
}


async function main() {
  const dir = mkdtempSync(join(os.tmpdir(), "tabula-bench-"));
  const dataDir = join(dir, "data");
  // A private copy of the bundle: another build of dist/ during the run cannot change what is measured.
  copyFileSync(new URL("../dist/tabula.mjs", import.meta.url), join(dir, "tabula.mjs"));
  // --unique declares Task's titles unique (each holds its record's index), to weigh the check.
  const schema = options.unique ? { Task: { ...TASK_SCHEMA.Task, unique: [["title"]] } } : TASK_SCHEMA;
  writeFileSync(join(dir, "schema.json"), JSON.stringify(schema));
  const rows = [];
  const latencies = [];
  const notes = [];
  let server = null;
  let bare = null;
  try {
    if (statfsSync(dir).type === TMPFS_MAGIC) notes.push(`warning: ${dir} is on tmpfs, where fsync costs nothing; set TMPDIR to a disk folder.`);
    const profFlags = [...options.nodeFlags, ...(options.cpuProf ? ["--cpu-prof", "--cpu-prof-dir", options.cpuProf] : [])];
    // Under --cpu-prof, the first child's profile covers seeding and the second the workloads.
    server = await startTabula(dir, dataDir, profFlags);
    notes.push(`first start on an empty folder: ${server.startMs.toFixed(0)} ms to "listening on"`);

    const seeded = await seed(server, options.records);
    rows.push(row(`W8 bulk create, ${fmt(BULK_RECORDS)} per request (the seeding)`, 1, seeded.load, `${fmt(seeded.recordsPerSecond)} records/s, request time only (target ≥ 50,000)`));
    const afterSeed = { rss: readRss(server.proc.pid), files: dataFiles(dataDir) };
    // The workloads run on a fresh start on the seeded folder: that start is the seeded store's
    // start-up time and resident memory, and no workload inherits the seeding's heap.
    await stopChild(server.proc);
    // Under --keep, a copy of the seeded folder, for timing start-ups from it again by hand.
    if (options.keep) cpSync(dataDir, join(dir, "seeded-data"), { recursive: true });
    server = await startTabula(dir, dataDir, profFlags);
    const seededStart = { startMs: server.startMs, rss: readRss(server.proc.pid), files: dataFiles(dataDir) };
    // The seeding leaves a log about as big as the snapshot, which the server compacts at its first
    // quiet moment. The workloads start once that is over, and memory is measured again then,
    // against the one snapshot that then holds all the data.
    const settled = await waitForStartCompaction(server, dataDir);
    if (options.cpuProf) notes.push(`profiled: seeding in the first profile in ${options.cpuProf}, the workloads in the second (pid ${server.proc.pid}); windows below`);
    const pick = poolPicker(seeded.ids);
    const get = (path) => buildRequest("GET", path, { headers: { "X-Api-Key": SECRET_KEY } });
    const measure = (requests, connections = options.connections, timing = {}) => measureWithCpu(server, { port: server.port, requests, connections, ...timing });

    if (only("W1")) {
      const sample = await fetch(`${server.url}/api/entities/Task/${seeded.ids[0]}`, { headers: { "X-Api-Key": SECRET_KEY } });
      const bytes = Buffer.byteLength(await sample.text());
      bare = await startChild("bare", [new URL("./bare-server.mjs", import.meta.url).pathname, String(bytes)]);
      const bareRequests = [get("/")];
      // 4,096 random ids by default; --w1-ids 100000 reads (nearly) every record, spread over the heap.
      const w1Requests = Array.from({ length: options.w1Ids }, () => get(`/api/entities/Task/${pick()}`));
      const measureBare = (timing) => measureWithCpu(bare, { port: bare.port, requests: bareRequests, connections: options.connections, ...timing });
      // Bare and W1 take turns in short slices (bare first, then W1 first, and so on), and each W1
      // slice is compared with the bare slice next to it: on a shared VM the machine's speed drifts
      // by tens of percent within seconds, which a ratio of two long runs would take for a difference.
      const warmUp = { durationMs: options.warmup * 1000, warmupMs: 0 };
      await measureBare(warmUp);
      // Each request of the pool sent once first: a server that has answered for a while has made
      // the view of every record it was asked for (records/read-cache.ts), and with 100,000 ids
      // the timed warm-up alone would leave most uncached and measure the cache filling up.
      await measure(w1Requests, options.connections, { limit: w1Requests.length, warmupMs: 0 });
      await measure(w1Requests, options.connections, warmUp);
      const rounds = options.w1Rounds;
      const slice = { durationMs: (options.duration * 1000) / rounds, warmupMs: W1_SLICE_WARMUP_MS };
      const bareSlices = [];
      const w1Slices = [];
      for (let round = 0; round < rounds; round++) {
        if (round % 2 === 0) bareSlices.push(await measureBare(slice));
        w1Slices.push(await measure(w1Requests, options.connections, slice));
        if (round % 2 === 1) bareSlices.push(await measureBare(slice));
      }
      const sideBySide = await measureSideBySide(server, bare, w1Requests, bareRequests, slice.durationMs, rounds);
      await stopChild(bare.proc);
      bare = null;
      const sliceRatios = w1Slices.map((w1, i) => w1.rate / bareSlices[i].rate).sort((a, b) => a - b);
      const baseline = meanLoad(bareSlices);
      const w1 = meanLoad(w1Slices);
      rows.push(row(`bare node:http, same ${bytes}-byte body (${rounds} slices taking turns with W1)`, options.connections, baseline, `slices: ${bareSlices.map((load) => fmt(load.rate)).join(", ")} req/s`));
      rows.push(row(`W1 read one by id (${fmt(options.w1Ids)} random ids)`, options.connections, w1,
        `${pct(sliceRatios[Math.floor(rounds / 2)])} of bare req/s, the median of ${rounds} slice pairs (${pct(sliceRatios[0])}–${pct(sliceRatios.at(-1))}; target ≥ 80%); p50 ${multiple(w1.p50 / baseline.p50)}, p99 ${multiple(w1.p99 / baseline.p99)} of bare`));
      ratio("W1 read by id ÷ bare node:http", sliceRatios[Math.floor(rounds / 2)], 0.8, "higher", `bare node:http ${fmt(baseline.rate)} req/s (mean of ${rounds} slices)`);
      const byRatio = sideBySide.map((round) => ({ ...round, ratio: round.bareUs / round.w1Us })).sort((a, b) => a.ratio - b.ratio);
      const median = byRatio[Math.floor(rounds / 2)];
      notes.push(`W1 and bare side by side (both loaded at once, ${options.connections} connections each, ${rounds} rounds): bare's CPU per request is ${pct(median.ratio)} of W1's, the median round (${pct(byRatio[0].ratio)}–${pct(byRatio.at(-1).ratio)}; bare ${median.bareUs.toFixed(1)} µs, W1 ${median.w1Us.toFixed(1)} µs). A host's speed drifts by tens of percent within seconds; measured at once, both servers see the same host, so this ratio is the steadier figure.`);
    }
    if (only("W2")) {
      const q = encodeURIComponent(JSON.stringify({ status: "todo" }));
      const w2Path = `/api/entities/Task?q=${q}&sort_by=-priority&limit=100`;
      const identity = await measure([get(w2Path)]);
      rows.push(row("W2 list status=todo, sort -priority, limit 100", options.connections, identity, `target ≥ 4,000 req/s; ${fmt(identity.bytes / identity.count)} bytes an answer`));
      // Compressed answers (http/compression.ts), in the same run: bytes on the wire against req/s.
      for (const coding of ["gzip", "br"]) {
        const packed = await measure([buildRequest("GET", w2Path, { headers: { "X-Api-Key": SECRET_KEY, "Accept-Encoding": coding } })]);
        rows.push(row(`W2 with Accept-Encoding: ${coding}`, options.connections, packed,
          `${fmt(packed.bytes / packed.count)} bytes an answer (${pct(packed.bytes / packed.count / (identity.bytes / identity.count))} of plain), ${pct(packed.rate / identity.rate)} of plain req/s`));
      }
    }
    if (only("W2R")) {
      // $regex runs on a linear-time automaton (src/query/regex/): the same lists with a pattern.
      const q = encodeURIComponent(JSON.stringify({ status: "todo", title: { $regex: "^[a-z]+x" } }));
      rows.push(row("W2r list status=todo and title $regex ^[a-z]+x, sort -priority, limit 100", options.connections, await measure([get(`/api/entities/Task?q=${q}&sort_by=-priority&limit=100`)])));
      const words = WORDS.slice(0, 16).map((word) => get(`/api/entities/Task?q=${encodeURIComponent(JSON.stringify({ title: { $regex: `${word} ` } }))}&limit=20`));
      rows.push(row("W6r $regex \"<word> \" (a word in ~1% of titles), limit 20", options.connections, await measure(words)));
    }
    if (only("W3")) {
      const deepCursor = await walkToDepth(server, Math.floor(options.records * 0.9));
      const first = await measure([get("/api/entities/Task?limit=100")]);
      const deep = await measure([get(`/api/entities/Task?limit=100&cursor=${encodeURIComponent(deepCursor)}`)]);
      rows.push(row("W3a first cursor page, limit 100", options.connections, first));
      rows.push(row("W3b cursor page at 90% depth, limit 100", options.connections, deep,
        `deep/first time: ${(first.rate / deep.rate).toFixed(2)} by req/s, ${(deep.p50 / first.p50).toFixed(2)} by p50 (target ≤ 1.2)`));
    }
    if (only("W5")) {
      const q = encodeURIComponent(JSON.stringify({ status: "todo" }));
      rows.push(row("W5 count status=todo", options.connections, await measure([get(`/api/entities/Task/count?q=${q}`)]), "target ≥ 10,000 req/s"));
    }
    if (only("W6")) {
      const requests = WORDS.slice(0, 16).map((word) => get(`/api/entities/Task?search=${word}&limit=20`));
      rows.push(row("W6 search (a word in ~1% of titles), limit 20", options.connections, await measure(requests), "target ≥ 1,500 req/s"));
    }
    if (only("AGG")) {
      const startedAt = performance.now();
      latencies.push(...(await measureAggregates(server)));
      notes.push(`AGG: each request's time at the client, over one keep-alive connection; "first" is the first request of each, which may build a value index (done's, here); AGG took ${((performance.now() - startedAt) / 1000).toFixed(1)} s in all`);
    }
    if (only("W7")) {
      const random = createRandom(7);
      const requests = Array.from({ length: POOL_SIZE }, () =>
        buildRequest("PATCH", `/api/entities/Task/${pick()}`, { headers: { "X-Api-Key": SECRET_KEY }, body: { priority: 1 + Math.floor(random() * 100), done: random() < 0.5 } }));
      rows.push(row("W7 update by id (PATCH), durable", options.connections, await measure(requests), "target ≥ 5,000 req/s"));
    }
    if (only("W4")) {
      // The disk's own floor, in the same folder just before: W4 at c=1 cannot beat one fdatasync.
      const disk = measureDiskSync(dir, DISK_PROBE_MS);
      notes.push(`disk: a bare write+fdatasync loop on the data folder's disk did ${fmt(disk.rate)}/s (${disk.ms.toFixed(3)} ms each) just before W4`);
      // Every create a record of its own (its title names its index), so that under --unique none is refused.
      const random = createRandom(4);
      let created = 0;
      const requests = () => buildRequest("POST", "/api/entities/Task", { headers: { "X-Api-Key": SECRET_KEY }, body: makeTask(options.records + created++, random) });
      const single = await measure(requests, 1);
      rows.push(row("W4 create, durable", 1, single, `target ≥ 1,500 req/s; ${pct(single.rate / disk.rate)} of the disk's bare fdatasync rate`));
      rows.push(row("W4 create, durable", options.connections, await measure(requests), "target ≥ 7,000 req/s"));
    }
    if (only("W9")) {
      // W4's creates at c=32 without subscribers, then with SUBSCRIBERS SSE streams of Task's changes
      // held by a child process (bench/feed-subscribers.mjs), which also probes delivery latency; then
      // the floor: the same creates (the same bodies) and the same subscriber child against a bare
      // broadcaster (bench/bare-broadcaster.mjs), which writes each create's frame to every stream.
      const creates = () => {
        const random = createRandom(9);
        let created = 0;
        return () => buildRequest("POST", "/api/entities/Task", { headers: { "X-Api-Key": SECRET_KEY }, body: makeTask(2 * options.records + created++, random) });
      };
      const requests = creates();
      const alone = await measure(requests);
      const followedBy = async (child) => {
        const subscribers = await startSubscribers(child.port, options.subscribers);
        subscribers.proc.stdin.write("start\n");
        const cpuBefore = readCpuMs(subscribers.proc.pid);
        const startedAt = performance.now();
        const load = await measureWithCpu(child, { port: child.port, requests: child === server ? requests : creates(), connections: options.connections });
        const subscriberCpu = (readCpuMs(subscribers.proc.pid) - cpuBefore) / (performance.now() - startedAt);
        const feed = await subscribers.stop();
        // The subscribers' connections close with their process: let the server let go of them first.
        await new Promise((resolve) => setTimeout(resolve, 500));
        return { load, feed, subscriberCpu, deliveryRate: feed.deliveries / feed.seconds };
      };
      const followed = await followedBy(server);
      // The floor writes one turn's frames as one chunk per socket; a broadcaster writing each
      // create's frame on its own is measured beside it, for scale.
      const floors = {};
      for (const mode of ["per-turn", "per-create"]) {
        bare = await startChild("bare-broadcaster", [new URL("./bare-broadcaster.mjs", import.meta.url).pathname, mode]);
        floors[mode] = await followedBy(bare);
        await stopChild(bare.proc);
        bare = null;
      }
      const floor = floors["per-turn"];
      // A probe's figures are null (NaN in JSON) when none of its events arrived while counting.
      const ms = (value) => (typeof value === "number" ? value.toFixed(1) : "–");
      const describe = ({ feed, subscriberCpu, deliveryRate }) =>
        `${fmt(deliveryRate)} deliveries/s (${(feed.bytes / feed.seconds / 1048576).toFixed(0)} MiB/s); ` +
        `answer→arrival p50 ${ms(feed.p50)} ms, p99 ${ms(feed.p99)} ms, max ${ms(feed.max)} ms over ${fmt(feed.probeArrivals)} of ${fmt(feed.expectedArrivals)} probe arrivals; ` +
        `${feed.ended} streams cut off, ${feed.refused} refused; subscribers' CPU ${pct(subscriberCpu)}`;
      rows.push(row("W9 create, durable, no subscribers", options.connections, alone));
      rows.push(row(`W9 floor: bare broadcaster, same creates, ${fmt(options.subscribers)} SSE subscribers`, options.connections, floor.load, `a turn's frames as one write per socket; ${describe(floor)}`));
      rows.push(row(`W9 bare broadcaster writing each create's frame apart (for scale)`, options.connections, floors["per-create"].load, describe(floors["per-create"])));
      rows.push(row(`W9 create, durable, ${fmt(options.subscribers)} SSE subscribers on Task`, options.connections, followed.load,
        `**${pct(followed.load.rate / floor.load.rate)} of the floor's creates/s, ${pct(followed.deliveryRate / floor.deliveryRate)} of its deliveries/s** (target ≥ 70%, p99 ≤ 50 ms); ` +
        `${pct(followed.load.rate / alone.rate)} of the rate without; ${describe(followed)}`));
      const streams = `${fmt(options.subscribers)} SSE subscribers`;
      ratio(`W9 creates/s, ${streams} ÷ bare broadcaster`, followed.load.rate / floor.load.rate, 0.7, "higher", `bare broadcaster ${fmt(floor.load.rate)} creates/s`);
      ratio(`W9 deliveries/s, ${streams} ÷ bare broadcaster`, followed.deliveryRate / floor.deliveryRate, 0.7, "higher", `bare broadcaster ${fmt(floor.deliveryRate)} deliveries/s`);
    }
    if (only("W10")) {
      // W9's run three times: alone, with SSE streams, and with Socket.IO connections (the wire of
      // @base44/sdk's subscribe()), each room a change feed stream of Task.
      const random = createRandom(10);
      let created = 0;
      const requests = () => buildRequest("POST", "/api/entities/Task", { headers: { "X-Api-Key": SECRET_KEY }, body: makeTask(3 * options.records + created++, random) });
      const alone = await measure(requests);
      rows.push(row("W10 create, durable, no subscribers", options.connections, alone));
      for (const [wire, what] of [["sse", "SSE streams"], ["socket.io", "Socket.IO subscribers (rooms)"]]) {
        const subscribers = await startSubscribers(server.port, options.subscribers, wire);
        subscribers.proc.stdin.write("start\n");
        const followed = await measure(requests);
        const feed = await subscribers.stop();
        rows.push(row(`W10 create, durable, ${fmt(options.subscribers)} ${what} on Task`, options.connections, followed,
          `${pct(followed.rate / alone.rate)} of the rate without; ${fmt(feed.deliveries / feed.seconds)} deliveries/s (${(feed.bytes / feed.seconds / 1048576).toFixed(0)} MiB/s); ` +
          `request→arrival p50 ${feed.sentP50.toFixed(1)} ms, p99 ${feed.sentP99.toFixed(1)} ms; answer→arrival p50 ${feed.p50.toFixed(1)} ms, p99 ${feed.p99.toFixed(1)} ms, max ${feed.max.toFixed(0)} ms ` +
          `over ${fmt(feed.probeArrivals)} of ${fmt(feed.expectedArrivals)} probe arrivals; ${feed.ended} cut off, ${feed.refused} refused`));
        // The subscribers' connections close with their process: let the server let go of them first.
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
    if (only("W11")) rows.push(...(await withGeneratorPinned((isPinned) => measureWebhooks(server, measure, isPinned))));
    const sustained = only("SUSTAINED") ? await sustainWrites(server, dataDir, pick) : [];
    const afterLoad = { rss: readRss(server.proc.pid), files: dataFiles(dataDir), records: await countRecords(server) };
    // A crash first: the next start replays every log entry after the snapshot. Then a clean stop.
    // (A profiled child must stop cleanly to write its profile.)
    await stopChild(server.proc, options.cpuProf ? "SIGTERM" : "SIGKILL");
    server = null;
    const afterKill = dataFiles(dataDir);
    server = await startTabula(dir, dataDir, options.nodeFlags);
    const crashStart = { startMs: server.startMs, rss: readRss(server.proc.pid) };
    await stopChild(server.proc);
    server = null;
    const afterStop = dataFiles(dataDir);
    server = await startTabula(dir, dataDir, options.nodeFlags);
    const restarted = { startMs: server.startMs, rss: readRss(server.proc.pid), files: dataFiles(dataDir) };
    await stopChild(server.proc);
    server = null;

    printReport({ rows, latencies, notes, afterSeed, seededStart, settled, afterLoad, afterKill, crashStart, afterStop, restarted, seeded, sustained });
    // A run that measured no ratio (--only W3) leaves the last chart as it was.
    if (options.chart !== "none" && ratios.length > 0) {
      const { entries, markdown } = recordRatios(ratios, { chart: options.chart });
      console.log(`\n${ratios.length} ratios of this run and ${entries.length - ratios.length} kept from earlier runs drawn on ${path.relative(process.cwd(), options.chart) || options.chart}; in Markdown, with its text alternative:`);
      console.log(markdown);
    }
  } finally {
    if (bare) await stopChild(bare.proc);
    if (server) await stopChild(server.proc);
    if (options.keep) console.log(`\nkept ${dir} (the folder as seeded: ${join(dir, "seeded-data")})`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * AGG: aggregates and a distinct over the seeded Task records, one request at a time. The first
 * request of each is reported apart: grouping by a field no filter has used yet builds its value index.
 */
async function measureAggregates(server) {
  const aggregate = (spec) => ({ method: "POST", path: "/api/entities/Task/aggregate", body: spec });
  const cases = [
    ["count, no filter (the round trip's floor, for comparison)", { method: "GET", path: "/api/entities/Task/count" }, ""],
    ["aggregate by an enum (status), count only", aggregate({ groupBy: "status" }), "< 20 ms"],
    ["aggregate by a boolean (done), count only", aggregate({ groupBy: "done" }), "< 20 ms"],
    ["distinct of an enum (status)", { method: "GET", path: "/api/entities/Task/distinct/status" }, "< 2 ms"],
    ["aggregate by status, priority ≥ 50 (no index: every row), sum and avg of estimate", aggregate({ query: { priority: { $gte: 50 } }, groupBy: "status", sum: "estimate", avg: "estimate" }), "context"],
    ["aggregate by month of due_date, done = true (value index), count", aggregate({ query: { done: true }, dateBucket: { field: "due_date", unit: "month" } }), "context"],
  ];
  const lines = [];
  for (const [name, request, target] of cases) {
    const timing = await timeSequentially(server, request);
    const answer = timing.text.length > 90 ? `${timing.text.slice(0, 87)}...` : timing.text;
    lines.push(`| ${name} | ${timing.median.toFixed(2)} | ${timing.p90.toFixed(2)} | ${timing.first.toFixed(1)} | ${target} | \`${answer.replaceAll("|", "\\|")}\` |`);
  }
  return lines;
}

async function timeSequentially(server, { method, path, body }) {
  const init = { method, headers: { "X-Api-Key": SECRET_KEY, ...(body ? { "Content-Type": "application/json" } : {}) }, body: body && JSON.stringify(body) };
  const once = async () => {
    const startedAt = performance.now();
    const answer = await fetch(server.url + path, init);
    const text = await answer.text();
    if (answer.status !== 200) throw new Error(`${method} ${path}: ${answer.status} ${text}`);
    return { ms: performance.now() - startedAt, text };
  };
  const first = await once();
  for (let i = 0; i < LATENCY_WARMUP; i++) await once();
  const times = [];
  const startedAt = performance.now();
  while (times.length < LATENCY_SAMPLES && (times.length < LATENCY_MIN_SAMPLES || performance.now() - startedAt < LATENCY_BUDGET_MS)) times.push((await once()).ms);
  times.sort((a, b) => a - b);
  return { first: first.ms, median: times[Math.floor(times.length / 2)], p90: times[Math.floor(times.length * 0.9)], text: first.text };
}

/**
 * Waits for the compaction a server may start right after start-up: until a new snapshot has
 * replaced the old one, or, if none has begun (no snapshot-*.tmp) within SETTLE_QUIET_MS, until then.
 */
async function waitForStartCompaction(server, dataDir) {
  const snapshots = () => readdirSync(dataDir).filter((name) => name.startsWith("snapshot-")).sort().join(",");
  const before = snapshots();
  const startedAt = performance.now();
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const now = snapshots();
    const ms = performance.now() - startedAt;
    const isRunning = now.includes(".tmp");
    // Over once the new snapshot is the only one: the old one is deleted just after the rename.
    const compacted = !isRunning && now !== before && !now.includes(",");
    if (compacted || (!isRunning && ms >= SETTLE_QUIET_MS) || ms >= SETTLE_MAX_MS) {
      return { ms, compacted, rss: readRss(server.proc.pid), files: dataFiles(dataDir) };
    }
  }
}

/**
 * Sustained updates (W7's load) in slices of SLICE_MS until a compaction has come and gone (a new
 * snapshot, and one more slice), or SUSTAIN_MAX_MS: resident memory and log size per slice show
 * whether compaction keeps both bounded.
 */
async function sustainWrites(server, dataDir, pick) {
  const random = createRandom(99);
  const requests = Array.from({ length: POOL_SIZE }, () =>
    buildRequest("PATCH", `/api/entities/Task/${pick()}`, { headers: { "X-Api-Key": SECRET_KEY }, body: { priority: 1 + Math.floor(random() * 100), estimate: Math.round(random() * 1000) / 10 } }));
  const snapshotsOf = (files) => files.sized.filter((f) => f.name.startsWith("snapshot-")).map((f) => f.name).join(",");
  let lastSnapshots = snapshotsOf(dataFiles(dataDir));
  const slices = [];
  const startedAt = performance.now();
  let slicesAfterCompaction = -1;
  const minMs = options.sustain * 1000;
  while (performance.now() - startedAt < Math.max(minMs, SUSTAIN_MAX_MS) && (slicesAfterCompaction < 1 || performance.now() - startedAt < minMs)) {
    const load = await runLoad({ port: server.port, requests, connections: options.connections, durationMs: SLICE_MS, warmupMs: 0 });
    const files = dataFiles(dataDir);
    const isCompacted = snapshotsOf(files) !== lastSnapshots;
    lastSnapshots = snapshotsOf(files);
    if (isCompacted || slicesAfterCompaction >= 0) slicesAfterCompaction++;
    slices.push({ seconds: (performance.now() - startedAt) / 1000, load, rss: readRss(server.proc.pid), files, isCompacted });
  }
  return slices;
}

/**
 * Seeding is W8: POST /bulk with 1,000 new records per request, one request at a time, through the
 * load generator (each body built just before it is sent; only request time counts). The ids are
 * then read back with a walk over the table.
 */
async function seed(server, records) {
  const random = createRandom(1);
  const requests = Math.ceil(records / BULK_RECORDS);
  const bulkRequest = (n) => {
    const batch = Array.from({ length: Math.min(BULK_RECORDS, records - n * BULK_RECORDS) }, (_, i) => makeTask(n * BULK_RECORDS + i, random));
    return buildRequest("POST", "/api/entities/Task/bulk", { headers: { "X-Api-Key": SECRET_KEY }, body: batch });
  };
  const load = await runLoad({ port: server.port, requests: bulkRequest, connections: 1, warmupMs: 0, limit: requests });
  const failed = Object.keys(load.statuses).filter((status) => status !== "201");
  if (failed.length > 0) throw new Error(`seeding: POST /bulk answered ${JSON.stringify(load.statuses)}`);
  const ids = [];
  for (let cursor = null; ; ) {
    const answer = await fetch(`${server.url}/api/entities/Task?fields=id&limit=5000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { headers: { "X-Api-Key": SECRET_KEY } });
    for (const record of await answer.json()) ids.push(record.id);
    cursor = answer.headers.get("x-next-cursor");
    if (!cursor) break;
  }
  if (ids.length !== records) throw new Error(`seeding: ${records} records sent, ${ids.length} listed`);
  return { ids, load, recordsPerSecond: records / load.seconds };
}

async function countRecords(server) {
  const answer = await fetch(`${server.url}/api/entities/Task/count`, { headers: { "X-Api-Key": SECRET_KEY } });
  return (await answer.json()).count;
}

/** Walks the default sort with big pages to `depth` records, and answers the cursor found there. */
async function walkToDepth(server, depth) {
  let cursor = null;
  for (let walked = 0; walked < depth; ) {
    const limit = Math.min(5000, depth - walked);
    const query = cursor ? `cursor=${encodeURIComponent(cursor)}&limit=${limit}` : `limit=${limit}`;
    const answer = await fetch(`${server.url}/api/entities/Task?${query}`, { headers: { "X-Api-Key": SECRET_KEY } });
    await answer.arrayBuffer();
    cursor = answer.headers.get("x-next-cursor");
    if (answer.status !== 200 || !cursor) throw new Error(`walking to depth ${depth}: stopped at ${walked} (status ${answer.status})`);
    walked += limit;
  }
  return cursor;
}

/**
 * runLoad, plus the CPU the server child and this process (the load generator) used meanwhile, as a
 * share of one core: a server below ~95% was not the bottleneck (the generator or a neighbour was).
 */
async function measureWithCpu(child, load) {
  const cpuBefore = readCpuMs(child.proc.pid);
  const ownBefore = process.cpuUsage();
  const startedAt = performance.now();
  const timed = { durationMs: options.duration * 1000, warmupMs: options.warmup * 1000, ...load };
  const result = await runLoad(timed);
  // A server that answers errors would measure how fast it fails.
  const failed = Object.keys(result.statuses).filter((status) => !/^2\d\d$|^304$/.test(status));
  if (failed.length > 0) throw new Error(`the server on port ${load.port} answered ${JSON.stringify(result.statuses)}`);
  const wallMs = performance.now() - startedAt;
  const own = process.cpuUsage(ownBefore);
  // Where the measured part lies in the child's --cpu-prof profile (which starts about when it was spawned).
  const window = [Math.round(startedAt - child.spawnedAt + timed.warmupMs), Math.round(startedAt - child.spawnedAt + wallMs)];
  return { ...result, serverCpu: (readCpuMs(child.proc.pid) - cpuBefore) / wallMs, generatorCpu: (own.user + own.system) / 1000 / wallMs, window };
}

/**
 * W1 and the bare server loaded at the same time, `roundCount` times: the server CPU each spent per
 * answer (µs). Both run on one host at one moment, so its drift does not tell them apart.
 */
async function measureSideBySide(server, bare, w1Requests, bareRequests, durationMs, roundCount) {
  const rounds = [];
  for (let round = 0; round < roundCount; round++) {
    const before = [readCpuMs(server.proc.pid), readCpuMs(bare.proc.pid)];
    const [w1, baseline] = await Promise.all([
      runLoad({ port: server.port, requests: w1Requests, connections: options.connections, durationMs, warmupMs: 0 }),
      runLoad({ port: bare.port, requests: bareRequests, connections: options.connections, durationMs, warmupMs: 0 }),
    ]);
    const after = [readCpuMs(server.proc.pid), readCpuMs(bare.proc.pid)];
    rounds.push({ w1Us: ((after[0] - before[0]) * 1000) / w1.count, bareUs: ((after[1] - before[1]) * 1000) / baseline.count });
  }
  return rounds;
}

/** Several measurements as one: rates, latencies and CPU shares averaged, counts summed. */
function meanLoad(loads) {
  const statuses = {};
  for (const load of loads) for (const [status, n] of Object.entries(load.statuses)) statuses[status] = (statuses[status] ?? 0) + n;
  const mean = (name) => loads.reduce((sum, load) => sum + load[name], 0) / loads.length;
  const window = [loads[0].window[0], loads.at(-1).window[1]];
  return { count: loads.reduce((sum, load) => sum + load.count, 0), rate: mean("rate"), p50: mean("p50"), p99: mean("p99"), serverCpu: mean("serverCpu"), generatorCpu: mean("generatorCpu"), statuses, window };
}

function poolPicker(ids) {
  const random = createRandom(42);
  return () => ids[Math.floor(random() * ids.length)];
}

/**
 * W11: rounds of W4's creates at c=32 alone and with W11_ENDPOINTS new webhook endpoints on Task
 * (in turn first), and how long they took to deliver the backlog; then creates paced at PACED_PER_SECOND, whose lag is
 * the delivery lag of a server not saturated. Lag: the event's timestamp to its arrival.
 */
/**
 * Runs W11 with the load generator (this process's main thread, and the receivers it starts) on the
 * last core, on Linux with taskset (--w11-generator free leaves it). While the sending thread and
 * the receivers keep the other core busy under the idle policy, the kernel wakes the generator on
 * the requests' thread's core instead, and it preempts that thread thousands of times a second
 * (perf's sched_switch: 2,000–4,300 a second, against 57–156 without endpoints). The generator
 * stands for clients on other machines; pinned, it stays off the requests' thread's core with and
 * without endpoints alike.
 */
async function withGeneratorPinned(run) {
  const cores = os.availableParallelism();
  const affinity = (...args) => spawnSync("taskset", [...args, String(process.pid)], { encoding: "utf8" });
  const before = options.w11Generator === "pinned" && process.platform === "linux" && cores > 1 ? affinity("-pc").stdout?.match(/list: (\S+)/)?.[1] : undefined;
  if (!before || affinity("-pc", String(cores - 1)).status !== 0) return run(false);
  try {
    return await run(true);
  } finally {
    affinity("-pc", before);
  }
}

async function measureWebhooks(server, measure, isGeneratorPinned) {
  const random = createRandom(11);
  let created = 0;
  const requests = () => buildRequest("POST", "/api/entities/Task", { headers: { "X-Api-Key": SECRET_KEY }, body: makeTask(4 * options.records + created++, random) });
  const api = async (method, path, body) => {
    const response = await fetch(`${server.url}${path}`, { method, headers: { "X-Api-Key": SECRET_KEY, "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return response.headers.get("content-type")?.includes("json") ? response.json() : response.text();
  };
  /** Resolves once every endpoint is caught up (lag 0 in GET /metrics); the ms it took. */
  const drained = async () => {
    const startedAt = performance.now();
    for (;;) {
      const lags = [...(await api("GET", "/metrics")).matchAll(/^tabula_webhook_lag_seconds\{[^}]*\} (\S+)$/gm)].map((match) => Number(match[1]));
      if (lags.length === W11_ENDPOINTS && lags.every((lag) => lag === 0)) return performance.now() - startedAt;
      if (performance.now() - startedAt > DRAIN_MAX_MS) throw new Error(`W11: the endpoints had not caught up after ${DRAIN_MAX_MS} ms (lags ${lags.join(", ")} s)`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  // Receivers are other services, on other machines: here they share tabula's 2 cores, so on Linux
  // they run under the idle policy (chrt), taking only the cores tabula leaves (--w11-receivers).
  const areReceiversIdle = options.w11Receivers === "idle" && process.platform === "linux" && spawnSync("chrt", ["--idle", "0", "true"]).status === 0;
  const receiversScript = [new URL("./webhook-receivers.mjs", import.meta.url).pathname, String(W11_ENDPOINTS)];
  const receivers = await startLineChild(areReceiversIdle ? ["chrt", "--idle", "0", process.execPath, ...receiversScript] : [process.execPath, ...receiversScript], "the webhook receivers");
  const ports = (await receivers.nextLine()).replace(/^ready /, "").split(",");
  const receiversCpu = async () => {
    receivers.proc.stdin.write("cpu\n");
    return Number(await receivers.nextLine());
  };
  let unsettled = 0;
  /**
   * Resolves once no compaction is due: with the log as big as the last snapshot, the server
   * compacts at its first quiet moment, which the drain after a measurement with endpoints gives and
   * the end of one without does not; each measurement starts from a log smaller than the snapshot.
   */
  const settled = async () => {
    const startedAt = performance.now();
    const read = async () => {
      const text = await api("GET", "/metrics");
      const sample = (name) => Number(text.match(new RegExp(`^${name} (\\S+)$`, "m"))?.[1] ?? 0);
      return { log: sample("tabula_log_bytes"), snapshot: sample("tabula_snapshot_bytes"), compactions: sample('tabula_compactions_total\\{result="done"\\}') };
    };
    let files = await read();
    const before = files.compactions;
    while (files.log >= COMPACTION_MIN_LOG_BYTES && files.log >= files.snapshot && files.compactions === before) {
      // Under --cpu-prof node counts the event loop as busy (its utilization reads ~0.9 when idle),
      // so the server never finds its quiet moment: the measurement starts anyway, and says so.
      if (performance.now() - startedAt > W11_SETTLE_MAX_MS) {
        unsettled++;
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
      files = await read();
    }
  };
  const measureSettled = async (requests) => {
    await settled();
    return measure(requests);
  };
  const follow = async () => {
    const endpoints = [];
    for (const port of ports) endpoints.push(await api("POST", "/api/webhooks", { url: `http://127.0.0.1:${port}/hook`, entities: ["Task"] }));
    return endpoints;
  };
  const unfollow = async (endpoints) => {
    for (const endpoint of endpoints) await api("DELETE", `/api/webhooks/${endpoint.id}`);
  };
  const measureFollowed = async () => {
    const endpoints = await follow();
    await settled();
    // The receivers' share of a core over the load (its warm-up included).
    const [cpuBefore, loadStartedAt] = [await receiversCpu(), performance.now()];
    const followed = await measure(requests);
    const receiversShare = ((await receiversCpu()) - cpuBefore) / (performance.now() - loadStartedAt);
    const drainMs = await drained();
    await unfollow(endpoints);
    return { followed, receiversShare, drainMs };
  };
  // A measurement with endpoints first, not counted: the first one starts the sending thread, and a
  // store just started writes faster than one a window older, a drift too steep for the rounds'
  // taking turns to cancel.
  await measureFollowed();
  // Rounds, each the creates alone and with new endpoints (their backlog drained before the next
  // measurement), in turn first and second: rates drift down as the store grows, and a compaction
  // may fall in either window, so the ratio is of the rates' sums, where the drift cancels.
  const rounds = [];
  for (let round = 0; round < options.w11Rounds; round++) {
    const isAloneFirst = round % 2 === 0;
    const alone = isAloneFirst ? await measureSettled(requests) : null;
    const withEndpoints = await measureFollowed();
    rounds.push({ alone: alone ?? (await measureSettled(requests)), ...withEndpoints, isAloneFirst });
  }
  const endpoints = await follow();
  for (let n = 0, startedAt = performance.now(); performance.now() - startedAt < PACED_MS; n++) {
    await api("POST", "/api/entities/Task", { title: `w11paced-${n}`, status: "todo", priority: 1 });
    const due = startedAt + ((n + 1) * 1000) / PACED_PER_SECOND;
    if (due > performance.now()) await new Promise((resolve) => setTimeout(resolve, due - performance.now()));
  }
  await drained();
  await unfollow(endpoints);
  receivers.proc.stdin.write("stop\n");
  const { groups } = JSON.parse(await receivers.nextLine());
  const { load, paced } = groups;
  const sum = (pick) => rounds.reduce((total, round) => total + pick(round), 0);
  const mean = (pick) => sum(pick) / rounds.length;
  const overall = sum((round) => round.followed.rate) / sum((round) => round.alone.rate);
  const statusesOf = (side) => {
    const statuses = {};
    for (const round of rounds) for (const [status, n] of Object.entries(round[side].statuses)) statuses[status] = (statuses[status] ?? 0) + n;
    return statuses;
  };
  const merged = (side) => ({ ...rounds[0][side], statuses: statusesOf(side), rate: mean((round) => round[side].rate), p50: mean((round) => round[side].p50), p99: mean((round) => round[side].p99), serverCpu: mean((round) => round[side].serverCpu), generatorCpu: mean((round) => round[side].generatorCpu) });
  const answered = sum(({ followed }) => followed.statuses[201] ?? 0);
  const each = rounds.map((round) => `${pct(round.followed.rate / round.alone.rate)}${round.isAloneFirst ? "" : " (with first)"}`).join(", ");
  ratio(`W11 creates/s, ${W11_ENDPOINTS} webhook endpoints ÷ none`, overall, 0.9, "higher", `the same creates without webhooks, ${fmt(mean((round) => round.alone.rate))} creates/s, the same ${rounds.length} rounds`);
  return [
    row(`W11 create, durable, no webhooks (mean of ${rounds.length} rounds)`, options.connections, merged("alone")),
    row(`W11 create, durable, ${W11_ENDPOINTS} webhook endpoints on Task (mean of ${rounds.length} rounds)`, options.connections, merged("followed"),
      `${pct(overall)} of the rate without (target ≥ 90%; rounds ${each}${unsettled > 0 ? `; ${unsettled} measurement${unsettled === 1 ? "" : "s"} began with a compaction due` : ""}); receivers' CPU ${pct(mean((round) => round.receiversShare))} of a core (${areReceiversIdle ? "under the idle policy" : "at normal priority"}); the load generator ${isGeneratorPinned ? "pinned to the last core" : "free"}; the last delivery ${fmt(mean((round) => round.drainMs))} ms after the load stopped; ` +
      `${fmt(load.deliveries)} deliveries in all rounds (${fmt(W11_ENDPOINTS * answered)} creates answered 201 × ${W11_ENDPOINTS}; more: warm-up creates, or events sent again); ` +
      `lag under this load p50 ${fmt(load.p50)} ms, p99 ${fmt(load.p99)} ms; creates paced at ${PACED_PER_SECOND}/s: lag p50 ${paced.p50} ms, p99 ${paced.p99} ms, max ${paced.max} ms over ${fmt(paced.deliveries)} deliveries`),
  ];
}

/** A child that speaks in lines on stdout: nextLine() resolves with each. */
function startLineChild([command, ...args], what) {
  const proc = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
  let output = "";
  proc.stdout.setEncoding("utf8");
  const lines = [];
  let wake = null;
  proc.stdout.on("data", (text) => {
    output += text;
    for (let end = output.indexOf("\n"); end >= 0; end = output.indexOf("\n")) {
      lines.push(output.slice(0, end));
      output = output.slice(end + 1);
    }
    wake?.();
  });
  const nextLine = () =>
    new Promise((resolve, reject) => {
      const check = () => (lines.length > 0 ? resolve(lines.shift()) : proc.exitCode !== null ? reject(new Error(`${what} exited`)) : (wake = check));
      check();
    });
  return { proc, nextLine };
}

/** W9's subscriber process, once every stream is open; stop() answers what it measured. */
function startSubscribers(port, count, wire = "sse") {
  const { proc, nextLine } = startLineChild([process.execPath, new URL("./feed-subscribers.mjs", import.meta.url).pathname, String(port), SECRET_KEY, String(count), wire], "the subscribers");
  return nextLine().then((ready) => {
    if (!ready.startsWith("ready")) throw new Error(`the subscribers said ${ready}`);
    return {
      proc,
      async stop() {
        proc.stdin.write("stop\n");
        return JSON.parse(await nextLine());
      },
    };
  });
}

async function startTabula(dir, dataDir, nodeFlags = []) {
  return startChild("tabula", [...nodeFlags, join(dir, "tabula.mjs"), "--schema", join(dir, "schema.json"), "--data", dataDir, "--port", "0", "--secret-key", SECRET_KEY, "--log", options.log, "--webhooks-allow-private", "--max-connections-per-client", "2000"]);
}

function row(workload, connections, load, note = "") {
  if (options.cpuProf && load.window) profileWindows.push(`${workload}, c=${connections}: --skip-ms ${load.window[0]} --to-ms ${load.window[1]}`);
  const failed = Object.entries(load.statuses).filter(([status]) => !status.startsWith("2"));
  const failures = failed.length ? ` **non-2xx: ${failed.map(([s, n]) => `${n}×${s}`).join(", ")}**` : "";
  const cpu = load.serverCpu === undefined ? "" : `${pct(load.serverCpu)} / ${pct(load.generatorCpu)}`;
  return `| ${workload} | ${connections} | ${fmt(load.rate)} | ${load.p50.toFixed(2)} | ${load.p99.toFixed(2)} | ${cpu} | ${note}${failures} |`;
}

function printReport({ rows, latencies, notes, afterSeed, seededStart, settled, afterLoad, afterKill, crashStart, afterStop, restarted, seeded, sustained }) {
  const mib = (bytes) => `${(bytes / 1048576).toFixed(1)} MiB`;
  const files = (f) => `log ${mib(f.logBytes)}, snapshot ${mib(f.snapshotBytes)} (${f.sized.map((x) => `${x.name.replace(/-0+/, "-")} ${mib(x.bytes)}`).join(", ")})`;
  const cpu = os.cpus();
  console.log(`\n## tabula bench: ${fmt(options.records)} records, ${options.duration} s per workload after ${options.warmup} s warm-up`);
  console.log(`\n${cpu.length} × ${cpu[0]?.model ?? "cpu"}, ${mib(os.totalmem())} RAM, Node ${process.version}, ${os.type()} ${os.release()}; load generator on the same machine\n`);
  console.log("| workload | connections | req/s | p50 ms | p99 ms | CPU server / generator | notes |");
  console.log("|---|---:|---:|---:|---:|---:|---|");
  for (const line of rows) console.log(line);
  if (latencies.length > 0) {
    console.log(`\n| one request at a time (${fmt(options.records)} records) | median ms | p90 ms | first ms | target | answer |`);
    console.log("|---|---:|---:|---:|---|---|");
    for (const line of latencies) console.log(line);
  }
  console.log("");
  console.log("- CPU: share of one core used by the server (tabula or bare) and by the load generator during the measurement; 2 cores in all.");
  for (const note of notes) console.log(`- ${note}`);
  for (const window of profileWindows) console.log(`- profile window of ${window}`);
  console.log(`- start-up (process start included) on the seeded folder: ${seededStart.startMs.toFixed(0)} ms; after the workloads, killed with SIGKILL (snapshot + log replay): ${crashStart.startMs.toFixed(0)} ms; after a clean stop: ${restarted.startMs.toFixed(0)} ms`);
  console.log(`- resident memory of tabula: ${mib(seededStart.rss)} after starting on the seeded folder (the seeding process itself: ${mib(afterSeed.rss)}), ${mib(afterLoad.rss)} after the workloads (${fmt(afterLoad.records)} records by then), ${mib(crashStart.rss)} after the start that followed SIGKILL, ${mib(restarted.rss)} after a clean restart (target ≤ 200 MiB at 100,000)`);
  const times = (rss, bytes) => (bytes > 0 ? `${(rss / bytes).toFixed(2)}×` : "(no file)");
  console.log(`- resident memory against the data on disk: at the seeded start ${times(seededStart.rss, seededStart.files.snapshotBytes)} the snapshot (${times(seededStart.rss, seededStart.files.snapshotBytes + seededStart.files.logBytes)} snapshot + log); ` +
    (settled.compacted
      ? `once the compaction that followed was over (${(settled.ms / 1000).toFixed(1)} s after start-up) ${mib(settled.rss)}, ${times(settled.rss, settled.files.snapshotBytes)} the snapshot it wrote (target at 1,000,000 records: ≤ 2× the snapshot)`
      : `no compaction followed start-up; ${mib(settled.rss)} ${(settled.ms / 1000).toFixed(1)} s later (target at 1,000,000 records: ≤ 2× the snapshot)`));
  console.log(`- data folder after seeding: ${files(afterSeed.files)}`);
  console.log(`- after the seeded folder's start: ${files(seededStart.files)}`);
  console.log(`- after the compaction that follows start-up: ${files(settled.files)}`);
  console.log(`- after the workloads: ${files(afterLoad.files)}`);
  console.log(`- after SIGKILL: ${files(afterKill)}`);
  console.log(`- after a clean stop: ${files(afterStop)}`);
  console.log(`- after a restart: ${files(restarted.files)}`);
  if (sustained.length === 0) return;
  console.log(`\nSustained updates (W7's load, c=${options.connections}) until a compaction has run, in ${SLICE_MS / 1000} s slices:\n`);
  console.log("| t (s) | req/s | p99 ms | RSS | log | snapshot | snapshot changed |");
  console.log("|---:|---:|---:|---:|---:|---:|---|");
  for (const slice of sustained) {
    console.log(`| ${slice.seconds.toFixed(0)} | ${fmt(slice.load.rate)} | ${slice.load.p99.toFixed(2)} | ${mib(slice.rss)} | ${mib(slice.files.logBytes)} | ${mib(slice.files.snapshotBytes)} | ${slice.isCompacted ? "yes" : ""} |`);
  }
}

function parseOptions(argv) {
  const parsed = { records: 100_000, duration: 5, warmup: 1, connections: 32, only: null, keep: false, cpuProf: null, sustain: 0, nodeFlags: [], w1Ids: POOL_SIZE, w1Rounds: W1_ROUNDS, w11Rounds: W11_ROUNDS, w11Receivers: "idle", w11Generator: "pinned", unique: false, subscribers: 1000, log: "off", chart: fileURLToPath(new URL("../docs/benchmarks.svg", import.meta.url)) };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => {
      const text = argv[++i];
      if (text === undefined) throw new Error(`${flag} needs a value`);
      return text;
    };
    if (flag === "--records") parsed.records = positive(flag, value());
    else if (flag === "--duration") parsed.duration = positive(flag, value());
    else if (flag === "--warmup") parsed.warmup = Number(value());
    else if (flag === "--connections") parsed.connections = positive(flag, value());
    else if (flag === "--subscribers") parsed.subscribers = positive(flag, value());
    else if (flag === "--log") parsed.log = value();
    else if (flag === "--only") parsed.only = value().toUpperCase().split(",");
    else if (flag === "--keep") parsed.keep = true;
    else if (flag === "--unique") parsed.unique = true;
    else if (flag === "--w1-ids") parsed.w1Ids = positive(flag, value());
    else if (flag === "--w1-rounds") parsed.w1Rounds = Math.ceil(positive(flag, value()));
    else if (flag === "--w11-rounds") parsed.w11Rounds = Math.ceil(positive(flag, value()));
    else if (flag === "--w11-receivers") parsed.w11Receivers = oneOf(flag, value(), ["idle", "normal"]);
    else if (flag === "--w11-generator") parsed.w11Generator = oneOf(flag, value(), ["pinned", "free"]);
    else if (flag === "--sustain") parsed.sustain = positive(flag, value());
    else if (flag === "--node-flags") parsed.nodeFlags = value().split(/\s+/).filter(Boolean);
    else if (flag === "--cpu-prof") parsed.cpuProf = path.resolve(value());
    else if (flag === "--chart") parsed.chart = ((text) => (text === "none" ? text : path.resolve(text)))(value());
    else throw new Error(`unknown option ${flag}; options: --records N --duration S --warmup S --connections C --only W1,W2,AGG --keep --unique --cpu-prof DIR --sustain S --w1-ids N --w1-rounds N --w11-rounds N --w11-receivers idle|normal --w11-generator pinned|free --subscribers N --log text|json|off --chart PATH|none --node-flags "--max-old-space-size=256"`);
  }
  return parsed;
}

function oneOf(flag, text, allowed) {
  if (!allowed.includes(text)) throw new Error(`${flag} must be one of ${allowed.join(", ")} (got "${text}")`);
  return text;
}

function positive(flag, text) {
  const value = Number(text);
  if (!(value > 0)) throw new Error(`${flag} must be a positive number (got "${text}")`);
  return value;
}

function fmt(value) {
  return Math.round(value).toLocaleString("en-US");
}
function pct(value) {
  return `${(value * 100).toFixed(0)}%`;
}
function multiple(value) {
  return `${value.toFixed(2)}×`;
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
