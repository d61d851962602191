// The open log segment is preallocated (see PREALLOCATE_BYTES): the zeros after its data are room,
// never damage, and a closed segment holds only its lines.
import assert from "node:assert/strict";
import { appendFile, mkdir, mkdtemp, readFile, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { PREALLOCATE_BYTES, WriteAheadLog, readSegment, segmentName } from "../../src/store/file/wal.ts";
import { frameLine } from "../../src/store/file/log-framing.ts";
import type { LogEntry } from "../../src/store/file/log-entry.ts";

let root: string;
let counter = 0;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "tabula-prealloc-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

function entry(seq: number): LogEntry {
  return { seq, puts: [{ e: "Task", row: { id: `id${seq}`, rev: seq, deleted: false, data: { title: `record ${seq}` } } }] };
}

async function freshDir(): Promise<string> {
  const dir = join(root, `dir-${++counter}`);
  await mkdir(dir);
  return dir;
}

async function replay(path: string, isLast: boolean): Promise<{ seqs: number[]; warnings: string[]; bytes: number }> {
  const seqs: number[] = [];
  const warnings: string[] = [];
  const { bytes } = await readSegment(path, { firstSeq: 1, isLast, warn: (m) => warnings.push(m), onEntry: (e) => seqs.push(e.seq) });
  return { seqs, warnings, bytes };
}

describe("preallocated log segments", () => {
  test("the open segment has room after its data; close trims it to exactly its lines", async () => {
    const dir = await freshDir();
    const log = await WriteAheadLog.open(dir, [], 1, () => {});
    await log.append({ puts: entry(1).puts! });
    await Promise.all([log.append({ puts: entry(2).puts! }), log.append({ puts: entry(3).puts! })]);
    const path = join(dir, segmentName(1));
    assert.equal((await stat(path)).size, PREALLOCATE_BYTES, "room was made ahead of the data");
    await log.close();
    const text = await readFile(path, "utf8");
    assert.equal(text.split("\n").length, 4, "three lines and nothing after the last newline");
    assert.equal((await stat(path)).size, log.logBytes);
    assert.deepEqual((await replay(path, true)).seqs, [1, 2, 3]);
  });

  test("after a crash, the zeros after the last line are trimmed without a warning, in any segment", async () => {
    for (const isLast of [true, false]) {
      const path = join(root, `crashed-${++counter}`);
      const lines = [1, 2].map((seq) => frameLine(entry(seq))).join("");
      await writeFile(path, lines);
      await truncate(path, 4096 * 3); // what the file looked like when the process was killed
      const replayed = await replay(path, isLast);
      assert.deepEqual(replayed.seqs, [1, 2]);
      assert.deepEqual(replayed.warnings, []);
      assert.equal(replayed.bytes, Buffer.byteLength(lines));
      assert.equal((await stat(path)).size, Buffer.byteLength(lines), "the room is cut off");
    }
  });

  test("a torn line before the zeros is still a torn tail: cut, with a warning", async () => {
    const path = join(root, `torn-${++counter}`);
    const whole = frameLine(entry(1));
    await writeFile(path, whole);
    await appendFile(path, frameLine(entry(2)).slice(0, 30));
    await truncate(path, 8192);
    const replayed = await replay(path, true);
    assert.deepEqual(replayed.seqs, [1]);
    assert.equal(replayed.warnings.length, 1);
    assert.match(replayed.warnings[0]!, /torn or damaged tail/);
    assert.equal((await stat(path)).size, Buffer.byteLength(whole));
  });

  test("a log reopened after a crash appends after its last line, not after the room", async () => {
    const dir = await freshDir();
    const path = join(dir, segmentName(1));
    await writeFile(path, frameLine(entry(1)));
    await truncate(path, PREALLOCATE_BYTES); // killed with its room still on
    const replayed = await replay(path, true);
    const reopened = await WriteAheadLog.open(dir, [{ firstSeq: 1, bytes: replayed.bytes }], 2, () => {});
    await reopened.append({ puts: entry(2).puts! });
    await reopened.close();
    assert.deepEqual((await replay(path, true)).seqs, [1, 2]);
  });
});
