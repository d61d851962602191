// The rows of one entity and the indexes over them, kept current by apply(). Sorted indexes are
// built on first use of a sort and maintained from then on; value indexes (live rows per value of
// an enum or boolean field) are maintained from the start so that equality filters never scan.

import { compareSortKeys, toSortKey } from "../schema/fields.ts";
import type { SortSpec } from "../query/filter-tree.ts";
import { SortedIndex } from "./sorted-index.ts";
import type { Row } from "./store.ts";

export class Table {
  readonly rows = new Map<string, Row>();
  private readonly sortIndexes = new Map<string, SortedIndex>();
  private readonly valueIndexes = new Map<string, Map<unknown, Set<Row>>>();
  private live = 0;

  /** `valueIndexed` names the fields whose few values get a set of live rows each. */
  constructor(
    readonly entity: string,
    valueIndexed: readonly string[],
  ) {
    for (const field of valueIndexed) this.valueIndexes.set(field, new Map());
  }

  get liveCount(): number {
    return this.live;
  }

  /** The live rows whose `field` equals `value`, when that field has a value index. */
  liveRowsWith(field: string, value: unknown): ReadonlySet<Row> | undefined {
    const index = this.valueIndexes.get(field);
    if (!index) return undefined;
    return index.get(value) ?? EMPTY;
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

  /** Stores a new version of a row (or a new row) and brings every index up to date. */
  apply(row: Row): void {
    const old = this.rows.get(row.id);
    this.rows.set(row.id, row);
    for (const index of this.sortIndexes.values()) {
      if (old) index.replace(old, row);
      else index.insert(row);
    }
    const wasLive = old !== undefined && !old.deleted;
    for (const [field, index] of this.valueIndexes) {
      if (wasLive) index.get(old.data[field])?.delete(old);
      if (!row.deleted) {
        const value = row.data[field];
        let rows = index.get(value);
        if (!rows) index.set(value, (rows = new Set()));
        rows.add(row);
      }
    }
    this.live += (row.deleted ? 0 : 1) - (wasLive ? 1 : 0);
  }

  clear(): void {
    this.rows.clear();
    this.sortIndexes.clear();
    for (const index of this.valueIndexes.values()) index.clear();
    this.live = 0;
  }
}

const EMPTY: ReadonlySet<Row> = new Set();
