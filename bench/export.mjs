// npm run build && node bench/export.mjs [RECORDS]: issue 21's export figures. A memory-store
// server seeded with RECORDS (default 1,000,000) Task records; one export of them all streamed to
// a client that reads as fast as it can, while a writer keeps creating records (4 at a time).
// Reports the server's resident memory before and at its peak during the export (sampled every
// 20 ms from /proc), the export's rate, and the writes' latency without and during the export:
// the export holds an array of the rows live when it began and never pauses writes beyond the
// moment that array is taken.

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const RECORDS = Number(process.argv[2] ?? 1_000_000);
const KEY = "sk_bench_export_";
const dir = mkdtempSync(join(tmpdir(), "tabula-bench-export-"));
const schema = join(dir, "schema.json");
const seed = join(dir, "seed.json");
writeFileSync(schema, JSON.stringify({ Task: { type: "object", properties: { title: { type: "string" }, priority: { type: "integer" }, done: { type: "boolean" }, tags: { type: "array", items: { type: "string" } } }, required: ["title"] } }));
const lines = [];
for (let i = 0; i < RECORDS; i++) lines.push(JSON.stringify({ title: `task number ${i}`, priority: i % 1000, done: i % 2 === 0, tags: ["a", `t${i % 7}`] }));
writeFileSync(seed, `{"Task":[${lines.join(",")}]}`);
lines.length = 0;

const child = spawn(process.execPath, ["dist/tabula.mjs", "--schema", schema, "--memory", "--seed", seed, "--port", "0", "--log", "off", "--secret-key", KEY], { stdio: ["ignore", "pipe", "inherit"] });
const url = await new Promise((resolve, reject) => {
  let out = "";
  child.stdout.on("data", (chunk) => {
    out += chunk;
    const found = /listening on (http:\/\/\S+)/.exec(out);
    if (found) resolve(found[1]);
  });
  child.on("exit", (code) => reject(new Error(`the server exited (${code}) before listening`)));
});
const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))[1]) / 1024;
const headers = { "X-Api-Key": KEY, "Content-Type": "application/json" };

/** Creates records 4 at a time until stopped; answers their latencies in ms. */
function writer() {
  const latencies = [];
  let running = true;
  const loop = async () => {
    while (running) {
      const started = performance.now();
      const response = await fetch(`${url}/api/entities/Task`, { method: "POST", headers, body: '{"title":"written meanwhile"}' });
      await response.arrayBuffer();
      latencies.push(performance.now() - started);
      if (process.env.BENCH_TRACE && performance.now() - started > 500) console.log(`slow write: ${(performance.now() - started).toFixed(0)} ms, ended at ${performance.now().toFixed(0)}`);
    }
  };
  const loops = Array.from({ length: 4 }, loop);
  return async () => {
    running = false;
    await Promise.all(loops);
    return latencies.sort((a, b) => a - b);
  };
}
const at = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))].toFixed(2);

await new Promise((resolve) => setTimeout(resolve, 2000));
const stopQuiet = writer();
await new Promise((resolve) => setTimeout(resolve, 3000));
const quiet = await stopQuiet();
const rssBefore = rssMb();

let peak = rssBefore;
const sampler = setInterval(() => (peak = Math.max(peak, rssMb())), 20);
const stopBusy = writer();
await new Promise((resolve) => setTimeout(resolve, 500));
const started = performance.now();
// The export is read by curl, another process, as a user's would be: reading it here would share
// this process's event loop with the writer whose latency is measured.
const curl = spawn("curl", ["-sS", "-N", "-H", `X-Api-Key: ${KEY}`, "-o", "/dev/null", "-w", "%{size_download} %{time_starttransfer}", `${url}/api/entities/Task/export`]);
let curlOut = "";
curl.stdout.on("data", (chunk) => (curlOut += chunk));
await new Promise((resolve) => curl.on("close", resolve));
const [bytes, firstByteSeconds] = curlOut.split(" ").map(Number);
const firstByteMs = firstByteSeconds * 1000;
const seconds = (performance.now() - started) / 1000;
const busy = await stopBusy();
clearInterval(sampler);
child.kill("SIGTERM");
rmSync(dir, { recursive: true, force: true });

console.log(`export of ${RECORDS.toLocaleString("en-US")} seeded records and those written before it (${(bytes / 1e6).toFixed(0)} MB NDJSON) in ${seconds.toFixed(2)} s: ${(bytes / 1e6 / seconds).toFixed(0)} MB/s`);
console.log(`the export's answer began ${firstByteMs.toFixed(0)} ms after its request`);
console.log(`server RSS: ${rssBefore.toFixed(0)} MB before, ${peak.toFixed(0)} MB at its peak during the export (+${(peak - rssBefore).toFixed(0)} MB)`);
console.log(`creates (4 at a time) without an export: ${quiet.length} in 3 s, p50 ${at(quiet, 0.5)} ms, p99 ${at(quiet, 0.99)} ms, max ${at(quiet, 1)} ms`);
console.log(`creates during the export: ${busy.length} in ${(seconds + 0.5).toFixed(1)} s, p50 ${at(busy, 0.5)} ms, p99 ${at(busy, 0.99)} ms, max ${at(busy, 1)} ms`);
