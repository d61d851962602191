// tabula import (docs/operating.md): NDJSON or a JSON array into one entity, as all-or-nothing batches
// of up to 5,000 records through the bulk routes, so every record is validated as a create is.
// A refused batch stops the import naming the file's line, the field and the API's words; the
// batches before it stay stored, and the summary says how far it got. Each batch sent to a running
// server carries an Idempotency-Key, so a batch retried after a lost answer is never stored twice.

import { createReadStream, statSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { MAX_BATCH_RECORDS } from "../records/batch.ts";
import { isPlatformField } from "../schema/fields.ts";
import { isPlainObject } from "../schema/load.ts";
import { LinesError, UsageError, type Command, type CommandArgs } from "./command.ts";
import { readRecords } from "./record-reader.ts";
import { RecordSplitter, type SourceRecord } from "../records/record-splitter.ts";
import { apiFailure, openTarget, request, TARGET_HELP, TARGET_VALUES, type Target } from "./target.ts";

/** Under the server's default --max-body (10 MiB), with room for the brackets and commas. */
const MAX_BATCH_BYTES = 8 * 1024 * 1024;
/** Attempts of one batch when the server is away, busy (503) or limiting (429). */
const MAX_ATTEMPTS = 5;

const HELP = `Usage: npx tabula-server import FILE --entity E [--url URL --key K | --data DIR] [--keep-ids]

Loads FILE (or - for stdin) into entity E: NDJSON (a record per line) or one JSON array.
Records are validated as a create validates them and stored in batches of up to ${MAX_BATCH_RECORDS.toLocaleString("en-US")},
each all or nothing. On a bad record the import stops, naming its line, the field and what is
wrong; nothing of that batch is stored, and the batches before it are.

  --entity E       the entity the records belong to
  --keep-ids       keep each record's id, created_date, updated_date and created_by_id (needs a
                   secret key; an id already stored stops the import). Without it they are left
                   out and the records get new ones.
${TARGET_HELP}

Examples:
  npx tabula-server export --data ./data --entity Task > tasks.ndjson
  npx tabula-server import tasks.ndjson --entity Task --data ./copy --keep-ids
  npx tabula-server import people.json --entity Person --url http://127.0.0.1:8080 --key "$TABULA_SECRET_KEY"`;

export const importCommand: Command = {
  name: "import",
  help: HELP,
  values: [...TARGET_VALUES, "entity"],
  switches: ["keep-ids"],
  positionals: 1,
  async run(args: CommandArgs): Promise<number> {
    const file = args.positionals[0];
    if (file === undefined) throw new UsageError("Name the file to import: tabula import FILE --entity E (- reads stdin).");
    const entity = args.values.get("entity");
    if (entity === undefined) throw new UsageError("--entity E names the entity the records belong to.");
    const isStdin = file === "-";
    if (!isStdin) checkReadable(file);
    const target = await openTarget(args, false);
    try {
      await checkEntity(target, entity);
      const progress = process.stderr.isTTY ? new Progress(isStdin ? null : await countRecords(file)) : null;
      const importer = new Importer(target, entity, args.switches.has("keep-ids"), progress);
      const source = isStdin ? process.stdin.setEncoding("utf8") : createReadStream(file, { encoding: "utf8" });
      const summary = await importer.run(readRecords(source as AsyncIterable<string>));
      // The records are in the log, which the next start would replay whole: folded into a snapshot,
      // they load in a fraction of that time (docs/operating.md, "Export and import").
      await target.compact();
      process.stdout.write(summary + "\n");
    } finally {
      await target.close();
    }
    return 0;
  },
};

function checkReadable(file: string): void {
  let isFile: boolean;
  try {
    isFile = statSync(file).isFile();
  } catch (error) {
    throw new UsageError(`Cannot read ${file} (${(error as NodeJS.ErrnoException).code}); check the path.`);
  }
  if (!isFile) throw new UsageError(`${file} is not a file.`);
}

/** The entity exists and the key may read it: said before a line of the file is read. */
async function checkEntity(target: Target, entity: string): Promise<void> {
  const response = await request(`${target.url}/api/entities/${encodeURIComponent(entity)}/count`, { headers: { Authorization: `Bearer ${target.key}` } });
  if (response.status !== 200) throw await apiFailure(response, `Importing into ${entity}`);
}

/** The file's records, counted without parsing them, for the progress line's total. */
async function countRecords(file: string): Promise<number> {
  const splitter = new RecordSplitter();
  let count = 0;
  try {
    for await (const chunk of createReadStream(file, { encoding: "utf8" })) count += splitter.push(chunk as string).length;
    count += splitter.end().length;
  } catch {
    // A malformed file is reported, by line, when the import reaches the fault.
  }
  return count;
}

interface Pending extends SourceRecord {
  readonly json: string;
}

class Importer {
  private readonly runId = randomBytes(6).toString("hex");
  private batch: Pending[] = [];
  private batchBytes = 0;
  private batches = 0;
  private storedBatches = 0;
  private stored = 0;
  private platformFieldsLeftOut = 0;
  private readonly started = performance.now();

  constructor(
    private readonly target: Target,
    private readonly entity: string,
    private readonly keepIds: boolean,
    private readonly progress: Progress | null,
  ) {}

  async run(records: AsyncIterable<SourceRecord & { value: unknown }>): Promise<string> {
    try {
      for await (const record of records) {
        const json = this.prepare(record);
        if (this.batch.length === MAX_BATCH_RECORDS || (this.batch.length > 0 && this.batchBytes + json.length > MAX_BATCH_BYTES)) await this.send();
        this.batch.push({ line: record.line, text: record.text, json });
        this.batchBytes += json.length + 1;
      }
      if (this.batch.length > 0) await this.send();
    } catch (error) {
      this.progress?.clear();
      const message = `${(error as Error).message} ${this.sofar()}`;
      throw error instanceof LinesError ? new LinesError(message) : new Error(message);
    }
    this.progress?.clear();
    const seconds = (performance.now() - this.started) / 1000;
    const rate = seconds > 0 ? Math.round(this.stored / seconds) : this.stored;
    const leftOut = this.platformFieldsLeftOut > 0 ? ` ${this.platformFieldsLeftOut.toLocaleString("en-US")} records carried ids or timestamps, left out: they got new ones (--keep-ids keeps them).` : "";
    return `Imported ${count(this.stored, "record")} into ${this.entity} in ${seconds.toFixed(1)} s (${rate.toLocaleString("en-US")} records/s, ${count(this.storedBatches, "batch", "batches")}).${leftOut}`;
  }

  /** The record's JSON as it is sent: without its platform fields unless --keep-ids. */
  private prepare(record: SourceRecord & { value: unknown }): string {
    if (!isPlainObject(record.value)) throw new Error(`Line ${record.line}: a record must be a JSON object (got ${record.text.slice(0, 40)}).`);
    if (this.keepIds) return record.text;
    const value = record.value;
    if (!Object.keys(value).some(isPlatformField)) return record.text;
    this.platformFieldsLeftOut++;
    const kept: Record<string, unknown> = {};
    for (const [name, field] of Object.entries(value)) if (!isPlatformField(name)) kept[name] = field;
    return JSON.stringify(kept);
  }

  private async send(): Promise<void> {
    const batch = this.batch;
    this.batch = [];
    this.batchBytes = 0;
    this.batches++;
    const route = this.keepIds ? "import" : "bulk";
    const response = await this.post(`${this.target.url}/api/entities/${encodeURIComponent(this.entity)}/${route}`, `[${batch.map((record) => record.json).join(",")}]`);
    if (response.status !== 201) throw await this.refusal(response, batch);
    await response.body?.cancel();
    this.stored += batch.length;
    this.storedBatches++;
    this.progress?.show(this.stored);
  }

  /** POSTs one batch, again (with the same Idempotency-Key) while the server is away or busy. */
  private async post(url: string, body: string): Promise<Response> {
    // A server this command opened (--data) answers over loopback from this same process: no answer
    // is lost on the way, and the idempotent answers, each a whole batch's records again, would
    // double what the folder's snapshot holds and what the next start reads.
    const headers: Record<string, string> = { Authorization: `Bearer ${this.target.key}`, "Content-Type": "application/json" };
    if (!this.target.isOpenedHere) headers["Idempotency-Key"] = `import-${this.runId}-${this.batches}`;
    for (let attempt = 1; ; attempt++) {
      let response: Response | null = null;
      let failure: Error | null = null;
      try {
        response = await request(url, { method: "POST", headers, body });
      } catch (error) {
        failure = error as Error;
      }
      const isBusy = response !== null && (response.status === 503 || response.status === 429);
      if (response !== null && !isBusy) return response;
      if (attempt === MAX_ATTEMPTS) {
        if (response !== null) return response;
        throw failure!;
      }
      const retryAfter = Number(response?.headers.get("retry-after"));
      await response?.body?.cancel();
      await new Promise((resolve) => setTimeout(resolve, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : 500 * attempt));
    }
  }

  /** A refused batch as one sentence: the line of the record at fault, and the API's words. */
  private async refusal(response: Response, batch: readonly Pending[]): Promise<Error> {
    const text = await response.text().catch(() => "");
    let error: { message?: string; details?: { index?: number; errors?: Array<{ message?: unknown }> } } | undefined;
    try {
      error = (JSON.parse(text) as { error?: typeof error }).error;
    } catch {
      // Not the API's JSON.
    }
    const span = `lines ${batch[0]!.line}–${batch[batch.length - 1]!.line}`;
    if (error?.message === undefined) return new Error(`The server answered ${response.status} to the batch of ${span}${text ? `: ${text.slice(0, 200)}` : ""}; nothing of it was stored.`);
    const index = error.details?.index;
    const at = typeof index === "number" && batch[index] ? `Line ${batch[index]!.line}: ` : "";
    // The API's words, less what this sentence says itself: which record, and that nothing was stored.
    const words = (message: string) =>
      message
        .replace(/^Record \d+ of the batch: /, "")
        .replace(/;\s*nothing was stored\.?\s*/i, ". ")
        .replace(/\s*(Fields?|Field) [^.]* mending too: details\.errors lists each\.?/, "")
        .replace(/[;.\s]+$/, "");
    // A record with several bad fields: each on a line of its own (a terminal shows no details.errors).
    const each = (error.details?.errors ?? []).map((problem) => (typeof problem.message === "string" ? words(problem.message) : "")).filter((line) => line !== "");
    if (each.length > 1) return new LinesError(`${at}${each.length} fields need mending:\n${each.map((line) => `  - ${line}.`).join("\n")}\nNothing of the batch of ${span} was stored.`);
    return new Error(`${at}${words(error.message)}. Nothing of the batch of ${span} was stored.`);
  }

  private sofar(): string {
    return this.stored === 0 ? "No record was imported." : `The ${count(this.stored, "record")} before it were imported (${count(this.storedBatches, "batch", "batches")}).`;
  }
}

function count(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;
}

/** The line a terminal shows while an import runs: done/total and records per second. */
export class Progress {
  private readonly started = performance.now();

  constructor(
    private readonly total: number | null,
    private readonly out: NodeJS.WritableStream = process.stderr,
  ) {}

  show(done: number): void {
    this.out.write(`\r${formatProgress(done, this.total, (performance.now() - this.started) / 1000)}\x1b[K`);
  }

  clear(): void {
    this.out.write("\r\x1b[K");
  }
}

export function formatProgress(done: number, total: number | null, seconds: number): string {
  const rate = seconds > 0 ? Math.round(done / seconds) : 0;
  const of = total === null ? "" : ` of ${total.toLocaleString("en-US")}`;
  const percent = total ? ` (${Math.floor((done / total) * 100)}%)` : "";
  return `imported ${done.toLocaleString("en-US")}${of} records${percent}, ${rate.toLocaleString("en-US")} records/s`;
}
