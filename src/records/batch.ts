// The batch writes of SPEC §4.9–4.12: bulk create and update, upsert, update-many and delete-many.
// Each builds every row first and refuses the whole batch on the first bad record (naming its
// index), so nothing is stored unless everything is (CONTRACT §4).

import { ambiguousMatch, ApiError, batchTooLarge, filterRequired, invalidField, invalidJson, recordNotFound, unknownField } from "../errors.ts";
import type { CompareNode, FilterNode } from "../query/filter-tree.ts";
import { kindOf, type EntityDef } from "../schema/fields.ts";
import { isPlainObject } from "../schema/load.ts";
import { validateChanges, validateCreate } from "../schema/validate.ts";
import type { Row } from "../store/store.ts";
import type { Caller } from "./caller.ts";
import type { Change, Records } from "./records.ts";

export const MAX_BATCH_RECORDS = 5000;
export const MAX_MATCH_FIELDS = 3;

const ID_ORDER = { field: "id", kind: "string", descending: false } as const;

export function bulkCreate(records: Records, entity: EntityDef, body: unknown, caller: Caller): Change<Row[]> {
  const items = batchItems(body, `an array of ${entity.name} records`);
  const values = items.map((item, index) => atIndex(index, () => validateCreate(entity, item)));
  const now = Date.now();
  const rows = values.map((value) => records.newRow(value, caller, now));
  return { entity, rows, result: rows };
}

/** Updates by id, in order: an id named twice gets both changes, the second over the first. */
export function bulkUpdate(records: Records, entity: EntityDef, body: unknown): Change<Row[]> {
  const items = batchItems(body, `an array of {"id": ..., <fields to change>}`);
  const latest = new Map<string, Row>();
  const now = Date.now();
  const result = items.map((item, index) =>
    atIndex(index, () => {
      if (!isPlainObject(item) || typeof item.id !== "string") {
        throw invalidJson(`Each item must be an object with the "id" of the record to change and the fields to change.`);
      }
      const { id, ...changes } = item;
      const row = latest.get(id) ?? records.read(entity, id);
      const updated = records.changedRow(entity, row, validateChanges(entity, changes), now);
      latest.set(id, updated);
      return updated;
    }),
  );
  return { entity, rows: [...latest.values()], result };
}

export interface UpsertResult {
  readonly row: Row;
  readonly created: boolean;
}

export function upsert(records: Records, entity: EntityDef, body: unknown, caller: Caller): Change<UpsertResult[]> {
  if (!isPlainObject(body)) throw invalidJson(`The body must be {"match": [<field>, ...], "records": [...]}.`);
  const match = matchFields(entity, body.match);
  const items = batchItems(body.records, `"records": an array of ${entity.name} records`);
  const existing = liveRowsByMatch(records, entity, match, items);
  const latest = new Map<string, Row>();
  const now = Date.now();
  const result = items.map((item, index) =>
    atIndex(index, () => {
      const changes = validateChanges(entity, item);
      const values = match.map((field) => changes.get(field));
      const missing = match.find((_, i) => values[i] === undefined);
      if (missing) throw invalidField(missing, `is a match field, so every record must give it a value.`);
      const key = JSON.stringify(values);
      const ids = existing.get(key) ?? [];
      if (ids.length > 1) throw ambiguousMatch(Object.fromEntries(match.map((field, i) => [field, values[i]])), ids);
      if (ids.length === 1) {
        const row = records.changedRow(entity, latest.get(ids[0]!) ?? records.read(entity, ids[0]!), changes, now);
        latest.set(row.id, row);
        return { row, created: false };
      }
      const row = records.newRow(validateCreate(entity, item), caller, now);
      latest.set(row.id, row);
      existing.set(key, [row.id]); // a later record with the same match values updates this one
      return { row, created: true };
    }),
  );
  return { entity, rows: [...latest.values()], result };
}

export interface ManyResult {
  readonly count: number;
  readonly ids: string[];
}

export function updateMany(records: Records, entity: EntityDef, filter: FilterNode | null, set: unknown): Change<ManyResult> {
  if (!filter) throw filterRequired("update-many");
  if (!isPlainObject(set) || Object.keys(set).length === 0) {
    throw invalidJson(`"set" must be an object of the fields to change, such as {"set": {"status": "done"}}.`);
  }
  const changes = validateChanges(entity, set);
  const now = Date.now();
  const rows = matchingRows(records, entity, filter).map((row) => records.changedRow(entity, row, changes, now));
  return { entity, rows, result: { count: rows.length, ids: rows.map((row) => row.id) } };
}

export function deleteMany(records: Records, entity: EntityDef, filter: FilterNode | null): Change<ManyResult> {
  if (!filter) throw filterRequired("delete-many");
  const rows = matchingRows(records, entity, filter).map((row) => records.remove(entity, row).result);
  return { entity, rows, result: { count: rows.length, ids: rows.map((row) => row.id) } };
}

function matchingRows(records: Records, entity: EntityDef, filter: FilterNode): Row[] {
  const query = { filter, sort: ID_ORDER, after: null, skip: 0, limit: Infinity, deleted: "exclude" as const, count: false };
  return [...records.list(entity, query).rows];
}

function batchItems(body: unknown, expected: string): unknown[] {
  if (!Array.isArray(body)) throw invalidJson(`The body must be ${expected}.`);
  if (body.length > MAX_BATCH_RECORDS) throw batchTooLarge(body.length, MAX_BATCH_RECORDS);
  return body;
}

function atIndex<T>(index: number, work: () => T): T {
  try {
    return work();
  } catch (error) {
    throw error instanceof ApiError ? error.atIndex(index) : error;
  }
}

function matchFields(entity: EntityDef, match: unknown): string[] {
  if (!Array.isArray(match) || match.length < 1 || match.length > MAX_MATCH_FIELDS || !match.every((f) => typeof f === "string")) {
    throw invalidJson(`"match" must be an array of 1 to ${MAX_MATCH_FIELDS} field names, such as {"match": ["external_id"]}.`, { field: "match" });
  }
  for (const name of match) {
    const field = entity.fields.get(name);
    if (!field) throw unknownField(name, [...entity.fieldNames], entity.name);
    if (field.type === "array" || field.type === "object") {
      throw invalidField(name, `holds ${field.type === "array" ? "an array" : "a JSON object"} and cannot be matched on; match on fields holding one value.`);
    }
  }
  return [...new Set(match as string[])];
}

/**
 * Live records grouped by the JSON of their match values, for the values the batch names: one
 * filtered pass over the entity (or its value index) instead of one per record.
 */
function liveRowsByMatch(records: Records, entity: EntityDef, match: string[], items: unknown[]): Map<string, string[]> {
  const first = match[0]!;
  const wanted = items.flatMap((item) => (isPlainObject(item) && item[first] != null ? [item[first]] : []));
  const groups = new Map<string, string[]>();
  if (wanted.length === 0) return groups;
  const field = entity.fields.get(first)!;
  // Compare as stored: validation normalizes values (timestamps to UTC). An invalid value is kept
  // as written here and refused, with its index, when its record is checked.
  const values = wanted.map((value) => {
    try {
      return validateChanges(entity, { [first]: value }).get(first);
    } catch {
      return value;
    }
  });
  const node: CompareNode = { type: "compare", field: first, path: [first], kind: kindOf(field), isArray: false, op: "$in", value: values };
  const filter: FilterNode = values.length === 1 ? { ...node, op: "$eq", value: values[0] } : node;
  for (const row of matchingRows(records, entity, filter)) {
    const key = JSON.stringify(match.map((name) => row.data[name]));
    const ids = groups.get(key);
    if (ids) ids.push(row.id);
    else groups.set(key, [row.id]);
  }
  return groups;
}
