// node build.mjs && node bench/bulk-memory.mjs [--scenario bulk|answers] [--store memory|file]
//   [--requests 20] [--records 5000] [--cli dist/tabula.mjs] [--max-old-space-size MiB] [-- server flags...]
// What heavy writes cost in resident memory (docs/operating.md, "Memory"). Starts the built server,
// then either
// - bulk: sends REQUESTS concurrent POST /api/entities/Task/bulk of RECORDS records of about 1.9 kB
//   each (9.5 MB a request by default), or
// - answers: creates one record of 9 MB, then sends REQUESTS PUTs of {"priority":i} to it, each
//   with an Idempotency-Key of its own (each answer is the whole record),
// and samples the server's /proc/<pid>/status every 10 ms. Prints resident memory before, at its
// peak (VmHWM, the kernel's own high-water mark) and once the requests are answered, in MiB, and the
// peak's rise over the bytes sent. --cli picks another build (a copy of an older one, to compare).

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createRandom, makeTask, TASK_SCHEMA } from "./task-schema.mjs";

const { values, positionals } = parseArgs({
  options: {
    scenario: { type: "string", default: "bulk" },
    store: { type: "string", default: "memory" },
    requests: { type: "string" },
    records: { type: "string", default: "5000" },
    cli: { type: "string", default: "dist/tabula.mjs" },
    "max-old-space-size": { type: "string" },
  },
  allowPositionals: true,
});
const SCENARIO = values.scenario;
const REQUESTS = Number(values.requests ?? (SCENARIO === "answers" ? 60 : 20));
const RECORDS = Number(values.records);
const KEY = "sk_bench_bulk_memory";
const dir = mkdtempSync(join(tmpdir(), "tabula-bench-bulk-memory-"));
const schema = join(dir, "schema.json");
writeFileSync(schema, JSON.stringify(TASK_SCHEMA));
const storeArgs = values.store === "file" ? ["--data", join(dir, "data")] : ["--memory"];
const args = [values.cli, "--schema", schema, ...storeArgs, "--port", "0", "--log", "off", "--secret-key", KEY, "--max-body", "20mb", ...positionals];
// SIGUSR2 makes the server collect its garbage and print what is left: what the written records keep.
// It also keeps the peaks of V8's heap (committed and used) and of memory outside it, sampled every 10 ms.
const PROBE = `const peaks = { heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 };
setInterval(() => { const m = process.memoryUsage(); for (const k in peaks) peaks[k] = Math.max(peaks[k], m[k]); }, 10).unref();
process.on("SIGUSR2", () => { gc(); const m = process.memoryUsage(); process.stderr.write("probe " + JSON.stringify({ ...m, peaks }) + "\\n"); });`;
const nodeArgs = ["--expose-gc", `--import=data:text/javascript,${encodeURIComponent(PROBE)}`];
if (values["max-old-space-size"]) nodeArgs.push(`--max-old-space-size=${values["max-old-space-size"]}`);
const child = spawn(process.execPath, [...nodeArgs, ...args], { stdio: ["ignore", "pipe", "pipe"] });
let probed = null;
child.stderr.setEncoding("utf8");
child.stderr.on("data", (text) => {
  const found = /probe (\{.*\})/.exec(text);
  if (found) probed = JSON.parse(found[1]);
  else process.stderr.write(text);
});
const url = await new Promise((resolve, reject) => {
  let out = "";
  child.stdout.on("data", (chunk) => {
    out += chunk;
    const found = /listening on (http:\/\/\S+)/.exec(out);
    if (found) resolve(found[1]);
  });
  child.on("exit", (code) => reject(new Error(`the server exited (${code}) before listening`)));
});
let exitedWith = null;
child.on("exit", (code, signal) => (exitedWith = code ?? signal));

/** A field of the server's /proc status in MiB; NaN once it has died (a zombie's status has none, a reaped process no file). */
const statusOf = (name) => {
  let status = "";
  try {
    status = readFileSync(`/proc/${child.pid}/status`, "utf8");
  } catch {
    return NaN; // reaped: there is no status to read
  }
  const found = new RegExp(`${name}:\\s+(\\d+)`).exec(status);
  return found ? Number(found[1]) / 1024 : NaN;
};
const mib = (n) => `${n.toFixed(0)} MiB`;
const headers = { "X-Api-Key": KEY, "Content-Type": "application/json" };
const T = `${url}/api/entities/Task`;

/** A record of about `bytes` bytes of JSON: makeTask's fields and a title long enough. */
function recordOf(index, random, bytes) {
  const task = makeTask(index, random);
  const base = JSON.stringify(task).length;
  task.title += ` ${"abcdefghij".repeat(Math.ceil(bytes / 10)).slice(0, Math.max(0, bytes - base - 1))}`;
  return task;
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 1000));
await settle();
let sent = 0;
let statuses = new Map();
const count = (status) => statuses.set(status, (statuses.get(status) ?? 0) + 1);
let before;
let peak;
let sampler;
const startSampling = () => {
  before = statusOf("VmRSS");
  peak = before;
  sampler = setInterval(() => {
    const rss = exitedWith === null ? statusOf("VmRSS") : NaN;
    if (rss > peak) peak = rss;
  }, 10);
};
const started = performance.now();
if (SCENARIO === "bulk") {
  const random = createRandom(7);
  const bodies = Array.from({ length: REQUESTS }, (_, r) => JSON.stringify(Array.from({ length: RECORDS }, (_, i) => recordOf(r * RECORDS + i, random, 1900))));
  sent = bodies.reduce((sum, body) => sum + body.length, 0);
  startSampling();
  await Promise.all(
    bodies.map(async (body) => {
      try {
        const response = await fetch(`${T}/bulk`, { method: "POST", headers, body });
        await response.arrayBuffer();
        count(response.status);
      } catch (error) {
        count(error.cause?.code ?? error.message);
      }
    }),
  );
} else if (SCENARIO === "answers") {
  const created = await fetch(T, { method: "POST", headers, body: JSON.stringify({ title: "x".repeat(9_000_000) }) });
  // Records are at most 1 MiB by default (--max-record-size): this scenario needs `-- --max-record-size 10mb`.
  if (created.status === 413) throw new Error("the 9 MB record was refused (413): pass -- --max-record-size 10mb to this build");
  const { id } = await created.json();
  startSampling();
  for (let i = 0; i < REQUESTS; i++) {
    const body = JSON.stringify({ priority: i });
    sent += body.length;
    const response = await fetch(`${T}/${id}`, { method: "PUT", headers: { ...headers, "Idempotency-Key": `bench-${i}` }, body });
    await response.arrayBuffer();
    count(response.status);
  }
} else {
  throw new Error(`--scenario must be bulk or answers (got ${SCENARIO})`);
}
const seconds = (performance.now() - started) / 1000;
await settle();
clearInterval(sampler);
const alive = exitedWith === null;
const after = alive ? statusOf("VmRSS") : NaN;
const hwm = alive ? statusOf("VmHWM") : NaN;
// Twice: array buffers freed by the first collection are swept on another thread, after it.
for (let i = 0; i < 2 && alive; i++) {
  child.kill("SIGUSR2");
  await settle();
}
const kept = alive ? statusOf("VmRSS") : NaN;
child.kill("SIGTERM");
await new Promise((resolve) => (exitedWith === null ? child.on("exit", resolve) : resolve()));
rmSync(dir, { recursive: true, force: true });

console.log(`${SCENARIO}, ${values.store} store, ${REQUESTS} requests${SCENARIO === "bulk" ? ` of ${RECORDS} records` : ""}: ${(sent / 1048576).toFixed(1)} MiB sent in ${seconds.toFixed(1)} s`);
console.log(`answers: ${[...statuses].map(([status, n]) => `${n} × ${status}`).join(", ")}${alive ? "" : `; the server died (${exitedWith})`}`);
console.log(`resident: before ${mib(before)}, peak ${mib(Math.max(peak, hwm || 0))} (VmHWM ${mib(hwm)}), after ${mib(after)}`);
const rise = Math.max(peak, hwm || 0) - before;
console.log(`peak rise ${mib(rise)}${SCENARIO === "bulk" ? ` = ${(rise / (sent / 1048576)).toFixed(2)} × the bytes sent` : ""}`);
if (probed) console.log(`after a full collection: resident ${mib(kept)}, heap used ${mib(probed.heapUsed / 1048576)}, external ${mib(probed.external / 1048576)}, array buffers ${mib(probed.arrayBuffers / 1048576)}`);
if (probed) console.log(`peaks inside: heap committed ${mib(probed.peaks.heapTotal / 1048576)}, heap used ${mib(probed.peaks.heapUsed / 1048576)}, external ${mib(probed.peaks.external / 1048576)} (array buffers ${mib(probed.peaks.arrayBuffers / 1048576)})`);
