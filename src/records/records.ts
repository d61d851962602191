// One function per single-record operation of SPEC §4 (read, list, count, create, update, delete,
// restore): ids, timestamps, soft delete and visibility. No HTTP here. Writes return the rows to
// store (a Change) without storing them, so that the caller can add its idempotent answer to the
// same batch; callers must write a Change in the same tick it was made (see Store.write).

import { entityNotFound, recordNotFound } from "../errors.ts";
import type { FilterNode } from "../query/filter-tree.ts";
import type { Schema } from "../schema/load.ts";
import type { EntityDef } from "../schema/fields.ts";
import { validateChanges, validateCreate } from "../schema/validate.ts";
import { IdGenerator, timeOfId } from "../store/ids.ts";
import type { ListQuery, Row, SortPosition, Store } from "../store/store.ts";
import type { Caller } from "./caller.ts";

/** Rows a write will store, and what it answers. */
export interface Change<T> {
  readonly entity: EntityDef;
  readonly rows: readonly Row[];
  readonly result: T;
}

/** A store list query, plus whether to count every match (X-Total-Count). */
export interface ListRequest extends ListQuery {
  readonly count: boolean;
}

export interface ListAnswer {
  readonly rows: readonly Row[];
  readonly hasMore: boolean;
  /** Where the next page starts, when there is one. */
  readonly last: SortPosition | null;
  readonly total: number | null;
}

export class Records {
  private readonly ids: IdGenerator;

  constructor(
    readonly schema: Schema,
    readonly store: Store,
  ) {
    this.ids = new IdGenerator(store.maxId());
  }

  entity(name: string): EntityDef {
    const entity = this.schema.entities.get(name);
    if (!entity) throw entityNotFound(name, [...this.schema.entities.keys()]);
    return entity;
  }

  /** The live record with this id, or 404. */
  read(entity: EntityDef, id: string): Row {
    const row = this.store.get(entity.name, id);
    if (!row || row.deleted) throw recordNotFound(entity.name, id);
    return row;
  }

  list(entity: EntityDef, request: ListRequest): ListAnswer {
    const { rows, hasMore } = this.store.list(entity.name, request);
    const lastRow = rows[rows.length - 1];
    return {
      rows,
      hasMore,
      last: hasMore && lastRow ? this.store.positionOf(entity.name, lastRow, request.sort) : null,
      total: request.count ? this.store.count(entity.name, request.filter, request.deleted) : null,
    };
  }

  count(entity: EntityDef, filter: FilterNode | null): number {
    return this.store.count(entity.name, filter, "exclude");
  }

  create(entity: EntityDef, body: unknown, caller: Caller): Change<Row> {
    const row = this.newRow(validateCreate(entity, body), caller, Date.now());
    return { entity, rows: [row], result: row };
  }

  update(entity: EntityDef, row: Row, body: unknown): Change<Row> {
    const updated = this.changedRow(row, validateChanges(entity, body), Date.now());
    return { entity, rows: [updated], result: updated };
  }

  remove(entity: EntityDef, row: Row): Change<Row> {
    const deleted = this.nextVersion(row, row.data, true, Date.now());
    return { entity, rows: [deleted], result: deleted };
  }

  /** Brings back a deleted record; a live one is answered as it is, with nothing to store. */
  restore(entity: EntityDef, id: string): Change<{ row: Row; restored: boolean }> {
    const row = this.store.get(entity.name, id);
    if (!row) throw recordNotFound(entity.name, id);
    if (!row.deleted) return { entity, rows: [], result: { row, restored: false } };
    const restored = this.nextVersion(row, row.data, false, Date.now());
    return { entity, rows: [restored], result: { row: restored, restored: true } };
  }

  /** A new record's row: its id carries its creation time (CONTRACT §4). */
  newRow(values: Record<string, unknown>, caller: Caller, now: number): Row {
    const id = this.ids.next(now);
    const created = new Date(timeOfId(id)).toISOString();
    const data = { id, ...values, created_date: created, updated_date: created, created_by_id: caller.keyId };
    return { id, rev: this.store.nextRev(), deleted: false, data };
  }

  /** Merges validated changes (undefined clears a field) into a new version of `row`. */
  changedRow(row: Row, changes: ReadonlyMap<string, unknown>, now: number): Row {
    const data: Record<string, unknown> = { ...row.data };
    for (const [name, value] of changes) {
      if (value === undefined) delete data[name];
      else data[name] = value;
    }
    return this.nextVersion(row, data, row.deleted, now);
  }

  private nextVersion(row: Row, data: Readonly<Record<string, unknown>>, deleted: boolean, now: number): Row {
    // updated_date never goes back, even if the clock does.
    const previous = Date.parse(row.data.updated_date as string);
    const updated = new Date(Math.max(now, previous)).toISOString();
    return { id: row.id, rev: this.store.nextRev(), deleted, data: { ...data, updated_date: updated } };
  }
}
