// What a rule costs (docs/rules.md): a signed-in user's list of its own notes under an owner rule
// ("read": {"owner_email": "{{user.email}}"}) against the same list of a rule-less twin entity with
// the owner filter written by hand in q (W2's shape: 20 records, newest first), and a read by id
// of each (W1's shape), in alternating rounds on one server, so that the host's drift falls on
// both alike. 20,000 notes of 100 owners. Run on dist/ (node build.mjs first).
//
//   node bench/rules.mjs [--store memory|file|postgres] [--pg-url URL] [--rounds 4] [--seconds 3] [--connections 16]
//
// postgres without --pg-url starts a throwaway cluster of Debian's PostgreSQL.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { buildRequest, runLoad } from "./load.mjs";
import { startCluster } from "../test/support/pg-cluster.mjs";

const { values } = parseArgs({
  options: {
    store: { type: "string", default: "memory" },
    "pg-url": { type: "string" },
    rounds: { type: "string", default: "4" },
    seconds: { type: "string", default: "3" },
    connections: { type: "string", default: "16" },
  },
});
const SECRET = "sk_bench_rules_secret_key";
const PUBLISHABLE = "pk_bench_rules_publishable";
const NOTES = 20_000;
const OWNERS = 100;
const PAGE = 20;

const NOTE = {
  type: "object",
  properties: { title: { type: "string" }, owner_email: { type: "string" }, priority: { type: "integer" } },
  required: ["title"],
};
const SCHEMA = { RuledNote: { ...NOTE, rls: { read: { owner_email: "{{user.email}}" } } }, PlainNote: NOTE };

const { startServer } = await import(new URL("../dist/tabula-api.mjs", import.meta.url).href);
const cluster = values.store === "postgres" && values["pg-url"] === undefined ? await startCluster() : null;
const dataDir = values.store === "file" ? mkdtempSync(join(tmpdir(), "tabula-bench-rules-")) : undefined;
const place = values.store === "postgres" ? { store: values["pg-url"] ?? cluster.url } : dataDir ? { data: dataDir } : { memory: true };
const codes = [];
const server = await startServer({ schema: SCHEMA, secretKey: SECRET, publishableKey: PUBLISHABLE, ...place, log: "off", printCode: (line) => codes.push(line) });
try {
  const call = async (method, path, body, headers = {}) => {
    const response = await fetch(server.url + path, { method, headers: { "Content-Type": "application/json", ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
    return response.json();
  };
  const owner = (i) => `owner${i % OWNERS}@example.com`;
  for (const entity of Object.keys(SCHEMA)) {
    for (let from = 0; from < NOTES; from += 5000) {
      const batch = Array.from({ length: 5000 }, (_, i) => ({ title: `note ${from + i}`, owner_email: owner(from + i), priority: (from + i) % 5 }));
      await call("POST", `/api/entities/${entity}/bulk`, batch, { "X-Api-Key": SECRET });
    }
  }
  const email = owner(7);
  await call("POST", "/api/auth/register", { email, password: "correct horse battery" });
  const code = /code (\d{6})/.exec(codes.at(-1))[1];
  const { access_token: token } = await call("POST", "/api/auth/verify-otp", { email, otp_code: code });
  const headers = { "X-Api-Key": PUBLISHABLE, Authorization: `Bearer ${token}` };
  const idsOf = async (entity) => (await call("GET", `/api/entities/${entity}?limit=500&fields=id&q=${encodeURIComponent(JSON.stringify({ owner_email: email }))}`, undefined, { "X-Api-Key": SECRET })).map((note) => note.id);
  const ruledIds = await idsOf("RuledNote");
  const plainIds = await idsOf("PlainNote");
  const byHand = encodeURIComponent(JSON.stringify({ owner_email: email }));
  const variants = {
    "W2 under the rule": [buildRequest("GET", `/api/entities/RuledNote?limit=${PAGE}`, { headers })],
    "W2, q by hand": [buildRequest("GET", `/api/entities/PlainNote?limit=${PAGE}&q=${byHand}`, { headers })],
    "W1 under the rule": ruledIds.map((id) => buildRequest("GET", `/api/entities/RuledNote/${id}`, { headers })),
    "W1, no rule": plainIds.map((id) => buildRequest("GET", `/api/entities/PlainNote/${id}`, { headers })),
  };
  // The rule must narrow as the hand-written filter does: same records, same order.
  const ruledPage = await call("GET", `/api/entities/RuledNote?limit=${PAGE}`, undefined, headers);
  const plainPage = await call("GET", `/api/entities/PlainNote?limit=${PAGE}&q=${byHand}`, undefined, headers);
  if (ruledPage.length !== PAGE || JSON.stringify(ruledPage.map((n) => n.title)) !== JSON.stringify(plainPage.map((n) => n.title))) {
    throw new Error(`the rule's page differs from the hand-written one: ${JSON.stringify(ruledPage.map((n) => n.title))} vs ${JSON.stringify(plainPage.map((n) => n.title))}`);
  }
  const rates = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
  const port = Number(new URL(server.url).port);
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const [name, requests] of Object.entries(variants)) {
      const { rate, statuses } = await runLoad({ port, requests, connections: Number(values.connections), durationMs: Number(values.seconds) * 1000, warmupMs: 500 });
      if (Object.keys(statuses).some((status) => status !== "200")) throw new Error(`${name}: ${JSON.stringify(statuses)}`);
      rates[name].push(rate);
    }
  }
  const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
  console.log(`rules, ${values.store} store, ${NOTES} notes of ${OWNERS} owners, ${values.connections} connections, ${values.rounds} alternating rounds of ${values.seconds} s (median req/s):`);
  for (const [name, list] of Object.entries(rates)) console.log(`  ${name.padEnd(20)} ${median(list).toFixed(0).padStart(7)}  (${list.map((rate) => rate.toFixed(0)).join(", ")})`);
  console.log(`  W2: the rule is ${(median(rates["W2 under the rule"]) / median(rates["W2, q by hand"])).toFixed(2)} of q by hand (target ≥ 0.9)`);
  console.log(`  W1: the rule is ${(median(rates["W1 under the rule"]) / median(rates["W1, no rule"])).toFixed(2)} of no rule (target: within noise)`);
} finally {
  await server.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  cluster?.stop();
}
