// How a schema check and migrations are told to the operator (docs/schema-changes.md): banner
// lines for changes that applied, and a refusal that names, per change, how many records break it,
// some of their ids and the migration step that would settle them.

import type { SchemaCheck } from "./check.ts";
import { duplicatesMessage } from "../store/store.ts";
import { nextMigrationNumber } from "./migration-file.ts";

/** The banner's lines for a check that passed: one per change, none when nothing changed. */
export function appliedLines(check: SchemaCheck): string[] {
  if (!check.compared) return [];
  return check.changes.map((change) => {
    const unserved = check.unserved.find((entry) => entry.entity === change.entity);
    if (!change.removedEntity || !unserved || unserved.live === 0) return change.words;
    return `${change.words} (no longer declared: its ${unserved.live === 1 ? "1 live record is" : `${unserved.live.toLocaleString("en-US")} live records are`} kept, not served)`;
  });
}

/** Why the start-up refuses, in full: one paragraph per broken change, then what to do. */
export function refusalText(check: SchemaCheck, migrationsDir: string | null, afterRefusedMigration = false): string {
  const lines: string[] = [
    check.compared
      ? "The schema changed in ways the stored records break, so tabula will not serve it; nothing was written."
      : "Stored records do not fit the schema, so tabula will not serve it; nothing was written.",
  ];
  const steps: Array<Record<string, unknown>> = [];
  for (const { change, records, ids, problems } of check.broken) {
    // Right after a migration refused these very records, "else": "refuse" would refuse them again.
    const suggested = change.step?.(problems) ?? null;
    const step = afterRefusedMigration && suggested?.else === "refuse" ? { ...suggested, else: "null" } : suggested;
    if (step) steps.push(step);
    const how = step ? ` Step: ${JSON.stringify(step)}${change.advice ? ` (${change.advice})` : ""}` : change.advice ? ` ${change.advice}` : " Change those records (PATCH), or the declaration back.";
    const words = change.breakWords?.(problems) ?? "break it";
    lines.push(`  ${change.words}: ${count(records)} ${records === 1 ? singular(words) : words} (${idsOf(ids, records)}).${how}`);
  }
  const grouped = new Map<string, string[]>();
  for (const clash of check.clashes) {
    const key = `${clash.entity}\n${JSON.stringify(clash.fields)}`;
    grouped.set(key, [...(grouped.get(key) ?? []), ...clash.ids]);
  }
  for (const [key, ids] of grouped) {
    const [entity, fields] = key.split("\n") as [string, string];
    lines.push(`  ${duplicatesMessage(entity, JSON.parse(fields) as string[], ids)}`);
  }
  if (steps.length > 0) {
    const where = migrationsDir ?? "migrations";
    const cleared = steps.some((step) => step.else === "null") ? ` ("else": "null" clears the values that do not convert; "else": <value> sets one instead)` : "";
    lines.push(
      `Put the steps in a migration file, ${where}/${nextMigrationNumber(migrationsDir)}-<what-it-does>.json, as {"steps": ${JSON.stringify(steps)}}${cleared},`,
      `then see what it would change with npx tabula-server migrate --dry-run, and start again: pending migrations run before the check.`,
    );
  }
  return lines.join("\n");
}

/** "hold a number; lack it" said of one record. */
function singular(words: string): string {
  return words.replace(/(^|; )(hold|lack|break)\b/g, "$1$2s");
}

function count(records: number): string {
  return records === 1 ? "1 record" : `${records.toLocaleString("en-US")} records`;
}

function idsOf(ids: readonly string[], records: number): string {
  return records > ids.length ? `${ids.join(", ")} and ${records - ids.length} more` : ids.join(", ");
}
