// tabula backup (docs/operating.md): a consistent copy of a data folder that `tabula --data` starts from.
// From the folder itself (locked when no server holds it, read beside the server when one does),
// or with --url by asking the running server (POST /api/admin/backup), which writes the copy on
// its own machine. The copying is store/file/'s; this module chooses how and prints the outcome.

import { setPriority } from "node:os";
import { isAbsolute, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { stat } from "node:fs/promises";
import { copyStoredFiles } from "../store/file/folder-files.ts";
import { checkBackupTarget, releaseFiles, writeBackup, type BackupPoint, type BackupSummary } from "../store/file/backup.ts";
import { checkDataFolder } from "../store/file/folder-check.ts";
import { holdFolderPoint } from "../store/file/folder-point.ts";
import { acquireLock, DataFolderError, findLockHolder } from "../store/file/lock.ts";
import { UsageError, type Command, type CommandArgs } from "./command.ts";

/** nice 19. */
const LOWEST_PRIORITY = 19;

const HELP = `Usage: npx tabula-server backup --to DIR2 [--data DIR]
       npx tabula-server backup --to /abs/DIR2 --url URL [--key K]

Copies a data folder into DIR2 (a new or empty folder): the newest snapshot, the log up to its
last whole entry, and keys.json, each fsynced; written into a temporary folder beside DIR2 and
renamed into place at the end, so a half-made backup never bears DIR2's name. Writes go on
meanwhile: every write answered before the backup began is in the copy. Start a server on the
copy with npx tabula-server --data DIR2. The copy is read back and checked (as verify does).

  --to DIR2    where the copy goes; must not exist, or be an empty folder
  --data DIR   the data folder to copy                           [TABULA_DATA, default ./data]
               With no server using it, it is locked while copied; beside a running server it
               is copied without the lock (the log only grows, and files a compaction deletes
               meanwhile stay readable), up to the server's last whole log entry. It runs at
               the lowest CPU priority (nice 19).
  --url URL    ask the running server at URL to make the backup (POST /api/admin/backup):
               the SERVER writes DIR2, on ITS machine and file system, so give an absolute path
  --key K      a secret key of that server                       [TABULA_SECRET_KEY]

Exit status 0 once the copy is whole and synced, 1 otherwise (one line saying why).
Nightly from cron (% must be written \\% in a crontab):
  15 3 * * * npx tabula-server backup --url http://127.0.0.1:8080 --key "$TABULA_SECRET_KEY" --to /var/backups/tabula/$(date +\\%F)`;

export const backupCommand: Command = {
  name: "backup",
  help: HELP,
  values: ["to", "data", "url", "key"],
  switches: [],
  positionals: 0,
  async run(args: CommandArgs): Promise<number> {
    const to = args.values.get("to");
    if (to === undefined || to === "") throw new UsageError("--to DIR2 is needed: the new (or empty) folder the backup goes to.");
    const url = args.values.get("url");
    if (url !== undefined && args.values.has("data")) throw new UsageError("Give --data (copy a folder) or --url (ask a running server), not both.");
    const summary = url === undefined ? await backupFolder(args.values.get("data") ?? process.env.TABULA_DATA ?? "./data", to) : await backupByServer(url, args.values.get("key") ?? process.env.TABULA_SECRET_KEY, to);
    process.stdout.write(formatSummary(summary));
    return 0;
  },
};

async function backupFolder(dir: string, to: string): Promise<BackupSummary> {
  const startedAt = performance.now();
  const isFolder = await stat(dir).then((info) => info.isDirectory(), () => false);
  if (!isFolder) throw new Error(`There is no data folder ${dir}; give the folder a server runs with (--data).`);
  const target = resolve(to);
  await checkBackupTarget(target);
  const holder = await findLockHolder(dir);
  if (holder !== undefined) {
    process.stderr.write(`note: a server (pid ${holder}) is using ${dir}; copying beside it, up to its last whole log entry (or let it make the backup: --url URL --key K)\n`);
  }
  // A copy is background work: at the lowest CPU priority, a server on the same machine keeps the
  // CPU (reading the copy back replays all of it; on 2 cores it took writes' p99 from 15 to 240 ms).
  try {
    setPriority(LOWEST_PRIORITY);
  } catch {
    // Lowering one's own priority is allowed to anyone; should it fail anyway, the copy runs as it is.
  }
  const lock = holder === undefined ? await acquireLock(dir).catch(unlessReadOnly) : null;
  const { point, bytes, extraNames } = await copyFolder(dir, target, holder !== undefined).finally(() => lock?.release());
  // Read back as a server would start from it: proof that it is whole, and its records.
  const check = await checkDataFolder(target);
  const damage = check.damage[0];
  if (damage) throw new Error(`The backup in ${target} was written but does not read back whole (${damage.file}: ${damage.why}); keep the original and run tabula verify on it.`);
  const records = Object.fromEntries([...check.entities].map(([entity, { live }]) => [entity, live]));
  const files = [...point.files.map((file) => file.name), ...(point.keysJson ? ["keys.json"] : []), ...extraNames];
  return { to: target, seq: point.seq, bytes, files, records, ms: Math.round(performance.now() - startedAt) };
}

/**
 * A folder this process may not write in (read-only media, another user's) cannot take the lock,
 * and needs none: no server was found holding it, and none of this user's can start there.
 */
function unlessReadOnly(error: unknown): null {
  if (!(error instanceof DataFolderError && error.problem === "not_writable")) throw error;
  return null;
}

async function copyFolder(dir: string, target: string, isLive: boolean): Promise<{ point: BackupPoint; bytes: number; extraNames: readonly string[] }> {
  const point = await holdFolderPoint(dir, isLive);
  try {
    if (point.files.length === 0 && !point.keysJson) throw new Error(`${dir} holds no tabula data (no snapshot-*, log-* or keys.json); is it the folder given to --data?`);
    const { bytes, extraNames } = await writeBackup(point, target, (into) => copyStoredFiles(dir, into));
    return { point, bytes, extraNames };
  } finally {
    releaseFiles(point.files);
  }
}

async function backupByServer(url: string, apiKey: string | undefined, to: string): Promise<BackupSummary> {
  if (!apiKey) throw new UsageError("--key K is needed with --url: a secret key of that server (or set TABULA_SECRET_KEY).");
  if (!isAbsolute(to)) throw new UsageError(`--to must be an absolute path with --url (got "${to}"): the server writes it on its own machine, where a relative path would mean its own working folder.`);
  let answer: Response;
  try {
    answer = await fetch(new URL("/api/admin/backup", url), { method: "POST", headers: { "X-Api-Key": apiKey, "Content-Type": "application/json" }, body: JSON.stringify({ to }) });
  } catch (error) {
    throw new Error(`Cannot reach ${url}: ${((error as Error).cause as Error | undefined)?.message ?? (error as Error).message}. Is the server running there?`);
  }
  const text = await answer.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    // Not tabula answering (a proxy's error page): its status says enough.
    throw new Error(`${url} answered ${answer.status} with something other than JSON; is it a tabula server?`);
  }
  if (!answer.ok) {
    const error = (body as { error?: { code?: string; message?: string } }).error;
    throw new Error(`the server answered ${answer.status} ${error?.code ?? ""}: ${error?.message ?? text}`);
  }
  return body as BackupSummary;
}

function formatSummary(summary: BackupSummary): string {
  const lines = [`backed up to ${summary.to} in ${(summary.ms / 1000).toFixed(2)} s: the log up to seq ${summary.seq}, ${mib(summary.bytes)} in ${summary.files.length} file${summary.files.length === 1 ? "" : "s"} (${summary.files.join(", ")})`];
  const entities = Object.entries(summary.records).sort(([a], [b]) => (a < b ? -1 : 1));
  const width = Math.max(0, ...entities.map(([entity]) => entity.length));
  for (const [entity, live] of entities) lines.push(`  ${entity.padEnd(width)}  ${live.toLocaleString("en-US")} records`);
  return lines.join("\n") + "\n";
}

function mib(bytes: number): string {
  return bytes < 1048576 ? `${Math.ceil(bytes / 1024)} KiB` : `${(bytes / 1048576).toFixed(1)} MiB`;
}
