// tabula-server migrate [--dry-run] and tabula-server schema diff (docs/schema-changes.md): the
// start-up's schema work, run on a store without serving it. migrate runs the pending migrations
// and keeps the schema when the records fit it; --dry-run and schema diff show, per step, the
// records it would change and those it would refuse, and what the schema check would say, and
// write nothing.

import { existsSync } from "node:fs";
import { loadSchemaPath } from "../schema/load.ts";
import { isRefused } from "../migrations/check.ts";
import { appliedLines, refusalText } from "../migrations/report.ts";
import { settleSchema, SchemaRefusedError, type Settled } from "../migrations/settle.ts";
import { migrationsDirOf } from "../migrations/migration-file.ts";
import type { MigrationPlan } from "../migrations/plan.ts";
import { openStore, parseStoreUrl, type StoreLocation } from "../store/open-store.ts";
import { DataFolderError } from "../store/file/lock.ts";
import { UsageError, type Command, type CommandArgs } from "./command.ts";
import { defaultSchemaPath } from "../base44-project.ts";

const STORE_HELP = `  --schema PATH       the schema to serve                                  [TABULA_SCHEMA, default ./entities or base44/'s]
  --migrations DIR    the migrations                  [TABULA_MIGRATIONS, default migrations/ beside the schema]
  --data DIR          the data folder (no server may be using it)          [TABULA_DATA, default ./data]
  --store URL         instead of --data: file:DIR or postgres://...         [TABULA_STORE]
  --pg-schema NAME    the PostgreSQL schema of tabula's tables              [TABULA_PG_SCHEMA, default tabula]`;

const MIGRATE_HELP = `Usage: npx tabula-server migrate [--dry-run] [--schema PATH] [--data DIR | --store URL]

Runs the migrations not yet run on the store, each all or nothing, in the order of their numbers,
then checks the schema against the records, as a server's start-up does, and exits. With
--dry-run it writes nothing and prints, per step, the records it would change and those it would
refuse (with their ids), and what the schema check would then say.

  --dry-run           change nothing; show what would be done
${STORE_HELP}

Exit status: 0 when the migrations ran (or would run) and the schema fits the records; 1 when a
migration refuses records or the schema still does not fit (the message says what to do).`;

const DIFF_HELP = `Usage: npx tabula-server schema diff [--schema PATH] [--data DIR | --store URL]

Prints what a start-up would do to the store's schema, writing nothing: the pending migrations
and what each step would change, then each change from the declarations the store last served
to those in --schema, checked against the stored records: the changes that apply, or those that
records break, how many records, some of their ids, and the migration step that would settle them.

${STORE_HELP}

Exit status: 0 when a start-up would serve the schema, 1 when it would refuse.`;

export const migrateCommand: Command = {
  name: "migrate",
  help: MIGRATE_HELP,
  values: ["schema", "migrations", "data", "store", "pg-schema"],
  switches: ["dry-run"],
  positionals: 0,
  run: (args) => settleCommand(args, args.switches.has("dry-run"), "migrate"),
};

export const schemaCommand: Command = {
  name: "schema",
  help: DIFF_HELP,
  values: ["schema", "migrations", "data", "store", "pg-schema"],
  switches: [],
  positionals: 1,
  run(args) {
    if (args.positionals[0] !== "diff") throw new UsageError(`schema takes one command, diff (got ${args.positionals[0] === undefined ? "none" : `"${args.positionals[0]}"`}): npx tabula-server schema diff.`);
    return settleCommand(args, true, "schema diff");
  },
};

async function settleCommand(args: CommandArgs, dryRun: boolean, what: string, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const schemaPath = args.values.get("schema") ?? env.TABULA_SCHEMA ?? defaultSchemaPath();
  const schema = loadSchemaPath(schemaPath);
  const migrationsDir = migrationsDirOf(args.values.get("migrations") ?? env.TABULA_MIGRATIONS, schemaPath);
  const location = locationOf(args, env);
  let opened: Awaited<ReturnType<typeof openStore>>;
  try {
    opened = await openStore(location, { schema, valueIndexed: new Map(), pgSchema: args.values.get("pg-schema") ?? env.TABULA_PG_SCHEMA, changesKeep: 100_000, warn: () => {} });
  } catch (error) {
    if (error instanceof DataFolderError) throw new Error(error.namedBy(location.kind === "file" ? `--data ${location.dir}` : "--store"));
    throw error;
  }
  try {
    let settled: Settled;
    try {
      settled = await settleSchema(opened.store, schema, { migrationsDir, dryRun, progress: (line) => process.stderr.write(`${line}\n`) });
    } catch (error) {
      if (!(error instanceof SchemaRefusedError)) throw error;
      process.stdout.write(`${error.message}\n`);
      return 1;
    }
    process.stdout.write(reportOf(settled, dryRun, migrationsDir, what));
    return isRefused(settled.check) || settled.migrations.some((plan) => plan.batch === null) ? 1 : 0;
  } finally {
    await opened.store.close();
  }
}

function locationOf(args: CommandArgs, env: NodeJS.ProcessEnv): StoreLocation {
  if (args.values.has("data") && args.values.has("store")) throw new UsageError("Give --data DIR or --store URL, not both.");
  const store = args.values.get("store") ?? (args.values.has("data") ? undefined : env.TABULA_STORE);
  if (store !== undefined) return parseStoreUrl(store, args.values.has("store") ? "--store" : "TABULA_STORE");
  const dir = args.values.get("data") ?? env.TABULA_DATA ?? "./data";
  if (!existsSync(dir)) throw new UsageError(`There is no data folder ${dir}; give --data DIR (a folder a server wrote) or --store URL.`);
  return { kind: "file", dir };
}

function reportOf(settled: Settled, dryRun: boolean, migrationsDir: string | null, what: string): string {
  const lines: string[] = [];
  if (settled.migrations.length === 0) lines.push(`migrations: none pending${migrationsDir === null ? " (no migrations folder)" : ` in ${migrationsDir}`}`);
  for (const plan of settled.migrations) lines.push(...planLines(plan, dryRun));
  if (isRefused(settled.check)) {
    lines.push(refusalText(settled.check, migrationsDir, settled.migrations.some((plan) => plan.batch === null)));
  } else {
    const applied = appliedLines(settled.check);
    const verb = dryRun ? "would apply" : "applied";
    lines.push(applied.length === 0 ? `schema: ${settled.check.compared ? "unchanged" : "every stored record fits it"}` : `schema: ${applied.length} ${applied.length === 1 ? "change" : "changes"} ${verb}, every stored record fits:`);
    for (const line of applied) lines.push(`  ${line}`);
  }
  if (dryRun && what === "migrate") lines.push("dry run: nothing was written");
  return lines.join("\n") + "\n";
}

function planLines(plan: MigrationPlan, dryRun: boolean): string[] {
  const refused = plan.batch === null;
  const head = refused
    ? `migration ${plan.migration.name}: refused, nothing ${dryRun ? "would be" : "was"} written`
    : `migration ${plan.migration.name}: ${plan.records.toLocaleString("en-US")} ${plan.records === 1 ? "record" : "records"} ${dryRun ? "would change" : "changed"}`;
  const lines = [head];
  for (const outcome of plan.outcomes) {
    let line = `  ${outcome.written}: ${outcome.changed.toLocaleString("en-US")} ${dryRun ? "would change" : "changed"}`;
    if (outcome.refused > 0) {
      const ids = outcome.refused > outcome.refusedIds.length ? `${outcome.refusedIds.join(", ")} and ${outcome.refused - outcome.refusedIds.length} more` : outcome.refusedIds.join(", ");
      line += `, ${outcome.refused.toLocaleString("en-US")} refused (${ids}): ${outcome.why}`;
    }
    lines.push(line);
  }
  return lines;
}
