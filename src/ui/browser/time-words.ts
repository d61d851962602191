// Times as the Keys page shows them (docs/data-browser.md, "Keys"): a UTC minute, as the record
// form shows date-times, and a few relative words ("in 23 h", "5 min ago") where they tell more
// than the date does. No DOM here.

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;
/** Past this, a distance in days says little that the date does not: no relative words. */
const RELATIVE_LIMIT_MS = 60 * DAY_MS;

/** "2026-11-28 12:34 UTC"; the text itself when it is no time. */
export function utcMinuteOf(iso: string): string {
  const time = new Date(iso);
  if (Number.isNaN(time.getTime())) return iso;
  return `${time.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

/** "3 s", "12 min", "5 h", "9 d": the larger unit, rounded down, so that "in 1 h" is never less. */
export function durationWords(ms: number): string {
  if (ms < MINUTE_MS) return `${Math.max(0, Math.floor(ms / 1000))} s`;
  if (ms < HOUR_MS) return `${Math.floor(ms / MINUTE_MS)} min`;
  if (ms < DAY_MS) return `${Math.floor(ms / HOUR_MS)} h`;
  return `${Math.floor(ms / DAY_MS)} d`;
}

/** When a key expires, relative to now: "expired", "expires in 23 h", or "" when far off. */
export function expiryWords(expiresAt: string, now: number): string {
  const left = Date.parse(expiresAt) - now;
  if (Number.isNaN(left)) return "";
  if (left <= 0) return "expired";
  return left > RELATIVE_LIMIT_MS ? "" : `expires in ${durationWords(left)}`;
}

/**
 * When a key was last used: last_used is kept to the minute (docs/api.md), so a use in the
 * current minute reads "this minute"; "" when it is far back.
 */
export function lastUsedWords(lastUsed: string, now: number): string {
  const ago = now - Date.parse(lastUsed);
  if (Number.isNaN(ago)) return "";
  if (ago < MINUTE_MS) return "this minute";
  return ago > RELATIVE_LIMIT_MS ? "" : `${durationWords(ago)} ago`;
}
