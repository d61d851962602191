// The PostgreSQL store, measured side by side with the limit (issue 18, item 4): tabula on
// --store postgres://… against bench/pg-direct-server.mjs, which sends the store's own statements
// straight through the driver, on the same database in the same run. W1 (read by id) and W4
// (durable create), W2 (filter, sort, a page of 100), W5 (count with a filter) and W6 (search) are
// given as ratios to the direct server (issue 45: W2, W5 and W6 ≥ 80%); W3 compares a cursor page
// deep in the table with the first; W7 and W8 are tabula's alone, for context. W2, W5 and W6 are
// measured against a second floor too (issue 59): bench/pg-engineer-server.mjs, the SQL a database
// engineer would write over a table of typed columns and their indexes (task_typed, copied from
// Task after the seeding), so that what tabula's layout costs shows beside what its code costs.
// Both tables are vacuumed and analyzed after the seeding, as autovacuum would leave them.
//
//   npm run bench:pg -- [--store postgres://user@host:port/db] [--records 100000] [--duration 6] [--connections 32]
//                       [--only W1,W2,W4,W5,W6] [--pg-schema NAME --keep] [--chart PATH|none]
//
// Without --store it starts a throwaway cluster with PostgreSQL's durable defaults
// (test/support/pg-cluster.mjs: fsync on, synchronous_commit on). Tables go in a fresh schema,
// dropped at the end; with --store, --pg-schema NAME --keep leaves them for the next run, which
// seeds only when the schema holds fewer than --records records (seeding 1,000,000 takes minutes).

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import postgres from "postgres";
import { startCluster } from "../test/support/pg-cluster.mjs";
import { buildRequest, runLoad } from "./load.mjs";
import { startChild, stopChild } from "./machine.mjs";
import { recordRatios } from "./chart.mjs";
import { createRandom, makeTask, TASK_SCHEMA, WORDS } from "./task-schema.mjs";
import { makeEngineerTable } from "./pg-engineer-server.mjs";

const SECRET_KEY = "sk_bench_secret_";
const BULK_RECORDS = 1000;
const POOL_SIZE = 4096;
const ROUNDS = 5;

const { values: flags } = parseArgs({
  options: {
    store: { type: "string" },
    records: { type: "string", default: "100000" },
    duration: { type: "string", default: "6" },
    connections: { type: "string", default: "32" },
    only: { type: "string" },
    "pg-schema": { type: "string" },
    keep: { type: "boolean", default: false },
    chart: { type: "string", default: fileURLToPath(new URL("../docs/benchmarks.svg", import.meta.url)) },
  },
});
if ((flags.keep || flags["pg-schema"]) && !flags.store) throw new Error("--pg-schema and --keep need --store (a throwaway cluster is deleted at the end)");
const only = flags.only ? new Set(flags.only.split(",").map((name) => name.trim().toUpperCase())) : null;
const runs = (workload) => only === null || only.has(workload);
const records = Number(flags.records);
const durationMs = Number(flags.duration) * 1000;
const connections = Number(flags.connections);


/** How many records the schema's Task table holds; 0 when it has none yet. */
async function recordsIn(url, schema) {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [{ exists }] = await sql.unsafe(`SELECT to_regclass($1) IS NOT NULL AS exists`, [`"${schema}"."Task"`]);
    if (!exists) return 0;
    const [{ count }] = await sql.unsafe(`SELECT count(*)::int AS count FROM "${schema}"."Task"`);
    return count;
  } finally {
    await sql.end();
  }
}

/** The process's user + system CPU time so far, in ms (Linux: /proc/PID/stat, in clock ticks of 10 ms). */
function readCpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const fmt = (n) => Math.round(n).toLocaleString("en-US");
const pct = (x) => `${Math.round(x * 100)}%`;

async function main() {
  const cluster = flags.store ? null : await startCluster({ durable: true });
  const url = flags.store ?? cluster.url;
  const schema = flags["pg-schema"] ?? `bench_${randomBytes(4).toString("hex")}`;
  const dir = mkdtempSync(join(os.tmpdir(), "tabula-pgbench-"));
  writeFileSync(join(dir, "schema.json"), JSON.stringify(TASK_SCHEMA));
  const rows = [];
  const notes = [];
  let tabula = null;
  let direct = null;
  let engineer = null;
  try {
    tabula = await startChild("tabula", [new URL("../dist/tabula.mjs", import.meta.url).pathname, "--schema", join(dir, "schema.json"), "--store", url, "--pg-schema", schema, "--port", "0", "--secret-key", SECRET_KEY, "--log", "off"]);
    notes.push(`tabula started in ${fmt(tabula.startMs)} ms (tables and indexes created)`);
    direct = await startChild("direct", [new URL("./pg-direct-server.mjs", import.meta.url).pathname, url, schema]);
    const headers = { "X-Api-Key": SECRET_KEY };
    const row = (name, c, load, note = "") => rows.push(`| ${name} | ${c} | ${fmt(load.rate)} | ${load.p50.toFixed(2)} | ${load.p99.toFixed(2)} | ${note} |`);
    // A server that answers errors would measure how fast it fails: any answer but 200 or 201 ends the run.
    const measure = async (server, requests, c = connections, ms = durationMs) => {
      const result = await runLoad({ port: server.port, requests, connections: c, durationMs: ms, warmupMs: 500 });
      const failed = Object.keys(result.statuses).filter((status) => status !== "200" && status !== "201");
      if (failed.length > 0) throw new Error(`${server === tabula ? "tabula" : "the floor"} answered ${JSON.stringify(result.statuses)} (port ${server.port})`);
      return result;
    };

    // W8: the seeding, one bulk create of 1,000 after another (none when a kept schema holds the records).
    const random = createRandom(7);
    const ids = [];
    const seedStart = performance.now();
    const held = await recordsIn(url, schema);
    if (held >= records) {
      const sql = postgres(url, { max: 1, onnotice: () => {} });
      for (const { id } of await sql.unsafe(`SELECT id FROM "${schema}"."Task" TABLESAMPLE SYSTEM (5) LIMIT ${POOL_SIZE}`)) ids.push(id);
      await sql.end();
      notes.push(`the ${fmt(held)} records of the kept schema ${schema} (no seeding)`);
    }
    for (let done = held >= records ? records : 0; done < records; done += BULK_RECORDS) {
      const batch = Array.from({ length: Math.min(BULK_RECORDS, records - done) }, (_, i) => makeTask(done + i, random));
      const answer = await fetch(`${tabula.url}/api/entities/Task/bulk`, { method: "POST", headers: { ...headers, "Content-Type": "application/json" }, body: JSON.stringify(batch) });
      if (answer.status !== 201) throw new Error(`seeding: ${answer.status} ${await answer.text()}`);
      for (const record of await answer.json()) if (ids.length < POOL_SIZE || random() < 0.05) ids.push(record.id);
    }
    const seedSeconds = (performance.now() - seedStart) / 1000;
    if (held < records) notes.push(`W8 (the seeding): ${fmt(records)} records in bulk creates of ${fmt(BULK_RECORDS)}, ${fmt(records / seedSeconds)} records/s`);
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    await sql.unsafe(`VACUUM ANALYZE "${schema}"."Task"`);
    await sql.end();
    const pool = ids.slice(-POOL_SIZE);

    // Each comparison: tabula and the direct server take turns in slices, so that both see the same machine.
    const compare = async (directName, name, tabulaRequests, directRequests, target, floor = direct) => {
      const pairs = [];
      for (let round = 0; round < ROUNDS; round++) {
        const slice = durationMs / ROUNDS;
        const order = round % 2 === 0 ? ["direct", "tabula"] : ["tabula", "direct"];
        const result = {};
        for (const who of order) {
          const server = who === "tabula" ? tabula : floor;
          const cpuBefore = readCpuMs(server.proc.pid);
          result[who] = await measure(server, who === "tabula" ? tabulaRequests : directRequests, connections, slice);
          result[who].cpuMs = readCpuMs(server.proc.pid) - cpuBefore;
          result[who].answers = (result[who].rate * (slice + 500)) / 1000; // the warm-up (500 ms) spends CPU too
        }
        pairs.push(result);
      }
      if (pairs.some((pair) => pair.tabula.rate === 0 || pair.direct.rate === 0)) {
        notes.push(`${name}: a slice of ${fmt(durationMs / ROUNDS)} ms saw no answer; give a longer --duration (30 at 1,000,000 records)`);
      }
      // CPU time per answer, each server's own process: steadier than req/s on a busy machine.
      const cpuPer = (who) => pairs.reduce((total, pair) => total + pair[who].cpuMs, 0) / pairs.reduce((total, pair) => total + pair[who].answers, 0);
      const mean = (who, field) => pairs.reduce((total, pair) => total + pair[who][field], 0) / ROUNDS;
      const sum = (who) => ({ rate: mean(who, "rate"), p50: mean(who, "p50"), p99: mean(who, "p99") });
      const ratios = pairs.map((pair) => pair.tabula.rate / pair.direct.rate).sort((a, b) => a - b);
      row(directName, connections, sum("direct"), `${cpuPer("direct").toFixed(2)} ms CPU per answer`);
      const median = ratios[Math.floor(ROUNDS / 2)];
      row(name, connections, sum("tabula"), `${pct(median)} of ${floor === direct ? "direct" : "the engineer's SQL"}, the median of ${ROUNDS} slice pairs (${pct(ratios[0])}–${pct(ratios.at(-1))}; target ≥ ${target}%); ${cpuPer("tabula").toFixed(2)} ms CPU per answer`);
      // W2, W5 and W6 have their target against direct SQL (80%); W1 and W4 are context.
      if (target === 80) chartRatios.push({ workload: `PostgreSQL ${name.split(" ")[0]}, ${fmt(records)} records ÷ ${floor === direct ? "direct SQL" : "engineer's SQL"}`, ratio: median, target: target / 100, direction: "higher", floor: `${directName.replace(" (the limit)", "")} ${fmt(sum("direct").rate)} req/s (mean of ${ROUNDS} slices)` });
    };
    // Both servers must answer the same records (as JSON values: jsonb keeps its keys in its own order).
    const checkSameAnswer = async (path, directPath) => {
      const [ours, theirs] = await Promise.all([fetch(`${tabula.url}${path}`, { headers }).then((r) => r.json()), fetch(`${direct.url}${directPath}`).then((r) => r.json())]);
      assert.deepStrictEqual(ours, theirs, `tabula's ${path} and the direct server's ${directPath} answer differently`);
    };
    // The engineer's server answers records of its own shape: the same records, in the same order, or the same count.
    const checkSameRecords = async (path, engineerPath) => {
      const [ours, theirs] = await Promise.all([fetch(`${tabula.url}${path}`, { headers }).then((r) => r.json()), fetch(`${engineer.url}${engineerPath}`).then((r) => r.json())]);
      const idsOf = (answer) => (Array.isArray(answer) ? answer.map((record) => record.id) : answer);
      assert.deepStrictEqual(idsOf(ours), idsOf(theirs), `tabula's ${path} and the engineer's ${engineerPath} answer differently`);
    };
    const ENGINEER = "the engineer's SQL over typed columns (the floor)";

    if (runs("W1")) {
      const tabulaReads = pool.map((id) => buildRequest("GET", `/api/entities/Task/${id}`, { headers }));
      const directReads = pool.map((id) => buildRequest("GET", `/Task/${id}`));
      await compare("direct SELECT by id (the limit)", `W1 read one by id (${fmt(pool.length)} random ids)`, tabulaReads, directReads, 50);
    }

    // W4: durable creates, one at a time and 32 at once, against the direct INSERT.
    if (runs("W4")) {
      const create = (i) => makeTask(records + i, createRandom(i));
      const tabulaCreates = Array.from({ length: 256 }, (_, i) => buildRequest("POST", "/api/entities/Task", { headers, body: create(i) }));
      const directCreates = Array.from({ length: 256 }, (_, i) => buildRequest("POST", "/Task", { body: create(i) }));
      for (const c of [1, connections]) {
        const limit = await measure(direct, directCreates, c, durationMs / 2);
        const ours = await measure(tabula, tabulaCreates, c, durationMs / 2);
        row("direct INSERT, the store's one statement (the limit)", c, limit);
        row("W4 create, durable", c, ours, `${pct(ours.rate / limit.rate)} of direct (target ≥ 60%)`);
      }
    }

    // W3: the first cursor page and one at 90% depth, in the default sort (-created_date).
    if (runs("W3")) {
      let cursor = null;
      for (let depth = 0; depth < Math.floor(records * 0.9); depth += 5000) {
        const answer = await fetch(`${tabula.url}/api/entities/Task?limit=5000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { headers });
        cursor = answer.headers.get("x-next-cursor");
        await answer.arrayBuffer();
      }
      const first = await measure(tabula, [buildRequest("GET", "/api/entities/Task?limit=100", { headers })]);
      const deep = await measure(tabula, [buildRequest("GET", `/api/entities/Task?limit=100&cursor=${encodeURIComponent(cursor)}`, { headers })]);
      row("W3a first cursor page, limit 100", connections, first);
      row("W3b cursor page at 90% depth, limit 100", connections, deep, `deep/first time: ${(first.rate / deep.rate).toFixed(2)} by req/s, ${(deep.p50 / first.p50).toFixed(2)} by p50 (target ≤ 1.2)`);
    }

    // The engineer's table is copied from Task once W4 has added its records, so that both answer the same
    // records; Task is vacuumed again first, as autovacuum would after those creates.
    if (runs("W2") || runs("W5") || runs("W6")) {
      const engineerStart = performance.now();
      const vacuum = postgres(url, { max: 1, onnotice: () => {} });
      await vacuum.unsafe(`VACUUM ANALYZE "${schema}"."Task"`);
      await vacuum.end();
      await makeEngineerTable(url, schema);
      notes.push(`the engineer's table task_typed (typed columns, indexes on status, (priority, id), (created_date, id), a trigram index on title) made in ${fmt(performance.now() - engineerStart)} ms`);
      engineer = await startChild("engineer", [new URL("./pg-engineer-server.mjs", import.meta.url).pathname, url, schema]);
    }

    const q = encodeURIComponent(JSON.stringify({ status: "todo" }));
    if (runs("W2")) {
      const list = `/api/entities/Task?q=${q}&sort_by=-priority&limit=100`;
      await checkSameAnswer(list, "/list");
      await compare("direct SELECT, the same page (the limit)", "W2 list status=todo, sort -priority, limit 100", [buildRequest("GET", list, { headers })], [buildRequest("GET", "/list")], 80);
      await checkSameRecords(list, "/list");
      await compare(`${ENGINEER}: the same page`, "W2 list status=todo, sort -priority, limit 100", [buildRequest("GET", list, { headers })], [buildRequest("GET", "/list")], 80, engineer);
    }
    if (runs("W5")) {
      await checkSameAnswer(`/api/entities/Task/count?q=${q}`, "/count");
      await compare("direct SELECT count(*) (the limit)", "W5 count status=todo", [buildRequest("GET", `/api/entities/Task/count?q=${q}`, { headers })], [buildRequest("GET", "/count")], 80);
      await checkSameRecords(`/api/entities/Task/count?q=${q}`, "/count");
      await compare(`${ENGINEER}: count(*)`, "W5 count status=todo", [buildRequest("GET", `/api/entities/Task/count?q=${q}`, { headers })], [buildRequest("GET", "/count")], 80, engineer);
    }
    if (runs("W6")) {
      const words = WORDS.slice(0, 50);
      await checkSameAnswer(`/api/entities/Task?search=${words[0]}&limit=20`, `/search?word=${words[0]}`);
      const searches = words.map((word) => buildRequest("GET", `/api/entities/Task?search=${word}&limit=20`, { headers }));
      const directSearches = words.map((word) => buildRequest("GET", `/search?word=${word}`));
      await compare("direct SELECT, the same search (the limit)", "W6 search (a word in ~1% of titles), limit 20", searches, directSearches, 80);
      await checkSameRecords(`/api/entities/Task?search=${words[0]}&limit=20`, `/search?word=${words[0]}`);
      await compare(`${ENGINEER}: title ILIKE`, "W6 search (a word in ~1% of titles), limit 20", searches, directSearches, 80, engineer);
    }
    if (runs("W7")) {
      const updates = pool.map((id, i) => buildRequest("PATCH", `/api/entities/Task/${id}`, { headers, body: { priority: 1 + (i % 100) } }));
      row("W7 update by id (PATCH), durable", connections, await measure(tabula, updates));
    }
  } finally {
    if (tabula) await stopChild(tabula.proc);
    if (direct) await stopChild(direct.proc);
    if (engineer) await stopChild(engineer.proc);
    if (flags.store && !flags.keep) {
      const sql = postgres(url, { max: 1, onnotice: () => {} });
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await sql.end();
    }
    cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const cpus = os.cpus();
  console.log(`\n## PostgreSQL store: ${fmt(records)} records, ${flags.store ? "the database given" : "a throwaway cluster with durable defaults"}, ${cpus.length} × ${cpus[0]?.model ?? "cpu"}, Node ${process.version}\n`);
  console.log("| workload | c | req/s | p50 ms | p99 ms | note |\n|---|---:|---:|---:|---:|---|");
  for (const line of rows) console.log(line);
  console.log("");
  for (const note of notes) console.log(`- ${note}`);
  if (flags.chart !== "none" && chartRatios.length > 0) {
    const { markdown } = recordRatios(chartRatios, { chart: resolve(flags.chart) });
    console.log(`\n${chartRatios.length} ratios drawn on ${flags.chart}; in Markdown:\n${markdown}`);
  }
}

/** The ratios with a target against direct SQL, for the chart (bench/chart.mjs). */
const chartRatios = [];

await main();
