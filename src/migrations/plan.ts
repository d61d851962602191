// What a migration does to the stored records (docs/schema-changes.md): each step run over the
// rows it names, in order, each seeing what the steps before it did, into one batch that the store
// applies all or nothing. A step that meets values it must refuse makes no batch at all: the
// report names the step, how many records it refused and some of their ids.
//
// The planner keeps what earlier migrations changed, so that a dry run of several pending
// migrations shows each one as it would run after those before it, and the schema check after a
// dry run sees the records as they would then be (rowsAfter).

import { convertValue } from "./convert.ts";
import type { Migration, Step } from "./migration-file.ts";
import type { BatchWriter, MetadataStore, MetaWrite, Put, Row, WriteBatch } from "../store/store.ts";
import { StoredRow } from "../rows/stored-row.ts";

/** Refused ids a report names per step. */
const IDS_SHOWN = 5;

/** The store's metadata key the migrations that ran are recorded under. */
export const MIGRATIONS_META_KEY = "migrations";

export interface RecordedMigration {
  readonly name: string;
  readonly checksum: string;
  readonly ran_at: string;
  readonly records: number;
}

export interface StepOutcome {
  readonly written: string;
  /** Records this step changed (a record changed by two steps counts for each). */
  readonly changed: number;
  readonly refused: number;
  readonly refusedIds: readonly string[];
  /** Why, for the first refused record. */
  readonly why: string | null;
}

export interface MigrationPlan {
  readonly migration: Migration;
  readonly outcomes: readonly StepOutcome[];
  /** The batch to commit; null when a step refused records (nothing may be written). */
  readonly batch: WriteBatch | null;
  /** Records the batch writes. */
  readonly records: number;
}

/** A record as the migrations planned so far leave it. */
interface Work {
  /** The stored version (or the one the last planned migration makes); null for none yet in this entity. */
  base: Row;
  /** The entity the base version is stored under. */
  baseEntity: string;
  data: Record<string, unknown>;
  changed: boolean;
}

export class MigrationPlanner {
  /** Entity → id → record, for every entity a step has read. */
  private readonly state = new Map<string, Map<string, Work>>();
  /** Entities whose rows have moved away (renameEntity) since the last plan was made. */
  private drops = new Set<string>();

  constructor(
    private readonly store: MetadataStore & BatchWriter,
    private recorded: RecordedMigration[],
  ) {}

  async plan(migration: Migration, now = new Date()): Promise<MigrationPlan> {
    this.drops = new Set();
    const outcomes: StepOutcome[] = [];
    for (let index = 0; index < migration.steps.length; index++) {
      outcomes.push(await this.runStep(migration.steps[index]!, migration.written[index]!));
    }
    const refused = outcomes.some((outcome) => outcome.refused > 0);
    const puts: Put[] = [];
    for (const [entity, rows] of this.state) {
      for (const work of rows.values()) {
        if (!work.changed) continue;
        const moved = work.baseEntity !== entity;
        const row: Row = new StoredRow(work.base.id, refused ? 0 : this.store.nextRev(), work.base.deleted, work.data);
        puts.push({ entity, row, replaces: moved ? 0 : work.base.rev, sync: true });
        if (!refused) {
          work.base = row;
          work.baseEntity = entity;
          work.changed = false;
        }
      }
    }
    if (refused) return { migration, outcomes, batch: null, records: puts.length };
    const record: RecordedMigration = { name: migration.name, checksum: migration.checksum, ran_at: now.toISOString(), records: puts.length };
    this.recorded = [...this.recorded, record];
    const meta: MetaWrite[] = [{ key: MIGRATIONS_META_KEY, value: this.recorded }];
    return { migration, outcomes, batch: { puts, meta, drops: [...this.drops] }, records: puts.length };
  }

  /** The rows of `entity` as the plans so far leave them (the store's, where no step touched it). */
  async forEachRow(entity: string, visit: (row: Row) => void): Promise<void> {
    const rows = this.state.get(entity);
    if (!rows) {
      if (!this.everDropped.has(entity)) await this.store.forEachRow(entity, visit);
      return;
    }
    for (const work of rows.values()) visit(work.changed ? { ...work.base, data: work.data } : work.base);
  }

  /** Entities renamed away by any plan, whose store rows no longer count. */
  private readonly everDropped = new Set<string>();

  private async rows(entity: string): Promise<Map<string, Work>> {
    let rows = this.state.get(entity);
    if (!rows) {
      rows = new Map();
      if (!this.everDropped.has(entity)) {
        const loaded = rows;
        await this.store.forEachRow(entity, (row) => void loaded.set(row.id, { base: row, baseEntity: entity, data: row.data as Record<string, unknown>, changed: false }));
      }
      this.state.set(entity, rows);
    }
    return rows;
  }

  private async runStep(step: Step, written: string): Promise<StepOutcome> {
    const rows = await this.rows(step.entity);
    let changed = 0;
    const refusedIds: string[] = [];
    let refused = 0;
    let why: string | null = null;
    const refuse = (id: string, reason: string) => {
      refused++;
      if (refusedIds.length < IDS_SHOWN) refusedIds.push(id);
      why ??= reason;
    };
    if (step.op === "renameEntity") {
      const target = await this.rows(step.to);
      if (target.size > 0) {
        refuse([...target.keys()][0]!, `${step.to} already holds ${target.size} ${target.size === 1 ? "record" : "records"}; renameEntity moves records into an entity that holds none`);
        return { written, changed, refused: target.size, refusedIds, why };
      }
      for (const [id, work] of rows) {
        target.set(id, { ...work, changed: true });
        changed++;
      }
      rows.clear();
      this.drops.add(step.entity);
      this.everDropped.add(step.entity);
      return { written, changed, refused, refusedIds, why };
    }
    for (const work of rows.values()) {
      const { data } = work;
      if (step.q && !step.q(data)) continue;
      const current = data[step.field];
      let next: Record<string, unknown> | null = null;
      switch (step.op) {
        case "rename": {
          if (current === undefined) break;
          if (data[step.to] !== undefined) {
            refuse(work.base.id, `it holds both ${step.field} and ${step.to}`);
            break;
          }
          next = renamed(data, step.field, step.to);
          break;
        }
        case "convert": {
          if (current === undefined || current === null) break;
          let value = convertValue(current, step.to);
          if (value === undefined) {
            if (step.otherwise.kind === "value") value = step.otherwise.value;
            else if (step.otherwise.kind === "null" || work.base.deleted) value = null;
            else {
              refuse(work.base.id, `${JSON.stringify(current)} does not convert to ${step.to} (add "else": "null" to clear such values, or "else": <value> to set one)`);
              break;
            }
          }
          if (value !== current) next = withValue(data, step.field, value);
          break;
        }
        case "set":
          if (JSON.stringify(current) !== JSON.stringify(step.value ?? undefined)) next = withValue(data, step.field, step.value);
          break;
        case "unset":
          if (current !== undefined) next = withValue(data, step.field, null);
          break;
      }
      if (next) {
        work.data = next;
        work.changed = true;
        changed++;
      }
    }
    return { written, changed, refused, refusedIds, why };
  }
}

/** A copy of `data` with `field` set (null or undefined: removed), in place if it was there. */
function withValue(data: Readonly<Record<string, unknown>>, field: string, value: unknown): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...data };
  if (value === null || value === undefined) delete copy[field];
  else copy[field] = value;
  return copy;
}

/** A copy of `data` with `from` named `to`, in the same place. */
function renamed(data: Readonly<Record<string, unknown>>, from: string, to: string): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(data)) copy[name === from ? to : name] = value;
  return copy;
}

/** The migrations a store has recorded (an empty list for none, or an unreadable value). */
export function recordedMigrations(stored: unknown): RecordedMigration[] {
  return Array.isArray(stored) ? (stored as RecordedMigration[]).filter((entry) => typeof entry?.name === "string") : [];
}
