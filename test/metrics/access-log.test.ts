// The request log's writer (--log text|json): lines are written in batches, once FLUSH_BYTES have
// gathered or FLUSH_MS after a batch's first line, never one write per turn of the event loop; every
// line arrives once and in order, and close() writes what has gathered at once. The CLI's lines
// themselves are tested through a spawned server in test/cli/request-log.test.ts.

import assert from "node:assert/strict";
import { closeSync, openSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AccessLog, FLUSH_MS, type LoggedRequest } from "../../src/metrics/access-log.ts";

let root: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "tabula-access-log-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

const entry = (i: number): LoggedRequest => ({ method: "GET", path: `/api/entities/Task/${i}`, route: "/api/entities/:entity/:id", status: 200, ms: 0.25, keyId: "key_1" });

/** A log writing to a fresh file, and that file's text. */
function logToFile(name: string, format: "text" | "json" = "text"): { log: AccessLog; text: () => string; done: () => void } {
  const path = join(root, name);
  const fd = openSync(path, "w");
  return { log: new AccessLog(format, fd), text: () => readFileSync(path, "utf8"), done: () => closeSync(fd) };
}

async function waitFor(check: () => boolean, what: string): Promise<void> {
  for (let tries = 0; !check(); tries++) {
    assert.ok(tries < 500, `timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

test("a few lines wait for the batch's timer, then arrive together and in order", async () => {
  const { log, text, done } = logToFile("few.log");
  for (let i = 0; i < 3; i++) log.request(entry(i));
  // Nothing is written before the batch's timer: not a write per line or per turn of the event
  // loop. (This timer, armed after the log's, fires before it however late the loop runs.)
  await new Promise((resolve) => setTimeout(resolve, FLUSH_MS / 2));
  assert.equal(text(), "");
  await waitFor(() => text().split("\n").length === 4, "three lines");
  const paths = text().trimEnd().split("\n").map((line) => line.split(" ")[2]);
  assert.deepEqual(paths, ["/api/entities/Task/0", "/api/entities/Task/1", "/api/entities/Task/2"]);
  await log.close();
  done();
});

test("many batches: every line arrives once and in order, and close() resolves when all are written", async () => {
  const { log, text, done } = logToFile("many.log");
  const count = 5000; // about 500 KB: several full batches, some gathered while another is written
  for (let i = 0; i < count; i++) {
    log.request(entry(i));
    if (i % 700 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  await log.close();
  const lines = text().trimEnd().split("\n");
  assert.equal(lines.length, count);
  lines.forEach((line, i) => assert.match(line, new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z GET /api/entities/Task/${i} 200 0.25ms key_1$`)));
  assert.equal(log.dropped, 0);
  done();
});

test("close() writes a gathering batch at once, and a log closed twice stays quiet", async () => {
  const { log, text, done } = logToFile("close.log", "json");
  const before = Date.now();
  log.request(entry(7));
  log.request({ ...entry(8), status: 404, keyId: null });
  await log.close();
  const after = Date.now();
  const lines = text().trimEnd().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
  assert.deepEqual(
    lines.map(({ path, status, key_id }) => ({ path, status, key_id })),
    [
      { path: "/api/entities/Task/7", status: 200, key_id: "key_1" },
      { path: "/api/entities/Task/8", status: 404, key_id: null },
    ],
  );
  // Each line's time is the time it was logged (lines of one millisecond share one).
  for (const { time } of lines) {
    const at = Date.parse(time as string);
    assert.ok(at >= before && at <= after, `${String(time)} outside ${before}–${after}`);
  }
  await log.close();
  assert.equal(text().trimEnd().split("\n").length, 2);
  done();
});

test("an output that refuses writes: its lines are dropped and counted, and close() still resolves", async () => {
  const path = join(root, "read-only.log");
  closeSync(openSync(path, "w"));
  const fd = openSync(path, "r"); // every write fails (EBADF)
  const log = new AccessLog("text", fd);
  for (let i = 0; i < 3; i++) log.request(entry(i));
  await log.close();
  assert.equal(log.dropped, 3);
  log.request(entry(3));
  log.request(entry(4));
  await log.close();
  assert.equal(log.dropped, 5);
  assert.equal(readFileSync(path, "utf8"), "");
  closeSync(fd);
});
