// The write-ahead log: one checksummed JSON line per committed batch (a very large one: several,
// see frameEntryLines), appended to numbered segment files and fdatasync'ed in groups (group
// commit). Its lines are framed by log-framing.ts, which snapshots reuse. What to replay and when
// to start a new segment is decided by the file store.

import { constants, ftruncateSync, writeSync } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { syncDirectory, writeFully } from "../../disk/durable-file.ts";
import { DATA_FILE_MODE } from "./folder-modes.ts";
import { FSYNC_BUCKETS, Histogram } from "../../metrics/histogram.ts";
import { isOutOfSpace, StorageFullError } from "../store.ts";
import type { LogEntry } from "./log-entry.ts";
import { frameEntryPieces, MAX_LOG_LINE_CHARS, PartJoiner, readFramedLogLine } from "./log-framing.ts";
import { newlineAt, readLineRuns } from "./line-runs.ts";
import { requestsCome } from "../../turns/loop-share.ts";

const SEGMENT_PREFIX = "log-";
const SEQ_DIGITS = 16;
/**
 * Segments are opened with O_DSYNC: a write returns once its data is on disk, as write+fdatasync
 * would, but in one trip to the thread pool instead of two (half the latency of a lone write).
 */
const SEGMENT_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_DSYNC;
/**
 * The open segment is made longer than its data, this much at a time, and written at positions
 * inside it: an O_DSYNC write that does not grow the file need not also commit its new size, which
 * makes a lone durable write markedly faster. The zeros after the data are trimmed on rotation and
 * close; after a crash, start-up trims them (they are never damage: see readSegment).
 */
export const PREALLOCATE_BYTES = 16 * 1024 * 1024;
/**
 * A flush encodes its lines into a buffer of this size, written and reused (encodeLines), so that a
 * group of large batches costs one such buffer beside its text rather than a copy of it all. Each
 * O_DSYNC write is a device flush: 8 MiB makes that a small share of the write.
 */
const WRITE_CHUNK_BYTES = 8 * 1024 * 1024;

export interface Segment {
  readonly firstSeq: number;
  bytes: number;
}

/** Data-folder files are named by a seq, zero-padded so that names sort as their seqs do. */
export function seqFileName(prefix: string, seq: number): string {
  return prefix + String(seq).padStart(SEQ_DIGITS, "0");
}

/** The seq of `<prefix><digits>`, or undefined for any other name (a .tmp file included). */
export function parseSeqFileName(prefix: string, name: string): number | undefined {
  if (!name.startsWith(prefix)) return undefined;
  const digits = name.slice(prefix.length);
  return /^\d+$/.test(digits) ? Number(digits) : undefined;
}

export function segmentName(firstSeq: number): string {
  return seqFileName(SEGMENT_PREFIX, firstSeq);
}

/** The first seq of a segment file name, or undefined for any other file. */
export function parseSegmentName(name: string): number | undefined {
  return parseSeqFileName(SEGMENT_PREFIX, name);
}

/**
 * The entries' lines (each as its pieces, frameEntryPieces) encoded into one buffer, reused: each
 * part handed out must be written before the next is asked for. A piece is released once encoded
 * (entries are the log's queue, written once), so a group of large batches never holds its text and
 * its bytes whole at the same time.
 */
function* encodeLines(entries: string[][][]): Generator<Buffer> {
  let chars = 0;
  for (const lines of entries) for (const pieces of lines) for (const piece of pieces) chars += piece.length;
  // UTF-8 takes at most 3 bytes per UTF-16 unit: a small group fits one buffer, and one write.
  const buffer = Buffer.allocUnsafe(Math.min(WRITE_CHUNK_BYTES, 3 * chars));
  let used = 0;
  for (const lines of entries) {
    for (const pieces of lines) {
      for (let i = 0; i < pieces.length; i++) {
        let text = pieces[i]!;
        pieces[i] = "";
        while (text.length > 0) {
          // encodeInto never splits a character, and says how much of the text it took.
          const { read, written } = UTF8.encodeInto(text, buffer.subarray(used));
          used += written;
          text = read === text.length ? "" : text.slice(read);
          if (text.length > 0 || used === buffer.length) {
            yield buffer.subarray(0, used);
            used = 0;
          }
        }
      }
    }
  }
  if (used > 0) yield buffer.subarray(0, used);
}

const UTF8 = new TextEncoder();

export interface ReadSegmentOptions {
  readonly firstSeq: number;
  /** Only the newest segment may end in a torn write; damage anywhere else is fatal. */
  readonly isLast: boolean;
  readonly warn: (message: string) => void;
  readonly onEntry: (entry: LogEntry) => void;
}

/**
 * Replays one segment. A damaged tail (a torn last write: partial line, garbage, bad checksums with
 * nothing whole after them) is cut off with a warning; damage followed by whole entries throws,
 * since cutting there would silently drop acknowledged writes.
 */
export async function readSegment(path: string, options: ReadSegmentOptions): Promise<{ bytes: number; nextSeq: number }> {
  let seq = options.firstSeq;
  let validEnd = 0;
  let damagedAt = -1;
  let runOffset = 0;
  const parts = new PartJoiner();
  const onLine = (run: Buffer, from: number, to: number): void => {
    const offset = runOffset + from;
    const value = readFramedLogLine(run, from, to);
    if (!value || typeof value.seq !== "number") {
      if (damagedAt < 0) damagedAt = offset;
      return;
    }
    if (damagedAt >= 0) throw damagedMiddle(path, damagedAt, offset);
    // The parts of a batch share its seq, which is the one expected until its last part is read.
    if (value.seq !== seq) {
      throw new Error(`${path}: the entry at byte ${offset} has seq ${value.seq} where seq ${seq} was expected; the log is not one this server wrote or it was edited. Restore the data folder from a backup.`);
    }
    const entry = parts.take(value as unknown as LogEntry);
    // Held parts are not yet kept: the tail from the batch's first part is cut unless its last comes.
    if (entry === null || entry === "orphaned") return;
    options.onEntry(entry);
    seq++;
    validEnd = offset + to - from + 1;
  };
  // Read into buffers never reused (line-runs.ts): the rows of the puts keep their data as those bytes.
  const { size, rest } = await readLineRuns(path, false, (run) => {
    for (let from = 0; from < run.length; ) {
      const to = newlineAt(run, from);
      onLine(run, from, to);
      from = to + 1;
    }
    runOffset += run.length;
  });
  const tailOffset = size - rest.length;
  if (validEnd < size) {
    if (validEnd === tailOffset && isAllZeros(rest)) {
      await truncateFile(path, validEnd); // the room a crash left preallocated, not damage
      return { bytes: validEnd, nextSeq: seq };
    }
    if (!options.isLast) throw damagedMiddle(path, validEnd, size);
    await truncateFile(path, validEnd);
    const batch = parts.heldParts > 0 ? ` (among them the first ${parts.heldParts} parts of batch ${parts.heldSeq}, without its last: the whole batch is dropped)` : "";
    options.warn(`${path}: dropped ${size - validEnd} bytes of a torn or damaged tail at byte ${validEnd}${batch} (a write cut short by a crash, never acknowledged); kept ${seq - options.firstSeq} entries before it.`);
  }
  return { bytes: validEnd, nextSeq: seq };
}

function isAllZeros(bytes: Buffer): boolean {
  for (let i = 0; i < bytes.length; i++) if (bytes[i] !== 0) return false;
  return true;
}

function damagedMiddle(path: string, damagedAt: number, validAt: number): Error {
  return new Error(
    `Cannot open the data folder: ${path} is damaged at byte ${damagedAt} (an entry is incomplete or fails its checksum) ` +
      `yet more log follows (from byte ${validAt} or in a later segment), so cutting the damage off would lose acknowledged writes. ` +
      `Restore the folder from a backup, or accept losing everything from that point by truncating the file to ${damagedAt} bytes ` +
      `(truncate -s ${damagedAt} ${path}) and deleting later log segments.`,
  );
}

async function truncateFile(path: string, bytes: number): Promise<void> {
  const handle = await open(path, "r+");
  try {
    await handle.truncate(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

interface Deferred {
  readonly promise: Promise<void>;
  resolve(): void;
  reject(error: Error): void;
}

function createDeferred(): Deferred {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise: markHandled(promise), resolve, reject };
}

/**
 * A failed write reaches every waiter; nobody may be waiting on a given promise (whenDurable was
 * not asked), which must not crash the process a second way.
 */
function markHandled<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

interface Rotation {
  readonly seq: number;
  /** Lines queued before the rotation was asked for still go to the old segment. */
  readonly queuedBefore: number;
  readonly done: Deferred;
}

/**
 * The open log. Lines appended while a write+fdatasync is in flight wait in `queue` and go out
 * together in the next one, so throughput grows with concurrency rather than with the disk's
 * fsync rate. One flush loop at a time keeps lines in seq order. A write refused for lack of
 * space drops every entry not yet on disk (see dropUnwritten); any other failed write is fatal.
 */
export class WriteAheadLog {
  private syncs = 0;
  /** How long each durable write took (write + fdatasync), for GET /metrics. */
  readonly syncSeconds = new Histogram(FSYNC_BUCKETS);
  /** Each entry's lines (see frameEntryLines): one, or the parts of a very large batch. */
  private queue: string[][][] = [];
  private queued: Deferred | null = null;
  private inFlight: Deferred | null = null;
  private rotation: Rotation | null = null;
  private flushing: Promise<void> | null = null;
  private failure: Error | null = null;
  private isClosed = false;
  /** Whether writes are overlapping (see flush): then they share async writes; else one is written at once. */
  private isContended = true;
  /** requestsCome() at the last flush: how many requests the loop has had since. */
  private requestsAtFlush = 0;
  /**
   * Set while the store does background work on the main thread (writing a snapshot): lone writes
   * then go to the thread pool as well, so that the work goes on while the disk writes.
   */
  hasBackgroundWork = false;
  /** The open segment's file size: its data plus preallocated room. */
  private allocated: number;
  /** Every entry before this seq is on disk. */
  private writtenSeq: number;

  private constructor(
    private readonly dir: string,
    private handle: FileHandle,
    private readonly segments: Segment[],
    private seq: number,
    private readonly onFlushed: () => void,
    private readonly onDropped: (fromSeq: number) => void,
    private readonly maxLineChars: number,
  ) {
    this.allocated = segments.at(-1)!.bytes; // start-up trimmed the segment to its data
    this.writtenSeq = seq;
  }

  /**
   * Continues the last of `segments` (already replayed and trimmed), or starts one at nextSeq.
   * `onDropped(fromSeq)` hears, before any waiter does, that the entries from fromSeq on were
   * dropped for lack of space (their seqs are handed out again). `maxLineChars`: see
   * MAX_LOG_LINE_CHARS (tests make it small, to write batches in parts).
   */
  static async open(dir: string, segments: Segment[], nextSeq: number, onFlushed: () => void, onDropped: (fromSeq: number) => void = () => {}, maxLineChars = MAX_LOG_LINE_CHARS): Promise<WriteAheadLog> {
    const last = segments.at(-1);
    const firstSeq = last?.firstSeq ?? nextSeq;
    const handle = await open(join(dir, segmentName(firstSeq)), SEGMENT_FLAGS, DATA_FILE_MODE);
    if (!last) {
      segments.push({ firstSeq, bytes: 0 });
      await syncDirectory(dir);
    }
    return new WriteAheadLog(dir, handle, segments, nextSeq, onFlushed, onDropped, maxLineChars);
  }

  /** The seq the next entry will take. */
  get nextSeq(): number {
    return this.seq;
  }

  /** Every entry before this seq is on disk; the others may yet be dropped (see dropUnwritten). */
  get nextWrittenSeq(): number {
    return this.writtenSeq;
  }

  /**
   * The segments with the bytes of whole entries on disk in each (every entry before
   * nextWrittenSeq, none after): copies, taken in one tick, for a backup (see FileStore.backup).
   */
  get writtenSegments(): Segment[] {
    return this.segments.map((segment) => ({ ...segment }));
  }

  /** Bytes in the segments not yet covered by a snapshot. */
  get logBytes(): number {
    return this.segments.reduce((sum, segment) => sum + segment.bytes, 0);
  }

  /** How many times the log was fdatasync'ed: fewer than appends under concurrency. */
  get syncCount(): number {
    return this.syncs;
  }

  /** Numbers the entry, queues it, and resolves once it is on disk. */
  append(fields: Omit<LogEntry, "seq">): Promise<void> {
    if (this.failure) return markHandled(Promise.reject(this.failure));
    if (this.isClosed) return markHandled(Promise.reject(new Error("The store is closed; no more writes are accepted.")));
    this.queue.push(frameEntryPieces(this.seq++, fields, this.maxLineChars));
    if (this.inFlight) this.isContended = true;
    this.queued ??= createDeferred();
    this.scheduleFlush();
    return this.queued.promise;
  }

  /** Resolves once every entry appended so far is on disk; null when it already is. */
  whenDurable(): Promise<void> | null {
    if (this.failure) return markHandled(Promise.reject(this.failure));
    return (this.queued ?? this.inFlight)?.promise ?? null;
  }

  /**
   * Sends entries from nextSeq on to a new segment `log-<nextSeq>`; resolves once the older ones
   * are on disk and the new file's name is durable. Callers take a snapshot at the same seq.
   */
  rotate(): Promise<void> {
    if (this.failure) return markHandled(Promise.reject(this.failure));
    if (this.rotation) throw new Error("A segment rotation is already under way.");
    if (this.segments.at(-1)!.firstSeq === this.seq) return Promise.resolve();
    this.rotation = { seq: this.seq, queuedBefore: this.queue.length, done: createDeferred() };
    this.scheduleFlush();
    return this.rotation.done.promise;
  }

  /** Forgets segments a snapshot now covers (the file store deletes the files). */
  forgetSegmentsBefore(seq: number): void {
    const kept = this.segments.filter((segment) => segment.firstSeq >= seq);
    this.segments.splice(0, this.segments.length, ...kept);
  }

  /** Flushes what is queued, then closes the file. Rejects when the log had failed. */
  async close(): Promise<void> {
    this.isClosed = true;
    try {
      while (this.flushing) await this.flushing;
      if (!this.failure) await this.trimSegment();
    } finally {
      await this.handle.close();
    }
    if (this.failure) throw this.failure;
  }

  private scheduleFlush(): void {
    // In the event loop's check phase, after every request read in this turn has appended: writes
    // that arrived together join, and so do writes arriving while a flush is on disk (group commit).
    this.flushing ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.flush());
  }

  private async flush(): Promise<void> {
    while (!this.failure && (this.queue.length > 0 || this.rotation)) {
      const entries = this.queue;
      const group = this.queued;
      const rotation = this.rotation;
      this.queue = [];
      this.queued = null;
      this.rotation = null;
      this.inFlight = group;
      const isLoopQuiet = this.isLoopQuiet();
      try {
        if (rotation) {
          await this.writeAndSync(entries.slice(0, rotation.queuedBefore));
          await this.startSegment(rotation.seq);
          rotation.done.resolve();
          await this.writeAndSync(entries.slice(rotation.queuedBefore));
        } else if (entries.length === 1 && entries[0]!.length === 1 && !this.isContended && !this.hasBackgroundWork && isLoopQuiet) {
          this.writeAndSyncNow(entries[0]![0]!);
        } else {
          await this.writeAndSync(entries);
          // Contended until a write goes out alone with nothing arriving while it was on disk.
          this.isContended = entries.length > 1 || this.queue.length > 0;
        }
        group?.resolve();
        this.inFlight = null;
        this.onFlushed();
      } catch (error) {
        this.inFlight = null;
        if (isOutOfSpace(error)) await this.dropUnwritten(error, [group, rotation?.done]);
        else this.fail(error, [group, rotation?.done]);
      }
    }
    this.flushing = null;
  }

  /**
   * Writes whole entries. The segment's byte count grows only once every one is on disk, so that a
   * write cut short (no room) is cut off again to the last whole entry, parts of a batch included.
   */
  private async writeAndSync(entries: string[][][]): Promise<void> {
    if (entries.length === 0) return;
    const start = this.segments.at(-1)!.bytes;
    const started = performance.now();
    let at = start;
    for (const bytes of encodeLines(entries)) {
      const size = this.sizeFor(at + bytes.length);
      if (size > this.allocated) {
        await this.handle.truncate(size);
        this.allocated = size;
      }
      await writeFully(this.handle, bytes, at); // durable on return: the segment is O_DSYNC
      at += bytes.length;
    }
    this.syncSeconds.observe((performance.now() - started) / 1000);
    this.syncs++;
    this.segments.at(-1)!.bytes += at - start;
    this.writtenSeq += entries.length;
  }

  /**
   * Whether no request but this write's own came since the last flush (a client at concurrency 1):
   * then blocking the loop for one write keeps no one else waiting. While others' requests come
   * (reads between writes), the write goes to the thread pool, and they are served meanwhile.
   */
  private isLoopQuiet(): boolean {
    const come = requestsCome();
    const others = come - this.requestsAtFlush - 1;
    this.requestsAtFlush = come;
    return others <= 0;
  }

  /**
   * One lone line, written on this thread: with nothing else to do, a trip to the thread pool only
   * adds latency (a write at a time is what a client at concurrency 1 waits for). The event loop
   * blocks for one O_DSYNC write; requests that arrive meanwhile are read in the next turn and
   * flushed together, and a flush of more than one line turns the log back to shared async writes.
   */
  private writeAndSyncNow(line: string[]): void {
    const start = this.segments.at(-1)!.bytes;
    const started = performance.now();
    let at = start;
    for (const buffer of encodeLines([[line]])) {
      const size = this.sizeFor(at + buffer.length);
      if (size > this.allocated) {
        ftruncateSync(this.handle.fd, size);
        this.allocated = size;
      }
      for (let offset = 0; offset < buffer.length; ) offset += writeSync(this.handle.fd, buffer, offset, buffer.length - offset, at + offset);
      at += buffer.length;
    }
    this.syncSeconds.observe((performance.now() - started) / 1000);
    this.syncs++;
    this.segments.at(-1)!.bytes += at - start;
    this.writtenSeq++;
  }

  /** The file size that holds `end` bytes of data: whole steps of preallocated room. */
  private sizeFor(end: number): number {
    return end <= this.allocated ? this.allocated : Math.ceil(end / PREALLOCATE_BYTES) * PREALLOCATE_BYTES;
  }

  /** Cuts the open segment's preallocated room off, so that a closed segment is only its lines. */
  private async trimSegment(): Promise<void> {
    const bytes = this.segments.at(-1)!.bytes;
    if (this.allocated === bytes) return;
    await this.handle.truncate(bytes);
    await this.handle.sync();
    this.allocated = bytes;
  }

  private async startSegment(firstSeq: number): Promise<void> {
    const handle = await open(join(this.dir, segmentName(firstSeq)), SEGMENT_FLAGS, DATA_FILE_MODE);
    await this.trimSegment();
    await this.handle.close();
    this.handle = handle;
    this.allocated = 0;
    this.segments.push({ firstSeq, bytes: 0 });
    await syncDirectory(this.dir);
  }

  /**
   * The disk had no room (ENOSPC or EDQUOT, at the write or while growing the file): the entries
   * not yet on disk are dropped, and the store takes their batches back out of memory at once, so
   * that writes arriving meanwhile build on what is on disk and take the dropped seqs. The bytes a
   * partial write left after the last whole line are cut off (and the cut made durable) before the
   * waiters hear of it and before the next write, which would otherwise follow a torn line, and a
   * whole line of a dropped entry left there would come back at the next start-up.
   */
  private async dropUnwritten(cause: unknown, waiters: Array<Deferred | null | undefined>): Promise<void> {
    const waiting = [...waiters, this.queued, this.rotation?.done];
    this.queued = null;
    this.rotation = null;
    this.queue = [];
    this.seq = this.writtenSeq;
    this.onDropped(this.writtenSeq);
    try {
      const bytes = this.segments.at(-1)!.bytes;
      await this.handle.truncate(bytes);
      await this.handle.sync();
      this.allocated = bytes;
    } catch (error) {
      this.fail(error, waiting);
      return;
    }
    const message = cause instanceof Error ? cause.message : String(cause);
    const error = new StorageFullError(`The disk of ${this.dir} is full, so the write was not stored: ${message}`, { cause });
    for (const waiter of waiting) waiter?.reject(error);
  }

  /** From now on every pending and later write rejects with this error. */
  private fail(cause: unknown, waiters: Array<Deferred | null | undefined>): void {
    const message = cause instanceof Error ? cause.message : String(cause);
    this.failure = new Error(`Writing the log in ${this.dir} failed, so no further write can be made durable: ${message}`, { cause });
    for (const waiter of [...waiters, this.queued, this.rotation?.done]) waiter?.reject(this.failure);
    this.queued = null;
    this.rotation = null;
    this.queue = [];
  }
}
