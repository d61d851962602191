// tabula verify's reading of a data folder: every snapshot and log segment replayed and checked
// (frames, checksums, seqs, the snapshot's end marker), without writing or locking anything, and
// a report of what it holds and of any damage by file and byte offset. Printing is the command's.

import { createReadStream } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { checkStoredKeys } from "../../keys/stored-keys.ts";
import { listDataFiles } from "./file-store.ts";
import { findLockHolder } from "./lock.ts";
import { scanSegment, type SegmentScan } from "./segment-scan.ts";
import { readSnapshot, snapshotName, SnapshotDamageError, type SnapshotReader } from "./snapshot.ts";
import { segmentName } from "./wal.ts";
import type { LogEntry } from "./log-entry.ts";

/** A running server's compaction may delete a file being read: the check starts again, this many times at most. */
const MAX_ATTEMPTS = 3;
const NEWLINE = 0x0a;

export interface FileReport {
  readonly name: string;
  readonly bytes: number;
  /** What it holds, in words. */
  readonly holds: string;
}

/** Damage, or a warning: a file, where in it when known, and what is wrong. */
export interface Finding {
  readonly file: string;
  readonly offset?: number;
  readonly why: string;
}

export interface FolderReport {
  readonly files: FileReport[];
  /** Records per entity in the newest snapshot and the log after it. */
  readonly entities: Map<string, { live: number; deleted: number }>;
  /** The last log entry (0: none). */
  readonly lastSeq: number;
  readonly damage: Finding[];
  /** What start-up mends by itself, losing nothing answered (a torn tail of the log). */
  readonly warnings: Finding[];
  readonly notes: string[];
}

interface Version {
  readonly deleted: boolean;
  readonly seq: number;
  readonly index: number;
}

/** Checks `dir`; throws only when it cannot be read at all (no such folder). */
export async function checkDataFolder(dir: string): Promise<FolderReport> {
  const info = await stat(dir).catch((error: NodeJS.ErrnoException) => {
    throw new Error(error.code === "ENOENT" ? `There is no folder ${dir}; give the data folder a server runs with (--data).` : `Cannot read ${dir}: ${error.message}`);
  });
  if (!info.isDirectory()) throw new Error(`${dir} is a file, not a data folder; give the folder a server runs with (--data).`);
  for (let attempt = 1; ; attempt++) {
    try {
      return await new FolderCheck(dir).run();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT" || attempt === MAX_ATTEMPTS) throw error;
    }
  }
}

class FolderCheck {
  private readonly report: FolderReport = { files: [], entities: new Map(), lastSeq: 0, damage: [], warnings: [], notes: [] };
  private readonly records = new Map<string, Map<string, Version>>();

  constructor(private readonly dir: string) {}

  async run(): Promise<FolderReport> {
    const holder = await findLockHolder(this.dir);
    if (holder !== undefined) this.report.notes.push(`a server (pid ${holder}) is using this folder: read as it is now, its newest log segment may end in a write in progress`);
    const { snapshots, segments, temporary } = await listDataFiles(this.dir);
    const keys = await this.checkKeys();
    if (snapshots.length === 0 && segments.length === 0 && !keys) throw new Error(`${this.dir} holds no tabula data (no snapshot-*, log-* or keys.json); is it the folder given to --data?`);
    const newest = snapshots.at(-1);
    for (const seq of snapshots) await this.checkSnapshot(seq, seq === newest);
    const from = newest ?? 1;
    for (const seq of segments.filter((first) => first < from)) await this.checkLeftoverSegment(seq);
    const lastSeq = await this.replaySegments(from, segments.filter((first) => first >= from));
    for (const name of temporary) this.report.notes.push(`${name} was left by a compaction that did not finish; start-up deletes it`);
    for (const [entity, versions] of this.records) {
      let live = 0;
      for (const version of versions.values()) if (!version.deleted) live++;
      this.report.entities.set(entity, { live, deleted: versions.size - live });
    }
    return { ...this.report, lastSeq };
  }

  private async checkKeys(): Promise<boolean> {
    const path = join(this.dir, "keys.json");
    const text = await readFile(path, "utf8").catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return undefined;
      throw error;
    });
    if (text === undefined) {
      this.report.notes.push("there is no keys.json: the next start generates keys and prints them");
      return false;
    }
    try {
      const { keys } = checkStoredKeys(JSON.parse(text), "keys.json");
      this.report.files.push({ name: "keys.json", bytes: Buffer.byteLength(text), holds: `${keys.length} API key${keys.length === 1 ? "" : "s"}` });
    } catch (error) {
      this.report.files.push({ name: "keys.json", bytes: Buffer.byteLength(text), holds: "API keys (unreadable)" });
      this.report.damage.push({ file: "keys.json", why: `${(error as Error).message} A server will not start with it; mend it by hand (it is human-editable).` });
    }
    return true;
  }

  /** The newest snapshot's rows are the records; an older one (a leftover) is only checked. */
  private async checkSnapshot(seq: number, isNewest: boolean): Promise<void> {
    const name = snapshotName(seq);
    const path = join(this.dir, name);
    let rows = 0;
    let events = 0;
    const reader: SnapshotReader = {
      onRow: (entity, row) => {
        rows++;
        if (isNewest) this.versionsOf(entity).set(row.id, { deleted: row.deleted, seq: row.seq ?? 0, index: row.index ?? 0 });
      },
      onAnswer: () => {},
      onEvent: (event) => {
        events++;
        const version = event.row ?? (isNewest ? this.records.get(event.entity)?.get(event.id) : event);
        if (!version || version.seq !== event.seq || version.index !== event.index) {
          throw new SnapshotDamageError("", `it keeps the event ${event.seq}.${event.index} of ${event.entity} ${event.id} but not the version it wrote`, {});
        }
      },
    };
    const bytes = (await stat(path)).size;
    const leftover = isNewest ? "" : " (older than the newest snapshot: a leftover that start-up deletes)";
    try {
      const header = await readSnapshot(path, reader);
      this.report.files.push({ name, bytes, holds: `snapshot of the entries before ${header.seq}: ${rows.toLocaleString("en-US")} record versions, ${events.toLocaleString("en-US")} events${leftover}` });
      if (header.seq !== seq) this.report.damage.push({ file: name, offset: 0, why: `it says it covers the entries before ${header.seq}, its name says ${seq} (renamed by hand?)` });
    } catch (error) {
      if (!(error instanceof SnapshotDamageError)) throw error;
      this.report.files.push({ name, bytes, holds: `snapshot${leftover}` });
      const offset = error.at.byte ?? (error.at.line === undefined ? undefined : await lineOffset(path, error.at.line));
      this.report.damage.push({ file: name, offset, why: error.at.line === undefined ? error.why : `line ${error.at.line}: ${error.why}` });
    }
  }

  private async checkLeftoverSegment(firstSeq: number): Promise<void> {
    const name = segmentName(firstSeq);
    const scan = await scanSegment(join(this.dir, name), firstSeq);
    this.report.files.push({ name, bytes: scan.size, holds: `entries ${firstSeq}..${scan.nextSeq - 1} (covered by the newest snapshot: a leftover that start-up deletes)` });
    for (const damage of scan.damage) this.report.damage.push({ file: name, ...damage });
  }

  /** Replays the segments from `seq` on in order; answers the last seq. */
  private async replaySegments(seq: number, firstSeqs: number[]): Promise<number> {
    for (const [index, firstSeq] of firstSeqs.entries()) {
      const name = segmentName(firstSeq);
      if (firstSeq !== seq) this.report.damage.push({ file: name, offset: 0, why: `it starts at entry ${firstSeq} but entry ${seq} comes next: ${firstSeq > seq ? `entries ${seq}..${firstSeq - 1} are missing` : "segments overlap"}` });
      const scan = await scanSegment(join(this.dir, name), firstSeq, (entry, offset) => this.replayEntry(name, entry, offset));
      const isLast = index === firstSeqs.length - 1;
      const room = scan.tail === "zeros" ? `, then ${(scan.size - scan.tailOffset).toLocaleString("en-US")} bytes of preallocated room` : "";
      this.report.files.push({ name, bytes: scan.size, holds: scan.nextSeq > firstSeq ? `entries ${firstSeq}..${scan.nextSeq - 1}${room}` : `no entries${room}` });
      this.reportSegment(name, scan, isLast);
      seq = scan.nextSeq;
    }
    return seq - 1;
  }

  /**
   * Damage with whole entries after it, or anywhere but the newest segment, stops start-up. A bad
   * tail of the newest segment is what a crash leaves (a write never answered): start-up cuts it
   * off with a warning, so it is a warning here too.
   */
  private reportSegment(name: string, scan: SegmentScan, isLast: boolean): void {
    const isTornTail = isLast && !scan.hasEntriesAfterDamage;
    const lost = scan.size - scan.prefixEnd;
    for (const [i, damage] of scan.damage.entries()) {
      if (isTornTail) {
        if (i === 0) this.report.warnings.push({ file: name, ...damage, why: `${damage.why}; a torn tail of ${lost} bytes (a write a crash cut short, never answered): start-up cuts it off` });
      } else {
        const after = scan.hasEntriesAfterDamage ? "whole entries follow, so start-up refuses the folder" : "in a segment that is not the newest, so start-up refuses the folder";
        this.report.damage.push({ file: name, ...damage, why: `${damage.why}; ${after}` });
      }
    }
    if (scan.tail !== "torn" || (isTornTail && scan.damage.length > 0)) return;
    const why = `torn entry: ${scan.size - scan.tailOffset} bytes after the last newline`;
    if (isLast) this.report.warnings.push({ file: name, offset: scan.tailOffset, why: `${why}, a write a crash cut short (never answered): start-up cuts them off` });
    else this.report.damage.push({ file: name, offset: scan.tailOffset, why: `${why} in a segment that is not the newest, so start-up refuses the folder` });
  }

  private replayEntry(name: string, entry: LogEntry, offset: number): void {
    if (entry.reset) {
      this.records.clear();
      return;
    }
    const puts = entry.puts ?? [];
    if (!Array.isArray(puts) || !puts.every((put) => typeof put?.e === "string" && typeof put.row?.id === "string" && typeof put.row.data === "object")) {
      this.report.damage.push({ file: name, offset, why: `bad entry: seq ${entry.seq} holds puts that are not {e, row: {id, rev, deleted, data}}` });
      return;
    }
    const drops = entry.drops ?? [];
    if (!Array.isArray(drops) || !drops.every((entity) => typeof entity === "string")) {
      this.report.damage.push({ file: name, offset, why: `bad entry: seq ${entry.seq} holds drops that are not entity names` });
      return;
    }
    const meta = entry.meta ?? [];
    if (!Array.isArray(meta) || !meta.every((write) => typeof write?.key === "string")) {
      this.report.damage.push({ file: name, offset, why: `bad entry: seq ${entry.seq} holds meta that is not [{key, value}]` });
      return;
    }
    // As start-up applies a batch: its drops first (a renamed entity's rows move in the same batch).
    for (const entity of drops) this.records.delete(entity);
    for (const [index, { e, row }] of puts.entries()) this.versionsOf(e).set(row.id, { deleted: row.deleted === true, seq: entry.seq, index });
  }

  private versionsOf(entity: string): Map<string, Version> {
    let versions = this.records.get(entity);
    if (!versions) this.records.set(entity, (versions = new Map()));
    return versions;
  }
}

/** The byte offset where line `line` (from 1) of a file starts. */
async function lineOffset(path: string, line: number): Promise<number> {
  let seen = 1;
  let offset = 0;
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    for (let at = chunk.indexOf(NEWLINE); at >= 0 && seen < line; at = chunk.indexOf(NEWLINE, at + 1)) {
      seen++;
      if (seen === line) return offset + at + 1;
    }
    offset += chunk.length;
  }
  return line === 1 ? 0 : offset;
}
