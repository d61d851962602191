// The batch writes (docs/api.md): bulk create and update, upsert, update-many and delete-many.
// Each builds every row first and refuses the whole batch on the first bad record (naming its
// index), so nothing is stored unless everything is.

import { ambiguousMatch, ApiError, forbidden, recordNotFound, batchTooLarge, filterRequired, invalidField, invalidJson, readOnlyField, unknownField } from "../errors.ts";
import type { SizeLimits } from "../json-depth.ts";
import type { CompareNode, FilterNode } from "../query/filter-tree.ts";
import { isPlatformField, kindOf, type EntityDef } from "../schema/fields.ts";
import { isPlainObject } from "../schema/load.ts";
import { validateChanges, validateCreate } from "../schema/validate.ts";
import type { MatchCheck, Put, Row } from "../store/store.ts";
import type { Caller } from "../keys/caller.ts";
import { allows, checkCreate, checkUpdated, checkUpdateOf, grantsOf, hiddenFieldsOf, narrowedFilter } from "../rules/grants.ts";
import { hiddenField } from "../query/filter.ts";
import type { Change, Records } from "./records.ts";

export const MAX_BATCH_RECORDS = 5000;
export const MAX_MATCH_FIELDS = 3;

const ID_ORDER = { field: "id", kind: "string", descending: false } as const;

export function bulkCreate(records: Records, entity: EntityDef, body: unknown, caller: Caller): Change<Row[]> {
  const items = batchItems(body, `an array of ${entity.name} records`);
  const values = items.map((item, index) => atIndex(index, () => validateCreate(entity, item, records.limits)));
  const now = Date.now();
  const rows = values.map((value, index) => atIndex(index, () => {
    const row = records.newRow(value, caller, now);
    checkCreate(entity, caller, items[index], row, "Creating this record");
    return row;
  }));
  return { entity, puts: rows.map((row) => ({ entity: entity.name, row, replaces: 0 })), result: rows };
}

/**
 * The newest version of each record a batch writes, and the stored revision it replaces: a record
 * written twice in one batch is stored once, replacing what was stored before the batch.
 */
class BatchVersions {
  private readonly versions = new Map<string, { row: Row; replaces: number }>();

  constructor(private readonly entity: EntityDef) {}

  /** The version a further change in this batch starts from. */
  latest(id: string): Row | undefined {
    return this.versions.get(id)?.row;
  }

  /** `row` is the new version of the record that `from` was (from the store or this batch). */
  set(row: Row, from: Row | null): void {
    const replaces = this.versions.get(row.id)?.replaces ?? from?.rev ?? 0;
    this.versions.set(row.id, { row, replaces });
  }

  puts(): Put[] {
    return [...this.versions.values()].map(({ row, replaces }) => ({ entity: this.entity.name, row, replaces }));
  }
}

/** Updates by id, in order: an id named twice gets both changes, the second over the first. */
export async function bulkUpdate(records: Records, entity: EntityDef, body: unknown, caller: Caller): Promise<Change<Row[]>> {
  const items = batchItems(body, `an array of {"id": ..., <fields to change>}`);
  const stored = await storedRows(records, entity, items);
  const versions = new BatchVersions(entity);
  const now = Date.now();
  const result = items.map((item, index) =>
    atIndex(index, () => {
      if (!isPlainObject(item) || typeof item.id !== "string") {
        throw invalidJson(`Each item must be an object with the "id" of the record to change and the fields to change.`);
      }
      const { id, ...changes } = item;
      const row = versions.latest(id) ?? stored.get(id);
      if (!row) throw recordNotFound(entity.name, id);
      // An unreadable record is absent before anything is said of the changes (docs/rules.md).
      checkUpdateOf(entity, caller, row);
      const validated = validateChanges(entity, changes, records.limits);
      const updated = records.changedRow(entity, row, validated, now);
      checkUpdated(entity, caller, validated.keys(), updated);
      versions.set(updated, row);
      return updated;
    }),
  );
  return { entity, puts: versions.puts(), result };
}

/** The live records the items name by id, read before any is changed (one read per id). */
async function storedRows(records: Records, entity: EntityDef, items: unknown[]): Promise<Map<string, Row>> {
  const ids = new Set(items.flatMap((item) => (isPlainObject(item) && typeof item.id === "string" ? [item.id] : [])));
  const stored = new Map<string, Row>();
  for (const id of ids) {
    const row = await records.store.get(entity.name, id);
    if (row && !row.deleted) stored.set(id, row);
  }
  return stored;
}

export interface UpsertResult {
  readonly row: Row;
  readonly created: boolean;
}

/** `match` names the fields that identify a record (the SDK calls it `key`; `keyName` says which, for errors). */
export async function upsert(
  records: Records,
  entity: EntityDef,
  match: unknown,
  recordsToWrite: unknown,
  caller: Caller,
  keyName = "match",
): Promise<Change<UpsertResult[]>> {
  const fields = matchFields(entity, match, keyName);
  const items = batchItems(recordsToWrite, `"records": an array of ${entity.name} records`);
  // A hidden field cannot be a match field: whether a record matches would tell its value (docs/rules.md).
  const hidden = hiddenFieldsOf(entity, caller);
  const unseen = fields.find((field) => hidden?.has(field));
  if (unseen !== undefined) throw hiddenField(entity, unseen);
  const { existing, rows: matched, check } = await liveRowsByMatch(records, entity, fields, items, caller);
  const versions = new BatchVersions(entity);
  const now = Date.now();
  const result = items.map((item, index) =>
    atIndex(index, () => {
      const changes = validateChanges(entity, item, records.limits);
      const values = fields.map((field) => changes.get(field));
      const missing = fields.find((_, i) => values[i] === undefined);
      if (missing) throw invalidField(missing, `is a ${keyName} field, so every record must give it a value.`);
      const key = JSON.stringify(values);
      const ids = existing.get(key) ?? [];
      if (ids.length > 1) throw ambiguousMatch(Object.fromEntries(fields.map((field, i) => [field, values[i]])), ids);
      if (ids.length === 1) {
        const from = versions.latest(ids[0]!) ?? matched.get(ids[0]!)!;
        // A match the caller may not change is refused without naming it (docs/rules.md).
        if (!mayChange(entity, caller, from)) throw forbidden(`This record's ${keyName} values match a ${entity.name} record that this caller may not change (its "rls" rules, docs/rules.md).`);
        const row = records.changedRow(entity, from, changes, now);
        checkUpdated(entity, caller, changes.keys(), row);
        versions.set(row, from);
        return { row, created: false };
      }
      const row = records.newRow(validateCreate(entity, item, records.limits), caller, now);
      checkCreate(entity, caller, item, row, "Creating this record");
      versions.set(row, null);
      existing.set(key, [row.id]); // a later record with the same match values updates this one
      return { row, created: true };
    }),
  );
  return { entity, puts: versions.puts(), matches: check ? [check] : [], result };
}

export interface ManyResult {
  readonly count: number;
  readonly ids: string[];
}

/**
 * What update-many changes, by operator, as the request named them (docs/api.md, docs/base44-sdk.md): `set`
 * values as an update takes them, `inc` numbers to add (a missing field counts as 0), `unset`
 * fields to remove. `names` says how the request spelled them ("set" or "$set"), for errors.
 */
export interface FieldUpdate {
  readonly set?: unknown;
  readonly inc?: unknown;
  readonly unset?: unknown;
  readonly names: { readonly set: string; readonly inc: string; readonly unset: string };
}

/** Changes the live records `filter` matches that `caller` may change (docs/rules.md); refused whole if one would leave its reach. */
export async function updateMany(records: Records, entity: EntityDef, filter: FilterNode | null, update: FieldUpdate, caller: Caller): Promise<Change<ManyResult>> {
  if (!filter) throw filterRequired("update-many");
  const { changes, increments } = parseFieldUpdate(entity, update, records.limits);
  const now = Date.now();
  const grants = grantsOf(entity, caller);
  const matched = (await matchingRows(records, entity, narrowedFilter(entity, caller, filter)!)).filter((row) => allows(grants.update, row));
  const rows = matched.map((row) => {
    if (increments.size === 0) return records.changedRow(entity, row, changes, now);
    const own = new Map(changes);
    for (const [name, by] of increments) {
      const current = row.data[name];
      const sum = (typeof current === "number" ? current : 0) + by;
      // The sum is checked as the record's new value (bounds, integer): the error names the record.
      try {
        own.set(name, validateChanges(entity, { [name]: sum }, records.limits).get(name));
      } catch (error) {
        throw error instanceof ApiError ? new ApiError(error.status, error.code, `Record ${row.id}: ${error.message}`, { ...error.details, id: row.id }) : error;
      }
    }
    return records.changedRow(entity, row, own, now);
  });
  for (const row of rows) checkUpdated(entity, caller, changes.keys(), row);
  const puts = rows.map((row, i) => ({ entity: entity.name, row, replaces: matched[i]!.rev }));
  return { entity, puts, result: { count: rows.length, ids: rows.map((row) => row.id) } };
}

function parseFieldUpdate(entity: EntityDef, update: FieldUpdate, limits: SizeLimits): { changes: Map<string, unknown>; increments: Map<string, number> } {
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
  const changes = validateChanges(entity, { ...set, ...Object.fromEntries(unset.map((name) => [name, null])) }, limits);
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

/** Deletes the live records `filter` matches that `caller` may delete (docs/rules.md). */
export async function deleteMany(records: Records, entity: EntityDef, filter: FilterNode | null, caller: Caller): Promise<Change<ManyResult>> {
  if (!filter) throw filterRequired("delete-many");
  const now = Date.now();
  const grants = grantsOf(entity, caller);
  const matched = (await matchingRows(records, entity, narrowedFilter(entity, caller, filter)!)).filter((row) => allows(grants.delete, row));
  const puts = matched.map((row) => ({ entity: entity.name, row: records.deletedRow(entity, row, now), replaces: row.rev }));
  return { entity, puts, result: { count: puts.length, ids: puts.map((put) => put.row.id) } };
}

async function matchingRows(records: Records, entity: EntityDef, filter: FilterNode): Promise<Row[]> {
  const query = { filter, sort: ID_ORDER, after: null, skip: 0, limit: Infinity, deleted: "exclude" as const, count: false };
  return [...(await records.list(entity, query)).rows];
}

export function batchItems(body: unknown, expected: string): unknown[] {
  if (!Array.isArray(body)) throw invalidJson(`The body must be ${expected}.`);
  if (body.length > MAX_BATCH_RECORDS) throw batchTooLarge(body.length, MAX_BATCH_RECORDS);
  return body;
}

export function atIndex<T>(index: number, work: () => T): T {
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

interface MatchedRows {
  /** Ids of live records by the JSON of their match values. */
  readonly existing: Map<string, string[]>;
  readonly rows: Map<string, Row>;
  /** What the store must find still true when the batch is committed; null when nothing was looked up. */
  readonly check: MatchCheck | null;
}

/**
 * Live records grouped by the JSON of their match values, for the values the batch names: one
 * filtered pass over the entity (or its value index) instead of one per record.
 */
/** The live records the caller may read that hold the items' match values: under rules, one it may not read is as if absent (docs/rules.md). */
async function liveRowsByMatch(records: Records, entity: EntityDef, match: string[], items: unknown[], caller: Caller): Promise<MatchedRows> {
  const first = match[0]!;
  const wanted = items.flatMap((item) => (isPlainObject(item) && item[first] != null ? [item[first]] : []));
  const groups = new Map<string, string[]>();
  const rows = new Map<string, Row>();
  if (wanted.length === 0) return { existing: groups, rows, check: null };
  const field = entity.fields.get(first)!;
  // Compare as stored: validation normalizes values (timestamps to UTC). An invalid value is kept
  // as written here and refused, with its index, when its record is checked.
  const values = wanted.map((value) => {
    try {
      return validateChanges(entity, { [first]: value }, records.limits).get(first);
    } catch {
      return value;
    }
  });
  const node: CompareNode = { type: "compare", field: first, path: [first], kind: kindOf(field), isArray: false, op: "$in", value: values };
  const filter = narrowedFilter(entity, caller, values.length === 1 ? { ...node, op: "$eq", value: values[0] } : node)!;
  for (const row of await matchingRows(records, entity, filter)) {
    rows.set(row.id, row);
    const key = JSON.stringify(match.map((name) => row.data[name]));
    const ids = groups.get(key);
    if (ids) ids.push(row.id);
    else groups.set(key, [row.id]);
  }
  const locks = [...new Set(values.map((value) => `${entity.name}\n${first}\n${JSON.stringify(value)}`))];
  return { existing: groups, rows, check: { entity: entity.name, filter, ids: [...rows.keys()], locks } };
}

/** Whether `caller` may read and change `row` (docs/rules.md). */
function mayChange(entity: EntityDef, caller: Caller, row: Row): boolean {
  const grants = grantsOf(entity, caller);
  return allows(grants.read, row) && allows(grants.update, row);
}
