// One function per single-record operation of docs/api.md (read, list, count, create, update, delete,
// restore): ids, timestamps, soft delete and visibility. No HTTP here. Writes return the rows to
// store (a Change) without storing them, so that the caller can add its idempotent answer to the
// same batch. Each new version names the revision it replaces, so the store refuses a Change built
// from a state that another write has since replaced (Store.commit); the caller then builds it again.

import { ApiError, entityNotFound, invalidJson, recordNotFound } from "../errors.ts";
import { DEFAULT_SIZE_LIMITS, stringifyDeep, type SizeLimits } from "../json-depth.ts";
import type { FilterNode, SortPosition } from "../query/filter-tree.ts";
import type { Schema } from "../schema/load.ts";
import { isPlatformField, type EntityDef } from "../schema/fields.ts";
import { validateChanges, validateCreate } from "../schema/validate.ts";
import { then, type Maybe } from "../maybe.ts";
import { IsoTimes } from "../iso-time.ts";
import { IdGenerator } from "../store/ids.ts";
import type { AnswerStore, BatchWriter, Commit, IdempotentAnswer, ListQuery, MatchCheck, MetadataStore, Put, RecordStore, Row } from "../store/store.ts";
import { StoredRow } from "../rows/stored-row.ts";
import { aggregate, DEFAULT_MAX_GROUPS, type AggregateResult } from "./aggregate.ts";
import type { AggregateSpec } from "./aggregate-spec.ts";
import type { Caller } from "../keys/caller.ts";
import { distinctValues, type DistinctAnswer, type DistinctRequest } from "./distinct.ts";
import { viewOf, ViewCache, type RecordView } from "./read-cache.ts";
import { etagOf, recordJson } from "./serialize.ts";
import { allows, checkCreate, checkDeleteOf, checkUpdated, checkUpdateOf, fieldsHiddenIn, grantsOf, hasRules } from "../rules/grants.ts";

const NO_CHANGES: ReadonlyMap<string, unknown> = new Map();
/** Store.readCache's maker: one per entity, made at its first read by id. */
const newViewCache = (): ViewCache => new ViewCache();

/** What an imported record carries of its platform fields (import.ts); each undefined when it has none. */
export interface KeptFields {
  readonly id?: string;
  /** Timestamps in the stored form (toISOString). */
  readonly created?: string;
  readonly updated?: string;
  readonly createdById?: string;
  /** The creating user's email, kept with createdById. */
  readonly createdBy?: string;
}

const NOTHING_KEPT: KeptFields = Object.freeze({});

/** What one written record may hold, and one aggregate gather: the server's options (docs/operating.md). */
export interface RecordLimits extends SizeLimits {
  readonly maxGroups: number;
  /** The most bytes of one record's JSON (--max-record-size). */
  readonly maxRecordBytes: number;
}

/**
 * 1 MiB, as Firestore's documents and PocketBase's JSON fields: every read, write, event and
 * answer of a record costs its size, so one record of megabytes would hold the event loop for
 * tens of milliseconds at each (docs/entities.md, "Sizes").
 */
export const DEFAULT_MAX_RECORD_BYTES = 1024 * 1024;

export const DEFAULT_RECORD_LIMITS: RecordLimits = { ...DEFAULT_SIZE_LIMITS, maxGroups: DEFAULT_MAX_GROUPS, maxRecordBytes: DEFAULT_MAX_RECORD_BYTES };

/** Rows a write will store (each with the revision it replaces), what it expects, and what it answers. */
export interface Change<T> {
  readonly entity: EntityDef;
  readonly puts: readonly Put[];
  readonly matches?: readonly MatchCheck[];
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

/**
 * The roles of the store that Records uses: records read and written, stored idempotent answers,
 * and the stored field names (a metadata read). The write paths beside it (batch.ts, import.ts,
 * seed.ts) and exports read the store through Records.store.
 */
export type RecordsStore = RecordStore & BatchWriter & AnswerStore & MetadataStore;

export class Records {
  private readonly ids: IdGenerator;
  /** Rows written in one batch share their time, so its ISO form is made once. */
  private readonly isoTimes = new IsoTimes();

  constructor(
    readonly schema: Schema,
    readonly store: RecordsStore,
    /** Every write path validates with these (batch.ts and import.ts too). */
    readonly limits: RecordLimits = DEFAULT_RECORD_LIMITS,
  ) {
    this.ids = new IdGenerator(() => store.maxId(), store.idNode);
  }

  entity(name: string): EntityDef {
    const entity = this.schema.entities.get(name);
    if (!entity) throw entityNotFound(name, [...this.schema.entities.keys()]);
    return entity;
  }

  /**
   * The live record with this id as `caller` sees it, ready to send, or 404: from the store's read
   * cache when it has one (read-cache.ts).
   */
  view(entity: EntityDef, id: string, caller: Caller): Maybe<RecordView> {
    if (caller.kind !== "secret" && hasRules(entity)) return then(this.readable(entity, id, caller), (row) => this.viewFor(entity, row, caller));
    const cached = this.cachedView(entity, id, caller);
    if (cached !== undefined) return cached;
    return then(this.read(entity, id), (row) => this.viewFor(entity, row, caller));
  }

  /**
   * The view of `row` for `caller`: cached per kind of key, unless rules hide fields of it from
   * this caller, whose view is then its own (docs/rules.md).
   */
  private viewFor(entity: EntityDef, row: Row, caller: Caller): RecordView {
    const cache = this.store.readCache(entity.name, newViewCache);
    if (caller.kind !== "secret" && fieldsHiddenIn(entity, caller, row) !== null) return viewOf(row, recordJson(entity, row, caller, false));
    const cached = cache?.find(row.id, caller);
    if (cached !== undefined && cached.etag === etagOf(row)) return cached;
    // Not kept on the row as well (the JSON cache of pages): the view holds it.
    const view = viewOf(row, recordJson(entity, row, caller, false));
    cache?.keep(row.id, caller, view);
    return view;
  }

  /**
   * For a plain read by a secret key that missed the cache (server.ts): the view of the live
   * record, made now and cached when the store holds it in memory; undefined when the store reads asynchronously or has no such
   * live record, which the general path answers. A read after start-up is such a miss: the view is
   * made from the row's stored text when that is its JSON (serialize.ts), without parsing it.
   */
  secretViewAtHand(entity: EntityDef, id: string, caller: Caller): RecordView | undefined {
    if (caller.kind !== "secret") return undefined;
    // A store without a read cache (PostgreSQL) has no rows at hand: its get() is a query, which the
    // general path makes (and whose failure it answers).
    const cache = this.store.readCache(entity.name, newViewCache);
    if (cache === null) return undefined;
    const row = this.store.get(entity.name, id);
    if (row instanceof Promise) {
      row.catch(() => {});
      return undefined;
    }
    if (row === undefined || row.deleted) return undefined;
    const view = viewOf(row, recordJson(entity, row, caller, false));
    cache.keep(row.id, caller, view);
    return view;
  }

  /** The cached view of the record with this id for `caller`'s kind of key, or undefined: never reads the store. */
  cachedView(entity: EntityDef, id: string, caller: Caller): RecordView | undefined {
    const cache = this.store.readCache(entity.name, newViewCache);
    if (cache === null) return undefined;
    // Under rules, the kind's view serves a caller who may read the record and all of it (docs/rules.md).
    if (caller.kind !== "secret" && hasRules(entity) && !this.maySeeWhole(entity, id, caller)) return undefined;
    return cache.find(id, caller);
  }

  /** Whether `caller` may read the live record `id`, every field of it, as the store holds it now (false when it answers later). */
  private maySeeWhole(entity: EntityDef, id: string, caller: Caller): boolean {
    const row = this.store.get(entity.name, id);
    if (row instanceof Promise) {
      row.catch(() => {});
      return false;
    }
    return row !== undefined && !row.deleted && allows(grantsOf(entity, caller).read, row) && fieldsHiddenIn(entity, caller, row) === null;
  }

  /** The live record with this id if `caller` may read it; else 404, as if it were absent (docs/rules.md). */
  readable(entity: EntityDef, id: string, caller: Caller): Maybe<Row> {
    return then(this.read(entity, id), (row) => {
      if (!allows(grantsOf(entity, caller).read, row)) throw recordNotFound(entity.name, id);
      return row;
    });
  }

  /** The live record with this id, or 404. */
  read(entity: EntityDef, id: string): Maybe<Row> {
    return then(this.store.get(entity.name, id), (row) => {
      if (!row || row.deleted) throw recordNotFound(entity.name, id);
      return row;
    });
  }

  list(entity: EntityDef, request: ListRequest): Maybe<ListAnswer> {
    return then(this.store.list(entity.name, request), ({ rows, hasMore }) => {
      const lastRow = rows[rows.length - 1];
      const last = hasMore && lastRow ? this.store.positionOf(entity.name, lastRow, request.sort) : null;
      if (!request.count) return { rows, hasMore, last, total: null };
      return then(this.store.count(entity.name, request.filter, request.deleted), (total) => ({ rows, hasMore, last, total }));
    });
  }

  count(entity: EntityDef, filter: FilterNode | null): Maybe<number> {
    return this.store.count(entity.name, filter, "exclude");
  }

  create(entity: EntityDef, body: unknown, caller: Caller): Change<Row> {
    if (Array.isArray(body)) {
      throw invalidJson(`The body is an array, and this creates one record; to create ${body.length === 1 ? "it" : `these ${body.length}`} in one all-or-nothing batch, POST the array to …/${entity.name}/bulk instead, or send one JSON object here.`);
    }
    const row = this.newRow(validateCreate(entity, body, this.limits), caller, Date.now());
    checkCreate(entity, caller, body, row, "Creating this record");
    return { entity, puts: [{ entity: entity.name, row, replaces: 0 }], result: row };
  }

  /** `row` changed by `body`; `caller`'s rules checked on the record before (404, 403) and after (403), docs/rules.md. */
  update(entity: EntityDef, row: Row, body: unknown, caller: Caller): Change<Row> {
    checkUpdateOf(entity, caller, row);
    const changes = validateChanges(entity, body, this.limits);
    const updated = this.changedRow(entity, row, changes, Date.now());
    checkUpdated(entity, caller, changes.keys(), updated);
    return { entity, puts: [{ entity: entity.name, row: updated, replaces: row.rev }], result: updated };
  }

  remove(entity: EntityDef, row: Row, caller: Caller): Change<Row> {
    checkDeleteOf(entity, caller, row);
    const deleted = this.deletedRow(entity, row, Date.now());
    return { entity, puts: [{ entity: entity.name, row: deleted, replaces: row.rev }], result: deleted };
  }

  /** Brings back a deleted record; a live one is answered as it is, with nothing to store. */
  async restore(entity: EntityDef, id: string): Promise<Change<{ row: Row; restored: boolean }>> {
    const row = await this.store.get(entity.name, id);
    if (!row) throw recordNotFound(entity.name, id);
    if (!row.deleted) return { entity, puts: [], result: { row, restored: false } };
    const restored = this.nextVersion(entity, row, NO_CHANGES, false, Date.now());
    return { entity, puts: [{ entity: entity.name, row: restored, replaces: row.rev }], result: { row: restored, restored: true } };
  }

  /** Groups and measures the live records a spec selects (aggregate.ts). */
  aggregate(entity: EntityDef, spec: AggregateSpec): Promise<AggregateResult> {
    return aggregate(this.store, entity, spec, this.limits.maxGroups);
  }

  /** One page of a field's distinct values (distinct.ts). */
  distinct(entity: EntityDef, request: DistinctRequest): Promise<DistinctAnswer> {
    return distinctValues(this.store, entity, request);
  }

  /**
   * Stores a Change with the idempotent answer of its request, all or nothing (Store.commit: a
   * ConflictError means another write came first, and the Change must be built again).
   */
  commit(change: Change<unknown> | undefined, answer: IdempotentAnswer | undefined): Promise<Commit> {
    return this.store.commit({ puts: change?.puts ?? [], matches: change?.matches, answer });
  }

  /** Resolves once every write so far is durable; null when it already is. */
  whenDurable(): Promise<void> | null {
    return this.store.whenDurable();
  }

  /** Stored field names per entity, for reporting fields no longer declared: all, or those outside `known` (Store.storedFieldNames). */
  storedFieldNames(known?: ReadonlyMap<string, readonly string[]>): Maybe<Map<string, Set<string>>> {
    return this.store.storedFieldNames(known);
  }

  /** The stored answer to an earlier write with this Idempotency-Key scope, while it has not expired. */
  findAnswer(scope: string, now: number): Maybe<IdempotentAnswer | undefined> {
    return this.store.findAnswer(scope, now);
  }

  /**
   * A new record's row: its id carries its creation time (docs/api.md), unless an import `kept` the
   * id, timestamps and creator the record had (import.ts). `values` are declared fields in
   * declaration order (validateCreate), so the data is in record order (see rowInRecordOrder).
   */
  newRow(values: Record<string, unknown>, caller: Caller, now: number, kept: KeptFields = NOTHING_KEPT): Row {
    const id = kept.id ?? this.ids.next(now);
    // A made id holds the record's time; a kept one says nothing of it.
    const created = kept.created ?? this.isoTimes.of(kept.id === undefined ? this.ids.lastTime : now);
    // A signed-in user's record is its own: its id, and its email as created_by (docs/users.md).
    const createdBy = kept.createdById === undefined ? caller.user?.email : kept.createdBy;
    const data = {
      id,
      ...values,
      created_date: created,
      updated_date: kept.updated ?? created,
      ...(createdBy === undefined ? {} : { created_by: createdBy }),
      created_by_id: kept.createdById ?? caller.user?.id ?? caller.keyId,
    };
    return this.checkSize(rowInRecordOrder(id, this.store.nextRev(), false, data));
  }

  /** Merges validated changes (undefined clears a field) into a new version of `row`. */
  changedRow(entity: EntityDef, row: Row, changes: ReadonlyMap<string, unknown>, now: number): Row {
    return this.nextVersion(entity, row, changes, row.deleted, now);
  }

  /** The deleted version of `row`. */
  deletedRow(entity: EntityDef, row: Row, now: number): Row {
    return this.nextVersion(entity, row, NO_CHANGES, true, now);
  }

  private nextVersion(entity: EntityDef, row: Row, changes: ReadonlyMap<string, unknown>, deleted: boolean, now: number): Row {
    // updated_date never goes back, even if the clock does. Stored timestamps are all in the one
    // ISO form (toISOString), in which text order is time order.
    const previous = row.data.updated_date;
    const current = this.isoTimes.of(now);
    const updated = typeof previous === "string" && previous > current ? previous : current;
    const rev = this.store.nextRev();
    if (hasUndeclaredField(entity, row.data)) return this.checkSize(new StoredRow(row.id, rev, deleted, mergedData(row.data, changes, updated)), changes);
    return this.checkSize(rowInRecordOrder(row.id, rev, deleted, recordOrderData(entity, row, changes, updated)), changes);
  }

  /**
   * Refuses a version whose JSON passes maxRecordBytes (413), as it is built: an update that
   * changes nothing keeps a record stored before the limit was lowered (a delete, a restore).
   */
  private checkSize(row: Row, changes: ReadonlyMap<string, unknown> | null = null): Row {
    if (changes !== null && changes.size === 0) return row;
    const json = row.memo?.dataJson ?? dataJsonOf(row.data);
    const max = this.limits.maxRecordBytes;
    // UTF-8 takes at most 3 bytes a UTF-16 unit: most records need no count.
    if (json.length * 3 <= max) return row;
    const bytes = Buffer.byteLength(json);
    if (bytes <= max) return row;
    throw new ApiError(
      413,
      "payload_too_large",
      `The record would be ${bytes} bytes of JSON; at most ${max} are accepted (--max-record-size). Keep large content elsewhere (a file, a URL) and store its reference, or split it into several records.`,
      { recordBytes: bytes, maxRecordBytes: max },
    );
  }
}

/**
 * A row whose data is in record order carries the data's JSON in memo.dataJson: that one string is
 * both the secret-key record JSON (serialize.ts answers with it) and the data of its log line
 * (log-framing.ts), so a new version is serialized once. The file store drops it once the line is framed.
 */
function rowInRecordOrder(id: string, rev: number, deleted: boolean, data: Record<string, unknown>): Row {
  return new StoredRow(id, rev, deleted, data, { dataJson: dataJsonOf(data) });
}

/** Bodies nest at most MAX_JSON_DEPTH levels, but older builds stored deeper values, too deep for JSON.stringify. */
function dataJsonOf(data: Record<string, unknown>): string {
  try {
    return JSON.stringify(data);
  } catch (error) {
    if (error instanceof RangeError) return stringifyDeep(data);
    throw error;
  }
}

/** Whether `data` holds a field no longer declared: it is kept in store, but never shown. */
function hasUndeclaredField(entity: EntityDef, data: Readonly<Record<string, unknown>>): boolean {
  for (const name in data) if (!entity.fields.has(name) && !isPlatformField(name)) return true;
  return false;
}

/**
 * The data of `row` with `changes` merged in, laid out as the record JSON is (docs/api.md: id, declared
 * fields in declaration order without empty ones, created_date, updated_date, created_by_id).
 */
function recordOrderData(entity: EntityDef, row: Row, changes: ReadonlyMap<string, unknown>, updated: string): Record<string, unknown> {
  const data = row.data;
  const ordered: Record<string, unknown> = { id: row.id };
  for (const name of entity.fieldNames) {
    const value = changes.has(name) ? changes.get(name) : data[name];
    if (value !== undefined && value !== null) ordered[name] = value;
  }
  ordered.created_date = data.created_date;
  ordered.updated_date = updated;
  if (data.created_by !== undefined) ordered.created_by = data.created_by;
  ordered.created_by_id = data.created_by_id;
  return ordered;
}

/** `data` with `changes` merged in where they fall, fields no longer declared kept. */
function mergedData(data: Readonly<Record<string, unknown>>, changes: ReadonlyMap<string, unknown>, updated: string): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...data };
  for (const [name, value] of changes) {
    if (value === undefined) delete merged[name];
    else merged[name] = value;
  }
  merged.updated_date = updated;
  return merged;
}
