// A table's rows by id: the rows of the snapshot it was loaded from, kept as their bytes until read
// (loaded-rows.ts), and a Map of every other row: those written since, and those a snapshot gave
// in a form that had to be parsed. A write moves its record's id to the Map; the first walk over
// every row (a scan, a sort index built, a snapshot written) moves them all, after which this is
// the Map alone.

import type { Row } from "../store.ts";
import { LoadedRows, type CapturedRows } from "./loaded-rows.ts";

const MAX_EXPECTED_ROWS = 1 << 26;

export class RowMap {
  private readonly held = new Map<string, Row>();
  private loaded: LoadedRows | null = null;
  /** The greatest id of the rows loaded as bytes, kept once they are all made rows. */
  private greatestLoaded: string | undefined = undefined;

  get size(): number {
    return this.held.size + (this.loaded?.pending ?? 0);
  }

  get(id: string): Row | undefined {
    if (this.loaded !== null) {
      const row = this.loaded.get(id);
      if (row !== undefined) return row;
    }
    return this.held.get(id);
  }

  set(id: string, row: Row): void {
    this.loaded?.drop(id);
    this.held.set(id, row);
  }

  delete(id: string): void {
    this.loaded?.drop(id);
    this.held.delete(id);
  }

  clear(): void {
    this.loaded = null;
    this.greatestLoaded = undefined;
    this.held.clear();
  }

  /** Every row; those still held as loaded bytes are made rows first. */
  values(): IterableIterator<Row> {
    if (this.loaded !== null) {
      this.greatestLoaded = this.loaded.greatestId();
      for (const row of this.loaded.takeAll()) this.held.set(row.id, row);
      this.loaded = null;
    }
    return this.held.values();
  }

  /** Every row but those loaded as bytes and not written since (all loaded as text). */
  heldValues(): IterableIterator<Row> {
    return this.held.values();
  }

  /** Every row at this instant, for a snapshot: the Map's, and those still held as loaded bytes (LoadedRows.capture). */
  capture(): { rows: Row[]; loaded: CapturedRows | null } {
    return { rows: Array.from(this.held.values()), loaded: this.loaded?.capture() ?? null };
  }

  /** About this many rows are to be loaded as bytes: room is made for them at once. */
  expect(rows: number): void {
    // A bound on what a damaged count (the checksum is checked at the end) can make us allocate.
    (this.loaded ??= new LoadedRows()).reserve(Math.min(rows, MAX_EXPECTED_ROWS));
  }

  /** A snapshot's row kept as its bytes (LoadedRows.add). */
  addLoaded(bytes: Buffer, idTo: number, from: number, rev: number, deleted: boolean, seq: number, index: number): void {
    (this.loaded ??= new LoadedRows()).add(bytes, idTo, from, rev, deleted, seq, index);
  }

  /** The greatest id of the rows loaded as bytes, undefined if none. */
  greatestLoadedId(): string | undefined {
    return this.loaded !== null ? this.loaded.greatestId() : this.greatestLoaded;
  }
}
