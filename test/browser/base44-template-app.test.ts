// The Base44 template app, run unchanged on tabula (docs/base44-sdk.md, "Run your Base44 app on
// tabula"): the React + Vite app `base44 create` writes (test/fixtures/base44-template), built with
// `vite build` and served by tabula from its dist/ with no key configured, then in Vite's dev server
// with VITE_BASE44_APP_BASE_URL naming tabula. In Chromium it lists, creates, toggles and deletes
// tasks; tabula's API shows each change. The app calls the API with no key (its serverUrl is ''),
// as a Base44 app whose config says "visibility": "public" does.

import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { describeInChromium, eventually, launchChromium } from "../support/browser.ts";
import { cliInTempFolder, killSpawned, startSpawnedServer, type SpawnedServer } from "../support/spawned-server.ts";

const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
const TEMPLATE = join(REPO_ROOT, "test/fixtures/base44-template");
const VITE = join(REPO_ROOT, "node_modules/vite/bin/vite.js");
/** base44/.app.jsonc's id, which `base44 build` gives the build as VITE_BASE44_APP_ID. */
const APP_ID = "tabula-template";
const START_TIMEOUT_MS = 60_000;

/** Runs vite in the app's folder; resolves with its output once `isDone` says so (or it exits 0). */
function runVite(cwd: string, args: readonly string[], env: Record<string, string>, isDone: (output: string) => boolean): { child: ChildProcess; ready: Promise<string> } {
  const child = spawn(process.execPath, [VITE, ...args], { cwd, env: { ...process.env, ...env, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const ready = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`vite ${args.join(" ")} took over ${START_TIMEOUT_MS} ms:\n${output}`)), START_TIMEOUT_MS);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (isDone(output)) {
        clearTimeout(timer);
        resolve(output);
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.on("close", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(output);
      else reject(new Error(`vite ${args.join(" ")} exited with ${code}:\n${output}`));
    });
  });
  return { child, ready };
}

/** The tasks the app shows, as their titles and whether each is checked. */
async function shownTasks(page: Page): Promise<Array<{ title: string; done: boolean }>> {
  return page.$$eval("[role=checkbox]", (boxes) => boxes.map((box) => ({ title: box.nextElementSibling?.textContent ?? "", done: box.getAttribute("aria-checked") === "true" })));
}

/** Lists, creates, toggles and deletes through the app's page, checking tabula's API after each. */
async function driveTheApp(page: Page, appUrl: string, apiTasks: () => Promise<Array<{ id: string; title: string; completed: boolean }>>): Promise<void> {
  const failed: string[] = [];
  page.on("response", (response) => {
    if (response.url().includes("/api/") && response.status() >= 400) failed.push(`${response.status()} ${response.request().method()} ${response.url()}`);
  });
  await page.goto(appUrl);
  await page.getByText("No tasks yet. Add one above!").waitFor();
  for (const title of ["Buy milk", "Water the plants"]) {
    await page.getByPlaceholder("What needs to be done?").fill(title);
    await page.keyboard.press("Enter");
    await page.getByText(title).waitFor();
  }
  assert.deepEqual((await apiTasks()).map((task) => task.title).sort(), ["Buy milk", "Water the plants"]);
  // Toggle: the checkbox beside "Buy milk".
  await page.locator("div", { has: page.getByText("Buy milk", { exact: true }) }).locator("[role=checkbox]").last().click();
  await eventually("Buy milk checked in the app", () => shownTasks(page), (tasks) => tasks.some((task) => task.title === "Buy milk" && task.done));
  const stored = await eventually("Buy milk completed in tabula", apiTasks, (tasks) => tasks.some((task) => task.title === "Buy milk" && task.completed));
  assert.equal(stored.find((task) => task.title === "Water the plants")?.completed, false);
  // Delete "Water the plants" with its (hover-revealed) trash button.
  const row = page.locator("div.group", { has: page.getByText("Water the plants", { exact: true }) });
  await row.hover();
  await row.locator("button").last().click();
  await page.getByText("Water the plants").waitFor({ state: "detached" });
  assert.deepEqual((await eventually("one task left in tabula", apiTasks, (tasks) => tasks.length === 1)).map((task) => task.title), ["Buy milk"]);
  // A reload lists what tabula keeps.
  await page.reload();
  await page.getByText("Buy milk").waitFor();
  assert.deepEqual(await shownTasks(page), [{ title: "Buy milk", done: true }]);
  assert.deepEqual(failed, [], "every API call of the app (analytics included) was answered");
}

describeInChromium("the Base44 template app on tabula", (executablePath) => {
  let browser: Browser;
  let project: string;
  let cli: string;
  let root: string;
  before(async () => {
    ({ root, cli } = await cliInTempFolder("tabula-template-app-"));
    project = join(root, "app");
    cpSync(TEMPLATE, project, { recursive: true });
    // The app's packages are tabula's devDependencies: its folder resolves them through this link.
    symlinkSync(join(REPO_ROOT, "node_modules"), join(project, "node_modules"), "dir");
    await runVite(project, ["build", "--logLevel", "warn"], { VITE_BASE44_APP_ID: APP_ID }, () => false).ready;
    browser = await launchChromium(executablePath);
  });
  after(async () => {
    await browser?.close();
    killSpawned();
    rmSync(root, { recursive: true, force: true });
  });

  /** tabula in the project folder, with no flag: the project, its build and its visitors. */
  async function serveProject(): Promise<SpawnedServer> {
    return startSpawnedServer(cli, ["--memory", "--port", "0", "--log", "off"], START_TIMEOUT_MS, { cwd: project, env: { PATH: process.env.PATH ?? "" } });
  }

  function tasksOf(server: SpawnedServer) {
    const secret = /^secret key +(\S+)  id /m.exec(server.output())![1]!;
    return async () => (await (await fetch(`${server.url}/api/entities/Task`, { headers: { "X-Api-Key": secret } })).json()) as Array<{ id: string; title: string; completed: boolean }>;
  }

  test("built with vite build and served by tabula from its dist/: lists, creates, toggles and deletes", async () => {
    const server = await serveProject();
    try {
      assert.match(server.output(), /^app {14}\S+ \(the app built in \.\/dist\)$/m);
      const page = await browser.newPage();
      try {
        await driveTheApp(page, `${server.url}/`, tasksOf(server));
        // A page of the app opened directly is the app too (the single-page fallback).
        await page.goto(`${server.url}/some/page`);
        await page.getByText("Buy milk").waitFor();
      } finally {
        await page.close();
      }
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });

  test("in Vite's dev server, with VITE_BASE44_APP_BASE_URL naming tabula", async () => {
    const server = await serveProject();
    const dev = runVite(project, ["--port", "0", "--strictPort", "false", "--host", "127.0.0.1"], { VITE_BASE44_APP_ID: APP_ID, VITE_BASE44_APP_BASE_URL: server.url }, (output) => /Local:\s+http:\/\/\S+/.test(output));
    try {
      const url = /Local:\s+(http:\/\/\S+)/.exec(await dev.ready)![1]!;
      const page = await browser.newPage();
      try {
        await driveTheApp(page, url, tasksOf(server));
      } finally {
        await page.close();
      }
    } finally {
      dev.child.kill("SIGTERM");
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });
});
