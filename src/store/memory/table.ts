// The rows of one entity and the indexes over them, kept current by apply(). Each index is built
// on its first use and maintained from then on: a sorted index on the first sort by its field, a
// value index (live rows per value of an enum or boolean field, so that equality filters never
// scan, and counts per value are the sizes of its sets) on the first equality filter, aggregate
// or distinct on its field. Built on use rather than while loading, they
// cost a start-up nothing: at 1,000,000 records the two value indexes of the bench's Task took
// 0.7 s of it, and take about half that built in one pass over the rows.

import { LiveRows } from "./live-rows.ts";
import { compareSortKeys, toSortKey } from "../../schema/fields.ts";
import type { SortSpec } from "../../query/filter-tree.ts";
import { DATA_OPENING } from "./loaded-rows.ts";
import { RowMap } from "./row-map.ts";
import { SortedIndex } from "./sorted-index.ts";
import { StoredRow } from "../../rows/stored-row.ts";
import { isAfter, positionOf, uniqueKeyOf, type FeedPosition, type ReadCache, type Row } from "../store.ts";

/** The live record that holds each key of a unique set of fields. */
export interface UniqueIndex {
  readonly fields: readonly string[];
  readonly owners: Map<string, string>;
}

/** Two live records found holding the same unique values (a constraint declared over stored data). */
export interface UniqueClash {
  readonly fields: readonly string[];
  readonly ids: readonly string[];
}

export class Table {
  readonly rows = new RowMap();
  /**
   * Every member name of the data of the rows loaded as text (stored-row.ts), when the snapshot gave
   * them: storedFieldNames() then reads no such row.
   */
  textFieldNames: Set<string> | null = null;
  /** Store.readCache(), made at the first read by id: every change to a row deletes the row's entry. */
  readCache: ReadCache | null = null;
  private readonly sortIndexes = new Map<string, SortedIndex>();
  private readonly valueIndexes = new Map<string, ValueIndex>();
  private readonly valueIndexed: ReadonlySet<string>;
  private live = 0;
  /** One per unique set of fields, kept current on every write: a check costs one lookup. */
  readonly uniqueIndexes: readonly UniqueIndex[];
  /**
   * Rows in the order they were written (their feed positions), for the change feed's catch-up:
   * built on its first use, then kept up by apply. Versions since replaced stay until they are
   * half of it, and are skipped.
   */
  private written: Row[] | null = null;
  /** Walks of every row paused between slices: each write tells them what it replaces. */
  private readonly pausedWalks = new Set<LiveRows>();

  /** `valueIndexed` names the fields whose few values get a set of live rows each. */
  constructor(
    readonly entity: string,
    valueIndexed: readonly string[],
    unique: ReadonlyArray<readonly string[]> = [],
  ) {
    this.valueIndexed = new Set(valueIndexed);
    this.uniqueIndexes = unique.map((fields) => ({ fields, owners: new Map() }));
  }

  get liveCount(): number {
    return this.live;
  }

  /** The live rows whose `field` equals `value`, when that field has a value index. */
  liveRowsWith(field: string, value: unknown): ReadonlySet<Row> | undefined {
    const index = this.valueIndex(field);
    return index && (index.get(value) ?? EMPTY);
  }

  /**
   * Live rows per stored value of `field` (undefined: rows lacking it), when that field has a
   * value index: the sizes of its sets, read without visiting a row.
   */
  liveCountsOf(field: string): Map<unknown, number> | undefined {
    const index = this.valueIndex(field);
    if (!index) return undefined;
    const counts = new Map<unknown, number>();
    // A value's set stays behind, empty, once its last row is gone.
    for (const [value, rows] of index) if (rows.size > 0) counts.set(value, rows.size);
    return counts;
  }

  /** The sorted index of a sort, built now if this is its first use. */
  sortIndex(sort: SortSpec): SortedIndex {
    let index = this.sortIndexes.get(sort.field);
    if (!index) {
      const { field, kind } = sort;
      const keyOf = field === "id" ? (row: Row) => row.id : (row: Row) => toSortKey(kind, row.data[field]);
      index = new SortedIndex(keyOf, compareSortKeys);
      index.build(this.rows.values());
      this.sortIndexes.set(field, index);
    }
    return index;
  }

  /** Every row, read as of now however long the walk pauses between slices (live-rows.ts). */
  walkRows(): LiveRows {
    return new LiveRows(
      this.rows.values(),
      (walk) => this.pausedWalks.add(walk),
      (walk) => this.pausedWalks.delete(walk),
    );
  }

  /** Stores a new version of a row (or a new row) and brings every index up to date; answers the version it replaced. */
  apply(row: Row): Row | undefined {
    const old = this.rows.get(row.id);
    for (const walk of this.pausedWalks) walk.replacing(row.id, old);
    this.rows.set(row.id, row);
    // The names listed were those of the rows loaded; with one of them gone, they may be more.
    if (old instanceof StoredRow && old.wasLoadedAsText) this.textFieldNames = null;
    // Loading a data folder applies every row before any read: no cache, no look-up.
    this.readCache?.delete(row.id);
    if (this.written) this.keepWrittenOrder(row);
    for (const index of this.sortIndexes.values()) {
      if (old) index.replace(old, row);
      else index.insert(row);
    }
    const wasLive = old !== undefined && !old.deleted;
    for (const [field, index] of this.valueIndexes) {
      if (wasLive) index.get(old.data[field])?.delete(old);
      if (!row.deleted) addTo(index, row.data[field], row);
    }
    this.live += (row.deleted ? 0 : 1) - (wasLive ? 1 : 0);
    for (const index of this.uniqueIndexes) {
      const oldKey = old ? uniqueKeyOf(old, index.fields) : null;
      if (oldKey !== null && index.owners.get(oldKey) === row.id) index.owners.delete(oldKey);
      const key = uniqueKeyOf(row, index.fields);
      if (key === null) continue;
      // Another owner only while loading a log replayed under a newly declared set (commits are
      // checked first): settleUniqueIndexes() decides once every row is in.
      if (!index.owners.has(key)) index.owners.set(key, row.id);
    }
    return old;
  }

  /**
   * Stores a row of a snapshot being loaded: the table holds no version of its record yet and has
   * built no index, read cache or written order (each is built on first use, after loading), so
   * only the rows, the live count and the unique indexes are kept (see apply).
   */
  load(row: Row): void {
    this.rows.set(row.id, row);
    if (!row.deleted) this.live++;
    for (const index of this.uniqueIndexes) {
      const key = uniqueKeyOf(row, index.fields);
      // A clash under a newly declared set is settled once every row is in (settleUniqueIndexes).
      if (key !== null && !index.owners.has(key)) index.owners.set(key, row.id);
    }
  }

  /**
   * Stores a row of a snapshot being loaded as the bytes of its data's JSON (RowMap.addLoaded), on
   * the same terms as load(). A table with unique sets needs every row's values now: its rows are
   * made at once (still unparsed until read).
   */
  loadBytes(bytes: Buffer, idTo: number, from: number, to: number, rev: number, deleted: boolean, seq: number, index: number): void {
    if (this.uniqueIndexes.length > 0) {
      const id = bytes.toString("utf8", from + DATA_OPENING.length, idTo);
      this.load(StoredRow.ofText(id, rev, deleted, bytes, from, to, seq, index));
      return;
    }
    this.rows.addLoaded(bytes, idTo, from, rev, deleted, seq, index);
    if (!deleted) this.live++;
  }

  /**
   * Builds the unique indexes again from the live rows, once loading is done, and answers the
   * values that two or more of them share. Replaying a log under a newly declared set meets
   * clashes on the way that later writes settle (a duplicate deleted or changed), and a holder
   * that lost the race to own its key must own it once the first owner is gone.
   */
  settleUniqueIndexes(): UniqueClash[] {
    const clashes: UniqueClash[] = [];
    for (const index of this.uniqueIndexes) {
      index.owners.clear();
      const sharers = new Map<string, string[]>();
      for (const row of this.rows.values()) {
        const key = uniqueKeyOf(row, index.fields);
        if (key === null) continue;
        const owner = index.owners.get(key);
        if (owner === undefined) {
          index.owners.set(key, row.id);
          continue;
        }
        const ids = sharers.get(key);
        if (ids) ids.push(row.id);
        else sharers.set(key, [owner, row.id]);
      }
      for (const ids of sharers.values()) clashes.push({ fields: index.fields, ids });
    }
    return clashes;
  }

  /** Takes a record out again: the undo of creating it when its log write failed (see unsynced-batches.ts). */
  remove(id: string): void {
    const old = this.rows.get(id);
    if (!old) return;
    for (const walk of this.pausedWalks) walk.replacing(id, old);
    this.rows.delete(id);
    if (old instanceof StoredRow && old.wasLoadedAsText) this.textFieldNames = null;
    this.readCache?.delete(id);
    for (const index of this.uniqueIndexes) {
      const key = uniqueKeyOf(old, index.fields);
      if (key !== null && index.owners.get(key) === id) index.owners.delete(key);
    }
    for (const index of this.sortIndexes.values()) index.remove(old);
    if (old.deleted) return;
    for (const [field, index] of this.valueIndexes) index.get(old.data[field])?.delete(old);
    this.live--;
  }

  /** The value index of a field, built now if this is its first use; undefined if it gets none. */
  private valueIndex(field: string): ValueIndex | undefined {
    let index = this.valueIndexes.get(field);
    if (!index) {
      if (!this.valueIndexed.has(field)) return undefined;
      index = new Map();
      for (const row of this.rows.values()) if (!row.deleted) addTo(index, row.data[field], row);
      this.valueIndexes.set(field, index);
    }
    return index;
  }

  /**
   * Up to `limit` rows (current versions, deleted ones included) written after `after` and up to
   * `upTo`, in the order they were written.
   */
  writtenBetween(after: FeedPosition, upTo: FeedPosition, limit: number): Row[] {
    const written = (this.written ??= [...this.rows.values()].sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0) || (a.index ?? 0) - (b.index ?? 0)));
    let low = 0;
    let high = written.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (isAfter(written[middle]!, after)) high = middle;
      else low = middle + 1;
    }
    const out: Row[] = [];
    for (let i = low; i < written.length && out.length < limit; i++) {
      const row = written[i]!;
      if (isAfter(row, upTo)) break;
      if (this.rows.get(row.id) === row) out.push(row);
    }
    return out;
  }

  private keepWrittenOrder(row: Row): void {
    const written = this.written!;
    const last = written.at(-1);
    // A row older than the last (a write taken back out puts the version before it back): rebuild when next asked.
    if (last && !isAfter(row, positionOf(last))) {
      this.written = null;
      return;
    }
    written.push(row);
    if (written.length > 2 * this.rows.size + 1024) this.written = written.filter((kept) => this.rows.get(kept.id) === kept);
  }

  clear(): void {
    for (const walk of this.pausedWalks) walk.copyRest();
    this.written = null;
    this.textFieldNames = null;
    this.rows.clear();
    this.readCache?.clear();
    this.sortIndexes.clear();
    this.valueIndexes.clear();
    for (const index of this.uniqueIndexes) index.owners.clear();
    this.live = 0;
  }
}

/** A value of a field → the live rows that hold it. */
type ValueIndex = Map<unknown, Set<Row>>;

function addTo(index: ValueIndex, value: unknown, row: Row): void {
  let rows = index.get(value);
  if (!rows) index.set(value, (rows = new Set()));
  rows.add(row);
}

const EMPTY: ReadonlySet<Row> = new Set();
