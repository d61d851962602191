// The rows of a snapshot that nothing has asked for yet, kept as the bytes they were read as: no
// object, no string, no Map entry per row, only a few numbers in typed arrays and an open-addressing
// hash table over the ids' bytes (docs/architecture.md, "Rows parsed on first use"). A start-up
// then costs about reading the file, and memory about the file's size. A row becomes a StoredRow
// (still unparsed) when it is first asked for, and leaves this set for the table's Map (row-map.ts).

import { StoredRow } from "../../rows/stored-row.ts";

const INITIAL_ROWS = 1 << 12;
/** How the data JSON of a row kept as bytes opens, its id following (the snapshot writes it so). */
export const DATA_OPENING = '{"id":"';
const OPENING_BYTES = DATA_OPENING.length;
const DELETED = 1;
/** Asked for (now in the table's Map) or replaced by a write: no longer here. */
const GONE = 2;
const MAX_UINT16 = 0xffff;
const MAX_UINT32 = 0xffffffff;
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** LoadedRows.capture(). */
export interface CapturedRows {
  readonly count: number;
  rows(): Iterable<StoredRow>;
}

export class LoadedRows {
  /** Rows still here, neither asked for nor replaced. */
  pending = 0;
  private count = 0;
  private readonly buffers: Buffer[] = [];
  /** At most 65,536 buffers of line-runs.ts's 8 MiB: snapshots up to 512 GiB. */
  private chunkOf = new Uint16Array(INITIAL_ROWS);
  /**
   * The data's JSON starts at buffers[chunkOf[slot]][textFrom[slot]], opening with {"id":"<id>",
   * and ends at the line's end (a snapshot's row line).
   */
  private textFrom = new Int32Array(INITIAL_ROWS);
  /** 32 bits each until a value needs more (after four billion writes): half the memory of doubles. */
  private revs: Uint32Array | Float64Array = new Uint32Array(INITIAL_ROWS);
  private seqs: Uint32Array | Float64Array = new Uint32Array(INITIAL_ROWS);
  /** Places in their batch: 16 bits each until one needs more. */
  private indexes: Uint16Array | Int32Array = new Uint16Array(INITIAL_ROWS);
  private flags = new Uint8Array(INITIAL_ROWS);
  /** Open addressing, linear probing: slot + 1 per entry, 0 for none; at most half full. */
  private table = new Int32Array(INITIAL_ROWS * 2);
  /**
   * The StoredRow made of each slot read so far. Sized with the typed arrays: a store far past the
   * end of an array would turn its elements into a slow dictionary.
   */
  private made: Array<StoredRow | undefined> = new Array(INITIAL_ROWS);
  /** The greatest id added, once asked (greatestId). */
  private greatest: string | undefined = undefined;

  /**
   * Adds a row whose data is the JSON at bytes[from, to), opening with `{"id":"` and its id, which
   * ends at idTo and holds no escape; a newline follows it. A second row with the same id replaces
   * the first.
   */
  add(bytes: Buffer, idTo: number, from: number, rev: number, deleted: boolean, seq: number, index: number): void {
    const idFrom = from + OPENING_BYTES;
    const hash = hashOfBytes(bytes, idFrom, idTo);
    if (this.buffers[this.buffers.length - 1] !== bytes) this.buffers.push(bytes);
    if (this.count === this.flags.length) this.grow();
    const mask = this.table.length - 1;
    let at = hash & mask;
    let slot = -1;
    for (let entry = this.table[at]!; entry !== 0; at = (at + 1) & mask, entry = this.table[at]!) {
      if (this.compareIds(bytes, idFrom, idTo, entry - 1) === 0) {
        slot = entry - 1;
        break;
      }
    }
    if (slot < 0) {
      slot = this.count++;
      this.table[at] = slot + 1;
      this.pending++;
    } else if ((this.flags[slot]! & GONE) !== 0) {
      this.pending++;
    }
    if (rev > MAX_UINT32 && this.revs instanceof Uint32Array) this.revs = Float64Array.from(this.revs);
    if (seq > MAX_UINT32 && this.seqs instanceof Uint32Array) this.seqs = Float64Array.from(this.seqs);
    if (index > MAX_UINT16 && this.indexes instanceof Uint16Array) this.indexes = Int32Array.from(this.indexes);
    this.made[slot] = undefined;
    this.chunkOf[slot] = this.buffers.length - 1;
    this.textFrom[slot] = from;
    this.revs[slot] = rev;
    this.seqs[slot] = seq;
    this.indexes[slot] = index;
    this.flags[slot] = deleted ? DELETED : 0;
  }

  /** The row with this id, if it is here: made a StoredRow at its first read, the same one after. */
  get(id: string): StoredRow | undefined {
    const slot = this.find(id);
    if (slot < 0 || (this.flags[slot]! & GONE) !== 0) return undefined;
    return this.made[slot] ?? (this.made[slot] = this.rowAt(slot, id));
  }

  /** Forgets the row with this id, if it is here: a write replaced or removed it. */
  drop(id: string): void {
    const slot = this.find(id);
    if (slot < 0 || (this.flags[slot]! & GONE) !== 0) return;
    this.flags[slot]! |= GONE;
    this.made[slot] = undefined;
    this.pending--;
  }

  /** Every row still here, each made a StoredRow; none is held here after. */
  takeAll(): StoredRow[] {
    const rows: StoredRow[] = [];
    for (let slot = 0; slot < this.count; slot++) {
      if ((this.flags[slot]! & GONE) !== 0) continue;
      this.flags[slot]! |= GONE;
      rows.push(this.made[slot] ?? this.rowAt(slot, this.idAt(slot)));
    }
    this.made = [];
    this.pending = 0;
    return rows;
  }

  /**
   * The rows here at this instant, for a snapshot written while writes go on: their slots are
   * copied now, and each is made a row of its own as it is written (not kept), so that writing
   * a snapshot neither makes every row nor keeps the ones it made.
   */
  capture(): CapturedRows {
    const slots = new Int32Array(this.pending);
    let taken = 0;
    for (let slot = 0; slot < this.count; slot++) if ((this.flags[slot]! & GONE) === 0) slots[taken++] = slot;
    return {
      count: slots.length,
      rows: function* (this: LoadedRows): Generator<StoredRow> {
        for (const slot of slots) yield this.made[slot] ?? this.rowAt(slot, this.idAt(slot));
      }.bind(this),
    };
  }

  /** The greatest id added (in byte order, which is code point order), undefined if none. */
  greatestId(): string | undefined {
    if (this.greatest === undefined && this.count > 0) {
      let greatest = 0;
      for (let slot = 1; slot < this.count; slot++) {
        const bytes = this.buffers[this.chunkOf[slot]!]!;
        const idFrom = this.textFrom[slot]! + OPENING_BYTES;
        if (this.compareIds(bytes, idFrom, bytes.indexOf(0x22, idFrom), greatest) > 0) greatest = slot;
      }
      this.greatest = this.idAt(greatest);
    }
    return this.greatest;
  }

  private rowAt(slot: number, id: string): StoredRow {
    const bytes = this.buffers[this.chunkOf[slot]!]!;
    const from = this.textFrom[slot]!;
    return StoredRow.ofText(id, this.revs[slot]!, (this.flags[slot]! & DELETED) !== 0, bytes, from, bytes.indexOf(0x0a, from), this.seqs[slot]!, this.indexes[slot]!);
  }

  private idAt(slot: number): string {
    const bytes = this.buffers[this.chunkOf[slot]!]!;
    const idFrom = this.textFrom[slot]! + OPENING_BYTES;
    return bytes.toString("utf8", idFrom, bytes.indexOf(0x22, idFrom));
  }

  /** The slot of the row with this id, -1 if none was added. */
  private find(id: string): number {
    let hash = FNV_OFFSET;
    for (let i = 0; i < id.length; i++) {
      const code = id.charCodeAt(i);
      // Ids are hashed as their UTF-8 bytes; an id beyond ASCII is encoded first.
      if (code >= 0x80) return this.findEncoded(Buffer.from(id));
      hash = Math.imul(hash ^ code, FNV_PRIME);
    }
    hash |= 0;
    const mask = this.table.length - 1;
    for (let at = hash & mask; ; at = (at + 1) & mask) {
      const entry = this.table[at]!;
      if (entry === 0) return -1;
      const slot = entry - 1;
      if (this.idEquals(slot, id)) return slot;
    }
  }

  private findEncoded(id: Buffer): number {
    return this.findBytes(hashOfBytes(id, 0, id.length), id, 0, id.length);
  }

  private findBytes(hash: number, bytes: Buffer, from: number, to: number): number {
    const mask = this.table.length - 1;
    for (let at = hash & mask; ; at = (at + 1) & mask) {
      const entry = this.table[at]!;
      if (entry === 0) return -1;
      const slot = entry - 1;
      if (this.compareIds(bytes, from, to, slot) === 0) return slot;
    }
  }

  /** Whether the id of `slot` is `id`, all of whose characters are ASCII. */
  private idEquals(slot: number, id: string): boolean {
    const bytes = this.buffers[this.chunkOf[slot]!]!;
    const idFrom = this.textFrom[slot]! + OPENING_BYTES;
    for (let i = 0; i < id.length; i++) if (bytes[idFrom + i] !== id.charCodeAt(i)) return false;
    return bytes[idFrom + id.length] === 0x22;
  }

  /** Compares the id bytes[from, to) with the id of `slot`, byte by byte. */
  private compareIds(bytes: Buffer, from: number, to: number, slot: number): number {
    const other = this.buffers[this.chunkOf[slot]!]!;
    const otherFrom = this.textFrom[slot]! + OPENING_BYTES;
    for (let i = 0; ; i++) {
      const a = from + i < to ? bytes[from + i]! : -1;
      const code = other[otherFrom + i]!;
      const b = code === 0x22 ? -1 : code;
      if (a !== b) return a - b;
      if (a === -1) return 0;
    }
  }

  private hashOfSlot(slot: number): number {
    const bytes = this.buffers[this.chunkOf[slot]!]!;
    const idFrom = this.textFrom[slot]! + OPENING_BYTES;
    return hashOfBytes(bytes, idFrom, bytes.indexOf(0x22, idFrom));
  }

  private insert(hash: number, slot: number): void {
    const mask = this.table.length - 1;
    let at = hash & mask;
    while (this.table[at] !== 0) at = (at + 1) & mask;
    this.table[at] = slot + 1;
  }

  /** Makes room for `rows` rows in all, growing once rather than doubling on the way. */
  reserve(rows: number): void {
    if (rows > this.flags.length) this.grow(rows);
  }

  private grow(size = this.flags.length * 2): void {
    const grown = <T extends Uint16Array | Uint32Array | Int32Array | Float64Array | Uint8Array>(from: T): T => {
      const to = new (from.constructor as new (size: number) => T)(size);
      to.set(from);
      return to;
    };
    this.chunkOf = grown(this.chunkOf);
    this.textFrom = grown(this.textFrom);
    this.revs = grown(this.revs);
    this.seqs = grown(this.seqs);
    this.indexes = grown(this.indexes);
    this.flags = grown(this.flags);
    const made = new Array<StoredRow | undefined>(size);
    for (let slot = 0; slot < this.count; slot++) made[slot] = this.made[slot];
    this.made = made;
    // A power of two, at least twice the rows: probes stay short.
    let tableSize = this.table.length;
    while (tableSize < size * 2) tableSize *= 2;
    this.table = new Int32Array(tableSize);
    for (let slot = 0; slot < this.count; slot++) this.insert(this.hashOfSlot(slot), slot);
  }
}

/** FNV-1a of bytes[from, to): ids are hashed as their UTF-8 bytes (find() hashes an ASCII string the same way). */
function hashOfBytes(bytes: Buffer, from: number, to: number): number {
  let hash = FNV_OFFSET;
  for (let at = from; at < to; at++) hash = Math.imul(hash ^ bytes[at]!, FNV_PRIME);
  return hash | 0;
}
