// tabula-server init [--schema DIR]: the first step in an empty folder. Writes entities/ with one
// example entity whose notes ($comment, description) say how to change it, and prints the next
// three commands. It never overwrites: an existing folder or file is left as it is.

import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Task from "../../examples/entities/Task.json" with { type: "json" };
import { UsageError, type Command, type CommandArgs } from "./command.ts";

/** What the example's fields show of the format. */
const FIELD_NOTES: Readonly<Record<string, string>> = {
  title: 'Required (see "required" below).',
  status: "One of the enum's values; todo when left out.",
  due_date: "YYYY-MM-DD; date-time, email and uri are the other formats.",
  meta: "Any JSON object.",
};

const HELP = `Usage: npx tabula-server init [--schema DIR]

Writes DIR/Task.json, an example entity to change or copy (one file per entity, its name the
file's), and prints the commands that come next. Nothing is overwritten: when DIR exists, init
stops and says so.

  --schema DIR   the folder to write                          [TABULA_SCHEMA, default ./entities]`;

/**
 * The example, in the declaration format docs/entities.md describes: the same Task as --demo's
 * (examples/entities/Task.json), so that the README's examples work on either. JSON has no
 * comments, so its notes are $comment and description.
 */
export const EXAMPLE_ENTITY = {
  $comment: "One entity: each file in this folder declares one, named by its file (Task.json is Task). Change the fields, add files, then start tabula again. The format: docs/entities.md.",
  description: "Something to do.",
  ...Task,
  properties: Object.fromEntries(Object.entries(Task.properties).map(([name, field]) => [name, FIELD_NOTES[name] ? { ...field, description: FIELD_NOTES[name] } : field])),
};

export const initCommand: Command = {
  name: "init",
  help: HELP,
  values: ["schema"],
  switches: [],
  positionals: 0,
  async run(args: CommandArgs): Promise<number> {
    const dir = args.values.get("schema") ?? process.env.TABULA_SCHEMA ?? "./entities";
    if (existsSync(dir)) throw new UsageError(`${dir} already exists, and init writes only into a new folder. Start tabula on it (npx tabula-server --schema ${dir}), or give init another --schema folder.`);
    mkdirSync(dir, { recursive: true });
    const file = join(dir, "Task.json");
    writeFileSync(file, `${JSON.stringify(EXAMPLE_ENTITY, null, 2)}\n`, { flag: "wx" });
    const schemaFlag = dir === "./entities" || dir === "entities" ? "" : ` --schema ${dir}`;
    process.stdout.write(
      [
        `Wrote ${file}: an example entity to change, or copy into files of your own.`,
        "",
        "Next:",
        `  npx tabula-server${schemaFlag}          start it: it prints the URL and two API keys (data is kept in ./data)`,
        `  curl -X POST http://127.0.0.1:8080/api/entities/Task -H "X-Api-Key: <the secret key>" -H "Content-Type: application/json" -d '{"title": "My first task"}'`,
        `  open http://127.0.0.1:8080/          the data browser: paste the secret key to see your records`,
        "",
      ].join("\n"),
    );
    return 0;
  },
};
