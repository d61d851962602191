// tabula import's progress line (shown on a terminal only): done of total, percent, records/s.

import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { test } from "node:test";
import { formatProgress, Progress } from "../../src/commands/import.ts";

test("the line says done of total, the share done and the rate", () => {
  assert.equal(formatProgress(2500, 10_000, 0.5), "imported 2,500 of 10,000 records (25%), 5,000 records/s");
  assert.equal(formatProgress(12_345, null, 2), "imported 12,345 records, 6,173 records/s", "stdin: no total");
  assert.equal(formatProgress(0, 0, 0), "imported 0 of 0 records, 0 records/s");
});

test("each line overwrites the last, and clear() leaves the terminal's line empty", () => {
  const out = new PassThrough();
  let written = "";
  out.on("data", (chunk: Buffer) => (written += chunk.toString()));
  const progress = new Progress(10, out);
  progress.show(5);
  progress.clear();
  assert.match(written, /^\rimported 5 of 10 records \(50%\), [\d,]+ records\/s\x1b\[K\r\x1b\[K$/);
});
