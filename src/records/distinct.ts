// The distinct values of one field among an entity's live records (docs/aggregates.md), ascending by the
// field's sort order (docs/query-language.md), a page at a time from strictly after a value. No HTTP here:
// the native route answers a bare array with cursor headers, the SDK's prefix its own shape.

import { invalidParameter } from "../errors.ts";
import type { FilterNode } from "../query/filter-tree.ts";
import { resolveField, type FieldAccess } from "../query/filter.ts";
import { compareSortKeys, isScalar, kindOf, toSortKey, type EntityDef, type SortKey, type ValueKind } from "../schema/fields.ts";
import type { RecordStore } from "../store/store.ts";

export const DEFAULT_DISTINCT_LIMIT = 100;
export const MAX_DISTINCT_LIMIT = 1000;

export interface DistinctField {
  readonly name: string;
  /** How the values compare; an array field's are its elements'. */
  readonly kind: ValueKind;
  /** Each element of an array field is a value. */
  readonly isArray: boolean;
}

export interface DistinctRequest {
  readonly field: DistinctField;
  readonly filter: FilterNode | null;
  /** Resume strictly after this value (a cursor's); undefined from the first. */
  readonly after: unknown;
  readonly limit: number;
}

export interface DistinctAnswer {
  readonly values: unknown[];
  readonly hasMore: boolean;
  /** The value the next page starts after, when there is one. */
  readonly last: unknown;
}

/**
 * The field a distinct reads: declared or platform (created_by_id for secret keys only), holding
 * one value or an array of declared scalar items; objects have no order to list them in.
 */
export function resolveDistinctField(entity: EntityDef, name: string, access: FieldAccess, parameter = "field"): DistinctField {
  const field = resolveField(entity, name, access); // created_by_id with a publishable key: 403
  const isArray = field.type === "array";
  const items = isArray ? field.items : field;
  if (!items || !isScalar(items)) {
    const what = isArray ? "an array whose items are not declared scalars" : "a JSON object";
    const error = invalidParameter(parameter, `Cannot list the distinct values of "${name}": it holds ${what}. Use a field holding strings, numbers, booleans or dates (or an array of them).`);
    error.details.field = name;
    throw error;
  }
  return { name, kind: kindOf(field), isArray };
}

/** Whether a value can be one of the field's distinct values: what a cursor may resume after. */
export function isDistinctValue(field: DistinctField, value: unknown): boolean {
  return toSortKey(field.kind, value) !== null;
}

export async function distinctValues(store: RecordStore, entity: EntityDef, request: DistinctRequest): Promise<DistinctAnswer> {
  const { field, filter, limit } = request;
  const afterKey = request.after === undefined ? undefined : toSortKey(field.kind, request.after);
  // Values by sort key: one value per key, so that equal dates written apart are one value.
  const found = new Map<SortKey, unknown>();
  const add = (value: unknown) => {
    const key = toSortKey(field.kind, value);
    if (key === null || (afterKey !== undefined && compareSortKeys(key, afterKey) <= 0) || found.has(key)) return;
    found.set(key, value);
  };
  // Without a filter, an enum or boolean field's value index names its values: no row is read.
  const counts = filter === null && !field.isArray ? await store.valueCounts(entity.name, field.name) : null;
  // Else the store may find the page itself (PostgreSQL, over its typed columns), one more value telling whether more follow.
  const page = counts || field.isArray ? null : await store.distinctPage?.(entity.name, { field: field.name, kind: field.kind, filter, after: afterKey, limit: limit + 1 });
  if (page) {
    const values = page.slice(0, limit);
    const hasMore = page.length > limit;
    return { values, hasMore, last: hasMore ? values[values.length - 1] : null };
  }
  if (counts) {
    for (const value of counts.keys()) add(value);
  } else {
    const { name, isArray } = field;
    await store.forEachLive(entity.name, filter, (row) => {
      const value = row.data[name];
      if (!isArray) add(value);
      else if (Array.isArray(value)) for (const element of value) add(element);
    });
  }
  const keys = [...found.keys()].sort(compareSortKeys);
  const values = keys.slice(0, limit).map((key) => found.get(key));
  const hasMore = keys.length > limit;
  return { values, hasMore, last: hasMore ? values[values.length - 1] : null };
}
