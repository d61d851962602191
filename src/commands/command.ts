// The subcommands of the command line (docs/operating.md: tabula export, import, backup, verify): each
// is a Command, run by cli.ts when the first argument names it. This module parses their options
// the way the server's are parsed (--name value or --name=value), answers --help, and turns bad
// input into one clear line on stderr and exit status 1.

import { didYouMean } from "./nearest.ts";

/** Bad input: the message is printed as one line, and the command exits 1. */
/** A refusal printed as the lines it is made of, not joined into one. */
export class LinesError extends Error {}

export class UsageError extends Error {}

export interface Command {
  readonly name: string;
  /** The whole --help text. */
  readonly help: string;
  /** Options that take a value. */
  readonly values: readonly string[];
  /** Options that take none. */
  readonly switches: readonly string[];
  /** At most this many arguments that are not options (e.g. import's FILE). */
  readonly positionals: number;
  /** Does the work; resolves to the exit status. Throws UsageError on bad input. */
  run(args: CommandArgs): Promise<number>;
}

export interface CommandArgs {
  readonly values: ReadonlyMap<string, string>;
  readonly switches: ReadonlySet<string>;
  readonly positionals: readonly string[];
}

export function parseCommandArgs(command: Command, argv: readonly string[]): CommandArgs {
  const values = new Map<string, string>();
  const switches = new Set<string>();
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith("--") || arg === "--") {
      if (positionals.length >= command.positionals) throw new UsageError(`Unexpected argument "${arg}"; options start with --.`);
      positionals.push(arg);
      continue;
    }
    const [name, inline] = arg.slice(2).split(/=(.*)/s, 2) as [string, string | undefined];
    if (command.switches.includes(name)) {
      if (inline !== undefined) throw new UsageError(`--${name} takes no value.`);
      switches.add(name);
    } else if (command.values.includes(name)) {
      const value = inline ?? argv[++i];
      if (value === undefined || (inline === undefined && value.startsWith("--"))) throw new UsageError(`--${name} needs a value.`);
      if (values.has(name)) throw new UsageError(`--${name} is given twice.`);
      values.set(name, value);
    } else {
      throw new UsageError(`Unknown option --${name}.${didYouMean(name, [...command.values, ...command.switches], "--")}`);
    }
  }
  return { values, switches, positionals };
}

/** Runs `command` on `argv` and exits with its status; --help prints its help. */
export async function runCommand(command: Command, argv: readonly string[]): Promise<never> {
  let status: number;
  try {
    if (argv.includes("--help") || argv.includes("-h")) {
      process.stdout.write(command.help.trimEnd() + "\n");
      status = 0;
    } else {
      status = await command.run(parseCommandArgs(command, argv));
    }
  } catch (error) {
    // One line for bad input, and for failures a user can mend (a folder in use, a server away).
    // One line, unless the message is made of lines (each problem of a record on its own).
    const message = error instanceof LinesError ? error.message : (error as Error).message.replace(/\s*\n\s*/g, " ");
    process.stderr.write(`tabula ${command.name}: ${message}${error instanceof UsageError ? ` (npx tabula-server ${command.name} --help)` : ""}\n`);
    status = 1;
  }
  // Let stdout drain (a pipe to a slow reader) before exiting.
  await new Promise<void>((resolve) => (process.stdout.writableLength === 0 ? resolve() : process.stdout.once("drain", () => resolve())));
  process.exit(status);
}
