import assert from "node:assert/strict";
import { appendFile, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { WriteAheadLog, readSegment, segmentName } from "../../src/store/file/wal.ts";
import { frameEntry, frameLine, parseFramedLine } from "../../src/store/file/log-framing.ts";
import type { LogEntry } from "../../src/store/file/log-entry.ts";
import type { IdempotentAnswer, Row } from "../../src/store/store.ts";
import { countRequest } from "../../src/turns/loop-share.ts";

let root: string;
let counter = 0;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "tabula-wal-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

function entry(seq: number, title = `record ${seq}`): LogEntry {
  return { seq, puts: [{ e: "Task", row: { id: `id${seq}`, rev: seq, deleted: false, data: { title } } }] };
}

/** A segment file holding entries 1..count, plus `tail` appended raw. */
async function segmentFile(count: number, tail: string | Buffer = ""): Promise<{ path: string; whole: number }> {
  const path = join(root, `seg-${++counter}`);
  const text = Array.from({ length: count }, (_, i) => frameLine(entry(i + 1))).join("");
  await writeFile(path, text);
  await appendFile(path, tail);
  return { path, whole: Buffer.byteLength(text) };
}

async function replay(path: string, isLast = true): Promise<{ seqs: number[]; warnings: string[]; bytes: number }> {
  const seqs: number[] = [];
  const warnings: string[] = [];
  const { bytes } = await readSegment(path, { firstSeq: 1, isLast, warn: (m) => warnings.push(m), onEntry: (e) => seqs.push(e.seq) });
  return { seqs, warnings, bytes };
}

describe("framed lines", () => {
  test("a framed line is plain JSON with a crc field last, and parses back", () => {
    const line = frameLine({ seq: 7, puts: [], note: "héllo \n ✓" });
    assert.ok(line.endsWith('"}\n'));
    const parsed = JSON.parse(line);
    assert.equal(parsed.seq, 7);
    assert.match(parsed.crc, /^[0-9a-f]{8}$/);
    assert.deepEqual(parseFramedLine(Buffer.from(line.slice(0, -1))), parsed);
  });

  const good = frameLine({ seq: 1, text: "abc" }).slice(0, -1);
  const damaged: Array<[string, string]> = [
    ["a flipped character", good.replace("abc", "abd")],
    ["a cut line", good.slice(0, -5)],
    ["a wrong checksum", good.replace(/"crc":"[0-9a-f]{8}"/, '"crc":"00000000"')],
    ["garbage", "\u0000\u0000garbage"],
    ["an empty line", ""],
  ];
  for (const [name, line] of damaged) {
    test(`a line with ${name} is refused`, () => {
      assert.equal(parseFramedLine(Buffer.from(line)), undefined);
    });
  }
});

describe("framing an entry on the write path", () => {
  const data = { id: "a1", title: 'héllo "✓" 😀 \u2028\n', tags: ["x"], meta: { created_by_id: 1 }, created_by_id: "key_1" };
  /** A row as the records layer builds it: memo.dataJson is JSON.stringify(data). */
  const built: Row = { id: "a1", rev: 7, deleted: false, data, memo: { dataJson: JSON.stringify(data), search: "not logged" } };
  const plain: Row = { id: "b2", rev: 8, deleted: true, data: { id: "b2", title: "plain" } };
  const answer: IdempotentAnswer = { scope: "key_1\nk", fingerprint: "POST /x abc", status: 201, headers: { ETag: '"7"' }, body: '{"id":"a1"}', expiresAt: 1 };
  // [what, fields]
  const entries: Array<[string, Omit<LogEntry, "seq">]> = [
    ["rows carrying their data JSON", { puts: [{ e: "Task", row: built }] }],
    ["rows without it", { puts: [{ e: "Täsk", row: plain }, { e: "Task", row: built }] }],
    ["rows and an idempotent answer", { puts: [{ e: "Task", row: built }], answer }],
    ["an answer alone", { puts: [], answer }],
    ["a reset", { reset: true, rev: 9 }],
  ];
  for (const [what, fields] of entries) {
    test(`an entry of ${what} is the bytes frameLine gives its row images`, () => {
      const images = fields.puts?.map(({ e, row }) => ({ e, row: { id: row.id, rev: row.rev, deleted: row.deleted, data: row.data } }));
      const expected = frameLine({ seq: 42, ...fields, ...(images ? { puts: images } : {}) });
      const framed = frameEntry(42, fields);
      assert.equal(framed, expected);
      assert.equal(framed.includes("memo"), false);
      assert.ok(parseFramedLine(Buffer.from(framed.slice(0, -1))));
    });
  }
});

describe("replaying a segment", () => {
  test("a whole segment replays every entry in order, without warnings", async () => {
    const { path, whole } = await segmentFile(5);
    assert.deepEqual(await replay(path), { seqs: [1, 2, 3, 4, 5], warnings: [], bytes: whole });
  });

  const torn: Array<[string, string | Buffer]> = [
    ["a partial last line", frameLine(entry(6)).slice(0, 40)],
    ["a whole last line without its newline", frameLine(entry(6)).slice(0, -1)],
    ["garbage bytes", Buffer.from([0, 0, 0, 0xff, 0x0a, 0x13, 0x37])],
    ["zeros, then a half-written line", Buffer.concat([Buffer.alloc(4096), Buffer.from(frameLine(entry(6)).slice(0, 40))])],
    ["a truncated batch of several lines", frameLine(entry(6)) + frameLine(entry(7)).slice(0, 30)],
    ["bad checksums in the last entries", frameLine(entry(6, "x")).replace('"x"', '"y"') + frameLine(entry(7, "x")).replace('"x"', '"z"')],
  ];
  for (const [name, tail] of torn) {
    test(`a torn tail (${name}) is cut off with a warning, earlier entries kept`, async () => {
      const { path, whole } = await segmentFile(5, tail);
      const keepsSix = name.startsWith("a truncated batch");
      const expectedBytes = keepsSix ? whole + Buffer.byteLength(frameLine(entry(6))) : whole;
      const { seqs, warnings, bytes } = await replay(path);
      assert.deepEqual(seqs, keepsSix ? [1, 2, 3, 4, 5, 6] : [1, 2, 3, 4, 5]);
      assert.equal(bytes, expectedBytes);
      assert.equal((await stat(path)).size, expectedBytes, "the file is truncated");
      assert.equal(warnings.length, 1);
      const dropped = segmentSize(tail) - (expectedBytes - whole);
      assert.match(warnings[0]!, new RegExp(`dropped ${dropped} bytes .* at byte ${expectedBytes}`));
      assert.deepEqual(await replay(path), { seqs, warnings: [], bytes }, "a second replay finds nothing to cut");
    });
  }

  test("damage followed by whole entries stops replay, naming the file and the byte", async () => {
    const { path, whole } = await segmentFile(3);
    const broken = frameLine(entry(4)).replace("record 4", "record X");
    await appendFile(path, broken + frameLine(entry(5)));
    await assert.rejects(replay(path), (error: Error) => {
      assert.ok(error.message.includes(path), error.message);
      assert.match(error.message, new RegExp(`damaged at byte ${whole}\\b`));
      return true;
    });
    assert.equal((await stat(path)).size, whole + Buffer.byteLength(broken + frameLine(entry(5))), "nothing is cut");
  });

  test("a torn tail in a segment that is not the last one is refused", async () => {
    const { path } = await segmentFile(3, "{\"seq\":4,");
    await assert.rejects(replay(path, false), /damaged at byte/);
  });

  test("an entry out of sequence is refused", async () => {
    const path = join(root, `seg-${++counter}`);
    await writeFile(path, frameLine(entry(1)) + frameLine(entry(3)));
    await assert.rejects(replay(path), /has seq 3 where seq 2 was expected/);
  });

  test("a line longer than the read chunk is read whole", async () => {
    const path = join(root, `seg-${++counter}`);
    await writeFile(path, frameLine(entry(1, "x".repeat(3 << 20))) + frameLine(entry(2)));
    assert.deepEqual((await replay(path)).seqs, [1, 2]);
  });
});

function segmentSize(tail: string | Buffer): number {
  return typeof tail === "string" ? Buffer.byteLength(tail) : tail.length;
}

describe("the open log", () => {
  async function openLog(): Promise<{ dir: string; log: WriteAheadLog }> {
    const dir = await mkdtemp(join(root, "log-"));
    return { dir, log: await WriteAheadLog.open(dir, [], 1, () => undefined) };
  }

  test("concurrent appends share fdatasyncs and land in seq order", async () => {
    const { dir, log } = await openLog();
    const appends = Array.from({ length: 200 }, (_, i) => log.append({ puts: entry(i + 1).puts! }));
    assert.notEqual(log.whenDurable(), null);
    await Promise.all(appends);
    assert.equal(log.whenDurable(), null);
    assert.ok(log.syncCount <= 2, `200 appends took ${log.syncCount} fdatasyncs`);
    await log.close();
    const seqs = (await readFile(join(dir, segmentName(1)), "utf8")).trim().split("\n").map((line) => JSON.parse(line).seq);
    assert.deepEqual(seqs, Array.from({ length: 200 }, (_, i) => i + 1));
  });

  test("appends made while a sync is in flight go out together in the next one", async () => {
    const { log } = await openLog();
    const first = log.append({ reset: true });
    await new Promise((resolve) => setImmediate(resolve));
    const later = Array.from({ length: 50 }, () => log.append({ reset: true }));
    await Promise.all([first, ...later]);
    assert.equal(log.syncCount, 2);
    await log.close();
  });

  test("a lone append is written on the loop at once only when no other request came since the last write", async () => {
    const { log } = await openLog();
    /** Turns of the event loop (setImmediate callbacks) that ran before `written` resolved. */
    const turnsUntil = async (written: Promise<void>): Promise<number> => {
      let turns = 0;
      let isDone = false;
      const tick = () => {
        if (isDone) return;
        turns++;
        setImmediate(tick);
      };
      setImmediate(tick);
      await written;
      isDone = true;
      return turns;
    };
    await log.append({ reset: true }); // the log starts as contended: this one goes to the thread pool
    countRequest(); // the write's own request: a client at concurrency 1
    assert.equal(await turnsUntil(log.append({ reset: true })), 0, "written on the loop, in the turn it was flushed");
    countRequest();
    countRequest();
    countRequest(); // two others' requests (reads) beside the write's own
    assert.ok((await turnsUntil(log.append({ reset: true }))) >= 1, "written by the thread pool while the loop went on");
    countRequest();
    assert.equal(await turnsUntil(log.append({ reset: true })), 0, "alone again");
    await log.close();
  });

  test("rotation sends later entries to a new segment named by their first seq", async () => {
    const { dir, log } = await openLog();
    void log.append({ reset: true });
    const rotated = log.rotate();
    const next = log.append({ reset: true });
    await Promise.all([rotated, next]);
    await log.close();
    assert.equal(JSON.parse(await readFile(join(dir, segmentName(1)), "utf8")).seq, 1);
    assert.equal(JSON.parse(await readFile(join(dir, segmentName(2)), "utf8")).seq, 2);
  });

  test("after a failed write every pending and later append rejects, and so does whenDurable", async () => {
    const { log } = await openLog();
    await (log as unknown as { handle: { close(): Promise<void> } }).handle.close();
    const pending = log.append({ reset: true });
    await assert.rejects(pending, /Writing the log in .* failed/);
    await assert.rejects(log.append({ reset: true }), /Writing the log in .* failed/);
    await assert.rejects(log.whenDurable()!, /Writing the log in .* failed/);
  });
});
