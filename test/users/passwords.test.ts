// Passwords (docs/users.md, "Passwords"): the length rule, scrypt hashes, and an unknown user who
// costs as much time as a wrong password.

import { test } from "node:test";
import assert from "node:assert/strict";
import { hashPassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, passwordLane, passwordProblem, verifyPassword } from "../../src/users/passwords.ts";
import { Lane } from "../../src/turns/lane.ts";

test("a password of 8 to 1024 characters has no problem; anything else says what is wrong", () => {
  const cases: [unknown, string | null][] = [
    ["12345678", null],
    ["x".repeat(MAX_PASSWORD_LENGTH), null],
    ["😀".repeat(MIN_PASSWORD_LENGTH), null],
    ["12345", "A password needs at least 8 characters; this one has 5."],
    ["", "A password needs at least 8 characters; this one has 0."],
    ["x".repeat(MAX_PASSWORD_LENGTH + 1), "A password may have at most 1024 characters; this one has 1025."],
    [12345678, "A password must be a string of 8 to 1024 characters; this one is number."],
    [null, "A password must be a string of 8 to 1024 characters; this one is null."],
    [undefined, "A password must be a string of 8 to 1024 characters; this one is undefined."],
  ];
  for (const [password, expected] of cases) assert.equal(passwordProblem(password), expected, String(password).slice(0, 20));
});

test("a hash is scrypt with its parameters, salt and hash in base64url", async () => {
  assert.match(await hashPassword("correct horse"), /^scrypt\$16384\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
});

test("a hash verifies its own password and no other", async () => {
  const stored = await hashPassword("correct horse");
  assert.equal(await verifyPassword("correct horse", stored), true);
  assert.equal(await verifyPassword("correct horsE", stored), false);
  assert.equal(await verifyPassword("", stored), false);
});

test("two hashes of one password differ, by their salt, and both verify", async () => {
  const [first, second] = await Promise.all([hashPassword("same password"), hashPassword("same password")]);
  assert.notEqual(first, second);
  assert.notEqual(first.split("$")[4], second.split("$")[4]);
  assert.equal(await verifyPassword("same password", first), true);
  assert.equal(await verifyPassword("same password", second), true);
});

test("an unknown user or a malformed hash answers false", async () => {
  const stored = await hashPassword("correct horse");
  const [, , , , salt, hash] = stored.split("$");
  const malformed = [
    "",
    "correct horse",
    "bcrypt$16384$8$1$" + salt + "$" + hash,
    `scrypt$16384$8$1$${salt}`,
    `scrypt$16383$8$1$${salt}$${hash}`, // N not a power of two
    `scrypt$1073741824$8$1$${salt}$${hash}`, // far more memory than allowed
    `scrypt$016384$8$1$${salt}$${hash}`,
    `scrypt$16384$8$1$${salt}=$${hash}`,
    `scrypt$16384$8$1$${salt}$${hash}!`,
    `scrypt$16384$8$1$$${hash}`,
  ];
  assert.equal(await verifyPassword("correct horse", undefined), false);
  for (const bad of malformed) assert.equal(await verifyPassword("correct horse", bad), false, bad);
});

test("an unknown user takes about as long as a wrong password", async () => {
  const stored = await hashPassword("correct horse");
  await verifyPassword("warm up", undefined); // the dummy hash is made on first need
  const unknown = await medianMs(() => verifyPassword("correct horse", undefined));
  const wrong = await medianMs(() => verifyPassword("wrong horse", stored));
  // Loose on purpose: this shows one scrypt is run, not zero; it does not time the machine.
  const ratio = unknown / wrong;
  assert.ok(ratio > 0.3 && ratio < 3, `unknown user ${unknown.toFixed(1)} ms, wrong password ${wrong.toFixed(1)} ms`);
});

async function medianMs(run: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const startedAt = performance.now();
    await run();
    times.push(performance.now() - startedAt);
  }
  return times.sort((a, b) => a - b)[2]!;
}

test("at most two passwords are hashed at once: the others wait their turn, and every one is right", async () => {
  const passwords = Array.from({ length: 6 }, (_, i) => `password number ${i}`);
  const hashes = passwords.map((password) => hashPassword(password));
  assert.deepEqual(passwordLane.load, { running: 2, waiting: 4 });
  const kept = await Promise.all(hashes);
  assert.deepEqual(passwordLane.load, { running: 0, waiting: 0 });
  assert.deepEqual(await Promise.all(kept.map((hash, i) => verifyPassword(passwords[i]!, hash))), [true, true, true, true, true, true]);
  assert.equal(await verifyPassword(passwords[0]!, kept[1]), false);
});

test("a lane runs its tasks in arrival order, and past its waiting room refuses at once without running the task", async () => {
  const lane = new Lane(1, 2, () => new Error("busy"));
  const order: string[] = [];
  const releases: Array<() => void> = [];
  const task = (name: string) => () =>
    new Promise<string>((resolve) => {
      order.push(name);
      releases.push(() => resolve(name));
    });
  const a = lane.run(task("a"));
  const b = lane.run(task("b"));
  const c = lane.run(task("c"));
  await assert.rejects(lane.run(task("d")), /busy/);
  assert.deepEqual(lane.load, { running: 1, waiting: 2 });
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    releases[i]!();
  }
  assert.deepEqual(await Promise.all([a, b, c]), ["a", "b", "c"]);
  assert.deepEqual(order, ["a", "b", "c"], "d never ran");
  assert.deepEqual(lane.load, { running: 0, waiting: 0 });
  const failing = lane.run(() => Promise.reject(new Error("task failed")));
  await assert.rejects(failing, /task failed/);
  assert.deepEqual(lane.load, { running: 0, waiting: 0 }, "a failed task gives its turn back");
});
