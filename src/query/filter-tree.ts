// The typed filter tree: plain data that `q` and `search` are parsed into once, already checked
// against the schema. Stores translate it (the memory store into a predicate; a SQL store could
// into a WHERE clause), so it carries every type fact a store needs and nothing about HTTP. The
// sort and the position a cursor resumes after are here too: stores import these types from
// query/, never the other way round.

import type { SortKey, ValueKind } from "../schema/fields.ts";

export type CompareOp =
  | "$eq"
  | "$ne"
  | "$gt"
  | "$gte"
  | "$lt"
  | "$lte"
  | "$in"
  | "$nin"
  | "$contains"
  | "$exists"
  | "$regex"
  | "$all"
  | "$size";

export type FilterNode =
  | { readonly type: "and"; readonly nodes: readonly FilterNode[] }
  | { readonly type: "or"; readonly nodes: readonly FilterNode[] }
  /** Records the inner node does not match, records lacking its field included (`$not`; `$nor` is not-or). */
  | { readonly type: "not"; readonly node: FilterNode }
  | CompareNode
  | ElemMatchNode
  | SearchNode;

export interface CompareNode {
  readonly type: "compare";
  /** The field name as written in `q`, possibly dotted (`meta.owner`). */
  readonly field: string;
  /**
   * The field name split on dots: [declared field, ...subfields]. Inside an ElemMatchNode, paths
   * start at the element instead: [] is the element itself, ["k"] its member k.
   */
  readonly path: readonly string[];
  readonly kind: ValueKind;
  /** True when the field holds an array: scalar operators then match any element. */
  readonly isArray: boolean;
  readonly op: CompareOp;
  /**
   * The operand as given (dates as written), already checked against the kind; for `$regex` a
   * RegexOperand, for `$all` a non-empty array of values every one of which an element must
   * equal, for `$size` a whole number of elements.
   */
  readonly value: unknown;
}

/**
 * A regular expression as data: JavaScript syntax, run with the u flag plus `options` (some of
 * `i`, `m`, `s`, each once). Already refused when long, or when no automaton can run it
 * (regex-guard.ts).
 */
export interface RegexOperand {
  readonly pattern: string;
  readonly options: string;
}

/** Records where the array at `path` holds an element that `node` matches (`$elemMatch`). */
export interface ElemMatchNode {
  readonly type: "elemMatch";
  readonly field: string;
  readonly path: readonly string[];
  /** A test of one element: its paths start at the element (see CompareNode.path). */
  readonly node: FilterNode;
}

/** Case-insensitive substring search over several text fields, ORed. */
export interface SearchNode {
  readonly type: "search";
  readonly fields: readonly string[];
  readonly text: string;
}

export interface SortSpec {
  readonly field: string;
  readonly kind: ValueKind;
  readonly descending: boolean;
}

/** Where a record sits in a sort: a cursor resumes strictly after one. */
export interface SortPosition {
  readonly key: SortKey;
  readonly id: string;
}
