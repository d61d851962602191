// tabula-server users (docs/operating.md, "Managing users"; docs/users.md): make, list, disable,
// enable and end the sessions of users, on the store itself (a data folder no server is using, or
// PostgreSQL, beside running servers) or through a running server's API (--url, --key).
// users/users.ts does the work; passwords and their hashes are never printed.

import { existsSync } from "node:fs";
import { ApiError } from "../errors.ts";
import { DEFAULT_RECORD_LIMITS, Records } from "../records/records.ts";
import { loadSchemaObject, loadSchemaPath, type Schema } from "../schema/load.ts";
import { USER_ENTITY } from "../schema/user-entity.ts";
import { DataFolderError, findLockHolder } from "../store/file/lock.ts";
import { openStore, parseStoreUrl, type StoreLocation } from "../store/open-store.ts";
import { UniqueViolation } from "../store/store.ts";
import { DEFAULT_SESSION_DAYS, Users, type UserView } from "../users/users.ts";
import { UsageError, type Command, type CommandArgs } from "./command.ts";
import { apiCaller } from "./target.ts";

const HELP = `Usage: npx tabula-server users create --email E [--password-stdin | --password P] [--role R] [--name "Full Name"] [WHERE]
       npx tabula-server users list [--json] [WHERE]
       npx tabula-server users disable E|ID [WHERE]
       npx tabula-server users enable E|ID [WHERE]
       npx tabula-server users set-role E|ID ROLE [WHERE]
       npx tabula-server users end-sessions E|ID [WHERE]

Manages the users who sign in (docs/users.md). create makes a verified user, as the first admin
is made (--role admin); without a password it sets one through a password reset. A user is named
by its email or its id (users list shows them). disable ends the user's sessions and refuses its
sign-ins until enable; end-sessions signs it out everywhere. A change made here is refused or
honoured within a second by every server sharing the store. Passwords are never printed.

  --email E          the new user's email (compared lowercased)
  --password-stdin   read the password from stdin (one line); safer than --password, which other
                     users of this machine may see in the process list
  --password P       the password, 8 characters or more
  --role R           admin, user (the default) or any role the app uses
  --name N           the user's full_name
  --json             print users as JSON (create, list, and the user each other action changed)

WHERE is one of:
  --data DIR       a data folder no server is using (create makes it if need be)    [TABULA_DATA, default ./data]
  --store URL      file:DIR (as --data), or postgres://... (even while servers use it)
  --pg-schema NAME with a postgres:// store                                         [TABULA_PG_SCHEMA, default tabula]
  --schema PATH    with --data or --store: the schema, for an app's own User        [TABULA_SCHEMA, default the
                   fields                                                            built-in User alone]
  --url URL        a running tabula, through its API, with --key K: a secret key    [TABULA_SECRET_KEY]
                   (every action but create)

Examples:
  printf '%s\\n' "$ADMIN_PASSWORD" | npx tabula-server users create --email ada@example.com --role admin --password-stdin --data ./data
  npx tabula-server users list --data ./data
  npx tabula-server users disable ada@example.com --url http://127.0.0.1:8080 --key "$TABULA_SECRET_KEY"`;

const ACTIONS = ["create", "list", "disable", "enable", "set-role", "end-sessions"] as const;
type Action = (typeof ACTIONS)[number];

/** The command trims no change feed events: the servers' --changes-keep decides that. */
const KEEP_EVERY_CHANGE = Number.MAX_SAFE_INTEGER;

/** What the actions need of where the users are: the store itself, or a running server's API. */
interface UserPlace {
  list(): Promise<UserView[]>;
  create(fields: { email: string; password?: string; role?: string; full_name?: string }): Promise<UserView>;
  setFields(id: string, body: { role?: string; disabled?: boolean }): Promise<UserView>;
  endSessions(id: string): Promise<{ id: string; sessions_ended: number }>;
  close(): Promise<void>;
}

export const usersCommand: Command = {
  name: "users",
  help: HELP,
  values: ["data", "store", "pg-schema", "schema", "url", "key", "email", "password", "role", "name"],
  switches: ["json", "password-stdin"],
  positionals: 3,
  async run(args: CommandArgs): Promise<number> {
    const [action, user, role] = args.positionals as [string | undefined, string | undefined, string | undefined];
    if (!ACTIONS.includes(action as Action)) throw new UsageError(`Say what to do: users ${ACTIONS.join("|")} (got ${action === undefined ? "nothing" : `"${action}"`}).`);
    checkArguments(action as Action, user, role, args);
    const password = action === "create" ? await passwordOf(args) : undefined;
    const place = await openPlace(action as Action, args);
    try {
      await act(action as Action, user, role, password, args, place);
    } catch (error) {
      if (error instanceof ApiError) throw new Error(error.message);
      throw error;
    } finally {
      await place.close();
    }
    return 0;
  },
};

/** The positionals and flags each action takes, refused before anything is opened. */
function checkArguments(action: Action, user: string | undefined, role: string | undefined, args: CommandArgs): void {
  const takesUser = action !== "create" && action !== "list";
  if (takesUser && user === undefined) throw new UsageError(`users ${action} needs the user's email or id (users list shows them), such as users ${action} ada@example.com${action === "set-role" ? " admin" : ""}.`);
  if (!takesUser && user !== undefined) throw new UsageError(`users ${action} takes no user (got "${user}")${action === "create" ? "; give --email E" : ""}.`);
  if (action === "set-role" && (role === undefined || role.trim() === "")) throw new UsageError("users set-role needs the role after the user, such as users set-role ada@example.com admin.");
  if (action !== "set-role" && role !== undefined) throw new UsageError(`Unexpected argument "${role}"; options start with --.`);
  const createOnly = ["email", "password", "role", "name", "password-stdin"].filter((name) => args.values.has(name) || args.switches.has(name));
  if (action !== "create" && createOnly.length > 0) throw new UsageError(`--${createOnly[0]} goes with users create${action === "set-role" ? "; set-role takes the role after the user" : ""}.`);
  if (action === "create") {
    if (!args.values.has("email")) throw new UsageError("users create needs --email E, such as users create --email ada@example.com --role admin --password-stdin.");
    if (args.values.has("password") && args.switches.has("password-stdin")) throw new UsageError("Give --password P or --password-stdin, not both.");
    if (args.values.get("role")?.trim() === "") throw new UsageError("--role is empty: give admin, user, or a role the app uses.");
  }
}

async function act(action: Action, user: string | undefined, role: string | undefined, password: string | undefined, args: CommandArgs, place: UserPlace): Promise<void> {
  const out = (line: string): void => void process.stdout.write(`${line}\n`);
  const note = (line: string): void => void process.stderr.write(`${line}\n`);
  const isJson = args.switches.has("json");
  const shown = (view: UserView): void => (isJson ? out(JSON.stringify(view, null, 2)) : undefined);
  switch (action) {
    case "list": {
      const views = await place.list();
      if (isJson) return out(JSON.stringify(views, null, 2));
      return printTable(views, out);
    }
    case "create": {
      const name = args.values.get("name");
      const view = await place.create({ email: args.values.get("email")!, ...(password === undefined ? {} : { password }), ...(args.values.has("role") ? { role: args.values.get("role")! } : {}), ...(name === undefined ? {} : { full_name: name }) });
      if (isJson) out(JSON.stringify(view, null, 2));
      else out(String(view.id));
      const how = password === undefined ? "it has no password yet: it sets one through a password reset (auth/reset-password-request)" : "it signs in with its password";
      return note(`user ${view.id} (${view.email}, role ${view.role}) created, verified; ${how}.`);
    }
    case "disable":
    case "enable": {
      const view = await place.setFields(await idOf(place, user!), { disabled: action === "disable" });
      shown(view);
      return note(action === "disable" ? `user ${view.id} (${view.email}) disabled: its sessions have ended, and it cannot sign in until enabled.` : `user ${view.id} (${view.email}) enabled: it may sign in again.`);
    }
    case "set-role": {
      const view = await place.setFields(await idOf(place, user!), { role: role! });
      shown(view);
      return note(`user ${view.id} (${view.email}) now has the role ${view.role}, from its next request on.`);
    }
    case "end-sessions": {
      const id = await idOf(place, user!);
      const { sessions_ended: ended } = await place.endSessions(id);
      if (isJson) out(JSON.stringify({ id, sessions_ended: ended }, null, 2));
      return note(`user ${id}: ${ended} session${ended === 1 ? "" : "s"} ended; its tokens are refused within a second.`);
    }
  }
}

function printTable(views: readonly UserView[], out: (line: string) => void): void {
  const rows = [["id", "email", "role", "disabled", "verified"], ...views.map((view) => [String(view.id), String(view.email), String(view.role), view.disabled === true ? "yes" : "no", view.is_verified === true ? "yes" : "no"])];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows) out(row.map((cell, column) => cell.padEnd(widths[column]!)).join("  ").trimEnd());
}

/** A user named by its email (compared lowercased, as docs/users.md says) or its id. */
async function idOf(place: UserPlace, user: string): Promise<string> {
  if (!user.includes("@")) return user;
  const email = user.trim().toLowerCase();
  const found = (await place.list()).find((view) => view.email === email);
  if (found === undefined) throw new Error(`No user has the email ${email}: users list shows them.`);
  return String(found.id);
}

/** --password, or the first line of stdin with --password-stdin; none: the user resets one. */
async function passwordOf(args: CommandArgs): Promise<string | undefined> {
  if (!args.switches.has("password-stdin")) return args.values.get("password");
  let text = "";
  for await (const chunk of process.stdin.setEncoding("utf8")) text += chunk;
  const password = text.replace(/\r?\n$/, "");
  if (password === "") throw new UsageError("--password-stdin read no password: pipe one line into the command, such as printf '%s\\n' \"$PASSWORD\" | npx tabula-server users create ….");
  if (/[\r\n]/.test(password)) throw new UsageError("--password-stdin read more than one line: the password is the one line given.");
  return password;
}

async function openPlace(action: Action, args: CommandArgs, env: NodeJS.ProcessEnv = process.env): Promise<UserPlace> {
  const url = args.values.get("url");
  const given = ["data", "store", "schema"].filter((name) => args.values.has(name));
  if (url !== undefined) {
    if (given.length > 0) throw new UsageError(`--url reaches a running server: leave out --${given[0]}.`);
    if (action === "create") throw new UsageError("users create writes to the store itself: give --data DIR (a folder no server is using) or --store postgres://…; through a running server, invite people instead (POST /api/users/invite-user).");
    const key = args.values.get("key") ?? env.TABULA_SECRET_KEY;
    if (!key) throw new UsageError("--url needs --key K (or TABULA_SECRET_KEY): a secret key of that server.");
    return apiPlace(url.replace(/\/+$/, ""), key);
  }
  if (args.values.has("key")) throw new UsageError("--key goes with --url; a data folder or store needs none.");
  if (args.values.has("data") && args.values.has("store")) throw new UsageError("Give --data DIR or --store URL, not both.");
  const store = args.values.get("store");
  const location: StoreLocation = store === undefined ? { kind: "file", dir: args.values.get("data") ?? env.TABULA_DATA ?? "./data" } : parseStoreUrl(store, "--store");
  if (location.kind === "memory") throw new UsageError("The memory store keeps its users in the server's memory: manage them with --url URL --key K.");
  if (location.kind === "file") await checkDataFolder(location.dir, action);
  const schemaPath = args.values.get("schema") ?? env.TABULA_SCHEMA;
  return storePlace(location, schemaPath === undefined ? builtInUserSchema() : loadSchemaPath(schemaPath), args.values.get("pg-schema") ?? env.TABULA_PG_SCHEMA);
}

/**
 * Without --schema, the built-in User alone: the loader wants one declaration at least, and an
 * empty User adds nothing to the built-in one. Fields an app's own User declares are kept as they
 * are stored by a change made so (records.ts keeps undeclared fields).
 */
function builtInUserSchema(): Schema {
  return loadSchemaObject({ [USER_ENTITY]: { properties: {} } });
}

/**
 * One process writes a data folder at a time (its LOCK): a server using it answers for it instead.
 * Only create makes a folder that is not there: the first admin comes before the first start.
 */
async function checkDataFolder(dir: string, action: Action): Promise<void> {
  if (!existsSync(dir)) {
    if (action === "create") return;
    throw new UsageError(`There is no data folder ${dir}. Give --data DIR (the folder a server uses), or --url URL --key K for a running server.`);
  }
  const holder = await findLockHolder(dir);
  if (holder === undefined) return;
  const instead = action === "create" ? "stop it first, or invite the person through it (POST /api/users/invite-user)" : "ask it instead: --url http://HOST:PORT --key K (a secret key), or stop it first";
  throw new Error(`The data folder ${dir} is in use by a server (pid ${holder}), which alone may open it: ${instead}.`);
}

/** The store itself: this process changes users as a server would, and servers sharing the store notice. */
async function storePlace(location: Exclude<StoreLocation, { kind: "memory" }>, schema: Schema, pgSchema: string | undefined): Promise<UserPlace> {
  let opened: Awaited<ReturnType<typeof openStore>>;
  try {
    opened = await openStore(location, { schema, valueIndexed: new Map(), pgSchema, changesKeep: KEEP_EVERY_CHANGE, warn: (message) => process.stderr.write(`warning: ${message}\n`) });
  } catch (error) {
    if (error instanceof DataFolderError) throw new Error(error.namedBy(location.kind === "file" ? `--data ${location.dir}` : "--store"));
    throw error;
  }
  const { store } = opened;
  try {
    // No code is sent from here: the operator's actions make none.
    const users = await Users.open(new Records(schema, store, DEFAULT_RECORD_LIMITS), { signup: "off", sessionDays: DEFAULT_SESSION_DAYS, send: async () => false, print: () => {}, appId: null });
    return {
      list: () => users.list(),
      async create(fields) {
        try {
          return await users.create(fields);
        } catch (error) {
          if (!(error instanceof UniqueViolation)) throw error;
          throw new Error(`A user has the email ${fields.email.trim().toLowerCase()} already (${error.existingId}): users list shows it.`);
        }
      },
      setFields: (id, body) => users.setFields(id, body),
      endSessions: (id) => users.endSessions(id),
      close: () => store.close(),
    };
  } catch (error) {
    await store.close();
    throw error;
  }
}

function apiPlace(url: string, key: string): UserPlace {
  const call = apiCaller(url, key);
  return {
    list: () => call("GET", "/api/users", "Listing the users"),
    create: async () => {
      throw new UsageError("users create needs the store itself, not --url.");
    },
    setFields: (id, body) => call("PATCH", `/api/users/${encodeURIComponent(id)}`, `Changing user ${id}`, body),
    endSessions: (id) => call("DELETE", `/api/users/${encodeURIComponent(id)}/sessions`, `Ending the sessions of user ${id}`),
    close: async () => {},
  };
}
