// tabula-server users (docs/operating.md, "Managing users"), the built command: the first admin made
// on a fresh data folder signs in to a server started on it; list, set-role, disable, enable and
// end-sessions through a running server's API (--url) or on the folder once it is free, and on
// PostgreSQL beside a running server. Then the server's flags: --signup, --session-days,
// --auth-secret, the banner's users line, and bad values refused before listening.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHmac } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { TASK } from "../support/server.ts";
import { BUILT_CLI, childEnv, cliWithSchema, killSpawned, spawnCli, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";
import { describeWithPostgres, dropPgSchema, freshPgSchema } from "../support/postgres.ts";

const START_TIMEOUT_MS = 30_000;
const SECRET_KEY = "sk_users_command_secret";
const ADA = { email: "ada@example.com", password: "ada-password-1" };
const BOB = { email: "bob@example.com", password: "bob-password-2" };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let root: string;
let cli: string;
let schemaDir: string;
before(async () => {
  ({ root, cli, schemaDir } = await cliWithSchema("tabula-users-command-", [TASK]));
});
after(async () => {
  killSpawned();
  await rm(root, { recursive: true, force: true });
});

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI to its end; `program`: the copy in the test folder, else one that can load the postgres package. */
function run(args: readonly string[], program = cli): Promise<Exit> {
  const child = spawnCli(program, args, { env: childEnv() });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (text) => (stdout += text));
  child.stderr!.on("data", (text) => (stderr += text));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

function users(args: readonly string[], program = cli): Promise<Exit> {
  return run(["users", ...args], program);
}

/** `users …` with `stdin` written to it (spawnCli gives none): --password-stdin. */
function usersWithStdin(args: readonly string[], stdin: string): Promise<Exit> {
  const child = spawn(process.execPath, [cli, "users", ...args], { env: childEnv(), stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (text) => (stdout += text));
  child.stderr.setEncoding("utf8").on("data", (text) => (stderr += text));
  child.stdin.end(stdin);
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

function start(args: readonly string[], program = cli): Promise<SpawnedServer> {
  return startSpawnedServer(program, ["--schema", schemaDir, "--port", "0", "--secret-key", SECRET_KEY, ...args], START_TIMEOUT_MS, { env: childEnv() });
}

async function stop(server: SpawnedServer): Promise<void> {
  server.child.kill("SIGTERM");
  await server.exited;
}

async function post(server: SpawnedServer, path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const response = await fetch(`${server.url}${path}`, { method: "POST", headers: { "Content-Type": "application/json", ...headers }, body: JSON.stringify(body) });
  return { status: response.status, body: await response.json() };
}

function login(server: SpawnedServer, user: { email: string; password: string }): Promise<{ status: number; body: any }> {
  return post(server, "/api/auth/login", user);
}

async function meStatus(server: SpawnedServer, token: string): Promise<number> {
  return (await fetch(`${server.url}/api/entities/User/me`, { headers: { Authorization: `Bearer ${token}` } })).status;
}

/** Waits until the token gets `expected` on GET entities/User/me; the ms it took. */
async function meStatusWithin(server: SpawnedServer, token: string, expected: number, ms: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    const status = await meStatus(server, token);
    if (status === expected) return Date.now() - started;
    if (Date.now() - started > ms) assert.fail(`still ${status} after ${ms} ms, expected ${expected}`);
    await sleep(20);
  }
}

function claimsOf(token: string): { sub: string; role: string; iat: number; exp: number } {
  return JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString("utf8"));
}

function bannerLine(server: SpawnedServer, label: string): string | undefined {
  return server.output().split("\n").find((line) => line.startsWith(`${label.padEnd(17)}`));
}

/** Every file of a folder, as text: what must never hold a password. */
function folderText(dir: string): string {
  return readdirSync(dir).map((name) => readFileSync(join(dir, name), "latin1")).join("\n");
}

describe("users on a data folder, and through a running server", () => {
  test("the first admin, made on a fresh folder, signs in; list shows it; set-role, disable, enable and end-sessions count at once on the running server", async () => {
    const data = join(root, "first-admin");
    const made = await usersWithStdin(["create", "--email", "Ada@Example.com", "--role", "admin", "--name", "Ada Lovelace", "--password-stdin", "--data", data], `${ADA.password}\n`);
    assert.equal(made.code, 0, made.stderr);
    const adaId = made.stdout.trim();
    assert.match(adaId, /^[0-9a-f]{24}$/);
    assert.match(made.stderr, new RegExp(`user ${adaId} \\(ada@example\\.com, role admin\\) created, verified; it signs in with its password`));
    const bob = await users(["create", "--email", BOB.email, "--password", BOB.password, "--data", data]);
    assert.equal(bob.code, 0, bob.stderr);
    const bobId = bob.stdout.trim();

    const table = await users(["list", "--data", data]);
    assert.equal(table.code, 0, table.stderr);
    assert.deepEqual(table.stdout.trimEnd().split("\n").map((line) => line.split(/\s+/)), [
      ["id", "email", "role", "disabled", "verified"],
      [adaId, "ada@example.com", "admin", "no", "yes"],
      [bobId, "bob@example.com", "user", "no", "yes"],
    ]);
    const listed = await users(["list", "--json", "--data", data]);
    const views = JSON.parse(listed.stdout) as Array<Record<string, unknown>>;
    assert.deepEqual(
      views.map(({ id, email, role, full_name, disabled, is_verified }) => ({ id, email, role, full_name, disabled, is_verified })),
      [
        { id: adaId, email: "ada@example.com", role: "admin", full_name: "Ada Lovelace", disabled: false, is_verified: true },
        { id: bobId, email: "bob@example.com", role: "user", full_name: null, disabled: false, is_verified: true },
      ],
    );
    for (const output of [made, bob, table, listed]) {
      for (const text of [output.stdout, output.stderr]) {
        assert.equal(text.includes(ADA.password) || text.includes(BOB.password), false, "no password is printed");
        assert.doesNotMatch(text, /hash|scrypt/i);
      }
    }
    assert.equal(folderText(data).includes(ADA.password), false, "the data folder holds no password");

    const server = await start(["--data", data]);
    try {
      assert.equal(bannerLine(server, "users"), "users            sign-up open; codes printed here (no webhook endpoint asks for user.* events)");
      const signedIn = await login(server, ADA);
      assert.equal(signedIn.status, 200, JSON.stringify(signedIn.body));
      assert.equal(signedIn.body.user.id, adaId);
      assert.equal(signedIn.body.user.role, "admin");
      assert.equal(signedIn.body.user.password, undefined);
      const token = signedIn.body.access_token as string;
      assert.equal(claimsOf(token).sub, adaId);
      assert.equal(await meStatus(server, token), 200);

      const url = ["--url", server.url, "--key", SECRET_KEY];
      const busy = await users(["list", "--data", data]);
      assert.equal(busy.code, 1);
      assert.match(busy.stderr, /The data folder .*first-admin is in use by a server \(pid \d+\), which alone may open it: ask it instead: --url http:\/\/HOST:PORT --key K/);
      const overApi = JSON.parse((await users(["list", "--json", ...url])).stdout) as Array<{ id: string; email: string; role: string }>;
      assert.deepEqual(overApi.map(({ id, email, role }) => [id, email, role]), [[adaId, "ada@example.com", "admin"], [bobId, "bob@example.com", "user"]]);

      const role = await users(["set-role", "BOB@example.com", "editor", ...url]);
      assert.equal(role.code, 0, role.stderr);
      assert.match(role.stderr, new RegExp(`user ${bobId} \\(bob@example\\.com\\) now has the role editor`));
      assert.equal((await login(server, BOB)).body.user.role, "editor");

      const ended = await users(["end-sessions", ADA.email, ...url]);
      assert.equal(ended.code, 0, ended.stderr);
      assert.match(ended.stderr, new RegExp(`user ${adaId}: 1 session ended`));
      assert.ok((await meStatusWithin(server, token, 401, 1000)) < 1000, "the ended session's token is refused");

      const again = (await login(server, ADA)).body.access_token as string;
      assert.equal(await meStatus(server, again), 200);
      const disabled = await users(["disable", adaId, ...url]);
      assert.equal(disabled.code, 0, disabled.stderr);
      assert.match(disabled.stderr, /disabled: its sessions have ended/);
      assert.ok((await meStatusWithin(server, again, 401, 1000)) < 1000, "a disabled user's token is refused within a second");
      const refused = await login(server, ADA);
      assert.equal(refused.status, 403);
      assert.equal(refused.body.error.code, "user_disabled");
      assert.equal((await users(["enable", ADA.email, ...url])).code, 0);
      assert.equal((await login(server, ADA)).status, 200);

      const unknown = await users(["disable", "nobody@example.com", ...url]);
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr, /No user has the email nobody@example\.com/);
      const creating = await users(["create", "--email", "carol@example.com", ...url]);
      assert.equal(creating.code, 1);
      assert.match(creating.stderr, /users create writes to the store itself/);

      // Sign-up is open, and no endpoint asks for codes: the code is printed on the server's output.
      const registered = await post(server, "/api/auth/register", { email: "dan@example.com", password: "dan-password-3" });
      assert.equal(registered.status, 200);
      await sleep(100);
      assert.match(server.output(), /user\.verification_requested for dan@example\.com: code \d{6}/);
    } finally {
      await stop(server);
    }

    // With the folder free again, on the folder itself; the next start serves what was written.
    assert.equal((await users(["set-role", BOB.email, "admin", "--data", data])).code, 0);
    const off = await users(["disable", BOB.email, "--json", "--data", data]);
    assert.equal(off.code, 0, off.stderr);
    assert.deepEqual([JSON.parse(off.stdout).role, JSON.parse(off.stdout).disabled], ["admin", true]);
    const twice = await users(["create", "--email", "ADA@example.com", "--data", data]);
    assert.equal(twice.code, 1);
    assert.match(twice.stderr, new RegExp(`A user has the email ada@example\\.com already \\(${adaId}\\)`));
    const restarted = await start(["--data", data]);
    try {
      const refused = await login(restarted, BOB);
      assert.equal(refused.status, 403);
      assert.equal(refused.body.error.code, "user_disabled");
      assert.equal((await login(restarted, ADA)).status, 200);
    } finally {
      await stop(restarted);
    }
  });

  test("bad arguments exit 1 with one line saying what to do", async () => {
    const data = join(root, "bad-arguments");
    const cases: Array<[string[], RegExp]> = [
      [[], /Say what to do: users create\|list\|disable\|enable\|set-role\|end-sessions \(got nothing\)/],
      [["remove", "x"], /Say what to do: .* \(got "remove"\)/],
      [["create", "--data", data], /users create needs --email E/],
      [["create", "--email", "not-an-email", "--data", data], /"email" must be an email address/],
      [["create", "--email", "e@example.com", "--password", "short", "--data", data], /password/],
      [["create", "--email", "e@example.com", "--password", "long-enough-1", "--password-stdin", "--data", data], /Give --password P or --password-stdin, not both/],
      [["disable", "--data", data], /users disable needs the user's email or id/],
      [["set-role", "ada@example.com", "--data", data], /users set-role needs the role after the user/],
      [["list", "--role", "admin", "--data", data], /--role goes with users create/],
      [["list", "--data", join(root, "no-such-folder")], /There is no data folder .*no-such-folder/],
      [["list", "--store", "memory:"], /The memory store keeps its users in the server's memory/],
      [["list", "--url", "http://127.0.0.1:1"], /--url needs --key K/],
      [["list", "--data", data, "--store", `file:${data}`], /Give --data DIR or --store URL, not both/],
      [["list", "--frobnicate"], /Unknown option --frobnicate/],
    ];
    for (const [args, message] of cases) {
      const exit = await users(args);
      assert.equal(exit.code, 1, args.join(" "));
      assert.match(exit.stderr, message, args.join(" "));
      assert.equal(exit.stderr.trimEnd().split("\n").length, 1, `one line: ${exit.stderr}`);
    }
    const stdin = await usersWithStdin(["create", "--email", "e@example.com", "--password-stdin", "--data", data], "");
    assert.equal(stdin.code, 1);
    assert.match(stdin.stderr, /--password-stdin read no password/);
  });
});

describe("the server's user flags", () => {
  test("the banner's users line says the sign-up mode and where codes go: printed, or sent to the endpoints asking for them", async () => {
    const data = join(root, "banner");
    const first = await start(["--data", data, "--signup", "invite", "--webhooks-allow-private"]);
    try {
      assert.equal(bannerLine(first, "users"), "users            sign-up invite (invited emails only); codes printed here (no webhook endpoint asks for user.* events)");
      const headers = { "X-Api-Key": SECRET_KEY };
      const invites = await post(first, "/api/webhooks", { url: "http://127.0.0.1:9/invites", events: ["user.invited"] }, headers);
      assert.equal(invites.status, 201, JSON.stringify(invites.body));
      const changes = await post(first, "/api/webhooks", { url: "http://127.0.0.1:9/changes", events: ["create"] }, headers);
      assert.equal(changes.status, 201, JSON.stringify(changes.body));
    } finally {
      await stop(first);
    }
    const partly = await start(["--data", data, "--webhooks-allow-private"]);
    try {
      assert.equal(bannerLine(partly, "users"), "users            sign-up open; codes of user.invited sent to 1 webhook endpoint, the others printed here");
      const all = await post(partly, "/api/webhooks", { url: "http://127.0.0.1:9/codes", events: ["user.verification_requested", "user.password_reset_requested"] }, { "X-Api-Key": SECRET_KEY });
      assert.equal(all.status, 201, JSON.stringify(all.body));
    } finally {
      await stop(partly);
    }
    const sent = await start(["--data", data, "--webhooks-allow-private", "--signup", "off"]);
    try {
      assert.equal(bannerLine(sent, "users"), "users            sign-up off; codes sent to 2 webhook endpoints");
    } finally {
      await stop(sent);
    }
  });

  test("--signup off refuses registration with 403 signup_closed; the command still makes users", async () => {
    const data = join(root, "signup-off");
    assert.equal((await users(["create", "--email", ADA.email, "--password", ADA.password, "--data", data])).code, 0);
    const server = await start(["--data", data, "--signup", "off"]);
    try {
      const refused = await post(server, "/api/auth/register", { email: "eve@example.com", password: "eve-password-4" });
      assert.equal(refused.status, 403);
      assert.equal(refused.body.error.code, "signup_closed");
      assert.equal(server.output().includes("eve@example.com"), false, "no code is made");
      assert.equal((await login(server, ADA)).status, 200);
    } finally {
      await stop(server);
    }
  });

  test("--session-days sets how long a token lasts, and --auth-secret signs it", async () => {
    const data = join(root, "session-days");
    assert.equal((await users(["create", "--email", ADA.email, "--password", ADA.password, "--data", data])).code, 0);
    const secret = "the auth secret of the users command test";
    const server = await start(["--data", data, "--session-days", "2", "--auth-secret", secret]);
    try {
      const { body } = await login(server, ADA);
      const token = body.access_token as string;
      const claims = claimsOf(token);
      assert.equal(claims.exp - claims.iat, 2 * 86_400);
      const [header, payload, signature] = token.split(".");
      assert.equal(signature, createHmac("sha256", Buffer.from(secret, "utf8")).update(`${header}.${payload}`).digest("base64url"));
      assert.equal(server.output().includes(secret), false, "the banner never prints the secret");
    } finally {
      await stop(server);
    }
  });

  test("bad values of --signup, --session-days and --auth-secret (and their variables) exit 1 before listening, naming the flag", async () => {
    const cases: Array<[string[], Record<string, string>, RegExp]> = [
      [["--signup", "maybe"], {}, /--signup must be one of open, invite, off \(got "maybe"\)/],
      [[], { TABULA_SIGNUP: "closed" }, /TABULA_SIGNUP must be one of open, invite, off \(got "closed"\)/],
      [["--session-days", "0"], {}, /--session-days must be a whole number of days, at least 1 \(got "0"\)/],
      [["--session-days", "1.5"], {}, /--session-days must be a whole number of days, at least 1 \(got "1\.5"\)/],
      [[], { TABULA_SESSION_DAYS: "week" }, /TABULA_SESSION_DAYS must be a whole number of days/],
      [["--auth-secret", "too short"], {}, /--auth-secret is 9 bytes long: the secret that signs users' tokens needs at least 32 bytes/],
      [["--auth-secret="], {}, /--auth-secret is empty \(an unset variable\?\)/],
      [[], { TABULA_AUTH_SECRET: "" }, /TABULA_AUTH_SECRET is empty/],
      [["--signup"], {}, /--signup needs a value/],
    ];
    for (const [args, env, message] of cases) {
      const child = spawnCli(cli, ["--schema", schemaDir, "--memory", "--port", "0", ...args], { env: childEnv(env) });
      let output = "";
      child.stdout!.on("data", (text) => (output += text));
      child.stderr!.on("data", (text) => (output += text));
      const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
      const what = `${args.join(" ")} ${JSON.stringify(env)}`;
      assert.equal(code, 1, what);
      assert.match(output, message, what);
      assert.doesNotMatch(output, /listening on/, what);
    }
  });

  test("--help names the flags and the users command", async () => {
    const help = await run(["--help"]);
    for (const flag of ["--signup MODE", "--session-days N", "--auth-secret S", "TABULA_AUTH_SECRET", "users create|list|disable|enable|set-role|end-sessions"]) assert.ok(help.stdout.includes(flag), flag);
    const own = await users(["--help"]);
    assert.equal(own.code, 0);
    assert.match(own.stdout, /^Usage: npx tabula-server users create --email E/);
  });
});

describeWithPostgres("users on PostgreSQL, beside a running server", (url) => {
  const pgSchema = freshPgSchema();
  after(() => dropPgSchema(url, pgSchema));

  test("a user made and disabled by the command, while a server uses the store: the server refuses its token within a second", async () => {
    const store = ["--store", url, "--pg-schema", pgSchema];
    // The bundle in dist/, beside node_modules: a copy elsewhere finds no postgres package.
    const server = await start(store, BUILT_CLI);
    try {
      const made = await users(["create", "--email", ADA.email, "--password", ADA.password, "--role", "admin", ...store], BUILT_CLI);
      assert.equal(made.code, 0, made.stderr);
      const signedIn = await login(server, ADA);
      assert.equal(signedIn.status, 200, JSON.stringify(signedIn.body));
      assert.equal(signedIn.body.user.role, "admin");
      const token = signedIn.body.access_token as string;
      assert.equal(await meStatus(server, token), 200);
      const listed = JSON.parse((await users(["list", "--json", ...store], BUILT_CLI)).stdout) as Array<{ email: string; role: string }>;
      assert.deepEqual(listed.map(({ email, role }) => [email, role]), [[ADA.email, "admin"]]);
      assert.equal((await users(["disable", ADA.email, ...store], BUILT_CLI)).code, 0);
      assert.ok((await meStatusWithin(server, token, 401, 1000)) < 1000);
    } finally {
      await stop(server);
    }
  });
});
