// Wrong guesses an email takes in a day (docs/users.md, "Codes" and "Passwords"): its codes and its
// password each have a count, kept in the store beside the user's other secrets, so that neither a
// restart nor another process sharing the store starts it over. The minute's limits
// (failure-limit.ts) live in one process and slow a guesser down; these stop one.

export const GUESS_WINDOW_MS = 24 * 60 * 60_000;

/** Wrong guesses for one email since `since` (plain JSON, as a store keeps it). */
export interface Guesses {
  readonly since: number;
  readonly wrong: number;
}

/** The guesses still counted at `now`: none once their day is over. */
export function guessesCounted(guesses: Guesses | undefined | null, now: number): Guesses | null {
  return guesses !== undefined && guesses !== null && now < guesses.since + GUESS_WINDOW_MS ? guesses : null;
}

/** Whether guessing is stopped at `now`, right or wrong: the day's `perDay` wrong guesses are spent. */
export function isGuessingStopped(guesses: Guesses | undefined | null, now: number, perDay: number): boolean {
  return (guessesCounted(guesses, now)?.wrong ?? 0) >= perDay;
}

/** The guesses after one more wrong one at `now`; a day starts with the first wrong guess after the last day ended. */
export function withWrongGuess(guesses: Guesses | undefined | null, now: number): Guesses {
  const counted = guessesCounted(guesses, now);
  return { since: counted?.since ?? now, wrong: (counted?.wrong ?? 0) + 1 };
}
