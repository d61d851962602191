// Chooses how the memory store answers a list, a count or a visit of every match: walk the sorted index of the sort from
// the cursor and stop after one page, or start from the few live rows whose enum/boolean field
// equals the filter's value (a value index) and sort only those. Either way no request sorts or
// scans the whole entity when an index can answer it. Each is a walk (time-slices.ts): it yields
// when its slice is used up, after freezing what it reads (live-rows.ts for a walk of every row),
// so that it answers as of its start.

import { compareSortKeys } from "../../schema/fields.ts";
import type { Table } from "./table.ts";
import type { CompareNode, FilterNode, SortPosition } from "../../query/filter-tree.ts";
import type { DeletedFilter, ListQuery, ListResult, Row } from "../store.ts";
import { compileFilter, type Predicate } from "../../query/predicate.ts";
import { PausableRows, type Slice, type Walk } from "../../turns/time-slices.ts";

export function* planList(table: Table, query: ListQuery, slice: Slice | null): Walk<ListResult> {
  const { sort, after, skip, limit, deleted } = query;
  const accept = acceptor(query.filter, deleted);
  const wanted = skip + limit + 1; // one more than the page tells whether another page exists
  const candidates = indexedCandidates(table, query.filter, deleted);
  const index = table.sortIndex(sort);
  const found: Row[] = [];
  // Walking the index examines about wanted × (live / candidates) rows; sorting the candidates
  // costs about their number. Take the cheaper.
  const walkCost = candidates ? (wanted * table.liveCount) / Math.max(1, candidates.size) : Infinity;
  if (candidates && candidates.size <= walkCost) {
    const keyOf = index.keyOf;
    const direction = sort.descending ? -1 : 1;
    const order = (a: SortPosition, b: SortPosition) =>
      direction * (compareSortKeys(a.key, b.key) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const entries: Array<SortPosition & { row: Row }> = [];
    const rows = new PausableRows(candidates.values());
    for (let row = rows.next(); row !== undefined; row = rows.next()) {
      if (accept(row)) {
        const entry = { key: keyOf(row), id: row.id, row };
        if (!after || order(entry, after) > 0) entries.push(entry);
      }
      if (slice?.isOver()) {
        rows.freeze();
        yield;
      }
    }
    entries.sort(order);
    for (let i = 0; i < entries.length && found.length < wanted; i++) found.push(entries[i]!.row);
  } else {
    const rows = new PausableRows(index.walk(sort.descending, after));
    for (let row = rows.next(); row !== undefined; row = rows.next()) {
      if (accept(row) && found.push(row) === wanted) break;
      if (slice?.isOver()) {
        rows.freeze();
        yield;
      }
    }
  }
  const hasMore = found.length === wanted;
  return { rows: found.slice(skip, skip + limit), hasMore };
}

export function* planCount(table: Table, filter: FilterNode | null, deleted: DeletedFilter, slice: Slice): Walk<number> {
  if (!filter && deleted === "exclude") return table.liveCount;
  const candidates = indexedCandidates(table, filter, deleted);
  if (candidates && filter?.type === "compare") return candidates.size; // the filter is the equality
  const accept = acceptor(filter, deleted);
  let count = 0;
  const rows = candidates ? new PausableRows(candidates.values()) : table.walkRows();
  try {
    for (let row = rows.next(); row !== undefined; row = rows.next()) {
      if (accept(row)) count++;
      if (slice.isOver()) {
        rows.freeze();
        yield;
      }
    }
  } finally {
    rows.stop();
  }
  return count;
}

/**
 * Visits every live row matching the filter, in no particular order: aggregates and distinct
 * read each once. Starts from a value index when the filter is (or ANDs) an equality on one.
 */
export function* planEach(table: Table, filter: FilterNode | null, visit: (row: Row) => void, slice: Slice): Walk<void> {
  const accept = acceptor(filter, "exclude");
  const candidates = indexedCandidates(table, filter, "exclude");
  const rows = candidates ? new PausableRows(candidates.values()) : table.walkRows();
  try {
    for (let row = rows.next(); row !== undefined; row = rows.next()) {
      if (accept(row)) visit(row);
      if (slice.isOver()) {
        rows.freeze();
        yield;
      }
    }
  } finally {
    rows.stop();
  }
}

function acceptor(filter: FilterNode | null, deleted: DeletedFilter): Predicate {
  const matches = filter ? compileFilter(filter) : null;
  switch (deleted) {
    case "exclude":
      return matches ? (row) => !row.deleted && matches(row) : (row) => !row.deleted;
    case "only":
      return matches ? (row) => row.deleted && matches(row) : (row) => row.deleted;
    case "include":
      return matches ?? (() => true);
  }
}

/**
 * The live rows a filter must come from, when it is (or ANDs) an equality on a value-indexed
 * field. Value indexes hold live rows only, so deleted rows are never answered from them.
 */
const NO_ROWS: ReadonlySet<Row> = new Set();

function indexedCandidates(table: Table, filter: FilterNode | null, deleted: DeletedFilter): ReadonlySet<Row> | undefined {
  if (!filter) return undefined;
  const nodes = filter.type === "and" ? filter.nodes : [filter];
  // An "or" of nothing (a read rule that lets the caller read no record) matches no row.
  if (nodes.some((node) => node.type === "or" && node.nodes.length === 0)) return NO_ROWS;
  if (deleted !== "exclude") return undefined;
  let best: ReadonlySet<Row> | undefined;
  for (const node of nodes) {
    if (!isIndexableEquality(node)) continue;
    const rows = table.liveRowsWith(node.field, node.value);
    if (rows && (!best || rows.size < best.size)) best = rows;
  }
  return best;
}

function isIndexableEquality(node: FilterNode): node is CompareNode {
  return node.type === "compare" && node.op === "$eq" && node.path.length === 1 && !node.isArray && node.value !== null;
}
