// Parses `sort_by` (docs/query-language.md): one field, a leading "-" for descending, typed by the schema.
// Only the platform's time-ordered fields allow cursors (docs/query-language.md).

import { invalidParameter } from "../errors.ts";
import { kindOf, type EntityDef } from "../schema/fields.ts";
import type { SortSpec } from "./filter-tree.ts";
import { allFieldNames, resolveField, type FieldAccess } from "./filter.ts";

export const DEFAULT_SORT = "-created_date";
const CURSOR_SORT_FIELDS = ["created_date", "updated_date", "id"];

/** `parameter` is the name the request gave the sort by, for errors. A leading "+" is ascending, as the SDK writes it. */
export function parseSort(entity: EntityDef, text: string, access: FieldAccess, parameter = "sort_by"): SortSpec {
  const descending = text.startsWith("-");
  const name = descending || text.startsWith("+") ? text.slice(1) : text;
  if (!entity.fields.has(name) && !["id", "created_date", "updated_date", "created_by_id"].includes(name)) {
    const error = invalidParameter(parameter, `Cannot sort by "${name}": ${entity.name} has no such field. Sort by one of ${allFieldNames(entity, access).join(", ")}, with a leading "-" for descending.`);
    error.details.fields = allFieldNames(entity, access);
    throw error;
  }
  const field = resolveField(entity, name, access);
  if (field.type === "array" || field.type === "object") {
    throw invalidParameter(parameter, `Cannot sort by "${name}": it holds ${field.type === "array" ? "an array" : "a JSON object"}. Sort by a field holding one value.`);
  }
  return { field: name, kind: kindOf(field), descending };
}

export function formatSort(sort: SortSpec): string {
  return (sort.descending ? "-" : "") + sort.field;
}

export function allowsCursor(sort: SortSpec): boolean {
  return CURSOR_SORT_FIELDS.includes(sort.field);
}
