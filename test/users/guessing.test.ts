// Guessing codes and passwords (docs/users.md, "Codes" and "Passwords"), through HTTP on a data
// folder. A code takes five tries and the minute's limit ten guesses an email, but asking for new
// codes again and again would give a guesser ten tries a minute for as long as it likes, and a
// password ten a minute is 14,400 of the commonest a day. An email takes 20 wrong codes and 100
// wrong passwords a day, kept in the store, so that neither a restart nor another process sharing
// it gives more; a burst of guesses at once is held to the minute's ten; and asking for codes beyond
// the few a minute that are sent leaves the code last sent valid.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SECRET, PUBLISHABLE, TASK } from "../support/server.ts";
import { createServer, type TabulaServer } from "../../src/server.ts";

const dataDir = mkdtempSync(join(tmpdir(), "tabula-code-guesses-"));
after(() => rmSync(dataDir, { recursive: true, force: true }));

/** The codes the servers printed (no webhook endpoint asks for them), newest last. */
const printed: string[] = [];

function start(): Promise<TabulaServer> {
  return createServer({ schema: { Task: TASK }, data: dataDir, port: 0, secretKey: SECRET, publishableKey: PUBLISHABLE, trustProxy: true, printCode: (line) => printed.push(line), log: "off" });
}

const PASSWORD = "correct horse battery";

async function post(server: TabulaServer, path: string, body: unknown, address: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`${server.url}/api/auth/${path}`, { method: "POST", headers: { "Content-Type": "application/json", "X-Forwarded-For": address }, body: JSON.stringify(body) });
  return { status: response.status, body: await response.json() };
}

function lastCodeFor(email: string): string {
  const line = [...printed].reverse().find((text) => text.includes(` for ${email}:`));
  assert.ok(line, `no code was printed for ${email}`);
  return /code (\d{6})/.exec(line)![1]!;
}

const codesPrinted = (email: string) => printed.filter((text) => text.includes(` for ${email}:`)).length;

/** Five wrong codes for `email` from five addresses, to verify-otp or reset-password: the pending code's tries, all used. */
async function fiveWrong(server: TabulaServer, email: string, round: number, path: "verify-otp" | "reset-password" = "verify-otp"): Promise<void> {
  const right = lastCodeFor(email);
  const wrong = right === "000000" ? "111111" : "000000";
  for (let i = 0; i < 5; i++) {
    const answer = await post(server, path, { email, otp_code: wrong, ...(path === "reset-password" ? { new_password: "guessed horse battery" } : {}) }, `10.9.${round}.${i}`);
    assert.equal(answer.status, 400, JSON.stringify(answer.body));
    assert.equal(answer.body.error.code, "invalid_code");
  }
}

test("codes asked for beyond the few a minute that are sent leave the code last sent valid", async () => {
  const server = await start();
  try {
    const email = "quick@example.com";
    assert.equal((await post(server, "register", { email, password: PASSWORD }, "10.8.0.1")).status, 200);
    assert.equal((await post(server, "resend-otp", { email }, "10.8.0.2")).status, 200);
    assert.equal((await post(server, "resend-otp", { email }, "10.8.0.3")).status, 200);
    assert.equal(codesPrinted(email), 3, "three codes a minute are sent");
    const sent = lastCodeFor(email);
    // Someone asks again: the answer is the same, nothing is sent, and the code sent stays.
    const more = await post(server, "resend-otp", { email }, "10.8.0.4");
    assert.equal(more.status, 200);
    assert.equal(codesPrinted(email), 3);
    const proven = await post(server, "verify-otp", { email, otp_code: sent }, "10.8.0.1");
    assert.equal(proven.status, 200, JSON.stringify(proven.body));
  } finally {
    await server.close();
  }
});

test("an email takes twenty wrong codes a day, across restarts; then even its right code is refused, and others' are not", async () => {
  const victim = "victim@example.com";
  const bystander = "bystander@example.com";
  let server = await start();
  assert.equal((await post(server, "register", { email: victim, password: PASSWORD }, "10.9.100.1")).status, 200);
  assert.equal((await post(server, "register", { email: bystander, password: PASSWORD }, "10.9.100.2")).status, 200);
  // Each restart ends the minute's limits, which live in the process: what is kept in the store stays.
  for (let round = 0; round < 4; round++) {
    if (round > 0 && round % 2 === 0) {
      await server.close();
      server = await start();
    }
    if (round > 0) assert.equal((await post(server, "resend-otp", { email: victim }, `10.9.${round}.99`)).status, 200);
    await fiveWrong(server, victim, round);
  }
  await server.close();
  server = await start();
  try {
    // The owner asks for a code and enters it: refused like a wrong one, the day's wrong codes named.
    assert.equal((await post(server, "resend-otp", { email: victim }, "10.9.100.1")).status, 200);
    const refused = await post(server, "verify-otp", { email: victim, otp_code: lastCodeFor(victim) }, "10.9.100.1");
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.code, "invalid_code");
    assert.match(refused.body.error.message, /20 wrong codes/);
    // A reset is a code too: no way around the limit there.
    assert.equal((await post(server, "reset-password-request", { email: victim }, "10.9.100.3")).status, 200);
    const reset = await post(server, "reset-password", { email: victim, otp_code: lastCodeFor(victim), new_password: "another horse battery" }, "10.9.100.3");
    assert.equal(reset.status, 400);
    assert.equal(reset.body.error.code, "invalid_code");
    // Another email's codes are its own.
    const other = await post(server, "verify-otp", { email: bystander, otp_code: lastCodeFor(bystander) }, "10.9.100.2");
    assert.equal(other.status, 200, JSON.stringify(other.body));
    // An unknown email is answered as the stopped one is: the limit tells no one who signed up.
    const unknown = await post(server, "verify-otp", { email: "nobody@example.com", otp_code: "123456" }, "10.9.100.4");
    assert.deepEqual(unknown, refused);
  } finally {
    await server.close();
  }
});

test("a right code ends the count: the wrong ones before it are forgiven", async () => {
  const email = "typo@example.com";
  let server = await start();
  try {
    assert.equal((await post(server, "register", { email, password: PASSWORD }, "10.7.0.1")).status, 200);
    await fiveWrong(server, email, 50);
    assert.equal((await post(server, "resend-otp", { email }, "10.7.0.2")).status, 200);
    await fiveWrong(server, email, 51);
    await server.close();
    server = await start();
    assert.equal((await post(server, "resend-otp", { email }, "10.7.0.3")).status, 200);
    await fiveWrong(server, email, 52);
    assert.equal((await post(server, "resend-otp", { email }, "10.7.0.4")).status, 200);
    const right = await post(server, "verify-otp", { email, otp_code: lastCodeFor(email) }, "10.7.0.1");
    assert.equal(right.status, 200, "fifteen wrong codes, then the right one");
    await server.close();
    server = await start();
    // Fifteen more wrong codes in the same day: had the count stayed, the twentieth would stop the email.
    for (let round = 53; round < 56; round++) {
      assert.equal((await post(server, "reset-password-request", { email }, `10.7.1.${round}`)).status, 200);
      await fiveWrong(server, email, round, "reset-password");
      if (round === 54) {
        await server.close();
        server = await start();
      }
    }
    assert.equal((await post(server, "reset-password-request", { email }, "10.7.2.1")).status, 200);
    const reset = await post(server, "reset-password", { email, otp_code: lastCodeFor(email), new_password: "another horse battery" }, "10.7.2.1");
    assert.equal(reset.status, 200, JSON.stringify(reset.body));
  } finally {
    await server.close();
  }
});

/** Signs `email` up and proves it, from `address`. */
async function signedUp(server: TabulaServer, email: string, address: string): Promise<void> {
  assert.equal((await post(server, "register", { email, password: PASSWORD }, address)).status, 200);
  const proven = await post(server, "verify-otp", { email, otp_code: lastCodeFor(email) }, address);
  assert.equal(proven.status, 200, JSON.stringify(proven.body));
}

test("sixty wrong passwords at once for one email are ten guesses: the rest wait (429)", async () => {
  const server = await start();
  try {
    await signedUp(server, "burst@example.com", "10.6.0.1");
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => post(server, "login", { email: "burst@example.com", password: `wrong guess ${i}` }, `10.6.1.${i}`)));
    const statuses = answers.map((answer) => answer.status).sort();
    assert.equal(statuses.filter((status) => status === 401).length, 10, `answered ${JSON.stringify(statuses)}`);
    assert.equal(statuses.filter((status) => status === 429).length, 50);
  } finally {
    await server.close();
  }
});

test("an email takes 100 wrong passwords a day, across restarts: then the right one is refused as wrong, until a password reset", async () => {
  const email = "guessed@example.com";
  let server = await start();
  await signedUp(server, email, "10.5.0.1");
  await signedUp(server, "neighbour@example.com", "10.5.0.2");
  // Ten a minute in a process: a restart starts the minute over, not the day.
  for (let round = 0; round < 10; round++) {
    for (let i = 0; i < 10; i++) {
      const answer = await post(server, "login", { email, password: `guess ${round}.${i}` }, `10.5.${round + 1}.${i}`);
      assert.equal(answer.status, 401, JSON.stringify(answer.body));
    }
    await server.close();
    server = await start();
  }
  try {
    const refused = await post(server, "login", { email, password: PASSWORD }, "10.5.0.1");
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error.code, "invalid_credentials");
    assert.match(refused.body.error.message, /100 wrong passwords/);
    // Answered as an unknown email is: the limit tells no one who signed up.
    assert.deepEqual(await post(server, "login", { email: "stranger@example.com", password: PASSWORD }, "10.5.0.3"), refused);
    // Another email is its own.
    assert.equal((await post(server, "login", { email: "neighbour@example.com", password: PASSWORD }, "10.5.0.2")).status, 200);
    // The owner resets the password with the code its email receives, and is let in again.
    assert.equal((await post(server, "reset-password-request", { email }, "10.5.0.1")).status, 200);
    const reset = await post(server, "reset-password", { email, otp_code: lastCodeFor(email), new_password: "a brand new battery" }, "10.5.0.1");
    assert.equal(reset.status, 200, JSON.stringify(reset.body));
    const login = await post(server, "login", { email, password: "a brand new battery" }, "10.5.0.1");
    assert.equal(login.status, 200, JSON.stringify(login.body));
  } finally {
    await server.close();
  }
});

test("a right password forgives the wrong ones before it", async () => {
  const email = "forgetful@example.com";
  let server = await start();
  try {
    await signedUp(server, email, "10.4.0.1");
    for (let round = 0; round < 12; round++) {
      for (let i = 0; i < 9; i++) assert.equal((await post(server, "login", { email, password: `guess ${round}.${i}` }, `10.4.${round + 1}.${i}`)).status, 401);
      assert.equal((await post(server, "login", { email, password: PASSWORD }, "10.4.0.1")).status, 200, `round ${round}: 108 wrong in all, but never 100 since a right one`);
      await server.close();
      server = await start();
    }
  } finally {
    await server.close();
  }
});
