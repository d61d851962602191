// What bench/run.mjs reads from the machine: child processes it starts and stops, their CPU time
// and resident memory from /proc, the data folder's files, and the disk's own fdatasync rate.

import { spawn } from "node:child_process";
import { closeSync, fdatasyncSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";

const CLOCK_TICKS_PER_SECOND = 100; // USER_HZ on Linux: the unit of utime and stime in /proc/<pid>/stat

/** The machine in one line, for a report's or a chart's title: its CPUs, memory, Node and kernel. */
export function describeHost() {
  const cpus = os.cpus();
  return `${cpus.length} × ${cpus[0]?.model.trim() ?? "cpu"}, ${(os.totalmem() / 1073741824).toFixed(1)} GiB RAM, Node ${process.version}, ${os.type()} ${os.release()}`;
}

/** Spawns node with args and resolves once it prints `listening on URL`, with the time it took. */
export function startChild(name, args) {
  const startedAt = performance.now();
  const proc = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  return new Promise((resolve, reject) => {
    const onData = (chunk) => {
      output += chunk;
      const match = /listening on (http:\/\/[^\s]+)/.exec(output);
      if (!match) return;
      proc.stdout.off("data", onData);
      proc.stdout.resume();
      const url = match[1];
      resolve({ proc, url, port: Number(new URL(url).port), startMs: performance.now() - startedAt, spawnedAt: startedAt });
    };
    proc.stdout.setEncoding("utf8").on("data", onData);
    proc.stderr.setEncoding("utf8").on("data", (chunk) => process.stderr.write(`[${name}] ${chunk}`));
    proc.once("exit", (code) => reject(new Error(`${name} exited with ${code} before listening:\n${output}`)));
  });
}

/** Stops a child with SIGTERM (a clean stop), or with SIGKILL to stand for a crash. */
export function stopChild(proc, signal = "SIGTERM") {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    proc.once("exit", resolve);
    proc.kill(signal);
  });
}

export function readRss(pid) {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) * 1024 : NaN;
}

/** The log segments and snapshots in the data folder, with their sizes. */
export function dataFiles(dataDir) {
  const files = readdirSync(dataDir).filter((name) => /^(log|snapshot)-/.test(name)).sort();
  // Blocks in use, not the apparent size: the open log segment carries preallocated room (sparse).
  const sized = files.map((name) => {
    const stats = statSync(join(dataDir, name));
    return { name, bytes: Math.min(stats.size, stats.blocks * 512) };
  });
  const sum = (prefix) => sized.filter((f) => f.name.startsWith(prefix)).reduce((total, f) => total + f.bytes, 0);
  return { sized, logBytes: sum("log-"), snapshotBytes: sum("snapshot-") };
}

/** Appends 300-byte lines with write + fdatasync for probeMs, synchronously: the disk's floor. */
export function measureDiskSync(dir, probeMs) {
  const file = join(dir, "fsync-probe");
  const fd = openSync(file, "a");
  const line = Buffer.alloc(300, 120);
  const startedAt = performance.now();
  let count = 0;
  try {
    while (performance.now() - startedAt < probeMs) {
      writeSync(fd, line);
      fdatasyncSync(fd);
      count++;
    }
  } finally {
    closeSync(fd);
    rmSync(file);
  }
  const ms = (performance.now() - startedAt) / count;
  return { rate: 1000 / ms, ms };
}

/** utime + stime of a process, in milliseconds. */
export function readCpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
}
