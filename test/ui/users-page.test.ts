// The data browser's users (docs/data-browser.md, "Signing in as a user" and "Users"), driven in
// Debian's chromium against a real server on port 0: a user signs in with email and password and
// the page sends its token on every request; an admin's Users page invites, changes a role,
// disables, enables and ends sessions; a plain user is not offered it; Sign out ends the session;
// refused sign-ins are said in words. Users are made as people make them: auth/register, the code
// the server prints (printCode), auth/verify-otp; the secret key then makes one an admin.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Browser, BrowserContext, Page, Request } from "playwright-core";
import { describeInChromium, eventually, launchChromium, WAIT_MS } from "../support/browser.ts";
import { SECRET, startTestServer, type TestServer } from "../support/server.ts";

const PASSWORD = "correct horse battery";
const ADMIN = "admin@example.com";
const PLAIN = "bob@example.com";
/** The user the Users page changes. */
const CAROL = "carol@example.com";
/** Registered, never verified. */
const EVE = "eve@example.com";
/** Words of HTTP and of the API's codes, which a person signing in never typed. */
const SERVER_WORDS = /auth\/|invalid_credentials|email_not_verified|user_disabled|rate_limited|Retry-After|Bearer|\b4\d\d\b/;

describeInChromium("the data browser's users in Chromium", (chromiumPath) => {
  let browser: Browser;
  let server: TestServer;
  /** The lines the server printed: each code it sent, as no webhook asked for them. */
  const printed: string[] = [];
  const ids: Record<string, string> = {};
  const problems: string[] = [];
  /** The admin's tab, signed in by the second test and used until Sign out. */
  let adminPage: Page;
  const adminRequests: Request[] = [];

  before(async () => {
    [browser, server] = await Promise.all([launchChromium(chromiumPath), startTestServer({ memory: true, printCode: (line) => printed.push(line) })]);
    ids[ADMIN] = await makeUser(ADMIN, "admin");
    ids[PLAIN] = await makeUser(PLAIN, "user");
    ids[CAROL] = await makeUser(CAROL, "user");
    const registered = await server.call("POST", "/api/auth/register", { apiKey: null, body: { email: EVE, password: PASSWORD } });
    assert.equal(registered.status, 200, registered.text);
    ids[EVE] = String((await userOf(EVE)).id);
    adminPage = await (await newContext()).newPage();
    adminPage.on("request", (request) => adminRequests.push(request));
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  /** A user as people make one (register, the printed code, verify-otp), with `role` set by the secret key; answers its id. */
  async function makeUser(email: string, role: string): Promise<string> {
    const registered = await server.call("POST", "/api/auth/register", { apiKey: null, body: { email, password: PASSWORD } });
    assert.equal(registered.status, 200, registered.text);
    const otp_code = await printedCode("user.verification_requested", email);
    const verified = await server.call("POST", "/api/auth/verify-otp", { apiKey: null, body: { email, otp_code } });
    assert.equal(verified.status, 200, verified.text);
    const id: string = verified.body.user.id;
    if (role !== "user") {
      const patched = await server.call("PATCH", `/api/users/${id}`, { body: { role } });
      assert.equal(patched.status, 200, patched.text);
    }
    return id;
  }

  /** The last code the server printed for `email`, as `<event> for <email>: code NNNNNN, …`. */
  async function printedCode(event: string, email: string): Promise<string> {
    const line = await eventually(`the printed ${event} of ${email}`, async () => printed.filter((printedLine) => printedLine.startsWith(`${event} for ${email}: code `)).at(-1), (found) => found !== undefined);
    return /code (\d{6})/.exec(line!)![1]!;
  }

  async function newContext(apiKey?: string): Promise<BrowserContext> {
    const created = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    created.setDefaultTimeout(WAIT_MS);
    await created.addInitScript(`document.addEventListener("securitypolicyviolation", (e) => console.error("CSP violation: " + e.violatedDirective + " " + e.blockedURI));`);
    if (apiKey) await created.addInitScript(`if (location.protocol === "http:") sessionStorage.setItem("tabula.apiKey", ${JSON.stringify(apiKey)});`);
    created.on("page", (opened) => {
      opened.on("console", (message) => {
        if (/Content Security Policy|CSP violation/i.test(message.text())) problems.push(message.text());
      });
      opened.on("pageerror", (error) => problems.push(`uncaught: ${error.message}`));
    });
    return created;
  }

  /** Fills the sign-in form of `page` (opened at the server) and submits it. */
  async function signIn(page: Page, email: string, password: string): Promise<void> {
    await page.getByLabel("Email", { exact: true }).fill(email);
    await page.getByLabel("Password", { exact: true }).fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
  }

  async function signInError(page: Page, previous = ""): Promise<string> {
    return (await eventually("the sign-in's refusal", () => page.locator("#sign-in-error").textContent().catch(() => null), (text) => (text ?? "") !== "" && text !== previous)) ?? "";
  }

  async function listUsers(): Promise<Array<Record<string, unknown>>> {
    const answer = await server.call("GET", "/api/users");
    assert.equal(answer.status, 200, answer.text);
    return answer.body;
  }

  async function userOf(email: string): Promise<Record<string, unknown>> {
    return (await listUsers()).find((user) => user.email === email)!;
  }

  async function tokenStatus(token: string): Promise<number> {
    return (await server.call("GET", "/api/entities/User/me", { apiKey: null, headers: { Authorization: `Bearer ${token}` } })).status;
  }

  const userRow = (email: string) => adminPage.locator(`tbody tr[data-user-id="${ids[email]}"]`);
  const cell = (email: string, column: string) => userRow(email).locator(`td[data-column="${column}"]`).textContent();
  const dialog = () => adminPage.locator("dialog[open]");
  const status = () => adminPage.locator(".users .status").textContent();

  test("a wrong password is refused in words, and the form keeps the email and asks for the password again", async () => {
    await adminPage.goto(`${server.url}/`);
    await signIn(adminPage, ADMIN, "not the password");
    const refusal = await signInError(adminPage);
    assert.equal(refusal, "The email or the password is wrong. Check both, and try again.");
    assert.doesNotMatch(refusal, SERVER_WORDS);
    assert.equal(await adminPage.getByLabel("Email", { exact: true }).inputValue(), ADMIN);
    assert.equal(await adminPage.getByLabel("Password", { exact: true }).inputValue(), "");
    assert.equal(await adminPage.evaluate("document.activeElement.id"), "sign-in-password");
    assert.equal(await adminPage.evaluate("sessionStorage.getItem('tabula.accessToken')"), null);
    assert.equal(await adminPage.locator("#session").isHidden(), true);
  });

  test("an admin signs in with email and password: the page shows who it is, sends the token on every request, and keeps it in this tab only", async () => {
    await signIn(adminPage, ADMIN, PASSWORD);
    await eventually("who is signed in", () => adminPage.locator("#session [data-user-email]").textContent().catch(() => null), (text) => text === ADMIN);
    assert.equal(await adminPage.locator("#session [data-user-role]").textContent(), "admin");
    assert.equal(await adminPage.getByRole("button", { name: "Sign out" }).count(), 1);
    assert.equal(await adminPage.getByRole("button", { name: "Forget key" }).count(), 0);

    const token = (await adminPage.evaluate("sessionStorage.getItem('tabula.accessToken')")) as string;
    assert.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/, "a JWT");
    assert.equal(await adminPage.evaluate("sessionStorage.getItem('tabula.apiKey')"), null);
    assert.equal(await adminPage.evaluate("localStorage.length"), 0);
    assert.equal(await tokenStatus(token), 200);

    // An admin manages users, but acts with a publishable key's limits: no Keys, no Webhooks.
    assert.deepEqual(await adminPage.locator("nav a[data-page]").evaluateAll((links) => links.map((link) => link.getAttribute("data-page"))), ["users"]);
    await eventually("the Task table followed live", () => adminPage.locator(".live").getAttribute("data-state"), (state) => state === "live");

    const apiRequests = adminRequests.filter((request) => new URL(request.url()).pathname.startsWith("/api/"));
    const login = apiRequests.filter((request) => new URL(request.url()).pathname === "/api/auth/login");
    assert.equal(login.length, 2, "the wrong password's, then this one");
    for (const request of login) assert.equal((await request.allHeaders()).authorization, undefined);
    const signedIn = apiRequests.filter((request) => !login.includes(request));
    assert.ok(signedIn.length >= 3, `the entities, the user, the records and the feed: ${signedIn.map((request) => request.url()).join(", ")}`);
    for (const request of signedIn) {
      const path = new URL(request.url()).pathname;
      const headers = await request.allHeaders();
      assert.equal(headers["x-api-key"], undefined, path);
      // EventSource sends no headers: the change feed alone takes the token as ?key= (docs/change-feed.md).
      if (path.endsWith("/changes")) assert.equal(new URL(request.url()).searchParams.get("key"), token, path);
      else {
        assert.equal(headers.authorization, `Bearer ${token}`, path);
        assert.ok(!request.url().includes(token), `${path}: no token in the URL`);
      }
    }
    assert.ok(!adminPage.url().includes(token), "no token in the page's URL");

    await adminPage.reload();
    await eventually("still signed in after a reload", () => adminPage.locator("#session [data-user-email]").textContent().catch(() => null), (text) => text === ADMIN);
    assert.equal(await adminPage.locator("#sign-in-email").count(), 0);
  });

  test("the Users page lists every user, and invites, changes a role, disables, enables and ends sessions, reading the list again after each", async () => {
    await adminPage.locator('nav a[data-page="users"]').click();
    await eventually("every user listed", () => adminPage.locator("tbody tr[data-user-id]").count(), (count) => count === 4);
    assert.deepEqual(await adminPage.locator(".users thead th").allTextContents(), ["Email", "Name", "Role", "Disabled", "Verified", "Created", "Actions"]);
    assert.equal(await userRow(ADMIN).locator(".badge", { hasText: "you" }).count(), 1);
    assert.equal(await cell(ADMIN, "role"), "admin");
    assert.equal(await cell(CAROL, "role"), "user");
    assert.equal(await cell(CAROL, "disabled"), "no");
    assert.equal(await cell(CAROL, "verified"), "yes");
    assert.equal(await cell(EVE, "verified"), "not yet");
    assert.match((await cell(CAROL, "created")) ?? "", /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);

    await adminPage.getByLabel("Email", { exact: true }).fill("dora@example.com");
    await adminPage.getByLabel("Role", { exact: true }).fill("user");
    await adminPage.getByRole("button", { name: "Invite" }).click();
    await eventually("the invitation's message", status, (text) => text?.startsWith("Invited dora@example.com as user:") === true);
    await printedCode("user.invited", "dora@example.com");
    assert.equal(await adminPage.getByLabel("Email", { exact: true }).inputValue(), "");

    await adminPage.getByRole("button", { name: `Change the role of ${CAROL}` }).click();
    await dialog().getByLabel("Role", { exact: true }).fill("editor");
    await dialog().getByRole("button", { name: "Change role" }).click();
    await eventually("the new role listed", () => cell(CAROL, "role"), (text) => text === "editor");
    assert.equal(await status(), `${CAROL} is now editor.`);
    assert.equal((await userOf(CAROL)).role, "editor");

    await adminPage.getByRole("button", { name: `Disable ${CAROL}` }).click();
    await dialog().getByRole("button", { name: "Disable" }).click();
    await eventually("carol disabled", () => cell(CAROL, "disabled"), (text) => text === "yes");
    assert.equal((await userOf(CAROL)).disabled, true);
    const refused = await server.call("POST", "/api/auth/login", { apiKey: null, body: { email: CAROL, password: PASSWORD } });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error.code, "user_disabled");

    await adminPage.getByRole("button", { name: `Enable ${CAROL}` }).click();
    await eventually("carol enabled", () => cell(CAROL, "disabled"), (text) => text === "no");
    assert.equal((await userOf(CAROL)).disabled, false);

    const carol = await server.call("POST", "/api/auth/login", { apiKey: null, body: { email: CAROL, password: PASSWORD } });
    assert.equal(carol.status, 200, carol.text);
    assert.equal(await tokenStatus(carol.body.access_token), 200);
    await adminPage.getByRole("button", { name: `End the sessions of ${CAROL}` }).click();
    await dialog().getByRole("button", { name: "End sessions" }).click();
    await eventually("the sessions' end said", status, (text) => text === `Ended 1 session of ${CAROL}.`);
    assert.equal(await tokenStatus(carol.body.access_token), 401);
    assert.equal(await adminPage.locator("#session [data-user-email]").textContent(), ADMIN, "the admin's own session goes on");
  });

  test("a plain user is shown by email and role, and not offered the Users page; opened at #/users it is shown the refusal", async () => {
    const context = await newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${server.url}/`);
      await signIn(page, PLAIN, PASSWORD);
      await eventually("who is signed in", () => page.locator("#session [data-user-email]").textContent().catch(() => null), (text) => text === PLAIN);
      assert.equal(await page.locator("#session [data-user-role]").textContent(), "user");
      await page.locator("#records-title").waitFor();
      assert.equal(await page.locator("nav a[data-page]").count(), 0, "no Users, Keys or Webhooks");
      await page.evaluate("location.hash = '#/users'");
      const refusal = await eventually("the API's refusal", () => page.locator(".users .status").textContent().catch(() => null), (text) => (text ?? "") !== "");
      assert.match(refusal ?? "", /Only the secret key or a user whose role is admin may manage users/);
      assert.equal(await page.locator(".users tbody tr[data-user-id]").count(), 0);
      assert.equal(await page.getByRole("button", { name: "Invite" }).isHidden(), true);
    } finally {
      await context.close();
    }
  });

  test("the secret key is offered Users beside Keys and Webhooks", async () => {
    const context = await newContext(SECRET);
    try {
      const page = await context.newPage();
      await page.goto(`${server.url}/#/users`);
      await eventually("every user listed", () => page.locator("tbody tr[data-user-id]").count(), (count) => count === 4);
      assert.deepEqual(await page.locator("nav a[data-page]").evaluateAll((links) => links.map((link) => link.getAttribute("data-page"))), ["keys", "webhooks", "users"]);
      assert.equal(await page.locator(".users .badge", { hasText: "you" }).count(), 0, "a key is no user");
      assert.equal(await page.locator(".session .badge").textContent(), "secret key");
    } finally {
      await context.close();
    }
  });

  test("Sign out ends the session on the server and forgets the token", async () => {
    const token = (await adminPage.evaluate("sessionStorage.getItem('tabula.accessToken')")) as string;
    assert.equal(await tokenStatus(token), 200);
    await adminPage.getByRole("button", { name: "Sign out" }).click();
    await adminPage.locator("#sign-in-email").waitFor();
    assert.equal(await adminPage.locator(".sign-in .notice").textContent(), "Signed out.");
    assert.equal(await adminPage.evaluate("sessionStorage.getItem('tabula.accessToken')"), null);
    assert.equal(await adminPage.locator("#session").isHidden(), true);
    assert.equal(await tokenStatus(token), 401);
  });

  // Last: the failures it makes keep every sign-in from this address waiting for a minute.
  test("a refused sign-in is said in words: not verified, disabled, and too many tries with the seconds to wait", async () => {
    await adminPage.goto(`${server.url}/`);
    await signIn(adminPage, EVE, PASSWORD);
    const unverified = await signInError(adminPage);
    assert.match(unverified, /^This email is not verified yet: finish signing up with the 6-digit code/);
    assert.doesNotMatch(unverified, SERVER_WORDS);

    assert.equal((await server.call("PATCH", `/api/users/${ids[CAROL]}`, { body: { disabled: true } })).status, 200);
    await signIn(adminPage, CAROL, PASSWORD);
    const disabled = await signInError(adminPage, unverified);
    assert.match(disabled, /^This user is disabled/);
    assert.doesNotMatch(disabled, SERVER_WORDS);

    let retryAfter = "";
    for (let tries = 0; tries < 20 && retryAfter === ""; tries++) {
      const failed = await server.call("POST", "/api/auth/login", { apiKey: null, body: { email: PLAIN, password: "not the password" } });
      if (failed.status === 429) retryAfter = failed.headers.get("retry-after") ?? "";
      else assert.equal(failed.status, 401, failed.text);
    }
    assert.match(retryAfter, /^\d+$/, "the failures reached the limit");
    await signIn(adminPage, PLAIN, PASSWORD);
    const tooMany = await signInError(adminPage, disabled);
    const wait = /^Too many failed sign-ins for this email or from this computer: wait (\d+) s, then try again\.$/.exec(tooMany);
    assert.ok(wait, tooMany);
    assert.ok(Math.abs(Number(wait[1]) - Number(retryAfter)) <= 2, `waits ${wait[1]} s, Retry-After said ${retryAfter}`);
    assert.doesNotMatch(tooMany, SERVER_WORDS);
  });

  test("nothing on the page broke the Content-Security-Policy, and nothing threw", () => {
    assert.deepEqual(problems, []);
  });
});
