// tabula verify --data DIR (docs/operating.md): reads every file of a data folder (folder-check.ts),
// prints what it holds and any damage, and exits 1 on damage. It writes nothing and takes no lock,
// so it runs beside a server using the folder.

import { checkDataFolder, type Finding, type FolderReport } from "../store/file/folder-check.ts";
import type { Command, CommandArgs } from "./command.ts";
import { checkStoredFiles, FILES_FOLDER } from "../store/file/folder-files.ts";

const HELP = `Usage: npx tabula-server verify [--data DIR]

Reads every snapshot and log segment of a data folder, checks every line's frame and checksum,
the order of the log's entries and each snapshot's end marker, reads every uploaded file of
files/ back against its size and SHA-256, and prints the files, the records
per entity (live and deleted), the last log entry, and any damage with its file and byte offset.
It writes nothing and takes no lock, so it may run beside a server using the folder.

  --data DIR   the data folder                                  [TABULA_DATA, default ./data]

Exit status: 0 when the folder is sound, 1 on damage (or when it cannot be read). A torn tail
of the newest log segment (a write a crash cut short, never answered) is a warning, exit 0:
start-up cuts it off and loses no answered write. Damage with whole entries after it, in an
older segment, in a snapshot or in keys.json stops start-up, and is damage.`;

export const verifyCommand: Command = {
  name: "verify",
  help: HELP,
  values: ["data"],
  switches: [],
  positionals: 0,
  async run(args: CommandArgs): Promise<number> {
    const dir = args.values.get("data") ?? process.env.TABULA_DATA ?? "./data";
    const report = await checkDataFolder(dir);
    await addStoredFiles(dir, report);
    process.stdout.write(formatReport(dir, report));
    return report.damage.length > 0 ? 1 : 0;
  },
};

/** The uploaded files of files/ (docs/operating.md, "Files"), each read back against its size and SHA-256. */
async function addStoredFiles(dir: string, report: FolderReport): Promise<void> {
  const check = await checkStoredFiles(dir);
  if (check.files > 0 || check.damage.length > 0) report.files.push({ name: `${FILES_FOLDER}/`, bytes: check.bytes, holds: `${check.files} uploaded file${check.files === 1 ? "" : "s"}, each read back against its size and SHA-256` });
  report.damage.push(...check.damage);
  for (const name of check.leftovers) report.warnings.push({ file: `${FILES_FOLDER}/${name}`, why: "an upload or a delete a crash cut short, never answered; start-up removes it" });
}

export function formatReport(dir: string, report: FolderReport): string {
  const lines = [`tabula verify ${dir}`];
  for (const note of report.notes) lines.push(`note     ${note}`);
  lines.push("files");
  const nameWidth = Math.max(0, ...report.files.map((file) => file.name.length));
  const bytesWidth = Math.max(0, ...report.files.map((file) => count(file.bytes).length));
  for (const file of report.files) lines.push(`  ${file.name.padEnd(nameWidth)}  ${count(file.bytes).padStart(bytesWidth)} bytes  ${file.holds}`);
  lines.push("records");
  const entityWidth = Math.max(0, ...[...report.entities.keys()].map((entity) => entity.length));
  for (const [entity, { live, deleted }] of [...report.entities].sort(([a], [b]) => (a < b ? -1 : 1))) {
    lines.push(`  ${entity.padEnd(entityWidth)}  ${count(live)} live, ${count(deleted)} deleted`);
  }
  if (report.entities.size === 0) lines.push("  (none)");
  lines.push(`last seq ${report.lastSeq}`);
  for (const warning of report.warnings) lines.push(`warning  ${finding(warning)}`);
  for (const damage of report.damage) lines.push(`damage   ${finding(damage)}`);
  const warned = report.warnings.length > 0 ? ` (${report.warnings.length} warning${report.warnings.length === 1 ? "" : "s"})` : "";
  lines.push(
    report.damage.length === 0
      ? `sound${warned}`
      : `DAMAGED: ${report.damage.length} problem${report.damage.length === 1 ? "" : "s"}; restore the folder from a backup (tabula backup), or see "Backups" in docs/operating.md`,
  );
  return lines.join("\n") + "\n";
}

function finding({ file, offset, why }: Finding): string {
  return `${file}${offset === undefined ? "" : ` at byte ${offset}`}: ${why}`;
}

function count(n: number): string {
  return n.toLocaleString("en-US");
}
