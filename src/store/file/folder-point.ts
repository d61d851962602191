// The backup point of a data folder read from disk (tabula backup --data): the newest snapshot and
// the log segments after it, each up to its last whole entry, held open. For a folder the caller
// has locked, and beside a running server, whose compaction may delete files under it: the files
// are opened before they are read (an open file keeps its data), and a file gone before that
// makes it start again from the listing.

import { fstatSync } from "node:fs";
import { join } from "node:path";
import { holdFiles, readKeysJson, releaseFiles, type BackupPoint, type HeldFile } from "./backup.ts";
import { listDataFiles } from "./file-store.ts";
import { scanSegment } from "./segment-scan.ts";
import { snapshotName } from "./snapshot.ts";
import { segmentName } from "./wal.ts";

/** A compaction removes files once per snapshot written (seconds apart): a few tries always find a quiet moment. */
const MAX_ATTEMPTS = 5;

/** The folder's log cannot be copied as it is: damage that start-up would refuse too. */
export class FolderDamageError extends Error {}

/**
 * `isLive`: a server holds the folder and is appending to its newest segment, whose bytes after the
 * last whole entry may be a write in progress; the copy stops before them. Every write the server
 * answered before this call is on disk before them, so it is in the copy.
 */
export async function holdFolderPoint(dir: string, isLive: boolean): Promise<BackupPoint> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await tryHoldFolderPoint(dir, isLive);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT" || attempt === MAX_ATTEMPTS) throw error;
    }
  }
}

async function tryHoldFolderPoint(dir: string, isLive: boolean): Promise<BackupPoint> {
  const { snapshots, segments } = await listDataFiles(dir);
  const snapshot = snapshots.at(-1);
  // Segments before the newest snapshot are covered by it (a compaction that had not deleted them yet).
  const firstSeqs = segments.filter((seq) => seq >= (snapshot ?? 1));
  const names: Array<[string, number]> = [...(snapshot === undefined ? [] : [snapshotName(snapshot)]), ...firstSeqs.map(segmentName)].map((name) => [name, 0]);
  const held = holdFiles(dir, names);
  try {
    const files: HeldFile[] = [];
    let seq = snapshot ?? 1;
    for (const [index, file] of held.entries()) {
      if (snapshot !== undefined && index === 0) {
        files.push({ ...file, bytes: fstatSync(file.fd).size });
        continue;
      }
      const firstSeq = firstSeqs[index - (snapshot === undefined ? 0 : 1)]!;
      if (firstSeq !== seq) throw new FolderDamageError(`${file.name} starts at entry ${firstSeq} but entry ${seq} comes next, so log segments are missing; run tabula verify --data ${dir}.`);
      const scan = await scanSegment(join(dir, file.name), firstSeq);
      const isLast = index === held.length - 1;
      // What start-up would keep: damage with whole entries after it, or in a segment that is not the last, stops it.
      const isCutOk = scan.prefixEnd === scan.size || (scan.damage.length === 0 && scan.tail === "zeros") || (isLast && (isLive || !scan.hasEntriesAfterDamage));
      if (!isCutOk) throw new FolderDamageError(`${file.name} is damaged at byte ${scan.damage[0]?.offset ?? scan.prefixEnd} with whole entries after it, so the folder would not start; run tabula verify --data ${dir}.`);
      files.push({ ...file, bytes: scan.prefixEnd });
      seq = scan.prefixNextSeq;
    }
    return { files, seq: seq - 1, keysJson: await readKeysJson(dir) };
  } catch (error) {
    releaseFiles(held);
    throw error;
  }
}
