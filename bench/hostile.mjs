// A hostile load: what anyone holding the publishable key (it ships in a browser app) can send,
// against the built server with its heap limited as on a 1 GiB VM, beside a well-behaved client.
// Measures what docs/operating.md ("A public server's budget") promises: /health answered
// throughout, the good client's rate beside the attack against alone, resident memory, how fast
// SIGTERM stops the server, and that no acknowledged write is lost across the restart.
//
//   [HOSTILE_NODE_FLAGS=--trace-gc HOSTILE_SERVER_LOG=FILE] node bench/hostile.mjs [--store memory|file|postgres] [--pg-url URL] [--records 100000]
//                          [--duration 60] [--rounds 3] [--connections 20] [--heap-mb 512] [--cli dist/tabula.mjs]
// The good client is measured alone and beside the attack in turns (--rounds beside, each between
// two alone; the attack paused for those), its rates over all the turns of each kind compared.
//
// test/http/hostile-load.test.ts runs the same attack, shorter, on every store and checks its
// outcomes (never its timings).

import { fork, spawn } from "node:child_process";
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createNetServer } from "node:net";
import { Agent as HttpAgent, request as httpRequest } from "node:http";
import { setPriority, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { buildRequest, runLoad } from "./load.mjs";

const DIST_CLI = fileURLToPath(new URL("../dist/tabula.mjs", import.meta.url));
const SECRET = "sk_hostile_secret_key_0001";
const PUBLISHABLE = "pk_hostile_publishable_key_01";
const PATH = "/api/entities/Task";
/** The witness's pause between two creates. */
const WITNESS_PAUSE_MS = 5;
/** The argument that makes this file the attack process. */
const ATTACK_ARG = "--attack-process";

const TASK = {
  name: "Task",
  type: "object",
  properties: {
    title: { type: "string" },
    email: { type: "string" },
    status: { type: "string", enum: ["todo", "doing", "done"] },
    priority: { type: "integer" },
    start_at: { type: "string", format: "date-time" },
    tags: { type: "array", items: { type: "string" } },
    meta: { type: "object" },
  },
  required: ["title"],
};

/** Patterns that take a backtracking engine exponential or polynomial time on a near miss. */
export const CATASTROPHIC_PATTERNS = ["(a+)+b", "(a|aa)*b", "(.*a){20}", "\\w*\\w*\\w*x", "a*a*a*a*a*b", "(a*)*$", "([a-z]+)*!"];

const q = (filter) => encodeURIComponent(JSON.stringify(filter));

/** The attack's requests, cycled by each connection: every one the issue that found them named. */
function attackRequests() {
  const regex = (pattern) => ({ title: { $regex: pattern } });
  const requests = [];
  for (const pattern of CATASTROPHIC_PATTERNS) {
    requests.push({ method: "GET", path: `${PATH}?q=${q(regex(pattern))}&limit=5&fields=id` });
    requests.push({ method: "GET", path: `${PATH}/count?q=${q(regex(pattern))}` });
  }
  const slow = regex("a*a*a*a*a*b");
  requests.push(
    { method: "GET", path: `${PATH}/changes?since=0&limit=100&q=${q(slow)}` },
    { method: "POST", path: `${PATH}/aggregate`, body: { query: slow, count: true } },
    { method: "GET", path: `${PATH}/distinct/status?q=${q(slow)}` },
    { method: "GET", path: `${PATH}/export?format=ndjson&q=${q(slow)}` },
    { method: "POST", path: `${PATH}/aggregate`, body: { groupBy: "tags", count: true } },
    { method: "POST", path: `${PATH}/aggregate`, body: { groupBy: ["id", "title", "email", "start_at"], count: true, sum: "priority", avg: "priority", min: "priority", max: "priority" } },
    { method: "POST", path: `${PATH}/aggregate`, body: { query: { $or: Array.from({ length: 600 }, (_, i) => ({ priority: 100 + i })) }, count: true } },
    { method: "POST", path: `${PATH}/aggregate`, body: { query: { $or: Array.from({ length: 500 }, (_, i) => ({ priority: 100 + i })) }, count: true } },
    { method: "GET", path: `${PATH}/count?q=${q({ $and: Array.from({ length: 250 }, (_, i) => ({ priority: { $ne: i } })) })}` },
    { method: "POST", path: PATH, body: { title: "wide", meta: Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, i])) } },
    { method: "POST", path: PATH, body: { title: "too wide", meta: Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i])) } },
    { method: "POST", path: PATH, body: { title: "too long", tags: Array.from({ length: 80_000 }, (_, i) => `t${i}`) } },
    { method: "POST", path: PATH, body: { title: "too big", meta: Object.fromEntries(Array.from({ length: 900 }, (_, i) => [`k${i}`, "x".repeat(10_000)])) } },
  );
  return requests;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/** Starts the built server; resolves once it listens. */
async function startServer({ cli, storeArgs, schemaDir, heapMb, port }) {
  // HOSTILE_NODE_FLAGS adds node flags to the server's (such as --cpu-prof --cpu-prof-dir=DIR).
  const nodeFlags = (process.env.HOSTILE_NODE_FLAGS ?? "").split(" ").filter(Boolean);
  const args = [`--max-old-space-size=${heapMb}`, ...nodeFlags, cli, "--schema", schemaDir, ...storeArgs, "--port", String(port), "--secret-key", SECRET, "--publishable-key", PUBLISHABLE, "--log", "off"];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  // HOSTILE_SERVER_LOG names a file that gets all the server's output (its --trace-gc lines…).
  const keep = (text) => {
    output = (output + text).slice(-20_000);
    if (process.env.HOSTILE_SERVER_LOG) appendFileSync(process.env.HOSTILE_SERVER_LOG, text);
  };
  child.stdout.setEncoding("utf8").on("data", keep);
  child.stderr.setEncoding("utf8").on("data", keep);
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal, at: performance.now() })));
  const deadline = performance.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`tabula exited before listening:\n${output}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) break;
    } catch {
      // not listening yet
    }
    if (performance.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`tabula did not listen within 60 s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { child, exited, url: `http://127.0.0.1:${port}`, port, output: () => output };
}

async function call(url, method, path, { body, apiKey = SECRET, signal } = {}) {
  const response = await fetch(url + path, {
    method,
    headers: { "X-Api-Key": apiKey, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    signal,
  });
  const text = await response.text();
  return { status: response.status, text };
}

/** The seeded records, then the ones the attacks need: long near-miss titles, long arrays, wide objects, one big record. */
async function seed(url, records) {
  const ids = [];
  for (let from = 0; from < records; from += 5000) {
    const batch = Array.from({ length: Math.min(5000, records - from) }, (_, i) => {
      const n = from + i;
      return { title: `task ${n} ${"abcdefgh"[n % 8]}`, email: `user${n}@example.com`, status: ["todo", "doing", "done"][n % 3], priority: n % 1000, start_at: new Date(Date.UTC(2026, 0, 1) + n * 60_000).toISOString(), tags: [`t${n % 50}`, `u${n % 7}`] };
    });
    const answer = await call(url, "POST", `${PATH}/bulk`, { body: batch });
    if (answer.status !== 201) throw new Error(`seeding: ${answer.status} ${answer.text.slice(0, 300)}`);
    for (const record of JSON.parse(answer.text)) ids.push(record.id);
  }
  const planted = [
    ...Array.from({ length: 20 }, (_, i) => ({ title: "a".repeat(300 + i * 500) })),
    ...Array.from({ length: 3 }, (_, i) => ({ title: `tags ${i}`, tags: Array.from({ length: 10_000 }, (_, j) => `tag${i}-${j}`) })),
    ...Array.from({ length: 10 }, (_, i) => ({ title: `meta ${i}`, meta: Object.fromEntries(Array.from({ length: 1000 }, (_, j) => [`k${j}`, `v${i}-${j}`])) })),
  ];
  const plantedAnswer = await call(url, "POST", `${PATH}/bulk`, { body: planted });
  if (plantedAnswer.status !== 201) throw new Error(`planting: ${plantedAnswer.status} ${plantedAnswer.text.slice(0, 300)}`);
  // The biggest record --max-record-size allows (1 MiB; 9 MB ones are refused): the body of every
  // idempotent update of it.
  const big = await call(url, "POST", PATH, { body: { title: "big", meta: Object.fromEntries(Array.from({ length: 1000 }, (_, j) => [`k${j}`, "x".repeat(1000)])) } });
  if (big.status !== 201) throw new Error(`the big record: ${big.status} ${big.text.slice(0, 300)}`);
  return { ids, bigId: JSON.parse(big.text).id };
}

/** The CPU time the process has used, in ms (user and system, all its threads). */
function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return NaN;
  }
}

/**
 * Runs `load`, answering its result with the share of one core the server used meanwhile, and the
 * share this process (the good client) used: on a small host the client competes for the cores too.
 */
async function withServerCpu(pid, load, attackersPid) {
  const [cpuBefore, clientBefore, attackersBefore, before] = [cpuMs(pid), process.cpuUsage(), attackersPid ? cpuMs(attackersPid) : 0, performance.now()];
  const result = await load();
  const ms = performance.now() - before;
  const client = process.cpuUsage(clientBefore);
  const attackersCpu = attackersPid ? (cpuMs(attackersPid) - attackersBefore) / ms : 0;
  return { ...result, serverCpu: (cpuMs(pid) - cpuBefore) / ms, clientCpu: (client.user + client.system) / 1000 / ms, attackersCpu };
}

/** Turns of the good client as one: its rate over all their time, the slowest turn's latencies, the statuses summed. */
function combined(turns) {
  const count = turns.reduce((sum, turn) => sum + turn.count, 0);
  const seconds = turns.reduce((sum, turn) => sum + turn.seconds, 0);
  const statuses = {};
  for (const turn of turns) for (const [status, n] of Object.entries(turn.statuses)) statuses[status] = (statuses[status] ?? 0) + n;
  const worst = (key) => Math.max(...turns.map((turn) => turn[key]));
  const cpuOf = (key) => turns.reduce((sum, turn) => sum + turn[key] * turn.seconds, 0) / seconds;
  return { count, seconds, rate: count / seconds, p50: worst("p50"), p99: worst("p99"), statuses, serverCpu: cpuOf("serverCpu"), clientCpu: cpuOf("clientCpu"), attackersCpu: cpuOf("attackersCpu") };
}

function residentMiB(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) / 1024;
  } catch {
    return NaN;
  }
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.floor(sorted.length / 2)];
};
const quantile = (values, fraction) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))];
};

/**
 * Runs the attack and answers what happened. `store` is memory, file or postgres (with `pgUrl`
 * and `pgSchema`). Nothing here asserts: the caller judges.
 */
export async function runHostile({ store = "memory", pgUrl, pgSchema = "tabula_hostile", records = 100_000, durationMs = 60_000, connections = 20, goodConnections = 4, heapMb = 512, aloneMs = Math.min(10_000, durationMs / 2), rounds = durationMs >= 15_000 ? 3 : 1, cli = DIST_CLI, say = () => {} } = {}) {
  const root = mkdtempSync(join(tmpdir(), "tabula-hostile-"));
  writeFileSync(join(root, "Task.json"), JSON.stringify(TASK));
  const storeArgs = store === "memory" ? ["--memory"] : store === "file" ? ["--data", join(root, "data")] : ["--store", pgUrl, "--pg-schema", pgSchema];
  const port = await freePort();
  let server = await startServer({ cli, storeArgs, schemaDir: root, heapMb, port });
  const result = { store, records, durationMs, connections, heapMb };
  try {
    say(`seeding ${records} records on ${store}…`);
    const { ids, bigId } = await seed(server.url, records);
    const goodRequests = ids.slice(0, 4096).map((id) => buildRequest("GET", `${PATH}/${id}`, { headers: { "X-Api-Key": SECRET } }));

    // The good client alone and beside the attack in turns (alone, beside, alone, … alone), the
    // attack paused for each alone turn: the host's own speed drifts by half from one minute to
    // the next on a shared machine, so the two rates are compared as measured side by side.
    const aloneTurnMs = rounds === 1 ? aloneMs : aloneMs / (rounds + 1);
    const besideTurnMs = durationMs / rounds;
    const aloneTurns = [];
    const besideTurns = [];
    const measureAlone = async () => {
      say(`the good client alone, ${aloneTurnMs / 1000} s…`);
      aloneTurns.push(await withServerCpu(server.child.pid, () => runLoad({ port, requests: goodRequests, connections: goodConnections, durationMs: aloneTurnMs, warmupMs: 500 })));
    };
    await measureAlone();

    say(`the attack, ${durationMs / 1000} s on ${connections} connections, beside the good client…`);
    // The attackers and the witness run in a process of their own, at a lower priority: on a 2-core
    // machine they share a core with the good client, which on a real deployment has a machine of
    // its own (the attackers too). Reading their answers (megabytes each) here would measure the
    // generator, not the server.
    const attackers = fork(fileURLToPath(import.meta.url), [ATTACK_ARG], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    try {
      setPriority(attackers.pid, 10);
    } catch {
      // not allowed here: the attackers run at the same priority
    }
    attackers.send({ url: server.url, bigId, connections });
    let isAttacking;
    let isTerminatingHeard;
    let isPaused;
    const attacking = new Promise((resolve) => (isAttacking = resolve));
    const attacked = new Promise((resolve, reject) => {
      attackers.on("message", (message) => {
        if (message === "attacking") isAttacking();
        else if (message === "paused") isPaused?.();
        else if (message === "terminating") isTerminatingHeard?.();
        else resolve(message);
      });
      attackers.on("error", reject);
      attackers.on("exit", (code) => {
        isAttacking();
        resolve({ statuses: { [`attackers exited ${code}`]: 1 }, acknowledged: [] });
      });
    });
    // The good client is measured beside the attack only once it runs (a process starts slowly on a busy machine).
    await attacking;
    const health = [];
    let healthFailures = 0;
    const probing = new Set();
    const prober = setInterval(async () => {
      const sentAt = performance.now();
      let done;
      probing.add(new Promise((resolve) => (done = resolve)));
      try {
        const response = await fetch(`${server.url}/health`, { signal: AbortSignal.timeout(30_000) });
        await response.text();
        if (response.status === 200) health.push(performance.now() - sentAt);
        else healthFailures++;
      } catch {
        healthFailures++;
      }
      done();
    }, 100);
    let maxResident = residentMiB(server.child.pid);
    const sampler = setInterval(() => {
      const resident = residentMiB(server.child.pid);
      if (Number.isFinite(resident)) maxResident = Math.max(maxResident, resident);
    }, 250);
    for (let round = 1; round <= rounds; round++) {
      say(`the good client beside the attack, ${besideTurnMs / 1000} s (round ${round} of ${rounds})…`);
      besideTurns.push(await withServerCpu(server.child.pid, () => runLoad({ port, requests: goodRequests, connections: goodConnections, durationMs: besideTurnMs, warmupMs: 1000 }), attackers.pid));
      if (rounds === 1) break;
      // Paused once every request in flight is answered, and a moment more for what they left behind.
      await new Promise((resolve) => {
        isPaused = resolve;
        attackers.send("pause");
      });
      await new Promise((resolve) => setTimeout(resolve, 500));
      await measureAlone();
      attackers.send("resume");
    }
    // SIGTERM is sent while the attack runs at full strength again.
    if (rounds > 1) await new Promise((resolve) => setTimeout(resolve, 1000));
    const alone = combined(aloneTurns);
    const beside = combined(besideTurns);
    const wasUp = server.child.exitCode === null && server.child.signalCode === null;

    // The probes stop before SIGTERM (a probe refused after it is no failure); the attack goes on.
    clearInterval(prober);
    clearInterval(sampler);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await Promise.allSettled(probing);
    // The attackers hear of the SIGTERM before it is sent, so that the connections it closes are not
    // counted as failures (a busy machine may run their process late).
    await new Promise((resolve) => {
      isTerminatingHeard = resolve;
      attackers.send("sigterm");
      setTimeout(resolve, 10_000).unref();
    });
    // SIGTERM while the attack still runs: how long until the process is gone.
    const termAt = performance.now();
    server.child.kill("SIGTERM");
    let giveUp;
    const exit = await Promise.race([server.exited, new Promise((resolve) => (giveUp = setTimeout(() => resolve(null), 30_000)))]);
    clearTimeout(giveUp);
    attackers.send("stop");
    const { statuses, acknowledged } = await attacked;
    attackers.kill();
    if (exit === null) server.child.kill("SIGKILL");

    Object.assign(result, {
      wasUp,
      exitCode: exit?.code ?? null,
      sigtermMs: exit === null ? null : exit.at - termAt,
      health: { probes: health.length, failures: healthFailures, medianMs: median(health), p99Ms: quantile(health, 0.99), maxMs: Math.max(...health) },
      goodAlone: alone.rate,
      goodBeside: beside.rate,
      goodRatio: beside.rate / alone.rate,
      goodTurns: { alone: aloneTurns.map((turn) => Math.round(turn.rate)), beside: besideTurns.map((turn) => Math.round(turn.rate)) },
      goodLatencyMs: { alone: { p50: alone.p50, p99: alone.p99 }, beside: { p50: beside.p50, p99: beside.p99 } },
      serverCpu: { alone: alone.serverCpu, beside: beside.serverCpu },
      clientCpu: { alone: alone.clientCpu, beside: beside.clientCpu },
      attackersCpu: beside.attackersCpu,
      goodStatuses: beside.statuses,
      maxResidentMiB: maxResident,
      attackStatuses: Object.fromEntries(Object.entries(statuses).sort()),
      acknowledged: acknowledged.length,
      output: server.output(),
    });

    if (store !== "memory") {
      say("restarting to count what was kept…");
      server = await startServer({ cli, storeArgs, schemaDir: root, heapMb, port });
      let lost = 0;
      for (const id of acknowledged) if ((await call(server.url, "GET", `${PATH}/${id}`)).status !== 200) lost++;
      result.lost = lost;
      server.child.kill("SIGTERM");
      await server.exited;
    }
    return result;
  } finally {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGKILL");
    rmSync(root, { recursive: true, force: true });
  }
}

/**
 * The attack process: `connections` attackers, two open change feed streams and the witness, until
 * told to stop; then the statuses, counted, and the ids of the witness's acknowledged creates.
 */
async function attack({ url, bigId, connections }) {
  const stop = new AbortController();
  let isTerminating = false;
  // Paused (for the good client's turns alone), every attacker and the witness wait before their
  // next request; "paused" is said once none is in flight.
  let paused = null;
  let resume = () => {};
  let inFlight = 0;
  const sayIfPaused = () => {
    if (paused && inFlight === 0 && !paused.isSaid) {
      paused.isSaid = true;
      process.send("paused");
    }
  };
  const turn = async (request) => {
    while (paused && !stop.signal.aborted) await paused.promise;
    inFlight++;
    try {
      return await request();
    } finally {
      inFlight--;
      sayIfPaused();
    }
  };
  process.on("message", (message) => {
    if (message === "pause") {
      paused ??= { promise: new Promise((resolve) => (resume = resolve)), isSaid: false };
      return sayIfPaused();
    }
    if (message === "resume") {
      paused = null;
      return resume();
    }
    if (message !== "sigterm") {
      paused = null;
      resume();
      return stop.abort();
    }
    isTerminating = true;
    process.send("terminating");
  });
  const statuses = {};
  // After SIGTERM, refused connections are the server going away, as it should: not counted.
  const count = (status) => {
    if (!isTerminating || !String(status).startsWith("error")) statuses[status] = (statuses[status] ?? 0) + 1;
  };
  // Bodies encoded once: the attackers' machine is not the one measured.
  const attacks = attackRequests().map((request) => (request.body === undefined ? request : { ...request, body: JSON.stringify(request.body) }));
  let idempotencyCounter = 0;
  const attacker = async (n) => {
    for (let i = n; !stop.signal.aborted; i++) {
      // Every tenth request: an idempotent update of the big record, each with its own key.
      const request = i % 10 === 0 ? { method: "PUT", path: `${PATH}/${bigId}`, body: `{"priority":${idempotencyCounter++}}`, idempotent: true } : attacks[i % attacks.length];
      try {
        await turn(async () => {
          if (stop.signal.aborted) return;
          const response = await fetch(url + request.path, {
            method: request.method,
            headers: { "X-Api-Key": PUBLISHABLE, ...(request.body ? { "Content-Type": "application/json" } : {}), ...(request.idempotent ? { "Idempotency-Key": `attack-${n}-${i}` } : {}) },
            body: request.body,
            signal: stop.signal,
          });
          // Answers are read to their end, as a client would (the feed's and the exports' too).
          await response.arrayBuffer();
          count(response.status);
        });
      } catch (error) {
        if (!stop.signal.aborted) count(`error ${error.cause?.code ?? error.name}`);
      }
    }
  };
  // Two change feed streams that stay open with the slow filter, which every write is tested against.
  const stream = async () => {
    try {
      const response = await fetch(`${url}${PATH}/changes?q=${q({ title: { $regex: "a*a*a*a*b" } })}`, { headers: { "X-Api-Key": PUBLISHABLE, Accept: "text/event-stream" }, signal: stop.signal });
      count(`stream ${response.status}`);
      for await (const _ of response.body) if (stop.signal.aborted) break;
    } catch {
      // ended by the stop, or by the server's SIGTERM
    }
  };
  // The witness: creates with the secret key, one every few milliseconds (a writer, not another
  // attacker), on a connection of its own (fetch's would be shared with the attackers'); every
  // acknowledged id must survive.
  const acknowledged = [];
  const witnessAgent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
  const create = (body) =>
    new Promise((resolve, reject) => {
      const request = httpRequest(`${url}${PATH}`, { method: "POST", agent: witnessAgent, headers: { "X-Api-Key": SECRET, "Content-Type": "application/json" }, signal: stop.signal }, (response) => {
        let text = "";
        response.setEncoding("utf8").on("data", (chunk) => (text += chunk));
        response.on("end", () => resolve({ status: response.statusCode, text }));
        response.on("error", reject);
      });
      request.on("error", reject);
      request.end(JSON.stringify(body));
    });
  const witness = async () => {
    for (let i = 0; !stop.signal.aborted; i++) {
      await new Promise((resolve) => setTimeout(resolve, WITNESS_PAUSE_MS));
      try {
        await turn(async () => {
          if (stop.signal.aborted) return;
          const answer = await create({ title: `${"a".repeat(2000)} witness ${i}` });
          if (answer.status === 201) acknowledged.push(JSON.parse(answer.text).id);
          else if (!isTerminating) count(`witness ${answer.status}`);
        });
      } catch {
        // the stop, or the server going away after SIGTERM
      }
    }
    witnessAgent.destroy();
  };
  const attacking = Promise.allSettled([...Array.from({ length: connections }, (_, n) => attacker(n)), stream(), stream(), witness()]);
  process.send("attacking");
  await attacking;
  process.send({ statuses, acknowledged }, () => process.exit(0));
}

async function main() {
  const { values } = parseArgs({
    options: {
      store: { type: "string", default: "memory" },
      "pg-url": { type: "string" },
      records: { type: "string", default: "100000" },
      duration: { type: "string", default: "60" },
      rounds: { type: "string" },
      connections: { type: "string", default: "20" },
      "heap-mb": { type: "string", default: "512" },
      cli: { type: "string", default: DIST_CLI },
    },
  });
  const result = await runHostile({
    store: values.store,
    pgUrl: values["pg-url"] ?? process.env.DATABASE_URL,
    records: Number(values.records),
    durationMs: Number(values.duration) * 1000,
    ...(values.rounds === undefined ? {} : { rounds: Number(values.rounds) }),
    connections: Number(values.connections),
    heapMb: Number(values["heap-mb"]),
    cli: values.cli,
    say: (line) => console.error(line),
  });
  const { output, ...figures } = result;
  console.log(JSON.stringify(figures, null, 2));
  const fmt = (n, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : String(n));
  console.log(`
| what | measured | target |
|---|---|---|
| the process stays up | ${figures.wasUp ? "yes" : "NO"} | yes |
| /health median (p99, max) | ${fmt(figures.health.medianMs, 1)} ms (${fmt(figures.health.p99Ms)}, ${fmt(figures.health.maxMs)} ms); ${figures.health.failures} unanswered | ≤ 100 ms |
| good client beside ÷ alone | ${fmt(figures.goodBeside)} ÷ ${fmt(figures.goodAlone)} req/s = ${fmt(figures.goodRatio, 2)} (turns alone ${figures.goodTurns.alone.join(", ")}; beside ${figures.goodTurns.beside.join(", ")}) | ≥ 0.5 |
| resident memory, most | ${fmt(figures.maxResidentMiB)} MiB | < 800 MiB |
| SIGTERM to exit | ${fmt(figures.sigtermMs)} ms (exit ${figures.exitCode}) | ≤ 2,000 ms |
| acknowledged writes lost | ${figures.lost ?? "n/a (memory)"} of ${figures.acknowledged} | 0 |`);
}

if (process.argv[2] === ATTACK_ARG) process.once("message", (options) => void attack(options));
else if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
