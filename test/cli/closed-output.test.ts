// A closed stdout or stderr (`tabula … | head -1`, a terminal that went away) never stops the
// server or its shutdown (issue 39, item 10): requests are answered and logged into the void,
// and SIGTERM still finishes them and exits 0.

import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { cliWithSchema, freePort, killSpawned, spawnCli } from "../support/spawned-server.ts";

const TASK = { name: "Task", type: "object", properties: { title: { type: "string" } }, required: ["title"] };
const SECRET_KEY = "sk_closed_output_1";
const START_TIMEOUT_MS = 10_000;
/** Longer than the request log's batching (100 ms): its write to the closed stdout has been tried. */
const LOG_FLUSHED_MS = 400;

let root: string;
let cli: string;
let schemaDir: string;
before(async () => {
  ({ root, cli, schemaDir } = await cliWithSchema("tabula-closed-output-", [TASK]));
});
after(async () => {
  killSpawned();
  await rm(root, { recursive: true, force: true });
});

/** GET /health until it answers (the server prints nothing we can still read). */
async function waitForHealth(url: string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    try {
      const response = await fetch(`${url}/health`);
      assert.equal(response.status, 200);
      await response.text();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`tabula did not answer /health within ${START_TIMEOUT_MS} ms: ${(error as Error).message}`);
      await sleep(50);
    }
  }
}

// [which of the child's outputs the reader closes, as soon as the first output arrives]
const closings: Array<["stdout" | "stdout and stderr"]> = [["stdout"], ["stdout and stderr"]];
for (const [closed] of closings) {
  test(`with ${closed} closed after the first line (tabula … | head -1), requests are answered and SIGTERM exits 0`, async () => {
    const port = await freePort();
    const child = spawnCli(cli, ["--schema", schemaDir, "--memory", "--port", String(port), "--secret-key", SECRET_KEY, "--log", "text"], { env: { PATH: process.env.PATH } });
    let stderr = "";
    child.stderr!.on("data", (text: string) => (stderr += text));
    // As head -1 does: read the first line, then close the pipe; what the server writes later fails with EPIPE.
    child.stdout!.once("data", () => {
      child.stdout!.destroy();
      if (closed === "stdout and stderr") child.stderr!.destroy();
    });
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on("exit", (code, signal) => resolve([code, signal])));
    const url = `http://127.0.0.1:${port}`;
    await waitForHealth(url);

    const created = await fetch(`${url}/api/entities/Task`, { method: "POST", headers: { "X-Api-Key": SECRET_KEY, "Content-Type": "application/json" }, body: JSON.stringify({ title: "logged into a closed pipe" }) });
    assert.equal(created.status, 201);
    await created.text();
    await sleep(LOG_FLUSHED_MS);
    const listed = await fetch(`${url}/api/entities/Task`, { headers: { "X-Api-Key": SECRET_KEY } });
    assert.equal(listed.status, 200, "still serving after its request log failed to write");
    assert.equal(((await listed.json()) as unknown[]).length, 1);

    child.kill("SIGTERM");
    assert.deepEqual(await exited, [0, null], `exit 0 after SIGTERM; stderr: ${stderr}`);
    assert.doesNotMatch(stderr, /EPIPE|Unhandled/);
  });
}
