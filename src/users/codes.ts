// One-time codes and reset tokens (docs/users.md, "Codes"): email verification, password reset and
// invitations. Only their SHA-256 is kept; sending them, and storing a PendingCode, is others' work.

import { createHash, randomInt, timingSafeEqual } from "node:crypto";

export const CODE_TTL_MS = 10 * 60_000;
/** Five guesses in a million: a code cannot be found by trying. */
export const CODE_TRIES = 5;

/** Plain JSON, as a database keeps it. */
export interface PendingCode {
  readonly sha256: string;
  readonly expiresAt: number;
  readonly triesLeft: number;
}

export type CodeCheck =
  | { readonly outcome: "accepted"; readonly next: null }
  | { readonly outcome: "wrong" | "expired" | "used-up" | "none"; readonly next: PendingCode | null };

const CODE_DIGITS = 6;

/**
 * Wrong codes an email takes in a day, whatever they were for: asking for codes again and again gives
 * a guesser five tries each, and without a bound on the day ten a minute (the sign-in limit) would
 * find one of the million in about seventy days. With it, a year of guessing has one chance in 137.
 */
export const WRONG_CODES_PER_DAY = 20;
export const GUESS_WINDOW_MS = 24 * 60 * 60_000;

/** Wrong codes offered for one email since `since` (plain JSON, kept in the store beside its codes). */
export interface CodeGuesses {
  readonly since: number;
  readonly wrong: number;
}

/** The guesses still counted at `now`: none once their day is over. */
export function guessesCounted(guesses: CodeGuesses | undefined | null, now: number): CodeGuesses | null {
  return guesses !== undefined && guesses !== null && now < guesses.since + GUESS_WINDOW_MS ? guesses : null;
}

/** Whether `email`'s codes are refused at `now`, right or wrong: it has had its wrong codes for the day. */
export function isGuessingStopped(guesses: CodeGuesses | undefined | null, now: number): boolean {
  return (guessesCounted(guesses, now)?.wrong ?? 0) >= WRONG_CODES_PER_DAY;
}

/** The guesses after one more wrong code at `now`; a day starts with the first wrong code after the last one ended. */
export function withWrongGuess(guesses: CodeGuesses | undefined | null, now: number): CodeGuesses {
  const counted = guessesCounted(guesses, now);
  return { since: counted?.since ?? now, wrong: (counted?.wrong ?? 0) + 1 };
}

export function newCode(now: number): { readonly code: string; readonly pending: PendingCode } {
  const code = String(randomInt(0, 10 ** CODE_DIGITS)).padStart(CODE_DIGITS, "0");
  return { code, pending: { sha256: sha256Hex(code), expiresAt: now + CODE_TTL_MS, triesLeft: CODE_TRIES } };
}

/** The outcome, and what to keep in place of `pending` (null: keep nothing, the code is spent). */
export function checkCode(pending: PendingCode | undefined | null, offered: unknown, now: number): CodeCheck {
  if (pending === undefined || pending === null) return { outcome: "none", next: null };
  if (now >= pending.expiresAt) return { outcome: "expired", next: null };
  if (pending.triesLeft <= 0) return { outcome: "used-up", next: null };
  if (isRightCode(pending.sha256, offered)) return { outcome: "accepted", next: null };
  const triesLeft = pending.triesLeft - 1;
  return { outcome: "wrong", next: triesLeft > 0 ? { ...pending, triesLeft } : null };
}

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

function isRightCode(sha256: string, offered: unknown): boolean {
  // Only a string: a JSON number has lost its leading zeros (012345 arrives as 12345), and guessing
  // them back would make two offers of one code.
  if (typeof offered !== "string") return false;
  const code = offered.trim();
  if (!new RegExp(`^[0-9]{${CODE_DIGITS}}$`).test(code)) return false;
  const given = Buffer.from(sha256Hex(code));
  const kept = Buffer.from(sha256);
  return given.length === kept.length && timingSafeEqual(given, kept);
}
