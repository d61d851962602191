// The file store: the memory store made durable. A batch is applied to memory at once and appended
// to the write-ahead log (wal.ts), and taken back out if the disk had no room for it; start-up loads
// the newest snapshot (snapshot.ts) and replays the log after it; compaction snapshots in the
// background and deletes the segments the snapshot covers.

import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { acquireLock, type DirectoryLock } from "./lock.ts";
import { checkFolderModes, makeDataFolder } from "./folder-modes.ts";
import { MemoryStore, type ValueIndexedFields } from "../memory/memory-store.ts";
import { isTemporarySnapshot, parseSnapshotName, readSnapshot, snapshotName, writeSnapshot, type SnapshotState } from "./snapshot.ts";
import { isOutOfSpace, type Commit, type FeedEvent, type FeedPosition, type Row, type StoreMetrics, type UniqueFields, type WriteBatch } from "../store.ts";
import { StoredRow } from "../../rows/stored-row.ts";
import { RepeatedStrings } from "../../rows/repeated-strings.ts";
import type { CapturedRows } from "../memory/loaded-rows.ts";
import { UnsyncedBatches } from "./unsynced-batches.ts";
import { checkBackupTarget, holdFiles, readKeysJson, releaseFiles, writeBackup, type BackupExtra, type BackupPoint, type BackupSummary } from "./backup.ts";
import { WriteAheadLog, parseSegmentName, readSegment, segmentName, type Segment } from "./wal.ts";
import { MAX_LOG_LINE_CHARS } from "./log-framing.ts";
import type { LogEntry, LogPut, RowImage } from "./log-entry.ts";
import { syncDirectory } from "../../disk/durable-file.ts";

/** Compact once the log is this many times the size of the last snapshot, however busy... */
export const COMPACTION_LOG_RATIO = 2;
/** ...or from this many times on, at a quiet moment (writing a snapshot takes the main thread)... */
export const QUIET_COMPACTION_LOG_RATIO = 1;
/** ...and at least this big, so that a small store is not rewritten every few writes. */
export const COMPACTION_MIN_LOG_BYTES = 8 * 1024 * 1024;
/**
 * A compaction that failed for lack of space is tried again after this long (doubling up to
 * COMPACTION_SPACE_RETRY_MAX_MS while it keeps failing), at the next successful write or by a timer:
 * freeing space is often what lets it succeed, and it frees the space the log segments take.
 */
export const COMPACTION_SPACE_RETRY_MS = 1000;
const COMPACTION_SPACE_RETRY_MAX_MS = 5 * 60 * 1000;
/** Quiet: the event loop was busy less than this share of the last QUIET_CHECK_MS. */
const QUIET_UTILIZATION = 0.2;
const QUIET_CHECK_MS = 250;
/** Entries are numbered from 1: a store without a snapshot covers nothing before seq 1. */
const FIRST_SEQ = 1;

export interface FileStoreOptions {
  readonly dir: string;
  readonly valueIndexed: ValueIndexedFields;
  readonly unique?: UniqueFields;
  /** Events the change feed keeps (--changes-keep), across restarts and compactions. */
  readonly changesKeep?: number;
  /** The bytes of idempotent answers kept (--idempotency-memory), at start-up as while serving. */
  readonly idempotencyMemoryBytes?: number;
  /** Things the operator should hear about that do not stop the server (a torn tail was cut). */
  readonly warn: (message: string) => void;
  /** A batch whose log line would be longer is written in parts (log-framing.ts); tests make it small. */
  readonly maxLogLineChars?: number;
}

export interface FileStoreDescription {
  readonly records: number;
  readonly deletedRecords: number;
  readonly logBytes: number;
  readonly snapshotBytes: number;
  readonly fsyncs: number;
}

export interface DataFiles {
  readonly snapshots: number[];
  readonly segments: number[];
  readonly temporary: string[];
}

export class FileStore extends MemoryStore {
  private wal!: WriteAheadLog;
  /** The newest snapshot covers every entry before this seq. */
  private snapshotSeq = FIRST_SEQ;
  private snapshotBytes = 0;
  private compaction: Promise<void> | null = null;
  /** Compactions done and failed since start-up (GET /metrics). */
  private compactions = 0;
  private failedCompactions = 0;
  /** After a failed background compaction, wait until the log reaches this size to try again. */
  private compactionRetryBytes = 0;
  /** After a compaction failed for lack of space: when to try it again, whatever the log's size. */
  private spaceRetryAt: number | null = null;
  private spaceRetryDelayMs = COMPACTION_SPACE_RETRY_MS;
  private spaceRetryTimer: NodeJS.Timeout | null = null;
  private readonly unsynced = new UnsyncedBatches(this.tables, this.answers, this.metaValues);
  /** Waiting for a quiet moment to compact (see maybeCompact). */
  private quietWatch: NodeJS.Timeout | null = null;
  private isClosed = false;

  private constructor(
    private readonly options: FileStoreOptions,
    private readonly lock: DirectoryLock,
  ) {
    super(options.valueIndexed, options.unique, options.changesKeep, options.idempotencyMemoryBytes);
  }

  /**
   * Creates the folder if needed (0700), locks it, and recovers its state; then the store serves.
   * A folder or file others may read is warned about once recovery has removed its leftovers.
   */
  static async open(options: FileStoreOptions): Promise<FileStore> {
    await makeDataFolder(options.dir);
    const lock = await acquireLock(options.dir);
    const store = new FileStore(options, lock);
    try {
      await store.recover();
    } catch (error) {
      await lock.release();
      throw error;
    }
    try {
      await checkFolderModes(options.dir, options.warn);
    } catch (error) {
      await store.close();
      throw error;
    }
    return store;
  }

  override whenDurable(): Promise<void> | null {
    return this.wal.whenDurable();
  }

  override commit(batch: WriteBatch): Promise<Commit> {
    // Taken before the batch is applied: what to put back if the disk has no room for it.
    const undo = this.unsynced.undoOf(batch);
    const seq = this.wal.nextSeq;
    const committed = super.commit(batch);
    if (this.wal.nextSeq > seq) this.unsynced.add(seq, undo);
    return committed;
  }

  /** A commit's seq is its log entry's. */
  protected override nextSeq(): number {
    return this.wal.nextSeq;
  }

  /** Durable like any write: a reset entry in the log, which replay honours. */
  override async reset(): Promise<void> {
    const undo = this.unsynced.undoOfReset();
    const seq = this.wal.nextSeq;
    // The tables are dropped rather than emptied, so that the undo can put them back.
    this.tables.clear();
    this.answers.clear();
    this.window.clear();
    const durable = this.wal.append({ reset: true, rev: this.rev });
    if (this.wal.nextSeq > seq) this.unsynced.add(seq, undo);
    await durable;
  }

  /** Flushes and syncs the log, waits for a running compaction, and releases the folder. */
  override async close(): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    if (this.quietWatch) clearTimeout(this.quietWatch);
    if (this.spaceRetryTimer) clearTimeout(this.spaceRetryTimer);
    try {
      // A compaction's failure was already given to whoever asked for it, or warned about.
      await this.compaction?.catch(() => undefined);
      await this.wal.close();
    } finally {
      await this.lock.release();
    }
  }

  /** What the banner shows. */
  describe(): FileStoreDescription {
    let records = 0;
    let deletedRecords = 0;
    for (const table of this.tables.values()) {
      records += table.liveCount;
      deletedRecords += table.rows.size - table.liveCount;
    }
    return { records, deletedRecords, logBytes: this.wal.logBytes, snapshotBytes: this.snapshotBytes, fsyncs: this.wal.syncCount };
  }

  override metrics(): StoreMetrics {
    const { compactions, failedCompactions } = this;
    return { ...super.metrics(), files: { logBytes: this.wal.logBytes, snapshotBytes: this.snapshotBytes, fsyncSeconds: this.wal.syncSeconds, compactions, failedCompactions } };
  }

  /**
   * Snapshots the current state while writes go on into a new segment, then deletes the segments
   * and snapshots it covers. Runs one at a time; a call during a run shares it.
   */
  compact(): Promise<void> {
    this.compaction ??= this.runCompaction().then(
      () => {
        this.compaction = null;
        this.compactions++;
        this.stopSpaceRetry();
        // Writes went on into the log while the snapshot was written: it may have outgrown the
        // snapshot again already, and no flush may come to say so (docs/architecture.md, "The data folder").
        this.maybeCompact();
      },
      (error: Error) => {
        this.compaction = null;
        this.failedCompactions++;
        if (isOutOfSpace(error)) this.retryWhenSpaceMayBeBack();
        else this.stopSpaceRetry();
        throw error;
      },
    );
    return this.compaction;
  }

  /**
   * Folds every write committed so far into a snapshot: waits for a compaction under way, then
   * compacts what came after it. `tabula import` ends with it, so that the next start reads a
   * snapshot rather than replaying the whole import from the log.
   */
  async compactAll(): Promise<void> {
    // A compaction under way covers only the writes before it began; its failure is compact()'s to report.
    await this.compaction?.catch(() => undefined);
    if (this.wal.nextSeq > this.snapshotSeq) await this.compact();
  }

  /**
   * Copies the data folder into `to` while writes go on (docs/operating.md). The point is taken in one
   * tick, so no write waits for the copy: the log's whole entries on disk then (every write answered
   * so far, none half), the snapshot they follow, each file opened at once, so that a compaction
   * deleting it meanwhile takes nothing away (an open file keeps its data). The log only grows
   * after the point, so the copy reads bytes nobody changes.
   */
  async backup(to: string, copyMore?: BackupExtra): Promise<BackupSummary> {
    const startedAt = performance.now();
    await checkBackupTarget(to);
    const keysJson = await readKeysJson(this.options.dir);
    const point = this.holdBackupPoint(keysJson);
    let bytes: number;
    let extraNames: readonly string[];
    try {
      ({ bytes, extraNames } = await writeBackup(point.held, to, copyMore));
    } finally {
      releaseFiles(point.held.files);
    }
    const files = [...point.held.files.map((file) => file.name), ...(keysJson ? ["keys.json"] : []), ...extraNames];
    return { to, seq: point.held.seq, bytes, files, records: point.records, ms: Math.round(performance.now() - startedAt) };
  }

  /** Synchronous: the backup's point is one instant of the log (see backup). */
  private holdBackupPoint(keysJson: Buffer | null): { held: BackupPoint; records: Record<string, number> } {
    const written = this.wal.nextWrittenSeq;
    const names: Array<[string, number]> = this.snapshotBytes > 0 ? [[snapshotName(this.snapshotSeq), this.snapshotBytes]] : [];
    for (const segment of this.wal.writtenSegments) names.push([segmentName(segment.firstSeq), segment.bytes]);
    const records: Record<string, number> = {};
    for (const [entity, { live, deleted }] of this.unsynced.recordCountsBefore(written)) if (live + deleted > 0) records[entity] = live;
    return { held: { files: holdFiles(this.options.dir, names), seq: written - 1, keysJson }, records };
  }

  protected override persist(batch: WriteBatch): Promise<void> {
    // Rows as they are: the log writes a row's image (never its memo) and reuses its data JSON.
    const puts = batch.puts.map(({ entity, row, sync }): LogPut => (sync ? { e: entity, row, s: 1 } : { e: entity, row }));
    // Fields a batch lacks are left out, so that an ordinary write's line is as it always was.
    const drops = batch.drops?.length ? batch.drops : undefined;
    const meta = batch.meta?.length ? batch.meta.map(({ key, value }) => ({ key, value: value ?? null })) : undefined;
    return this.wal.append({ drops, puts, meta, answer: batch.answer });
  }

  private async recover(): Promise<void> {
    const { dir } = this.options;
    const files = await listDataFiles(dir);
    const loader = new RowLoader();
    const newest = files.snapshots.at(-1);
    if (newest !== undefined) await this.loadSnapshot(newest, loader);
    // Segments before the snapshot are covered by it: a compaction that crashed before deleting them.
    const { segments, nextSeq } = await this.replaySegments(
      files.segments.filter((seq) => seq >= this.snapshotSeq),
      loader,
    );
    const leftovers = [
      ...files.temporary,
      ...files.segments.filter((seq) => seq < this.snapshotSeq).map(segmentName),
      ...files.snapshots.filter((seq) => seq < this.snapshotSeq).map(snapshotName),
    ];
    await removeFiles(dir, leftovers);
    this.wal = await WriteAheadLog.open(
      dir,
      segments,
      nextSeq,
      () => {
        this.unsynced.forgetBefore(this.wal.nextWrittenSeq);
        this.maybeCompact();
      },
      (fromSeq) => {
        this.unsynced.rollBack(fromSeq);
        this.window.rollBack(fromSeq);
      },
      this.options.maxLogLineChars ?? MAX_LOG_LINE_CHARS,
    );
    // Once every row is in: a unique set declared over stored duplicates is reported, not fatal.
    this.settleUniqueIndexes();
    // Everything loaded is durable, the snapshot's events too: they may be read.
    this.window.markDurable(nextSeq - 1);
    // A log left big by the last run is compacted at the first quiet moment (once start-up is done,
    // so that it never delays the server's start), not only after the next write: a server that
    // only reads would otherwise replay it at every start.
    this.maybeCompact(true);
  }

  private async loadSnapshot(seq: number, loader: RowLoader): Promise<void> {
    const path = join(this.options.dir, snapshotName(seq));
    const events: FeedEvent[] = [];
    const header = await readSnapshot(path, {
      onRow: (entity, image) => this.loadRow(entity, loader.toSnapshotRow(image)),
      // Kept as text, parsed when first read (stored-row.ts): a start-up parses no row.
      onRowText: (entity, bytes, idTo, from, to, rev, deleted, seq, index) => this.loadRowBytes(entity, bytes, idTo, from, to, rev, deleted, seq, index),
      onEntityFields: (entity, names) => {
        const table = this.table(entity);
        table.textFieldNames ??= new Set();
        for (const name of names) table.textFieldNames.add(name);
      },
      onEntityRows: (entity, rows) => this.table(entity).rows.expect(rows),
      onAnswer: (answer) => this.apply({ puts: [], answer }, 0),
      onMeta: (write) => this.applyMeta(write),
      onEvent: (event) => {
        const row = event.row ? loader.toRow(event.row) : this.tables.get(event.entity)?.rows.get(event.id);
        if (!row || row.seq !== event.seq || row.index !== event.index) {
          throw new Error(`Cannot open the data folder: the snapshot ${path} keeps the event ${event.seq}.${event.index} of ${event.entity} ${event.id}, but not the version it wrote. Restore the folder from a backup.`);
        }
        events.push({ entity: event.entity, type: event.type, row });
      },
    });
    if (header.seq !== seq) throw new Error(`Cannot open the data folder: ${path} says it covers entries before ${header.seq}, its name says ${seq}. Was it renamed by hand?`);
    // A snapshot from before the feed: its rows were given positions 0.1, 0.2…, all older than any event.
    this.window.restore(events, header.horizon ?? loader.lastLegacyPosition);
    this.rev = Math.max(this.rev, header.rev);
    this.snapshotSeq = seq;
    this.snapshotBytes = header.bytes;
  }

  private async replaySegments(firstSeqs: number[], loader: RowLoader): Promise<{ segments: Segment[]; nextSeq: number }> {
    const segments: Segment[] = [];
    let seq = this.snapshotSeq;
    for (const [index, firstSeq] of firstSeqs.entries()) {
      const path = join(this.options.dir, segmentName(firstSeq));
      if (firstSeq !== seq) {
        throw new Error(`Cannot open the data folder: ${path} starts at entry ${firstSeq} but entry ${seq} comes next, so log segments are missing. Restore the folder from a backup.`);
      }
      const isLast = index === firstSeqs.length - 1;
      const replayed = await readSegment(path, { firstSeq, isLast, warn: this.options.warn, onEntry: (entry) => this.replayEntry(entry, loader) });
      segments.push({ firstSeq, bytes: replayed.bytes });
      seq = replayed.nextSeq;
    }
    return { segments, nextSeq: seq };
  }

  private replayEntry(entry: LogEntry, loader: RowLoader): void {
    if (entry.reset) {
      this.clear();
      this.rev = Math.max(this.rev, entry.rev ?? 0);
      return;
    }
    // As commit applied it (see persist): drops, puts, meta, answer.
    // Rows the log reader kept as text (log-line.ts) are applied as they are; others were parsed.
    const puts = (entry.puts ?? []).map(({ e, row: image, s }) => {
      const row = image instanceof StoredRow ? image : loader.toRow(image);
      return s === 1 ? { entity: e, row, sync: true as const } : { entity: e, row };
    });
    this.apply({ puts, drops: entry.drops, meta: entry.meta, answer: entry.answer }, entry.seq);
    // Durable already: the window keeps its size while a long log is replayed.
    this.window.markDurable(entry.seq);
    this.window.trimNow();
  }

  /**
   * Called after every log flush, after every compaction and once at start-up: compacts at once
   * when the log has outgrown the live data twice over, or, once it is as big as the last snapshot,
   * at the first quiet moment, so that a burst of requests is seldom slowed by a snapshot being
   * written. At start-up (`isStartUp`) it waits for a quiet moment either way.
   */
  private maybeCompact(isStartUp = false): void {
    if (this.compaction || this.isClosed) return;
    const logBytes = this.wal.logBytes;
    if (this.spaceRetryAt !== null) {
      if (Date.now() >= this.spaceRetryAt) this.startCompaction(logBytes);
      return;
    }
    if (logBytes < COMPACTION_MIN_LOG_BYTES || logBytes < this.compactionRetryBytes) return;
    if (logBytes >= COMPACTION_LOG_RATIO * this.snapshotBytes && !isStartUp) this.startCompaction(logBytes);
    else if (logBytes >= QUIET_COMPACTION_LOG_RATIO * this.snapshotBytes) this.watchForQuiet();
  }

  /** Looks at the event loop every QUIET_CHECK_MS and compacts once it was mostly idle. */
  private watchForQuiet(): void {
    if (this.quietWatch) return;
    let since = performance.eventLoopUtilization();
    const check = (): void => {
      const busy = performance.eventLoopUtilization(since).utilization;
      since = performance.eventLoopUtilization();
      if (this.compaction || this.isClosed) {
        this.quietWatch = null;
      } else if (busy > QUIET_UTILIZATION) {
        this.quietWatch = setTimeout(check, QUIET_CHECK_MS).unref();
      } else {
        this.quietWatch = null;
        this.startCompaction(this.wal.logBytes);
      }
    };
    this.quietWatch = setTimeout(check, QUIET_CHECK_MS).unref();
  }

  private startCompaction(logBytes: number): void {
    this.compact().catch((error: Error) => {
      if (this.isClosed) return; // given up by close(): nothing to retry
      if (isOutOfSpace(error) && this.spaceRetryAt !== null) {
        this.options.warn(`Compacting the log in ${this.options.dir} failed for lack of space (every write is still in the log; retrying in ${Math.ceil((this.spaceRetryAt - Date.now()) / 1000)} s or at the first write after that): ${error.message}`);
        return;
      }
      this.compactionRetryBytes = 2 * logBytes;
      this.options.warn(`Compacting the log in ${this.options.dir} failed (every write is still in the log; retrying once it reaches ${this.compactionRetryBytes} bytes): ${error.message}`);
    });
  }

  /** After a compaction failed for lack of space: try again at the first write after a pause, or by a timer. */
  private retryWhenSpaceMayBeBack(): void {
    if (this.isClosed) return;
    const delay = this.spaceRetryDelayMs;
    this.spaceRetryAt = Date.now() + delay;
    this.spaceRetryDelayMs = Math.min(2 * delay, COMPACTION_SPACE_RETRY_MAX_MS);
    if (this.spaceRetryTimer) clearTimeout(this.spaceRetryTimer);
    this.spaceRetryTimer = setTimeout(() => {
      this.spaceRetryTimer = null;
      if (this.spaceRetryAt !== null && !this.compaction && !this.isClosed) this.startCompaction(this.wal.logBytes);
    }, delay).unref();
  }

  private stopSpaceRetry(): void {
    this.spaceRetryAt = null;
    this.spaceRetryDelayMs = COMPACTION_SPACE_RETRY_MS;
    if (this.spaceRetryTimer) clearTimeout(this.spaceRetryTimer);
    this.spaceRetryTimer = null;
  }

  private async runCompaction(): Promise<void> {
    if (this.isClosed) throw new Error("The store is closed; it cannot be compacted.");
    if (this.wal.nextSeq === this.snapshotSeq) return;
    // Capture and rotate in the same tick: the snapshot holds exactly the entries before seq, and
    // every later entry lands in the new segment log-<seq>.
    const state = this.captureState();
    await this.wal.rotate();
    this.wal.hasBackgroundWork = true;
    let bytes: number;
    try {
      // A stop (SIGTERM) does not wait for a long snapshot: close() gives it up at its next chunk.
      bytes = await writeSnapshot(this.options.dir, state, () => this.isClosed);
    } finally {
      this.wal.hasBackgroundWork = false;
    }
    this.snapshotSeq = state.seq;
    this.snapshotBytes = bytes;
    this.wal.forgetSegmentsBefore(state.seq);
    const files = await listDataFiles(this.options.dir);
    await removeFiles(this.options.dir, [
      ...files.segments.filter((seq) => seq < state.seq).map(segmentName),
      ...files.snapshots.filter((seq) => seq < state.seq).map(snapshotName),
    ]);
  }

  /** Row versions are immutable, so copying references is a consistent picture of this instant. */
  private captureState(): SnapshotState {
    const entities: Array<[string, Row[], ReadonlySet<string> | null, CapturedRows | null]> = [];
    for (const [entity, table] of this.tables) {
      // Rows still held as loaded bytes are written from them, not made rows first (row-map.ts).
      if (table.rows.size > 0) {
        const { rows, loaded } = table.rows.capture();
        entities.push([entity, rows, table.textFieldNames, loaded]);
      }
    }
    const now = Date.now();
    const answers = [...this.answers.values()].filter((answer) => answer.expiresAt > now);
    const seq = this.wal.nextSeq;
    const events = this.window.eventsBefore(seq).map(({ entity, type, row }) => ({ entity, type, row, current: this.tables.get(entity)?.rows.get(row.id) === row }));
    // Values are replaced whole, never changed in place (applyMeta), so the references are this instant's too.
    const meta = [...this.metaValues].map(([key, value]) => ({ key, value }));
    return { seq, rev: this.rev, entities, answers, events, horizon: this.window.horizon, meta };
  }
}

/** Turns row images read at start-up into rows, sharing their repeated strings (repeated-strings.ts). */
class RowLoader {
  private readonly strings = new RepeatedStrings();
  /** Rows of snapshots from before the change feed get the positions 0.1, 0.2… in file order. */
  private legacyRows = 0;

  get lastLegacyPosition(): FeedPosition {
    return { seq: 0, index: this.legacyRows };
  }

  toRow(image: RowImage): Row {
    const data = image.data as Record<string, unknown>;
    const id = this.strings.share(image.id, data);
    return new StoredRow(id, image.rev, image.deleted, data, undefined, image.seq ?? 0, image.index ?? 0);
  }

  /** A row of a snapshot's rows (a log line's take their position from its seq). */
  toSnapshotRow(image: RowImage): Row {
    const row = this.toRow(image);
    if (image.seq === undefined) row.index = ++this.legacyRows;
    return row;
  }
}

export async function listDataFiles(dir: string): Promise<DataFiles> {
  const snapshots: number[] = [];
  const segments: number[] = [];
  const temporary: string[] = [];
  for (const name of await readdir(dir)) {
    const snapshot = parseSnapshotName(name);
    const segment = parseSegmentName(name);
    if (snapshot !== undefined) snapshots.push(snapshot);
    else if (segment !== undefined) segments.push(segment);
    else if (isTemporarySnapshot(name)) temporary.push(name);
  }
  const ascending = (a: number, b: number): number => a - b;
  return { snapshots: snapshots.sort(ascending), segments: segments.sort(ascending), temporary };
}

async function removeFiles(dir: string, names: string[]): Promise<void> {
  if (names.length === 0) return;
  for (const name of names) await rm(join(dir, name), { force: true });
  await syncDirectory(dir);
}
