// tabula's request handler driven in-process with mock requests and replies (no sockets): what a
// read by id costs tabula itself, apart from node:http and the kernel. Fills a Task entity through
// the same handler (POST /bulk), warms up, then times reads of random ids, either from the first
// 4,096 records (W1's pool) or from all of them. Run on dist/ (npm run build first).
//
//   node bench/read-path.mjs [--records 100000] [--reads 20000] [--rounds 5] [--all-ids]
//
// Timings follow the host's load. Instruction counts do not: under callgrind, --callgrind zeroes
// the counters before the measured reads and dumps them after, so that the dump's total over
// --reads is the instructions per read (main thread: the file ending in -01).
//
//   valgrind --tool=callgrind --separate-threads=yes --smc-check=all-non-file \
//     node bench/read-path.mjs --callgrind --rounds 1 --reads 5000

import { execFile } from "node:child_process";
import http from "node:http";
import { syncBuiltinESMExports } from "node:module";
import { Readable } from "node:stream";
import { promisify } from "node:util";
import { STATUSES, TASK_SCHEMA } from "./task-schema.mjs";

const SECRET_KEY = "sk_bench_secret_";
const POOL_SIZE = 4096;
const BULK_RECORDS = 1000;
const WARMUP_ROUNDS = 10;

const options = parseOptions(process.argv.slice(2));

// The handler tabula gives node:http, caught on its way to http.createServer.
let handler = null;
const createHttpServer = http.createServer;
http.createServer = (...args) => {
  handler = args.find((arg) => typeof arg === "function");
  return createHttpServer(...args);
};
syncBuiltinESMExports();
const { startServer } = await import(new URL("../dist/tabula-api.mjs", import.meta.url).href);
const server = await startServer({ schema: TASK_SCHEMA, secretKey: SECRET_KEY });

const ids = [];
for (let from = 0; from < options.records; from += BULK_RECORDS) {
  const batch = Array.from({ length: Math.min(BULK_RECORDS, options.records - from) }, (_, i) => ({
    title: `word${i} other task ${from + i}`,
    status: STATUSES[i % 3],
    priority: i % 100,
    estimate: 1.5,
    done: i % 2 === 0,
    due_date: "2026-05-01",
    tags: ["red", "ops"].slice(0, i % 3),
  }));
  const req = Object.assign(Readable.from([Buffer.from(JSON.stringify(batch))]), {
    url: "/api/entities/Task/bulk",
    method: "POST",
    rawHeaders: ["X-Api-Key", SECRET_KEY, "Content-Type", "application/json"],
  });
  const body = await new Promise((resolve) => handler(req, { headersSent: false, destroyed: false, writeHead() {}, end: resolve }));
  for (const record of JSON.parse(body)) ids.push(record.id);
}

// Each read gets a fresh URL string, as node:http hands one over.
const urls = (options.allIds ? ids : ids.slice(0, POOL_SIZE)).map((id) => Buffer.from(`/api/entities/Task/${id}`, "latin1"));
const rawHeaders = ["Host", "127.0.0.1", "Connection", "keep-alive", "X-Api-Key", SECRET_KEY];
const statuses = {};
const res = { headersSent: false, destroyed: false, writeHead: (status) => void (statuses[status] = (statuses[status] ?? 0) + 1), end() {} };
let seed = 42;
const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296;
const readMany = (count) => {
  const startedAt = process.hrtime.bigint();
  for (let i = 0; i < count; i++) handler({ url: urls[Math.floor(random() * urls.length)].latin1Slice(), method: "GET", rawHeaders }, res);
  return Number(process.hrtime.bigint() - startedAt) / count;
};

for (let i = 0; i < WARMUP_ROUNDS; i++) readMany(options.reads);
const callgrind = (command) => promisify(execFile)("callgrind_control", [command, String(process.pid)]);
const timings = [];
for (let round = 0; round < options.rounds; round++) {
  if (options.callgrind) await callgrind("-z");
  timings.push(readMany(options.reads));
  if (options.callgrind) await callgrind("-d");
}
await server.close();
const sorted = [...timings].sort((a, b) => a - b);
console.log(`${options.records} records, ${options.allIds ? "all ids" : `${Math.min(POOL_SIZE, ids.length)} ids`}: ${Math.round(sorted[sorted.length >> 1])} ns per read (median of ${options.rounds} rounds of ${options.reads}: ${timings.map(Math.round).join(", ")}); statuses ${JSON.stringify(statuses)}`);

function parseOptions(argv) {
  const parsed = { records: 100_000, reads: 20_000, rounds: 5, allIds: false, callgrind: false };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === "--records") parsed.records = Number(argv[++i]);
    else if (flag === "--reads") parsed.reads = Number(argv[++i]);
    else if (flag === "--rounds") parsed.rounds = Number(argv[++i]);
    else if (flag === "--all-ids") parsed.allIds = true;
    else if (flag === "--callgrind") parsed.callgrind = true;
    else throw new Error(`unknown option ${flag}; options: --records N --reads N --rounds N --all-ids --callgrind`);
  }
  return parsed;
}
