// The batch writes of SPEC §4.9–4.12: bulk create and update, upsert, update-many and delete-many.
// Each builds every row first and refuses the whole batch on the first bad record (naming its
// index), so nothing is stored unless everything is (CONTRACT §4).

import { ambiguousMatch, ApiError, batchTooLarge, filterRequired, invalidField, invalidJson, readOnlyField, unknownField } from "../errors.ts";
import type { CompareNode, FilterNode } from "../query/filter-tree.ts";
import { isPlatformField, kindOf, type EntityDef } from "../schema/fields.ts";
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

/** `match` names the fields that identify a record (the SDK calls it `key`; `keyName` says which, for errors). */
export function upsert(records: Records, entity: EntityDef, match: unknown, recordsToWrite: unknown, caller: Caller, keyName = "match"): Change<UpsertResult[]> {
  const fields = matchFields(entity, match, keyName);
  const items = batchItems(recordsToWrite, `"records": an array of ${entity.name} records`);
  const existing = liveRowsByMatch(records, entity, fields, items);
  const latest = new Map<string, Row>();
  const now = Date.now();
  const result = items.map((item, index) =>
    atIndex(index, () => {
      const changes = validateChanges(entity, item);
      const values = fields.map((field) => changes.get(field));
      const missing = fields.find((_, i) => values[i] === undefined);
      if (missing) throw invalidField(missing, `is a ${keyName} field, so every record must give it a value.`);
      const key = JSON.stringify(values);
      const ids = existing.get(key) ?? [];
      if (ids.length > 1) throw ambiguousMatch(Object.fromEntries(fields.map((field, i) => [field, values[i]])), ids);
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

/**
 * What update-many changes, by operator, as the request named them (CONTRACT §4 and §7): `set`
 * values as an update takes them, `inc` numbers to add (a missing field counts as 0), `unset`
 * fields to remove. `names` says how the request spelled them ("set" or "$set"), for errors.
 */
export interface FieldUpdate {
  readonly set?: unknown;
  readonly inc?: unknown;
  readonly unset?: unknown;
  readonly names: { readonly set: string; readonly inc: string; readonly unset: string };
}

export function updateMany(records: Records, entity: EntityDef, filter: FilterNode | null, update: FieldUpdate): Change<ManyResult> {
  if (!filter) throw filterRequired("update-many");
  const { changes, increments } = parseFieldUpdate(entity, update);
  const now = Date.now();
  const rows = matchingRows(records, entity, filter).map((row) => {
    if (increments.size === 0) return records.changedRow(entity, row, changes, now);
    const own = new Map(changes);
    for (const [name, by] of increments) {
      const current = row.data[name];
      const sum = (typeof current === "number" ? current : 0) + by;
      // The sum is checked as the record's new value (bounds, integer): the error names the record.
      try {
        own.set(name, validateChanges(entity, { [name]: sum }).get(name));
      } catch (error) {
        throw error instanceof ApiError ? new ApiError(error.status, error.code, `Record ${row.id}: ${error.message}`, { ...error.details, id: row.id }) : error;
      }
    }
    return records.changedRow(entity, row, own, now);
  });
  return { entity, rows, result: { count: rows.length, ids: rows.map((row) => row.id) } };
}

function parseFieldUpdate(entity: EntityDef, update: FieldUpdate): { changes: Map<string, unknown>; increments: Map<string, number> } {
  const { names } = update;
  const example = `{"${names.set}": {"status": "done"}, "${names.inc}": {"views": 1}, "${names.unset}": ["note"]}`;
  const operand = (value: unknown, name: string): Record<string, unknown> => {
    if (value === undefined) return {};
    if (!isPlainObject(value)) throw invalidJson(`"${name}" must be an object of fields, as in ${example}.`);
    return value;
  };
  const set = operand(update.set, names.set);
  const inc = operand(update.inc, names.inc);
  // MongoDB writes $unset as {"field": ""}; a list of names says the same more plainly.
  const unset = Array.isArray(update.unset) ? update.unset : Object.keys(operand(update.unset, names.unset));
  if (!unset.every((name): name is string => typeof name === "string")) throw invalidJson(`"${names.unset}" must list field names, as in ${example}.`);
  const seen = new Map<string, string>();
  for (const [operator, fields] of [[names.set, Object.keys(set)], [names.inc, Object.keys(inc)], [names.unset, unset]] as const) {
    for (const name of fields) {
      const other = seen.get(name);
      if (other !== undefined) throw invalidJson(`Field "${name}" is in both "${other}" and "${operator}"; change each field with one operator.`, { field: name });
      seen.set(name, operator);
    }
  }
  if (seen.size === 0) throw invalidJson(`Name at least one field to change, as in ${example}.`);
  const changes = validateChanges(entity, { ...set, ...Object.fromEntries(unset.map((name) => [name, null])) });
  const increments = new Map<string, number>();
  for (const [name, by] of Object.entries(inc)) {
    const field = entity.fields.get(name);
    if (!field) throw isPlatformField(name) ? readOnlyField(name) : unknownField(name, [...entity.fieldNames], entity.name);
    if (field.type !== "number" && field.type !== "integer") throw invalidField(name, `is ${field.type === "array" || field.type === "object" ? "an" : "a"} ${field.type} field; "${names.inc}" adds to number and integer fields only.`);
    if (typeof by !== "number" || !Number.isFinite(by)) throw invalidField(name, `takes a number to add in "${names.inc}" (got ${JSON.stringify(by)}).`);
    if (field.type === "integer" && !Number.isInteger(by)) throw invalidField(name, `is an integer field; add a whole number (got ${by}).`);
    increments.set(name, by);
  }
  return { changes, increments };
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

function matchFields(entity: EntityDef, match: unknown, keyName: string): string[] {
  if (!Array.isArray(match) || match.length < 1 || match.length > MAX_MATCH_FIELDS || !match.every((f) => typeof f === "string")) {
    throw invalidJson(`"${keyName}" must be an array of 1 to ${MAX_MATCH_FIELDS} field names, such as {"${keyName}": ["external_id"]}.`, { field: keyName });
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
