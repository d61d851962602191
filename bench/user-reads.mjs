// What a signed-in user's token costs a read by id (docs/users.md): W1 (GET one Task by id, 4,096
// ids) with the publishable key, with a user's token alone, and with both, in alternating rounds
// on one server, so that the host's drift falls on all three alike. Run on dist/ (node build.mjs first).
//
//   node bench/user-reads.mjs [--rounds 4] [--seconds 3] [--connections 16] [--store memory|file]

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { buildRequest, runLoad } from "./load.mjs";
import { TASK_SCHEMA } from "./task-schema.mjs";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "4" }, seconds: { type: "string", default: "3" }, connections: { type: "string", default: "16" }, store: { type: "string", default: "memory" } } });
const SECRET = "sk_bench_user_reads_secret";
const PUBLISHABLE = "pk_bench_user_reads_publishable";

const { startServer } = await import(new URL("../dist/tabula-api.mjs", import.meta.url).href);
const codes = [];
const dataDir = values.store === "file" ? mkdtempSync(join(tmpdir(), "tabula-user-reads-")) : undefined;
const server = await startServer({ schema: TASK_SCHEMA, secretKey: SECRET, publishableKey: PUBLISHABLE, ...(dataDir ? { data: dataDir } : { memory: true }), log: "off", printCode: (line) => codes.push(line) });
try {
  const call = async (method, path, body, headers = {}) => {
    const response = await fetch(server.url + path, { method, headers: { "Content-Type": "application/json", ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
    return response.json();
  };
  const created = await call("POST", "/api/entities/Task/bulk", Array.from({ length: 4096 }, (_, i) => ({ title: `task ${i}` })), { "X-Api-Key": SECRET });
  const ids = created.map((task) => task.id);
  await call("POST", "/api/auth/register", { email: "bench@example.com", password: "correct horse battery" });
  const code = /code (\d{6})/.exec(codes.at(-1))[1];
  const { access_token: token } = await call("POST", "/api/auth/verify-otp", { email: "bench@example.com", otp_code: code });
  const variants = {
    "publishable key": { "X-Api-Key": PUBLISHABLE },
    "user's token": { Authorization: `Bearer ${token}` },
    "key and token": { "X-Api-Key": PUBLISHABLE, Authorization: `Bearer ${token}` },
  };
  const rates = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
  const port = new URL(server.url).port;
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const [name, headers] of Object.entries(variants)) {
      const requests = ids.map((id) => buildRequest("GET", `/api/entities/Task/${id}`, { headers }));
      const { rate, statuses } = await runLoad({ port: Number(port), requests, connections: Number(values.connections), durationMs: Number(values.seconds) * 1000, warmupMs: 500 });
      if (Object.keys(statuses).some((status) => status !== "200")) throw new Error(`${name}: ${JSON.stringify(statuses)}`);
      rates[name].push(rate);
    }
  }
  const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
  const base = median(rates["publishable key"]);
  console.log(`W1, ${values.store} store, ${values.connections} connections, ${values.rounds} alternating rounds of ${values.seconds} s (median req/s):`);
  for (const [name, list] of Object.entries(rates)) console.log(`  ${name.padEnd(16)} ${median(list).toFixed(0).padStart(7)}  ${(median(list) / base).toFixed(2)} of the key's  (${list.map((rate) => rate.toFixed(0)).join(", ")})`);
} finally {
  await server.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}
