// A throwaway PostgreSQL cluster for tests and benchmarks (issue 18): initdb in a new temp folder,
// a free port on 127.0.0.1, a trusted superuser and a database, both named tabula. Plain ESM, so that
// test/run.mjs and bench/ import it without tsx. Installing PostgreSQL is .ci/run's job; here we only
// find its binaries.

import { execFile, spawn, spawnSync } from "node:child_process";
import { appendFileSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Where Debian's packages put each major version: /usr/lib/postgresql/15/bin. */
const DEBIAN_POSTGRES_ROOT = "/usr/lib/postgresql";
/** The superuser and the database the URL names. */
const CLUSTER_USER = "tabula";
const CLUSTER_DATABASE = "tabula";
/** initdb refuses root: as root, the cluster runs as this system user (Debian's package creates it). */
const CLUSTER_OWNER = "postgres";
/** util-linux's runuser sits in sbin, which a non-login PATH may leave out. */
const RUNUSER = ["/usr/sbin/runuser", "/sbin/runuser"].find((path) => existsSync(path)) ?? "runuser";
const START_TIMEOUT_S = 30;
/** The free port is only free until the server binds it: another process may take it first. */
const START_ATTEMPTS = 3;
const WATCHDOG_POLL_MS = 1000;

// Room for ~40 test servers at once, each with a small pool, plus the tests' own connections.
const SETTINGS = { max_connections: "300", shared_buffers: "128MB", listen_addresses: "'127.0.0.1'" };
// Tests need no crash safety from a cluster they delete afterwards; benchmarks ask for durable and
// keep PostgreSQL's defaults, so that a commit costs what it costs in production.
const FAST_SETTINGS = { fsync: "off", synchronous_commit: "off", full_page_writes: "off" };

export const MISSING_POSTGRES =
  "no PostgreSQL server binaries (no initdb beside pg_config --bindir, none in /usr/lib/postgresql/*/bin). " +
  "Install Debian's: apt-get install -y postgresql (bash .ci/run does it).";

/** The folder holding initdb and pg_ctl: pg_config --bindir, else the newest Debian version; null when none. */
export function findPostgresBin() {
  const pgConfig = spawnSync("pg_config", ["--bindir"], { encoding: "utf8" });
  const fromPgConfig = pgConfig.status === 0 ? pgConfig.stdout.trim() : "";
  // pg_config also comes with libpq-dev alone, naming a folder without a server in it.
  if (fromPgConfig !== "" && existsSync(join(fromPgConfig, "initdb"))) return fromPgConfig;
  if (!existsSync(DEBIAN_POSTGRES_ROOT)) return null;
  const newestFirst = readdirSync(DEBIAN_POSTGRES_ROOT)
    .filter((version) => /^\d+(\.\d+)?$/.test(version))
    .sort((a, b) => Number(b) - Number(a));
  const version = newestFirst.find((candidate) => existsSync(join(DEBIAN_POSTGRES_ROOT, candidate, "bin", "initdb")));
  return version === undefined ? null : join(DEBIAN_POSTGRES_ROOT, version, "bin");
}

/**
 * Starts a cluster and resolves to { url, dir, stop, halt, resume }. stop() is synchronous (it also
 * runs from this process's 'exit' event, which runs no async code): it kills the server and deletes
 * the folder. halt() stops the server as a crash would (immediate mode), resume() starts it again on
 * its port, resolving once it accepts connections: an outage for a test.
 * A watchdog process does the same if this process dies without exiting (SIGKILL).
 */
export async function startCluster({ durable = false } = {}) {
  const bin = findPostgresBin();
  if (bin === null) throw new Error(MISSING_POSTGRES);
  const owner = findClusterOwner();
  const dir = mkdtempSync(join(tmpdir(), "tabula-pg-"));
  const dataDir = join(dir, "data");
  const asOwner = (command, args) => (owner === null ? [join(bin, command), args] : [RUNUSER, ["-u", CLUSTER_OWNER, "--", join(bin, command), ...args]]);
  const [stopCommand, stopArgs] = asOwner("pg_ctl", ["-D", dataDir, "-m", "immediate", "-w", "stop"]);
  const watchdog = startWatchdog(dir, [stopCommand, ...stopArgs]);
  let isStopped = false;
  const stop = () => {
    if (isStopped) return;
    isStopped = true;
    process.off("exit", stop);
    // Fails harmlessly when the server never started or is already gone.
    if (existsSync(join(dataDir, "postmaster.pid"))) spawnSync(stopCommand, stopArgs, { cwd: dir, stdio: "ignore" });
    rmSync(dir, { recursive: true, force: true });
    watchdog.kill();
  };
  process.on("exit", stop);
  try {
    if (owner !== null) chownSync(dir, owner.uid, owner.gid);
    // --no-sync: a cluster that is deleted afterwards needs no fsync of its first files.
    await runIn(dir, ...asOwner("initdb", ["-D", dataDir, "-U", CLUSTER_USER, "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"]));
    const settings = { ...SETTINGS, unix_socket_directories: `'${dir}'`, ...(durable ? {} : FAST_SETTINGS) };
    appendFileSync(join(dataDir, "postgresql.conf"), Object.entries(settings).map(([name, value]) => `${name} = ${value}\n`).join(""));
    const startCommand = (port) => asOwner("pg_ctl", ["-D", dataDir, "-l", join(dir, "server.log"), "-o", `-p ${port}`, "-w", "-t", String(START_TIMEOUT_S), "start"]);
    const port = await startOnFreePort(dir, startCommand);
    await runIn(dir, join(bin, "createdb"), ["-h", "127.0.0.1", "-p", String(port), "-U", CLUSTER_USER, CLUSTER_DATABASE]);
    const halt = () => runIn(dir, stopCommand, stopArgs);
    const resume = () => runIn(dir, ...startCommand(port));
    return { url: `postgres://${CLUSTER_USER}@127.0.0.1:${port}/${CLUSTER_DATABASE}`, dir, stop, halt, resume };
  } catch (error) {
    stop();
    throw error;
  }
}

/** null when this process may run the cluster itself; the owner's ids when it is root. */
function findClusterOwner() {
  if (process.getuid?.() !== 0) return null;
  const id = (flag) => spawnSync("id", [flag, CLUSTER_OWNER], { encoding: "utf8" });
  const [uid, gid] = [id("-u"), id("-g")];
  if (uid.status !== 0 || gid.status !== 0) {
    throw new Error(`running as root, and initdb refuses root: create a system user named ${CLUSTER_OWNER} (Debian's postgresql package does), or run as another user.`);
  }
  return { uid: Number(uid.stdout), gid: Number(gid.stdout) };
}

async function runIn(dir, command, args) {
  try {
    // The cluster owner may not be allowed into the caller's folder; the temp folder is its own.
    await run(command, args, { cwd: dir, encoding: "utf8" });
  } catch (error) {
    const output = `${error.stderr ?? ""}${error.stdout ?? ""}`.trim() || error.message;
    throw new Error(`${command} ${args.join(" ")} failed:\n${output}`);
  }
}

async function startOnFreePort(dir, startCommand) {
  for (let attempt = 1; ; attempt++) {
    const port = await findFreePort();
    try {
      await runIn(dir, ...startCommand(port));
      return port;
    } catch (error) {
      const log = readLog(dir);
      if (attempt < START_ATTEMPTS && /already in use/.test(log)) continue;
      throw new Error(`${error.message}\nserver.log:\n${log}`);
    }
  }
}

function findFreePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function readLog(dir) {
  try {
    return readFileSync(join(dir, "server.log"), "utf8");
  } catch {
    return "(no server.log)";
  }
}

// Run by the watchdog: polls this process, and once it is gone stops the cluster and deletes its folder.
const WATCHDOG_SCRIPT = `
const { spawnSync } = require("node:child_process");
const { rmSync } = require("node:fs");
const [parentPid, dir, stopArgv, pollMs] = JSON.parse(process.argv[1]);
setInterval(() => {
  try {
    process.kill(parentPid, 0);
    return;
  } catch (error) {
    if (error.code === "EPERM") return; // alive, under another user
  }
  spawnSync(stopArgv[0], stopArgv.slice(1), { cwd: dir, stdio: "ignore" });
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}, pollMs);
`;

/** A detached process that outlives a SIGKILL of this one, so that no cluster runs on forever. */
function startWatchdog(dir, stopArgv) {
  const child = spawn(process.execPath, ["-e", WATCHDOG_SCRIPT, JSON.stringify([process.pid, dir, stopArgv, WATCHDOG_POLL_MS])], {
    detached: true,
    stdio: "ignore",
  });
  child.unref();
  return child;
}
