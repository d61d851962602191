// tabula export (docs/operating.md): an entity's records, or every entity's, on stdout, as the export
// route streams them (GET /api/entities/<E>/export), from a running server or a data folder.

import { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { pipeline } from "node:stream/promises";
import { EXPORT_FORMATS, isExportFormat } from "../records/export-format.ts";
import { UsageError, type Command, type CommandArgs } from "./command.ts";
import { apiFailure, openTarget, request, TARGET_HELP, TARGET_VALUES, type Target } from "./target.ts";

const HELP = `Usage: npx tabula-server export [--url URL --key K | --data DIR] [--entity E] [--format ndjson|json|csv] > FILE

Writes records to stdout, as they stood when the export began; writes go on meanwhile.

  --entity E       one entity                                                      [default every entity]
  --format F       ndjson: a record per line; json: an array; csv: a header of the  [default ndjson]
                   declared fields, then a row per record (with --entity only)
${TARGET_HELP}

Every entity at once: NDJSON lines are {"entity": "<E>", "record": {...}}, JSON is
{"<E>": [records...], ...}. npx tabula-server import loads one entity's file back (--keep-ids keeps ids).

Examples:
  npx tabula-server export --data ./data --entity Task > tasks.ndjson
  npx tabula-server export --url http://127.0.0.1:8080 --key "$TABULA_SECRET_KEY" --entity Task --format csv > tasks.csv`;

export const exportCommand: Command = {
  name: "export",
  help: HELP,
  values: [...TARGET_VALUES, "entity", "format"],
  switches: [],
  positionals: 0,
  async run(args: CommandArgs): Promise<number> {
    const format = args.values.get("format") ?? "ndjson";
    if (!isExportFormat(format)) throw new UsageError(`--format must be one of ${EXPORT_FORMATS.join(", ")} (got "${format}").`);
    const entity = args.values.get("entity");
    if (entity === undefined && format === "csv") throw new UsageError("A CSV file holds one entity: add --entity E.");
    const target = await openTarget(args, true);
    try {
      if (entity !== undefined) await copyOut(entity, await exportStream(target, entity, format));
      else if (format !== "csv") await exportAll(target, format);
    } finally {
      await target.close();
    }
    return 0;
  },
};

/** The export route's body; an error answer as one sentence. */
async function exportStream(target: Target, entity: string, format: string): Promise<Readable> {
  const url = `${target.url}/api/entities/${encodeURIComponent(entity)}/export?format=${format}`;
  const response = await request(url, { headers: { Authorization: `Bearer ${target.key}` } });
  if (response.status !== 200 || response.body === null) throw await apiFailure(response, `Exporting ${entity}`);
  return Readable.fromWeb(response.body as import("node:stream/web").ReadableStream);
}

/** Copies an export to stdout. A body cut short (the server stopped mid-way) fails the command, never ends a file quietly. */
async function copyOut(entity: string, ...streams: Array<NodeJS.ReadableStream | ((source: AsyncIterable<Buffer>) => AsyncGenerator<string | Buffer>)>): Promise<void> {
  try {
    await (pipeline as (...args: unknown[]) => Promise<void>)(...streams, process.stdout, { end: false });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EPIPE") throw new Error("stdout was closed before the export ended.");
    throw new Error(`The export of ${entity} was cut short (${(error as Error).message}); what was written is incomplete.`);
  }
}

async function exportAll(target: Target, format: "ndjson" | "json"): Promise<void> {
  const response = await request(`${target.url}/api/entities`, { headers: { Authorization: `Bearer ${target.key}` } });
  if (response.status !== 200) throw await apiFailure(response, "Listing the entities");
  const entities = ((await response.json()) as Array<{ name: string }>).map((declaration) => declaration.name);
  for (const [index, entity] of entities.entries()) {
    const body = await exportStream(target, entity, format);
    if (format === "json") {
      await write(`${index === 0 ? "{" : ",\n"}${JSON.stringify(entity)}: `);
      await copyOut(entity, body, withoutFinalNewline);
    } else {
      await copyOut(entity, body, wrapLines(`{"entity":${JSON.stringify(entity)},"record":`));
    }
  }
  if (format === "json") await write(entities.length === 0 ? "{}\n" : "}\n");
}

/** An entity's JSON array without the line end after it, which the object's comma follows. */
async function* withoutFinalNewline(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  let held: Buffer | null = null;
  for await (const chunk of source) {
    if (held) yield held;
    held = chunk;
  }
  if (held) yield held.at(-1) === 0x0a ? held.subarray(0, -1) : held;
}

/** NDJSON lines, each wrapped as prefix + line + "}". */
function wrapLines(prefix: string): (source: AsyncIterable<Buffer>) => AsyncGenerator<string> {
  return async function* (source) {
    let rest = "";
    const decoder = new StringDecoder("utf8"); // a character may straddle two chunks
    for await (const chunk of source) {
      const lines = (rest + decoder.write(chunk)).split("\n");
      rest = lines.pop()!;
      if (lines.length > 0) yield lines.map((line) => `${prefix}${line}}\n`).join("");
    }
    if (rest !== "") yield `${prefix}${rest}}\n`;
  };
}

function write(text: string): Promise<void> {
  return new Promise((resolve, reject) => process.stdout.write(text, (error) => (error ? reject(error) : resolve())));
}
