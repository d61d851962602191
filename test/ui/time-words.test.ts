// The Keys page's times (src/ui/browser/time-words.ts): a UTC minute, and relative words only
// where they tell more than the date.

import assert from "node:assert/strict";
import { test } from "node:test";
import { durationWords, expiryWords, lastUsedWords, utcMinuteOf } from "../../src/ui/browser/time-words.ts";

const NOW = Date.parse("2026-11-28T12:00:00.000Z");
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const at = (offsetMs: number) => new Date(NOW + offsetMs).toISOString();

test("a time is shown to the minute, in UTC; text that is no time is shown as it is", () => {
  const cases: Array<[string, string]> = [
    ["2026-11-28T12:34:56.789Z", "2026-11-28 12:34 UTC"],
    ["2026-11-28T23:59:00+02:00", "2026-11-28 21:59 UTC"],
    ["soon", "soon"],
  ];
  for (const [input, expected] of cases) assert.equal(utcMinuteOf(input), expected, input);
});

test("a duration takes its largest unit, rounded down", () => {
  const cases: Array<[number, string]> = [
    [-5 * SECOND, "0 s"],
    [2 * SECOND + 900, "2 s"],
    [59 * SECOND, "59 s"],
    [MINUTE, "1 min"],
    [HOUR - 1, "59 min"],
    [23 * HOUR + 59 * MINUTE, "23 h"],
    [DAY, "1 d"],
    [45 * DAY, "45 d"],
  ];
  for (const [input, expected] of cases) assert.equal(durationWords(input), expected, String(input));
});

test("an expiry reads expired, expires in …, or nothing when it is months away", () => {
  const cases: Array<[string, string]> = [
    [at(-SECOND), "expired"],
    [at(0), "expired"],
    [at(3 * SECOND), "expires in 3 s"],
    [at(DAY), "expires in 1 d"],
    [at(59 * DAY), "expires in 59 d"],
    [at(90 * DAY), ""],
    ["not a time", ""],
  ];
  for (const [input, expected] of cases) assert.equal(expiryWords(input, NOW), expected, input);
});

test("a last use (kept to the minute) reads this minute, … ago, or nothing when long ago", () => {
  const cases: Array<[string, string]> = [
    [at(-30 * SECOND), "this minute"],
    [at(MINUTE), "this minute"], // a clock a little ahead of this one
    [at(-5 * MINUTE), "5 min ago"],
    [at(-3 * HOUR), "3 h ago"],
    [at(-200 * DAY), ""],
  ];
  for (const [input, expected] of cases) assert.equal(lastUsedWords(input, NOW), expected, input);
});
