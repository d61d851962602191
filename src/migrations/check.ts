// Runs the changes schema/changes/diff.ts found against the stored live records
// (docs/schema-changes.md): which of them some record breaks, how many records, which ones, and
// what they hold. Reads every live record of an entity once, whatever the number of its changes;
// entities with no change that a record could break are not read at all.

import type { Schema } from "../schema/load.ts";
import { uniqueKeyOf, type Row, type UniqueClashReport } from "../store/store.ts";
import type { Maybe } from "../maybe.ts";
import { diffSchemas, type Problem, type SchemaChange } from "../schema/changes/diff.ts";

/** Ids a refusal names per change. */
export const IDS_SHOWN = 5;
/** Problems kept per change to word it: enough to name the kinds of value held. */
const PROBLEMS_KEPT = 200;

export interface BrokenChange {
  readonly change: SchemaChange;
  readonly records: number;
  readonly ids: readonly string[];
  readonly problems: readonly Problem[];
}

export interface SchemaCheck {
  /** Whether the store held declarations to compare with (else the records were checked against the schema itself). */
  readonly compared: boolean;
  readonly changes: readonly SchemaChange[];
  /** Changes some live record breaks; the start-up refuses while there are any. */
  readonly broken: readonly BrokenChange[];
  /** Live records sharing the values of a declared unique set (the store found them as it opened). */
  readonly clashes: readonly UniqueClashReport[];
  /** Entities no longer declared whose records are kept, with how many are live. */
  readonly unserved: ReadonlyArray<{ readonly entity: string; readonly live: number }>;
}

/** Where the check reads rows: the store, or a migration planner's view of it after a dry run. */
export interface RowSource {
  forEachRow(entity: string, visit: (row: Row) => void): Maybe<void>;
}

export async function checkSchema(store: RowSource, stored: Schema | null, next: Schema): Promise<SchemaCheck> {
  const changes = diffSchemas(stored, next);
  const broken: BrokenChange[] = [];
  const byEntity = new Map<string, SchemaChange[]>();
  for (const change of changes) if (change.problemOf) byEntity.set(change.entity, [...(byEntity.get(change.entity) ?? []), change]);
  // Unique sets declared anew (every one, when there was nothing to compare with): the store
  // enforces a set only once no live records share its values.
  const newUnique = new Map<string, Array<readonly string[]>>();
  for (const entity of next.entities.values()) {
    const before = stored?.entities.get(entity.name);
    const known = new Set(before ? before.unique.map((fields) => JSON.stringify(fields)) : []);
    const added = entity.unique.filter((fields) => !known.has(JSON.stringify(fields)));
    if (added.length > 0) {
      newUnique.set(entity.name, added);
      if (!byEntity.has(entity.name)) byEntity.set(entity.name, []);
    }
  }
  const clashes: UniqueClashReport[] = [];
  for (const [entity, entityChanges] of byEntity) {
    const found = entityChanges.map((change) => ({ change, records: 0, ids: [] as string[], problems: [] as Problem[] }));
    const holders = (newUnique.get(entity) ?? []).map((fields) => ({ fields, owners: new Map<string, string[]>() }));
    await store.forEachRow(entity, (row) => {
      if (row.deleted) return;
      for (const { fields, owners } of holders) {
        const key = uniqueKeyOf(row, fields);
        if (key === null) continue;
        const ids = owners.get(key);
        if (ids) ids.push(row.id);
        else owners.set(key, [row.id]);
      }
      for (const tally of found) {
        const problem = tally.change.problemOf!(row.data);
        if (problem === null) continue;
        tally.records++;
        if (tally.ids.length < IDS_SHOWN) tally.ids.push(row.id);
        if (tally.problems.length < PROBLEMS_KEPT) tally.problems.push(problem);
      }
    });
    // Ids are time-ordered: the oldest first, whatever order the store read them in.
    for (const tally of found) tally.ids.sort();
    broken.push(...found.filter((tally) => tally.records > 0));
    for (const { fields, owners } of holders) {
      for (const ids of owners.values()) if (ids.length > 1) clashes.push({ entity, fields, ids: ids.sort() });
    }
  }
  const unserved: Array<{ entity: string; live: number }> = [];
  for (const change of changes) {
    if (!change.removedEntity) continue;
    let live = 0;
    await store.forEachRow(change.entity, (row) => void (row.deleted || live++));
    unserved.push({ entity: change.entity, live });
  }
  return { compared: stored !== null, changes, broken, clashes, unserved };
}

/** Whether the start-up must refuse to serve. */
export function isRefused(check: SchemaCheck): boolean {
  return check.broken.length > 0 || check.clashes.length > 0;
}
