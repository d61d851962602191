// Packaging (issue 8): `npm pack` makes a package whose bin and API work from a clean install with
// no runtime dependencies. Packs the built tree (npm test builds dist/ first), installs the tarball
// offline into a temp project, runs `npx tabula-server` and the `tabula` command it installs, imports
// startServer from "tabula-server" (the npm name `tabula` is someone else's) and type-checks a
// consumer against the shipped .d.ts. Skips only when npm itself is missing.

import assert from "node:assert/strict";
import { execFile, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const NPM = process.platform === "win32" ? "npm.cmd" : "npm";
const NPX = process.platform === "win32" ? "npx.cmd" : "npx";
const hasNpm = spawnSync(NPM, ["--version"], { encoding: "utf8" }).status === 0;
const run = promisify(execFile);
// --offline: the package has no runtime dependencies, so installing it must not need a registry.
const NPM_FLAGS = ["--offline", "--no-audit", "--no-fund", "--loglevel=error"];

let dir: string;
let project: string;
let tarball: string;

before(async () => {
  if (!hasNpm) return;
  if (!existsSync(join(ROOT, "dist", "tabula-api.mjs"))) await run(process.execPath, ["build.mjs"], { cwd: ROOT });
  dir = mkdtempSync(join(tmpdir(), "tabula-pack-"));
  project = join(dir, "project");
  const packed = await run(NPM, ["pack", "--json", "--pack-destination", dir, ...NPM_FLAGS], { cwd: ROOT });
  tarball = join(dir, JSON.parse(packed.stdout)[0].filename);
  mkdirSync(project);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", private: true, type: "module" }));
  await run(NPM, ["install", tarball, ...NPM_FLAGS], { cwd: project });
});

after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("the packed tarball holds the bundle, types, bin and examples, and no sources or tests", { skip: !hasNpm && "npm is not available" }, async () => {
  const listed = await run("tar", ["-tzf", tarball]);
  const files = listed.stdout.split("\n").filter(Boolean).map((name) => name.replace(/^package\//, ""));
  for (const file of ["package.json", "bin/tabula.mjs", "dist/tabula.mjs", "dist/tabula-api.mjs", "dist/tabula-api.d.ts", "examples/entities/Task.json"]) {
    assert.ok(files.includes(file), `the tarball has ${file}`);
  }
  assert.deepEqual(files.filter((file) => /^(src|test|bench|node_modules)\//.test(file)), []);
  const manifest = JSON.parse(readFileSync(join(project, "node_modules", "tabula-server", "package.json"), "utf8"));
  assert.equal(manifest.name, "tabula-server");
  assert.deepEqual(manifest.bin, { tabula: "bin/tabula.mjs" }, "one command, named tabula");
  assert.equal(manifest.dependencies, undefined, "no runtime dependencies");
});

test("npx tabula-server --help runs the tabula command from a clean install", { skip: !hasNpm && "npm is not available" }, async () => {
  const help = await run(NPX, ["--no", "--offline", "tabula-server", "--help"], { cwd: project });
  assert.match(help.stdout, /Usage: tabula/);
  assert.match(help.stdout, /--schema/);
  const version = await run(NPX, ["--no", "--offline", "tabula-server", "--version"], { cwd: project });
  assert.match(version.stdout.trim(), /^\d+\.\d+\.\d+$/);
});

test("the installed tabula command serves the shipped example schema", { skip: !hasNpm && "npm is not available" }, async () => {
  const bin = join(project, "node_modules", ".bin", "tabula");
  const child = spawn(bin, ["--schema", "node_modules/tabula-server/examples/entities", "--memory", "--port", "0", "--secret-key", "sk_pack"], { cwd: project });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let output = "";
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        output += chunk;
        const match = /listening on (http:\/\/\S+)/.exec(output);
        if (match) resolve(match[1]!);
      });
      child.once("exit", (code) => reject(new Error(`tabula exited with ${code}: ${output}`)));
    });
    const answer = await fetch(`${url}/api/entities/Task`, { headers: { "X-Api-Key": "sk_pack" } });
    assert.equal(answer.status, 200);
    assert.deepEqual(await answer.json(), []);
  } finally {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }
});

test("import { startServer } from \"tabula-server\" starts, answers a request and closes", { skip: !hasNpm && "npm is not available" }, async () => {
  const script = `
    import { startServer } from "tabula-server";
    const server = await startServer({ schema: "node_modules/tabula-server/examples/entities" });
    const headers = { "X-Api-Key": server.secretKey, "Content-Type": "application/json" };
    const created = await fetch(server.url + "/api/entities/Task", { method: "POST", headers, body: JSON.stringify({ title: "packed" }) });
    const record = await created.json();
    await server.close();
    console.log(JSON.stringify({ status: created.status, title: record.title }));
  `;
  writeFileSync(join(project, "consumer.mjs"), script);
  const { stdout } = await run(process.execPath, ["consumer.mjs"], { cwd: project });
  assert.deepEqual(JSON.parse(stdout), { status: 201, title: "packed" });
});

test("the shipped .d.ts types startServer for a TypeScript consumer", { skip: !hasNpm && "npm is not available" }, async () => {
  const source = `
    import { startServer, type TabulaServer } from "tabula-server";
    const server: TabulaServer = await startServer({ schema: { Task: { properties: { title: { type: "string" } } } }, seed: { Task: [] } });
    const url: string = server.url;
    const keys: [string, string] = [server.secretKey, server.publishableKey];
    await server.reset();
    await server.close();
    // @ts-expect-error schema is required
    void startServer({});
    export { url, keys };
  `;
  writeFileSync(join(project, "consumer.ts"), source);
  const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
  // Both resolutions a consumer of an ESM package with "exports" may use, checked side by side.
  // skipLibCheck keeps it fast; a .d.ts that is not a module, or typed as any, still fails here.
  const checks = [["NodeNext", "NodeNext"], ["ESNext", "Bundler"]].map(async ([module, resolution]) => {
    const flags = ["--noEmit", "--strict", "--module", module!, "--moduleResolution", resolution!, "--target", "ES2022", "--skipLibCheck", "--types", "node", "--typeRoots", join(ROOT, "node_modules", "@types"), "consumer.ts"];
    const failure = await run(process.execPath, [tsc, ...flags], { cwd: project }).then(() => null, (error: { stdout: string; stderr: string }) => error);
    assert.equal(failure, null, failure ? `${resolution}: ${failure.stdout}${failure.stderr}` : "");
  });
  await Promise.all(checks);
});
