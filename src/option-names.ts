// How a message names a setting: as the command line's flag (--schema) when tabula runs as the
// command, as the embedding API's option (the schema option) when it is a library in someone's
// process. The library's wording is the default; the command line switches once, at its start.

const FLAGS = {
  schema: "--schema",
  migrations: "--migrations",
  seed: "--seed",
  cors: "--cors",
  changesKeep: "--changes-keep",
  maxStreams: "--max-streams",
  maxConnections: "--max-connections",
  maxConnectionsPerClient: "--max-connections-per-client",
  maxGroups: "--max-groups",
  maxArrayItems: "--max-array-items",
  maxObjectKeys: "--max-object-keys",
  maxRecordBytes: "--max-record-size",
  maxFileBytes: "--max-file-size",
  maxFilesTotalBytes: "--max-files-total",
  log: "--log",
  pgSchema: "--pg-schema",
  store: "--store",
  maxMemoryBytes: "--max-memory",
  idempotencyMemoryBytes: "--idempotency-memory",
  sessionDays: "--session-days",
  signup: "--signup",
  authSecret: "--auth-secret",
  appDir: "--app-dir",
} as const;

export type OptionName = keyof typeof FLAGS;

let isCommandLine = false;

/** cli.ts, before anything else: messages name flags from then on. */
export function nameSettingsAsFlags(): void {
  isCommandLine = true;
}

export function settingName(option: OptionName): string {
  return isCommandLine ? FLAGS[option] : `the ${option} option`;
}
