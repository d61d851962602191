// How long a migration takes (docs/schema-changes.md, docs/benchmarks.md#migrations): a convert of
// one field over --records records on the file store, timed as the start-up that runs it, beside a
// start-up on the same data with nothing to migrate, with each one's peak resident memory (VmHWM).
//
//   node build.mjs && node bench/migration.mjs [--records 1000000]
//
// Records are loaded with POST /bulk (5,000 at a time), then the server is stopped (SIGTERM) and
// started three times: plain (the floor: loading the records), plain again, then with the migration.

import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { startChild, stopChild } from "./machine.mjs";

const SECRET_KEY = "sk_bench_secret_";
const BATCH = 5000;
const records = Number(process.argv[process.argv.indexOf("--records") + 1] ?? 0) || 1_000_000;
const cli = new URL("../dist/tabula.mjs", import.meta.url).pathname;
const root = mkdtempSync(join(os.tmpdir(), "tabula-bench-migration-"));
const schema = (n) => ({ Item: { type: "object", properties: { title: { type: "string" }, n, done: { type: "boolean" } }, required: ["title"] } });
writeFileSync(join(root, "v1.json"), JSON.stringify(schema({ type: "string" })));
writeFileSync(join(root, "v2.json"), JSON.stringify(schema({ type: "integer" })));
mkdirSync(join(root, "migrations"));
const args = (version) => [cli, "--schema", join(root, `${version}.json`), "--data", join(root, "data"), "--migrations", join(root, "migrations"), "--port", "0", "--log", "off", "--secret-key", SECRET_KEY];

function peakRss(pid) {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) / 1024 : NaN;
}

try {
  const loader = await startChild("tabula", args("v1"));
  for (let start = 0; start < records; start += BATCH) {
    const body = Array.from({ length: Math.min(BATCH, records - start) }, (_, i) => ({ title: `item ${start + i}`, n: String(start + i), done: (start + i) % 2 === 0 }));
    const response = await fetch(`${loader.url}/api/entities/Item/bulk`, { method: "POST", headers: { "X-Api-Key": SECRET_KEY, "Content-Type": "application/json" }, body: JSON.stringify(body) });
    if (response.status !== 201) throw new Error(`bulk: ${response.status} ${await response.text()}`);
  }
  await stopChild(loader.proc);
  const rows = [];
  for (const label of ["start-up, nothing to migrate", "start-up, nothing to migrate (again)"]) {
    const plain = await startChild("tabula", args("v1"));
    rows.push([label, plain.startMs, peakRss(plain.proc.pid)]);
    await stopChild(plain.proc);
  }
  writeFileSync(join(root, "migrations", "0001-n-as-integer.json"), JSON.stringify({ steps: [{ convert: "Item.n", to: "integer" }] }));
  const migrating = await startChild("tabula", args("v2"));
  rows.push([`start-up running the migration (convert of ${records.toLocaleString("en-US")} values)`, migrating.startMs, peakRss(migrating.proc.pid)]);
  await stopChild(migrating.proc);
  const after = await startChild("tabula", args("v2"));
  rows.push(["start-up after it (nothing pending)", after.startMs, peakRss(after.proc.pid)]);
  await stopChild(after.proc);
  console.log(`\n${records.toLocaleString("en-US")} records, file store, node ${process.version}, ${os.cpus().length} cores\n`);
  console.log("| start-up | time (s) | peak RSS (MiB) |\n|---|---|---|");
  for (const [label, ms, rss] of rows) console.log(`| ${label} | ${(ms / 1000).toFixed(2)} | ${Math.round(rss)} |`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
