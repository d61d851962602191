// One-time codes (docs/users.md, "Codes"): email verification, password reset and invitations.
// Only their SHA-256 is kept; sending them, and storing a PendingCode, is others' work.

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
