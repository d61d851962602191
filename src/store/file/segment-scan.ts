// A read-only pass over one log segment, for tabula verify and backup, which read folders they may
// not own: every whole entry in order, and every damaged line with its byte offset and what is
// wrong with it. Start-up's readSegment (wal.ts) is the reader that acts: it cuts a torn tail off.

import { describeFrameDamage, parseFramedLine, PartJoiner, scanLines } from "./log-framing.ts";
import type { LogEntry } from "./log-entry.ts";

export interface SegmentDamage {
  readonly offset: number;
  readonly why: string;
}

export interface SegmentScan {
  readonly size: number;
  /** Where the unbroken run of whole entries that starts the file ends: what start-up keeps. */
  readonly prefixEnd: number;
  /** The seq after that run. */
  readonly prefixNextSeq: number;
  /** The seq after the last whole entry anywhere in the file (past damage too). */
  readonly nextSeq: number;
  /** Damaged lines and entries out of order, in file order. */
  readonly damage: readonly SegmentDamage[];
  /** Whether whole entries follow the first damage: cutting it off would then lose them. */
  readonly hasEntriesAfterDamage: boolean;
  /** The bytes after the last newline: none, zeros (a segment's preallocated room), or a write cut short. */
  readonly tail: "none" | "zeros" | "torn";
  readonly tailOffset: number;
}

/**
 * Reads `path`, whose first entry should be `firstSeq`, handing each whole entry to `onEntry` (a
 * batch written in parts once its last part is read, at the offset of its first). After a damaged
 * line the count of seqs picks up again at the next whole entry ahead of it (the damaged lines held
 * the ones between); an entry that does not come next otherwise is damage, and so are the first
 * parts of a batch without its last.
 */
export async function scanSegment(path: string, firstSeq: number, onEntry: (entry: LogEntry, offset: number) => void = () => {}): Promise<SegmentScan> {
  const damage: SegmentDamage[] = [];
  let expected = firstSeq;
  let prefixEnd = 0;
  let prefixNextSeq = firstSeq;
  let isPrefix = true;
  let hasEntriesAfterDamage = false;
  let damagedSinceEntry = false;
  const parts = new PartJoiner();
  /** Where the held parts start. */
  let partsAt = 0;
  const orphaned = (): SegmentDamage => ({ offset: partsAt, why: `torn batch: the first ${parts.heldParts} parts of batch ${parts.heldSeq} without its last` });
  const { size, tailOffset, tailIsZeros } = await scanLines(path, (line, offset, text) => {
    const value = parseFramedLine(line, text);
    if (!value || !Number.isSafeInteger(value.seq)) {
      if (parts.heldSeq !== undefined) {
        damage.push(orphaned());
        parts.drop();
      }
      damage.push({ offset, why: value ? "bad entry: a whole line without a seq" : describeFrameDamage(line) ?? "damaged line" });
      isPrefix = false;
      damagedSinceEntry = true;
      return;
    }
    if (parts.heldSeq !== undefined && parts.heldSeq !== value.seq) {
      damage.push(orphaned());
      parts.drop();
      isPrefix = false;
    }
    if (parts.heldSeq === undefined) partsAt = offset;
    const entry = parts.take(value as unknown as LogEntry);
    if (entry === null || entry === "orphaned") return;
    const seq = entry.seq;
    if (seq !== expected && !(damagedSinceEntry && seq > expected)) {
      damage.push({ offset, why: `seq ${seq} where seq ${expected} comes next (${seq < expected ? "going backwards" : `entries ${expected}..${seq - 1} are missing`})` });
      isPrefix = false;
    }
    if (!isPrefix) hasEntriesAfterDamage = true;
    onEntry(entry, partsAt);
    expected = Math.max(expected, seq + 1);
    damagedSinceEntry = false;
    if (isPrefix) {
      prefixEnd = offset + line.length + 1;
      prefixNextSeq = expected;
    }
  });
  // Parts held at the end: the batch a crash cut short, which start-up cuts off.
  if (parts.heldSeq !== undefined) damage.push(orphaned());
  const tail = tailOffset === size ? "none" : tailIsZeros ? "zeros" : "torn";
  return { size, prefixEnd, prefixNextSeq, nextSeq: expected, damage, hasEntriesAfterDamage, tail, tailOffset };
}
