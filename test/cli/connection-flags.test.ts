// --max-connections (docs/operating.md, "Connections"), spawned as users run the command: in
// --help with its variable and default, a bad value exiting 1 before listening with a message
// naming the flag or variable, and the bound given reaching the listener, with its warning.

import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { RawConnection } from "../support/raw-connection.ts";
import { TASK } from "../support/server.ts";
import { childEnv, cliWithSchema, killSpawned, spawnCli, startSpawnedServer } from "../support/spawned-server.ts";

/** Guards against a hang only: a start on a loaded machine can take many seconds. */
const START_TIMEOUT_MS = 60_000;

let root: string;
let schemaDir: string;
let CLI: string;
before(async () => {
  ({ root, cli: CLI, schemaDir } = await cliWithSchema("tabula-connection-flags-", [TASK]));
});
after(async () => {
  killSpawned();
  await rm(root, { recursive: true, force: true });
});

function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  const child = spawnCli(CLI, args, { env: childEnv(env) });
  let output = "";
  child.stdout!.on("data", (text) => (output += text));
  child.stderr!.on("data", (text) => (output += text));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`tabula ${args.join(" ")} did not exit:\n${output}`));
    }, START_TIMEOUT_MS);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe("--max-connections", { concurrency: 4 }, () => {
  test("--help lists it with its variable and default", async () => {
    const { code, output } = await run(["--help"]);
    assert.equal(code, 0);
    assert.match(output, /--max-connections N .*\[TABULA_MAX_CONNECTIONS, default 2000\]/);
  });

  // [args, env, what the message must say]
  const bad: Array<[string[], Record<string, string>, RegExp]> = [
    [["--max-connections", "0"], {}, /--max-connections must be a whole number of connections, at least 1 \(got "0"\)/],
    [["--max-connections"], {}, /--max-connections needs a value/],
    [[], { TABULA_MAX_CONNECTIONS: "many" }, /TABULA_MAX_CONNECTIONS must be a whole number of connections, at least 1 \(got "many"\)/],
  ];
  for (const [args, env, said] of bad) {
    test(`${[...args, ...Object.entries(env).map(([name, value]) => `${name}=${value}`)].join(" ")} exits 1 before listening, naming the fault`, async () => {
      const { code, output } = await run(["--schema", schemaDir, "--memory", "--port", "0", ...args], env);
      assert.equal(code, 1, output);
      assert.match(output, said);
      assert.doesNotMatch(output, /listening on/);
    });
  }

  for (const [how, args, env] of [
    ["the flag", ["--max-connections", "1"], {}],
    ["the variable", [], { TABULA_MAX_CONNECTIONS: "1" }],
  ] as const) {
    test(`given by ${how}, a connection past it is closed unanswered while the one open is served, and the server warns naming the flag`, async () => {
      const server = await startSpawnedServer(CLI, ["--schema", schemaDir, "--memory", "--port", "0", ...args], START_TIMEOUT_MS, { env: childEnv(env) });
      try {
        const open = await RawConnection.open(server.url);
        open.write("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
        assert.equal((await open.responses(1))[0]!.status, 200);
        const refused = await RawConnection.open(server.url);
        refused.write("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
        open.write("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        await refused.whenClosed();
        assert.equal(refused.received, "");
        assert.deepEqual((await open.responses(2)).map((answer) => answer.status), [200, 200]);
        assert.match(server.output(), /warning: 1 connection is open, as many as --max-connections allows: new ones are closed as soon as they are accepted/);
      } finally {
        server.child.kill("SIGTERM");
        await server.exited;
      }
    });
  }
});
