// tabula keys (docs/operating.md, "Managing keys"): create, list, revoke and roll API keys on a data
// folder (beside a running server or not: the server notices keys.json's change within a second),
// on a PostgreSQL store, or through a running server's API (--url, --key).

import { existsSync } from "node:fs";
import { ApiError } from "../errors.ts";
import { readCreate, readRoll } from "../http/keys-routes.ts";
import { KeyRing } from "../keys/key-ring.ts";
import type { KeyView } from "../views.ts";
import type { KeyVault } from "../keys/key-vault.ts";
import { keysFileVault } from "../keys/keys-file.ts";
import type { NewKey } from "../keys/stored-keys.ts";
import { parseStoreUrl } from "../store/open-store.ts";
import { postgresVaultAt } from "../store/postgres/key-vault.ts";
import { UsageError, type Command, type CommandArgs } from "./command.ts";
import { apiCaller } from "./target.ts";

const HELP = `Usage: npx tabula-server keys create --kind secret|publishable --name NAME [--expires-at TIME] [WHERE]
       npx tabula-server keys list [--json] [WHERE]
       npx tabula-server keys revoke ID [WHERE]
       npx tabula-server keys roll ID [--expires-in SECONDS] [WHERE]

Manages API keys while servers run. create and roll print the new key on stdout, once: only its
SHA-256 is kept. A rolled key keeps working for --expires-in seconds (default 86400, a day).
A key revoked here is refused within a second by every server using the same data folder or database.

WHERE is one of:
  --data DIR       a data folder (its keys.json), even one a server is using       [TABULA_DATA, default ./data]
  --store URL      file:DIR, or postgres://... (the $keys table of --pg-schema)
  --pg-schema NAME with a postgres:// store                                        [TABULA_PG_SCHEMA, default tabula]
  --url URL        a running tabula, through its API, with --key K: a secret key    [TABULA_SECRET_KEY]

Examples:
  npx tabula-server keys create --kind publishable --name "web app" --data ./data
  npx tabula-server keys list --url http://127.0.0.1:8080 --key "$TABULA_SECRET_KEY"
  npx tabula-server keys roll key_1a2b3c4d5e6f --expires-in 3600 --data ./data`;

const ACTIONS = ["create", "list", "revoke", "roll"] as const;
type Action = (typeof ACTIONS)[number];

/** What the actions need of where the keys are: the API of a running server, or the keys themselves. */
interface KeyPlace {
  list(): Promise<KeyView[]>;
  create(body: Record<string, unknown>): Promise<{ key: string; view: KeyView }>;
  revoke(id: string): Promise<KeyView>;
  roll(id: string, body: Record<string, unknown>): Promise<{ key: string; view: KeyView; old: KeyView }>;
  close(): Promise<void>;
}

export const keysCommand: Command = {
  name: "keys",
  help: HELP,
  values: ["data", "store", "pg-schema", "url", "key", "kind", "name", "expires-at", "expires-in"],
  switches: ["json"],
  positionals: 2,
  async run(args: CommandArgs): Promise<number> {
    const [action, id] = args.positionals as [string | undefined, string | undefined];
    if (!ACTIONS.includes(action as Action)) throw new UsageError(`Say what to do: keys ${ACTIONS.join("|")} (got ${action === undefined ? "nothing" : `"${action}"`}).`);
    const needsId = action === "revoke" || action === "roll";
    if (needsId && id === undefined) throw new UsageError(`keys ${action} needs the key's id (keys list shows them), such as keys ${action} key_1a2b3c4d5e6f.`);
    if (!needsId && id !== undefined) throw new UsageError(`keys ${action} takes no id (got "${id}").`);
    const place = await openPlace(args);
    try {
      await act(action as Action, id, args, place);
    } catch (error) {
      if (error instanceof ApiError) throw new Error(error.message);
      throw error;
    } finally {
      await place.close();
    }
    return 0;
  },
};

async function act(action: Action, id: string | undefined, args: CommandArgs, place: KeyPlace): Promise<void> {
  const out = (line: string): void => void process.stdout.write(`${line}\n`);
  const note = (line: string): void => void process.stderr.write(`${line}\n`);
  switch (action) {
    case "list": {
      const keys = await place.list();
      if (args.switches.has("json")) return out(JSON.stringify(keys, null, 2));
      // A running server writes a key's last use to the minute, once a minute: the column may lag that much.
      const rows = [["id", "kind", "name", "prefix", "created", "last used (≤1 min late)", "expires", "source"], ...keys.map((key) => [key.id, key.kind, key.name, `${key.prefix}…`, key.created ?? "-", key.last_used ?? "-", key.expires_at ?? "-", key.source])];
      const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
      for (const row of rows) out(row.map((cell, column) => cell.padEnd(widths[column]!)).join("  ").trimEnd());
      return;
    }
    case "create": {
      const body = { kind: args.values.get("kind"), name: args.values.get("name"), ...(args.values.has("expires-at") ? { expires_at: args.values.get("expires-at") } : {}) };
      const { key, view } = await place.create(body);
      out(key);
      return note(`${view.kind} key ${view.id} ("${view.name}") created${view.expires_at ? `, expiring at ${view.expires_at}` : ""}. It is shown this once: only its hash is kept.`);
    }
    case "revoke": {
      const view = await place.revoke(id!);
      return note(`${view.kind} key ${view.id} ("${view.name}", ${view.prefix}…) revoked: refused within a second by every server sharing its store.`);
    }
    case "roll": {
      const seconds = args.values.get("expires-in");
      if (seconds !== undefined && !/^\d+$/.test(seconds)) throw new UsageError(`--expires-in must be a whole number of seconds (got "${seconds}").`);
      const { key, view, old } = await place.roll(id!, seconds === undefined ? {} : { expires_in: Number(seconds) });
      out(key);
      return note(`${view.kind} key ${view.id} made to follow ${old.id}, which works until ${old.expires_at}. The new key is shown this once.`);
    }
  }
}

async function openPlace(args: CommandArgs, env: NodeJS.ProcessEnv = process.env): Promise<KeyPlace> {
  const url = args.values.get("url");
  const given = ["data", "store"].filter((name) => args.values.has(name));
  if (url !== undefined) {
    if (given.length > 0) throw new UsageError(`--url reaches a running server: leave out --${given[0]}.`);
    const key = args.values.get("key") ?? env.TABULA_SECRET_KEY;
    if (!key) throw new UsageError("--url needs --key K (or TABULA_SECRET_KEY): a secret key of that server.");
    return apiPlace(url.replace(/\/+$/, ""), key);
  }
  if (args.values.has("key")) throw new UsageError("--key goes with --url; a data folder or store needs none.");
  if (given.length > 1) throw new UsageError("Give --data DIR or --store URL, not both.");
  const store = args.values.get("store");
  const location = store === undefined ? { kind: "file" as const, dir: args.values.get("data") ?? env.TABULA_DATA ?? "./data" } : parseStoreUrl(store, "--store");
  if (location.kind === "memory") throw new UsageError("The memory store keeps its keys in the server's memory: manage them with --url URL --key K.");
  if (location.kind === "file") {
    if (!existsSync(location.dir)) throw new UsageError(`There is no data folder ${location.dir}. Give --data DIR (the folder a server uses), or --url URL --key K for a running server.`);
    return ringPlace(keysFileVault(location.dir));
  }
  return ringPlace(await postgresVaultAt(location.url, args.values.get("pg-schema") ?? env.TABULA_PG_SCHEMA ?? "tabula"));
}

/** The keys themselves: this process changes them as a server would, and servers notice. */
async function ringPlace(vault: KeyVault): Promise<KeyPlace> {
  const { keys } = await vault.update(() => ({ keys: null, value: undefined }));
  const ring = new KeyRing(vault, [], keys, [], 0, (message) => process.stderr.write(`warning: ${message}\n`));
  const shown = ({ made, view }: { made: NewKey; view: KeyView }) => ({ key: made.key, view });
  return {
    list: async () => ring.list(),
    async create(body) {
      const { kind, name, expiresAt } = readCreate(body);
      return shown(await ring.create(kind, name, expiresAt));
    },
    revoke: (id) => ring.revoke(id),
    async roll(id, body) {
      const { made, view, old } = await ring.roll(id, readRoll(body) * 1000);
      return { key: made.key, view, old };
    },
    close: () => ring.close(),
  };
}

function apiPlace(url: string, key: string): KeyPlace {
  const call = apiCaller(url, key);
  return {
    list: () => call("GET", "/api/keys", "Listing the keys"),
    async create(body) {
      const { key: made, ...view } = await call("POST", "/api/keys", "Creating a key", body);
      return { key: made, view };
    },
    revoke: (id) => call("DELETE", `/api/keys/${encodeURIComponent(id)}`, `Revoking ${id}`),
    async roll(id, body) {
      const { key: made, rolled, ...view } = await call("POST", `/api/keys/${encodeURIComponent(id)}/roll`, `Rolling ${id}`, body);
      return { key: made, view, old: rolled };
    },
    close: async () => {},
  };
}
