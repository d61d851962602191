// Wrong guesses per email and day (docs/users.md, "Codes" and "Passwords"). Time is given.

import { test } from "node:test";
import assert from "node:assert/strict";
import { GUESS_WINDOW_MS, guessesCounted, isGuessingStopped, withWrongGuess, type Guesses } from "../../src/users/guess-budget.ts";

const NOW = 1_800_000_000_000;

test("an email takes its day's wrong guesses: then it is stopped until the day that began with the first is over", () => {
  let guesses: Guesses | null = null;
  for (let i = 0; i < 20; i++) {
    assert.equal(isGuessingStopped(guesses, NOW + i * 60_000, 20), false, `after ${i} wrong guesses`);
    guesses = withWrongGuess(guesses, NOW + i * 60_000);
  }
  assert.deepEqual(guesses, { since: NOW, wrong: 20 });
  assert.equal(isGuessingStopped(guesses, NOW + GUESS_WINDOW_MS - 1, 20), true);
  assert.equal(isGuessingStopped(guesses, NOW + GUESS_WINDOW_MS - 1, 21), false, "the limit is the caller's");
  // The day is counted from the first wrong guess, not the last: then a new day begins.
  assert.equal(isGuessingStopped(guesses, NOW + GUESS_WINDOW_MS, 20), false);
  assert.equal(guessesCounted(guesses, NOW + GUESS_WINDOW_MS), null);
  assert.deepEqual(withWrongGuess(guesses, NOW + GUESS_WINDOW_MS + 5), { since: NOW + GUESS_WINDOW_MS + 5, wrong: 1 });
  // Kept as JSON in the store, and read back from it.
  assert.equal(isGuessingStopped(JSON.parse(JSON.stringify(guesses)), NOW + 1, 20), true);
  assert.equal(isGuessingStopped(undefined, NOW, 1), false);
  assert.equal(isGuessingStopped(null, NOW, 1), false);
});
