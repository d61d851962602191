// Passwords of people who sign in (docs/users.md, "Passwords"): the length rule, and scrypt hashes
// kept as `scrypt$N$r$p$<salt>$<hash>`. Where a hash is kept, and who may sign in, is others' work.

import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";
import { passwordsBusy } from "../errors.ts";
import { Lane } from "../turns/lane.ts";

export const MIN_PASSWORD_LENGTH = 8;
/** scrypt reads the whole password; this keeps one sign-in from costing more than another. */
export const MAX_PASSWORD_LENGTH = 1024;

const SCRYPT_N = 16384;
const SCRYPT_R = 8;
const SCRYPT_P = 1;
const SALT_BYTES = 16;
const HASH_BYTES = 32;
/** A stored hash may name a higher cost than today's; past this much memory it is refused as malformed. */
const MAX_SCRYPT_MEMORY_BYTES = 256 * 1024 * 1024;

interface StoredHash {
  readonly N: number;
  readonly r: number;
  readonly p: number;
  readonly salt: Buffer;
  readonly hash: Buffer;
}

/** Null when the password may be used; else what is wrong and how to mend it. */
export function passwordProblem(password: unknown): string | null {
  if (typeof password !== "string") {
    return `A password must be a string of ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters; this one is ${password === null ? "null" : typeof password}.`;
  }
  // Characters as people count them: an emoji is one, not two UTF-16 units.
  const length = [...password].length;
  if (length < MIN_PASSWORD_LENGTH) return `A password needs at least ${MIN_PASSWORD_LENGTH} characters; this one has ${length}.`;
  if (length > MAX_PASSWORD_LENGTH) return `A password may have at most ${MAX_PASSWORD_LENGTH} characters; this one has ${length}.`;
  return null;
}

/**
 * A new hash of `password`; with `like` (a stored hash), made with its salt and cost, so that the
 * same password gives the same text and another password another: whether a sign-up changed a
 * password is then told without a second scrypt.
 */
export async function hashPassword(password: string, like?: string): Promise<string> {
  const parsed = like === undefined ? null : parseStoredHash(like);
  const [salt, N, r, p] = parsed === null ? [randomBytes(SALT_BYTES), SCRYPT_N, SCRYPT_R, SCRYPT_P] : [parsed.salt, parsed.N, parsed.r, parsed.p];
  const hash = await scryptAsync(password, salt, HASH_BYTES, N, r, p);
  return `scrypt$${N}$${r}$${p}$${salt.toString("base64url")}$${hash.toString("base64url")}`;
}

/**
 * False for a wrong password, and also for an unknown user (`stored` undefined) or a malformed
 * hash: those still run one scrypt of today's cost, so that the answer's timing does not tell
 * which emails have an account.
 */
export async function verifyPassword(password: string, stored: string | undefined): Promise<boolean> {
  const parsed = stored === undefined ? null : parseStoredHash(stored);
  if (parsed === null) {
    const dummy = parseStoredHash(await dummyHash());
    if (dummy !== null) await scryptAsync(password, dummy.salt, dummy.hash.length, dummy.N, dummy.r, dummy.p);
    return false;
  }
  const hash = await scryptAsync(password, parsed.salt, parsed.hash.length, parsed.N, parsed.r, parsed.p);
  return timingSafeEqual(hash, parsed.hash);
}

let dummy: Promise<string> | undefined;

/** Made on first need rather than at import, so that loading this module costs no scrypt. */
function dummyHash(): Promise<string> {
  dummy ??= hashPassword(randomBytes(18).toString("base64url")).catch((error: unknown) => {
    dummy = undefined; // a failed run is not kept: the next unknown user tries again
    throw error;
  });
  return dummy;
}

function parseStoredHash(stored: string): StoredHash | null {
  const parts = stored.split("$");
  if (parts.length !== 6 || parts[0] !== "scrypt") return null;
  const [N, r, p] = parts.slice(1, 4).map(parseCount);
  const salt = decodeBase64url(parts[4]!);
  const hash = decodeBase64url(parts[5]!);
  if (N === null || r === null || p === null || salt === null || hash === null) return null;
  const isPowerOfTwo = N > 1 && (N & (N - 1)) === 0;
  const isAffordable = scryptMemory(N, r, p) <= MAX_SCRYPT_MEMORY_BYTES;
  if (!isPowerOfTwo || !isAffordable || salt.length < SALT_BYTES || hash.length < 16 || hash.length > 64) return null;
  return { N, r, p, salt, hash };
}

function parseCount(text: string | undefined): number | null {
  return text !== undefined && /^[1-9][0-9]{0,8}$/.test(text) ? Number(text) : null;
}

/** Buffer.from(…, "base64url") skips what it cannot read; a stored hash must be exactly base64url. */
function decodeBase64url(text: string): Buffer | null {
  if (!/^[A-Za-z0-9_-]+$/.test(text)) return null;
  const bytes = Buffer.from(text, "base64url");
  return bytes.toString("base64url") === text ? bytes : null;
}

/** What OpenSSL's scrypt allocates (its V and B arrays), which `maxmem` must cover. */
function scryptMemory(N: number, r: number, p: number): number {
  return 128 * r * (N + 2) + 128 * r * p;
}

/**
 * Each scrypt holds a thread of libuv's pool (four by default) for tens of milliseconds, and so do
 * the log's writes and the files' reads and writes. Signing up and in needs no key: a flood of them
 * running four at once would queue everyone's durable writes behind password hashes. Two at a time
 * leave the pool's other threads to the disk; a flood beyond what two threads answer in about ten
 * seconds is refused at once (docs/users.md, "Passwords").
 */
export const passwordLane = new Lane(2, 256, passwordsBusy);

/** The callback form runs on libuv's thread pool; scryptSync would block every other request. */
function scryptAsync(password: string, salt: Buffer, keylen: number, N: number, r: number, p: number): Promise<Buffer> {
  const options: ScryptOptions = { N, r, p, maxmem: scryptMemory(N, r, p) + 1024 * 1024 };
  return passwordLane.run(
    () =>
      new Promise((resolve, reject) => {
        scrypt(password, salt, keylen, options, (error, derived) => (error ? reject(error) : resolve(derived)));
      }),
  );
}
