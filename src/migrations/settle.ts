// What start-up does before it serves (docs/schema-changes.md): runs the pending migrations, then
// checks the schema it was given against the declarations the store kept and the records it holds,
// and keeps the new declarations when every record fits. All of it under the store's "schema"
// lock, so that of several processes sharing a database one does the work and the others find it
// done. `tabula-server migrate` and `schema diff` run the same steps, or show what they would do.

import { performance } from "node:perf_hooks";
import type { Schema } from "../schema/load.ts";
import type { BatchWriter, MetadataStore } from "../store/store.ts";
import { checkSchema, isRefused, type SchemaCheck } from "./check.ts";
import { declarationsOf, SCHEMA_META_KEY, schemaOfStored } from "../schema/changes/declarations.ts";
import { appliedLines, refusalText } from "./report.ts";
import { MigrationError } from "./migration-error.ts";
import { readMigrations, type Migration } from "./migration-file.ts";
import { MigrationPlanner, MIGRATIONS_META_KEY, recordedMigrations, type MigrationPlan, type RecordedMigration } from "./plan.ts";

/** Work longer than this gets a line saying what is going on. */
const PROGRESS_AFTER_MS = 1000;

/** The start-up refuses: the schema or a migration does not fit the records. Its message says what to do. */
export class SchemaRefusedError extends Error {
  override name = "SchemaRefusedError";
}

export interface SettleOptions {
  readonly migrationsDir: string | null;
  /** Plan and check, write nothing: migrate --dry-run and schema diff. */
  readonly dryRun?: boolean;
  /** Lines for whoever watches the start-up (a migration taking longer than a second). */
  readonly progress?: (line: string) => void;
}

export interface Settled {
  /** The migrations that ran (or would run), each with what its steps did. */
  readonly migrations: readonly MigrationPlan[];
  /** The check of the schema against the records, after the migrations. */
  readonly check: SchemaCheck;
  /** One banner line per migration run and per schema change applied. */
  readonly lines: readonly string[];
}

export async function settleSchema(store: MetadataStore & BatchWriter, schema: Schema, options: SettleOptions): Promise<Settled> {
  const migrations = readMigrations(options.migrationsDir);
  return store.exclusively("schema", async () => {
    const recorded = recordedMigrations(await store.meta(MIGRATIONS_META_KEY));
    checkRecordedUnchanged(recorded, migrations);
    const done = new Set(recorded.map((entry) => entry.name));
    const planner = new MigrationPlanner(store, recorded);
    const plans: MigrationPlan[] = [];
    const lines: string[] = [];
    for (const migration of migrations.filter((candidate) => !done.has(candidate.name))) {
      const started = performance.now();
      const slow = options.progress && setTimeout(() => options.progress!(`migration ${migration.name}: running…`), PROGRESS_AFTER_MS);
      try {
        const plan = await planner.plan(migration);
        plans.push(plan);
        if (plan.batch === null) {
          if (options.dryRun) break;
          throw new SchemaRefusedError(migrationRefusal(plan));
        }
        if (!options.dryRun) await store.commit(plan.batch);
        const ms = performance.now() - started;
        lines.push(`migration ${migration.name}: ${plan.records.toLocaleString("en-US")} ${plan.records === 1 ? "record" : "records"} changed${options.dryRun ? " (dry run)" : ""}${ms >= PROGRESS_AFTER_MS ? ` in ${(ms / 1000).toFixed(1)} s` : ""}`);
      } finally {
        if (slow) clearTimeout(slow);
      }
    }
    const storedValue = await store.meta(SCHEMA_META_KEY);
    const check = await checkSchema(options.dryRun ? planner : store, schemaOfStored(storedValue), schema);
    if (!options.dryRun && isRefused(check)) throw new SchemaRefusedError(refusalText(check, options.migrationsDir));
    const declarations = declarationsOf(schema);
    if (!options.dryRun && !isRefused(check) && JSON.stringify(storedValue) !== JSON.stringify(declarations)) {
      await store.commit({ puts: [], meta: [{ key: SCHEMA_META_KEY, value: declarations }] });
    }
    lines.push(...appliedLines(check));
    return { migrations: plans, check, lines };
  });
}

/** A migration that ran is never run again: its file changing means what ran is not what it says. */
function checkRecordedUnchanged(recorded: readonly RecordedMigration[], migrations: readonly Migration[]): void {
  for (const migration of migrations) {
    const entry = recorded.find((candidate) => candidate.name === migration.name);
    if (entry && entry.checksum !== migration.checksum) {
      throw new MigrationError(
        `${migration.path} changed since it ran on ${entry.ran_at} (checksum ${entry.checksum.slice(0, 12)}…, now ${migration.checksum.slice(0, 12)}…). ` +
          `A migration runs once: put back the file as it was, and write further changes as a new migration with the next number.`,
      );
    }
  }
}

/** Why a migration could not run: each step that refused records, how many and which. */
export function migrationRefusal(plan: MigrationPlan): string {
  const lines = [`Migration ${plan.migration.path} was not run: a step refuses stored records, and a migration runs all or nothing, so nothing was written.`];
  for (const outcome of plan.outcomes) {
    if (outcome.refused === 0) continue;
    const ids = outcome.refused > outcome.refusedIds.length ? `${outcome.refusedIds.join(", ")} and ${outcome.refused - outcome.refusedIds.length} more` : outcome.refusedIds.join(", ");
    lines.push(`  ${outcome.written}: refuses ${outcome.refused} ${outcome.refused === 1 ? "record" : "records"} (${ids}): ${outcome.why}.`);
  }
  return lines.join("\n");
}
