// Summarises a V8 .cpuprofile (from `node bench/run.mjs --cpu-prof DIR`): the functions with the
// most self time and the most inclusive time, in the window of samples from --skip-ms (skipping
// start-up) to --to-ms after the profile's start.
//
//   node bench/profile-summary.mjs FILE.cpuprofile [--skip-ms 2000] [--to-ms 9000] [--top 25]

import { readFileSync } from "node:fs";
import { relative } from "node:path";

const [file, ...rest] = process.argv.slice(2);
if (!file) throw new Error("usage: node bench/profile-summary.mjs FILE.cpuprofile [--skip-ms N] [--top N]");
const option = (name, fallback) => {
  const at = rest.indexOf(name);
  return at === -1 ? fallback : Number(rest[at + 1]);
};
const skipMs = option("--skip-ms", 0);
const toMs = option("--to-ms", Infinity);
const top = option("--top", 25);

const profile = JSON.parse(readFileSync(file, "utf8"));
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parentOf = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);

const label = (node) => {
  const { functionName, url, lineNumber } = node.callFrame;
  const where = url ? `${relative(process.cwd(), url.replace(/^file:\/\//, ""))}:${lineNumber + 1}` : "";
  return `${functionName || "(anonymous)"} ${where}`.trim();
};

const self = new Map();
const inclusive = new Map();
let total = 0;
let elapsed = 0;
for (let i = 0; i < profile.samples.length; i++) {
  const dt = profile.timeDeltas[i] / 1000;
  elapsed += dt;
  if (elapsed < skipMs || elapsed > toMs) continue;
  total += dt;
  const leaf = byId.get(profile.samples[i]);
  self.set(label(leaf), (self.get(label(leaf)) ?? 0) + dt);
  const seen = new Set();
  for (let id = leaf.id; id !== undefined; id = parentOf.get(id)) {
    const name = label(byId.get(id));
    if (seen.has(name)) continue;
    seen.add(name);
    inclusive.set(name, (inclusive.get(name) ?? 0) + dt);
  }
}

const print = (title, map) => {
  console.log(`\n${title} (of ${total.toFixed(0)} ms sampled from ${skipMs} to ${toMs} ms)`);
  for (const [name, ms] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${((100 * ms) / total).toFixed(1).padStart(5)}%  ${ms.toFixed(0).padStart(6)} ms  ${name}`);
  }
};
print("self time", self);
print("inclusive time", inclusive);
