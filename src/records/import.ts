// POST /api/entities/<E>/import (issue 21, tabula import --keep-ids): a bulk create that keeps the
// id, timestamps and creator a record carries, so that importing what an export wrote gives the
// same records. Secret keys only: it writes what no other request may (read_only_field, docs/errors.md).
// All or nothing, like bulk create: the first bad record refuses the batch, named by its index.

import { ApiError, idTaken, invalidField, invalidJson } from "../errors.ts";
import { parseDateValue, type EntityDef } from "../schema/fields.ts";
import { isPlainObject } from "../schema/load.ts";
import { validateCreate } from "../schema/validate.ts";
import type { Row } from "../store/store.ts";
import { batchItems } from "./batch.ts";
import type { Caller } from "../keys/caller.ts";
import type { Change, KeptFields, Records } from "./records.ts";

/** Ids an import may give: URL-safe (they go in paths), at most 128 characters. */
const ID_RE = /^[A-Za-z0-9_.~-]{1,128}$/;
const MAX_CREATED_BY_LENGTH = 256;

export function importRecords(records: Records, entity: EntityDef, body: unknown, caller: Caller): Promise<Change<Row[]>> {
  const items = batchItems(body, `an array of ${entity.name} records, each with its "id", "created_date", "updated_date" and "created_by_id" when it has them`);
  return importItems(records, entity, items, caller, (error, index) => error.atIndex(index));
}

/**
 * The rows of `items`, all checked before any is stored; `place` says which item an error is
 * about (its index in a batch, its line in a file).
 */
export async function importItems(
  records: Records,
  entity: EntityDef,
  items: readonly unknown[],
  caller: Caller,
  place: (error: ApiError, index: number) => ApiError,
): Promise<Change<Row[]>> {
  const now = Date.now();
  const rows = items.map((item, index) => {
    try {
      if (!isPlainObject(item)) throw invalidJson(`Each item must be a ${entity.name} record (a JSON object).`);
      const { id, created_date, updated_date, created_by_id, created_by, ...fields } = item;
      return records.newRow(validateCreate(entity, fields, records.limits), caller, now, keptFields(id, created_date, updated_date, created_by_id, created_by));
    } catch (error) {
      throw error instanceof ApiError ? place(error, index) : error;
    }
  });
  // An id is taken once: by no other record of the batch, and by no stored record, live or deleted.
  const firstIndex = new Map<string, number>();
  for (const [index, row] of rows.entries()) {
    const other = firstIndex.get(row.id);
    if (other !== undefined) throw place(idTaken(entity.name, row.id, true), index);
    firstIndex.set(row.id, index);
  }
  for (const [index, item] of items.entries()) {
    if (!isPlainObject(item) || item.id === undefined) continue;
    if (await records.store.get(entity.name, rows[index]!.id)) throw place(idTaken(entity.name, rows[index]!.id, false), index);
  }
  return { entity, puts: rows.map((row) => ({ entity: entity.name, row, replaces: 0 })), result: rows };
}

function keptFields(id: unknown, created: unknown, updated: unknown, createdById: unknown, createdBy: unknown): KeptFields {
  if (id !== undefined && (typeof id !== "string" || !ID_RE.test(id))) {
    throw invalidField("id", `must be 1 to 128 letters, digits, "_", "-", "." or "~" (got ${JSON.stringify(id)}).`);
  }
  for (const [name, value] of [["created_by_id", createdById], ["created_by", createdBy]] as const) {
    if (value !== undefined && (typeof value !== "string" || value.length > MAX_CREATED_BY_LENGTH)) {
      throw invalidField(name, `must be a string of at most ${MAX_CREATED_BY_LENGTH} characters.`);
    }
  }
  if (createdBy !== undefined && createdById === undefined) throw invalidField("created_by", "comes with created_by_id: a record's creator is kept whole or not at all.");
  return { id, created: timestampOf("created_date", created), updated: timestampOf("updated_date", updated), createdById: createdById as string | undefined, createdBy: createdBy as string | undefined };
}

/** A timestamp in the one stored form (toISOString), or undefined when not given. */
function timestampOf(name: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  const ms = typeof value === "string" && value.length > 10 ? parseDateValue(value) : NaN;
  if (Number.isNaN(ms)) throw invalidField(name, `must be a date-time such as "2026-01-02T03:04:05.000Z" (got ${JSON.stringify(value)}).`);
  return new Date(ms).toISOString();
}
