// keepTickShape (src/http/tick-shape.ts): after full collections at a moment when no tick is
// queued, process.nextTick's literal must still define its properties from monomorphic feedback.
// The child reads the feedback with V8's %DebugPrint; without the kept tick it turns megamorphic,
// which shows the check can fail (and would show the day V8 no longer needs the workaround).

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { heldTick, keepTickShape } from "../../src/http/tick-shape.ts";

const moduleUrl = new URL("../../src/http/tick-shape.ts", import.meta.url).href;

const CHILD = `
if (process.argv[1] === "keep") (await import(${JSON.stringify(moduleUrl)})).keepTickShape();
const tick = () => new Promise((resolve) => process.nextTick(resolve));
for (let i = 0; i < 2000; i++) await tick();
// V8 keeps unused maps through a few collections before it lets them go: collect more often.
await new Promise((resolve) => setTimeout(() => { for (let i = 0; i < 4; i++) globalThis.gc(); resolve(); }, 10));
for (let i = 0; i < 2000; i++) await tick();
%DebugPrint(process.nextTick);
`;

async function literalFeedback(mode: "keep" | "none"): Promise<string[]> {
  // %DebugPrint writes through C's stdio, which node does not flush into a pipe at exit: a file.
  const dir = mkdtempSync(join(tmpdir(), "tabula-tick-"));
  const out = openSync(join(dir, "stdout"), "w");
  try {
    const child = spawn(process.execPath, ["--expose-gc", "--allow-natives-syntax", "--import", "tsx", "--input-type=module", "-e", CHILD, mode], { stdio: ["ignore", out, "inherit"] });
    const [code] = await once(child, "exit");
    assert.equal(code, 0, "the child failed");
    const stdout = readFileSync(join(dir, "stdout"), "utf8");
    return [...stdout.matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((match) => match[1]!);
  } finally {
    closeSync(out);
    rmSync(dir, { recursive: true, force: true });
  }
}

test("nextTick's literal stays monomorphic after full collections when a tick object is kept", async () => {
  const kept = await literalFeedback("keep");
  assert.equal(kept.length, 4, `expected the four properties of the tick literal in %DebugPrint's output, got ${JSON.stringify(kept)}`);
  assert.deepEqual(kept, ["MONOMORPHIC", "MONOMORPHIC", "MONOMORPHIC", "MONOMORPHIC"]);
});

test("without the kept tick the same collections turn that feedback megamorphic (the control)", async () => {
  const lost = await literalFeedback("none");
  assert.ok(lost.includes("MEGAMORPHIC"), `expected a megamorphic slot without the kept tick, got ${JSON.stringify(lost)}`);
});

test("the object kept is a real tick object: the callback and node's two async-id symbols", async () => {
  keepTickShape();
  await new Promise((resolve) => setImmediate(resolve));
  const tick = heldTick();
  assert.ok(tick !== null, "no tick object was kept");
  assert.equal(typeof (tick as { callback?: unknown }).callback, "function");
  assert.equal(Object.getOwnPropertySymbols(tick).length, 2);
});
