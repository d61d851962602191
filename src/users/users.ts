// People, as the Base44 SDK's auth module signs them in (docs/users.md): the built-in User entity's
// records hold what anyone may see of a user (email, full_name, role, disabled); what no answer may
// ever show (the password's hash, pending codes, sessions, the signing secret) is kept as the store's
// metadata, written in the same all-or-nothing commits as the records, and so as durable as they are
// and shared by every process on one PostgreSQL database. No HTTP here: http/users-routes.ts serves it.

import { randomBytes } from "node:crypto";
import { ApiError, forbidden, invalidField, invalidJson } from "../errors.ts";
import { checkFieldWrites } from "../rules/grants.ts";
import type { Caller, SessionUser } from "../keys/caller.ts";
import type { UserEventType } from "../views.ts";
import { then, type Maybe } from "../maybe.ts";
import { parseFilter } from "../query/filter.ts";
import type { Records } from "../records/records.ts";
import type { EntityDef } from "../schema/fields.ts";
import { isPlainObject } from "../schema/load.ts";
import { validateChanges } from "../schema/validate.ts";
import type { MetaWrite, Put, Row } from "../store/store.ts";
import { ConflictError, UniqueViolation } from "../store/store.ts";
import { checkCode, newCode, sha256Hex, type CodeCheck, type PendingCode } from "./codes.ts";
import { isGuessingStopped, withWrongGuess, type Guesses } from "./guess-budget.ts";
import { FailureLimit } from "./failure-limit.ts";
import { hashPassword, passwordProblem, verifyPassword } from "./passwords.ts";
import { newSigningSecret, secretBytes, signToken, verifyToken, type TokenClaims } from "./tokens.ts";
import { USER_ENTITY } from "../schema/user-entity.ts";

/** Who may register (--signup): anyone, invited emails only, or no one (the secret key, an admin or the CLI make users). */
export type Signup = "open" | "invite" | "off";
export const SIGNUPS: readonly Signup[] = ["open", "invite", "off"];
export const DEFAULT_SESSION_DAYS = 7;


/** What is sent to the people signing up and in: a webhook event, or a line on the server's output. */
export interface UserEvent {
  readonly type: UserEventType;
  readonly email: string;
  readonly code: string;
  readonly expires_at: string;
  /** For a password reset: what the SDK's resetPassword({ resetToken }) takes. */
  readonly reset_token?: string;
  readonly role?: string;
}
/** Sends an event to the webhook endpoints that ask for it; false when none does. */
export type UserEventSender = (event: UserEvent) => Promise<boolean>;

export interface UsersOptions {
  readonly signup: Signup;
  readonly sessionDays: number;
  /** --auth-secret: the tokens' signing secret; else one generated once and kept in the store. */
  readonly authSecret?: string;
  readonly send: UserEventSender;
  /** Where a code goes when no endpoint asks for it: the server's output. */
  readonly print: (line: string) => void;
  readonly appId: string | null;
}

/** A user's password hash and whether the email was proven; null hash: invited, no password yet. */
interface Credentials {
  readonly hash: string | null;
  readonly verified: boolean;
  /**
   * Sign-ups of the email, not yet proven, chose different passwords, or one signed up a record the
   * secret key or an admin made: anyone may sign up with any email, so the proof keeps none of them
   * (docs/users.md, "Signing up and in").
   */
  readonly contested?: true;
  /** Who chose `hash` while the email was unproven: chosenBy(user, the sign-up's client address). */
  readonly chosenBy?: string;
}
interface Session {
  readonly sid: string;
  /** Expiry, ms since the epoch. */
  readonly exp: number;
}
interface NewCode {
  readonly code: string;
  readonly pending: PendingCode;
  readonly write: MetaWrite;
}
interface Invitation {
  readonly role: string;
  readonly by: string;
}

type Purpose = "verify" | "reset" | "invite";

const meta = {
  secret: "users.signing_secret",
  credentials: (id: string) => `users.credentials.${id}`,
  sessions: (id: string) => `users.sessions.${id}`,
  code: (purpose: Purpose, email: string) => `users.code.${purpose}.${email}`,
  /** The wrong codes offered for an email today (guess-budget.ts), whatever they were for; and its wrong passwords. */
  codeGuesses: (email: string) => `users.code_guesses.${email}`,
  passwordGuesses: (email: string) => `users.password_guesses.${email}`,
  invitation: (email: string) => `users.invitation.${email}`,
  /** Written (as nothing) by a request that sends nothing, to take as long as one that does. */
  nothing: "users.nothing",
};

/** Sign-in failures allowed a minute per email and per client address, then 429. */
const FAILURES_PER_MINUTE = 10;
/**
 * Wrong codes an email takes in a day, whatever they were for. A code has five tries, but asking for
 * a new one after every five would let anyone guess ten a minute (the minute's limit) until one of
 * the million fits: in about seventy days on average, then a password reset signs them in. With
 * this, a year of guessing has one chance in 137.
 */
const WRONG_CODES_PER_DAY = 20;
/**
 * Wrong passwords an email takes in a day (no more than the 100 that NIST SP 800-63B allows): ten a
 * minute would try 14,400 of the most common passwords a day. A password reset forgives them.
 */
const WRONG_PASSWORDS_PER_DAY = 100;
/** Sign-ups, resends and reset requests a minute per client address, then 429: each costs a password hash or a commit. */
const REQUESTS_PER_MINUTE = 30;
/** Codes sent a minute per email (register, resend, reset request): beyond, nothing is sent, and the answer is the same. */
const CODES_PER_MINUTE = 3;
/** An ended session is refused within this long by every process sharing the store. */
const SESSION_CHECK_MS = 500;
/** How long a plain read may take a token's user as checked: a session ended elsewhere (another process, a record's own write) is refused within it. */
const VERDICT_MS = 100;
/** Tokens whose signature was checked, kept so that each request does not compute an HMAC again. */
const MAX_CHECKED_TOKENS = 10_000;
/** A user keeps at most this many sessions; the oldest end first. */
const MAX_SESSIONS = 50;
const MAX_EMAIL_LENGTH = 254;
const EMAIL_RE = /^[^\s@]+@[^\s@]+$/;
/** The words every answer to register, resend and reset request has, whoever the email belongs to. */
const SENT_IF_ANY = "If this email may receive one, a code is on its way; it is valid for 10 minutes.";

/** The same refusal for an unknown email and a wrong password. */
const invalidCredentials = () =>
  new ApiError(401, "invalid_credentials", `The email or the password is wrong (or the email has had its ${WRONG_PASSWORDS_PER_DAY} wrong passwords of the day: a password reset lets it in again). Check both, or reset the password (auth/reset-password-request).`);
const invalidCode = () =>
  new ApiError(400, "invalid_code", `The code is wrong, used or expired (a code is valid 10 minutes, for 5 tries; an email takes ${WRONG_CODES_PER_DAY} wrong codes a day, and then none until the day is out). Ask for a new one (auth/resend-otp, or auth/reset-password-request).`);
const sessionEnded = (why: string) => new ApiError(401, "unauthorized", `${why} Sign in again (auth/login).`);
const tooManyTries = (retryAfterMs: number) => {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new ApiError(429, "rate_limited", `Too many failed attempts from this client or for this email: wait ${seconds} s (Retry-After), then try again.`, { retryAfterSeconds: seconds }, { "Retry-After": String(seconds) });
};

/** A user as the SDK's User type shows it: the record's fields and the platform's. */
export type UserView = Record<string, unknown>;

export class Users {
  /** The tokens' signing secret; null until the first sign-in makes one (or another process has). */
  private secret: Buffer | null;
  private readonly checkedTokens = new Map<string, TokenClaims>();
  /** Plain reads' answer to "who is this token" for VERDICT_MS, forgotten at any change of a user made here. */
  private readonly verdicts = new Map<string, { user: SessionUser; until: number }>();
  /** Per session, its user as last found changed (currentUser). */
  private readonly currentUsers = new Map<string, SessionUser>();
  /** On a shared store: each user's row and sessions as last read, and when (SESSION_CHECK_MS). */
  private readonly liveCache = new Map<string, { at: number; row: Row | undefined; sessions: readonly Session[] }>();
  private readonly failures = new FailureLimit(FAILURES_PER_MINUTE);
  private readonly codesSent = new FailureLimit(CODES_PER_MINUTE);
  private readonly requests = new FailureLimit(REQUESTS_PER_MINUTE);
  /** Changes of one user's metadata, one at a time in this process (the store's lock does it across processes). */
  private readonly userQueues = new Map<string, Promise<unknown>>();
  readonly entity: EntityDef;

  static async open(records: Records, options: UsersOptions): Promise<Users> {
    // Read, not made: a server no one signs in to writes nothing for users.
    const kept = options.authSecret ?? (await records.store.meta(meta.secret));
    return new Users(records, options, typeof kept === "string" ? secretOf(kept) : null);
  }

  private constructor(
    private readonly records: Records,
    private readonly options: UsersOptions,
    secret: Buffer | null,
  ) {
    this.secret = secret;
    this.entity = records.entity(USER_ENTITY);
  }

  /** The signing secret, made once for the store at the first sign-in (under its lock: one for every process). */
  private async signingSecret(): Promise<Buffer> {
    if (this.secret !== null) return this.secret;
    const store = this.records.store;
    const kept = await store.exclusively(meta.secret, async () => {
      const stored = await store.meta(meta.secret);
      if (typeof stored === "string") return stored;
      const made = newSigningSecret();
      await store.commit({ puts: [], meta: [{ key: meta.secret, value: made }] });
      return made;
    });
    return (this.secret = secretOf(kept));
  }

  /** The signing secret to check a token with: another process may have made it since this one started. */
  private checkingSecret(): Maybe<Buffer | null> {
    if (this.secret !== null) return this.secret;
    return then(this.records.store.meta(meta.secret), (kept) => (typeof kept === "string" ? (this.secret = secretOf(kept)) : null));
  }

  get signup(): Signup {
    return this.options.signup;
  }

  // ---- Requests with a token ----

  /** The user a token signs in, while its session lasts; 401 otherwise. */
  authenticate(token: string): Maybe<SessionUser> {
    return then(this.checkingSecret(), (secret) => {
      if (secret === null) throw sessionEnded("This token is not one this server signed.");
      return this.sessionUserOf(token, secret);
    });
  }

  /**
   * The user a token signs in when that is known at once (a store that answers at once, a token
   * checked before); undefined otherwise, and for any refusal: the general path then answers it
   * (http/plain-read.ts).
   */
  authenticateAtHand(token: string): SessionUser | undefined {
    const verdict = this.verdicts.get(token);
    if (verdict !== undefined && performance.now() < verdict.until) return verdict.user;
    try {
      const user = this.authenticate(token);
      if (!(user instanceof Promise)) return user;
      user.catch(() => {});
    } catch {
      // Refused: the general path says why.
    }
    return undefined;
  }

  private sessionUserOf(token: string, secret: Buffer): Maybe<SessionUser> {
    const claims = this.claimsOf(token, secret);
    return then(this.liveState(claims.sub), ({ row, sessions }) => {
      const why = this.refusalOf(row, sessions, claims);
      if (why !== null) throw sessionEnded(why);
      // The same object while the user's record is unchanged: rules bound for it are bound once (rules/grants.ts).
      const known = this.verdicts.get(token)?.user;
      const user: SessionUser = known !== undefined && known.rev === row!.rev ? known : { id: claims.sub, email: String(row!.data.email), role: roleOf(row!), sid: claims.sid, fields: row!.data, rev: row!.rev };
      if (this.verdicts.size >= MAX_CHECKED_TOKENS) this.verdicts.delete(this.verdicts.keys().next().value!);
      this.verdicts.set(token, { user, until: performance.now() + VERDICT_MS });
      return user;
    });
  }

  /**
   * Whether `user`'s session still lasts, as this process knows now: for streams and sockets,
   * checked every half second (server.ts). On a shared store the answer is the one read at most
   * SESSION_CHECK_MS ago, and a read is started when it is older, for the next check.
   */
  isLiveNow(user: SessionUser): boolean {
    const state = this.liveStateNow(user.id);
    if (state === undefined) return true;
    return this.refusalOf(state.row, state.sessions, { sid: user.sid, exp: Infinity }) === null;
  }

  /**
   * `user` as its record stands now, as this process knows it (see isLiveNow): for streams and
   * sockets, whose rules read the user's role and fields at each event (docs/rules.md). The same
   * object while the record is unchanged, so that rules bound for it are bound once.
   */
  currentUser(user: SessionUser): SessionUser {
    const row = this.liveStateNow(user.id)?.row;
    if (row === undefined || row.deleted || row.rev === user.rev) return user;
    const known = this.currentUsers.get(user.sid);
    if (known !== undefined && known.rev === row.rev) return known;
    const current: SessionUser = { id: user.id, email: String(row.data.email), role: roleOf(row), sid: user.sid, fields: row.data, rev: row.rev };
    if (this.currentUsers.size >= MAX_CHECKED_TOKENS) this.currentUsers.delete(this.currentUsers.keys().next().value!);
    this.currentUsers.set(user.sid, current);
    return current;
  }

  private refusalOf(row: Row | undefined, sessions: readonly Session[], claims: Pick<TokenClaims, "sid" | "exp">): string | null {
    if (row === undefined || row.deleted) return "The user this token signed in is deleted.";
    if (row.data.disabled === true) return "The user this token signed in is disabled.";
    const now = Date.now();
    if (!sessions.some((session) => session.sid === claims.sid && session.exp > now)) return "This session has ended (signed out, the password changed, or the sessions ended).";
    return null;
  }

  private claimsOf(token: string, secret: Buffer): TokenClaims {
    let claims = this.checkedTokens.get(token);
    if (claims === undefined) {
      const checked = verifyToken(token, secret, Math.floor(Date.now() / 1000));
      if (typeof checked === "string") {
        throw sessionEnded(checked === "expired" ? "This token has expired." : "This token is not one this server signed.");
      }
      claims = checked;
      if (this.checkedTokens.size >= MAX_CHECKED_TOKENS) this.checkedTokens.delete(this.checkedTokens.keys().next().value!);
      this.checkedTokens.set(token, claims);
    } else if (claims.exp * 1000 <= Date.now()) {
      this.checkedTokens.delete(token);
      throw sessionEnded("This token has expired.");
    }
    return claims;
  }

  /**
   * The user's row and sessions as this process knows them now: read at once where the store
   * answers at once; else as last read (a read is started for the next ask), undefined if never.
   */
  private liveStateNow(userId: string): { row: Row | undefined; sessions: readonly Session[] } | undefined {
    const state = this.liveState(userId);
    if (!(state instanceof Promise)) return state;
    state.catch(() => {});
    return this.liveCache.get(userId);
  }

  /** The user's row and sessions: from the store each time where it answers at once, else as read at most SESSION_CHECK_MS ago. */
  private liveState(userId: string): Maybe<{ row: Row | undefined; sessions: readonly Session[] }> {
    // Only a shared store's answers are cached (they come by promise); the others answer at once.
    const cached = this.liveCache.get(userId);
    if (cached && Date.now() - cached.at < SESSION_CHECK_MS) return cached;
    const store = this.records.store;
    const row = store.get(USER_ENTITY, userId);
    const sessions = store.meta(meta.sessions(userId));
    if (!(row instanceof Promise) && !(sessions instanceof Promise)) return { row, sessions: sessionsOf(sessions) };
    return Promise.all([row, sessions]).then(([readRow, readSessions]) => {
      const state = { at: Date.now(), row: readRow, sessions: sessionsOf(readSessions) };
      if (this.liveCache.size >= MAX_CHECKED_TOKENS) this.liveCache.delete(this.liveCache.keys().next().value!);
      this.liveCache.set(userId, state);
      return state;
    });
  }

  // ---- Signing up and in (http/users-routes.ts) ----

  async register(body: unknown, address: string): Promise<{ email: string; message: string }> {
    const members = bodyOf(body, `{"email": "ada@example.com", "password": "…", "full_name": "Ada"}`);
    const email = emailOf(members.email);
    const password = passwordOf(members.password, "password");
    const fullName = members.full_name === undefined || members.full_name === null ? null : textOf(members.full_name, "full_name");
    if (this.options.signup === "off") throw new ApiError(403, "signup_closed", "This server does not take sign-ups (--signup off): the secret key, an admin or the command line (tabula-server users create) makes users.");
    this.countRequest(address);
    const row = await this.findByEmail(email);
    const credentials = row === undefined ? undefined : await this.credentialsOf(row.id);
    const unproven = credentials?.verified === false ? (credentials.hash ?? undefined) : undefined;
    // One hash whatever follows, so that every email costs the same time; with an unproven
    // sign-up's salt, so that a different password shows as a different text.
    const hash = await hashPassword(password, unproven);
    const invitation = (await this.records.store.meta(meta.invitation(email))) as Invitation | undefined;
    if (row === undefined) {
      if (this.options.signup === "invite" && invitation === undefined) return this.sameAnswer(email);
      const created = this.newUserRow({ email, full_name: fullName, role: invitation?.role ?? "user" });
      const code = this.codeFor("verify", email);
      const value: Credentials = { hash, verified: false, chosenBy: chosenBy(created.id, address) };
      await this.commitOrSame([{ entity: USER_ENTITY, row: created, replaces: 0 }], [{ key: meta.credentials(created.id), value }, ...writesOf(code)]);
      await this.deliver("user.verification_requested", email, code);
    } else {
      // A proven user is left as it is: the answer says nothing either way.
      if (credentials?.verified === true) return this.sameAnswer(email);
      const code = this.codeFor("verify", email);
      // A record made by the secret key or an admin (no credentials yet) was not this sign-up's to
      // claim: whoever proves its email sets the password with a reset.
      const isContested = credentials === undefined || credentials.contested === true || (unproven !== undefined && hash !== unproven);
      const value: Credentials = { hash, verified: false, chosenBy: chosenBy(row.id, address), ...(isContested ? { contested: true } : {}) };
      await this.records.store.commit({ puts: [], meta: [{ key: meta.credentials(row.id), value }, ...writesOf(code)] });
      await this.deliver("user.verification_requested", email, code);
    }
    return { email, message: SENT_IF_ANY };
  }

  /**
   * The answer to a request that sends nothing, after a commit as long as one that does: the
   * time a durable write takes (an fsync) would otherwise tell a known email from an unknown one.
   */
  private async sameAnswer(email: string): Promise<{ email: string; message: string }> {
    await this.records.store.commit({ puts: [], meta: [{ key: meta.nothing, value: null }] });
    return { email, message: SENT_IF_ANY };
  }

  /** Requests that may send a code, per client address: beyond REQUESTS_PER_MINUTE, 429. */
  private countRequest(address: string): void {
    const wait = this.requests.retryAfterMs([address]);
    if (wait > 0) throw tooManyTries(wait);
    this.requests.fail([address]);
  }

  async resendOtp(body: unknown, address: string): Promise<{ email: string; message: string }> {
    const email = emailOf(bodyOf(body, `{"email": "ada@example.com"}`).email);
    this.countRequest(address);
    const row = await this.findByEmail(email);
    if (row === undefined || (await this.credentialsOf(row.id))?.verified === true) return this.sameAnswer(email);
    const code = this.codeFor("verify", email);
    // A commit either way: its time (an fsync) tells no one whether a code was sent.
    await this.records.store.commit({ puts: [], meta: code === null ? [{ key: meta.nothing, value: null }] : [code.write] });
    await this.deliver("user.verification_requested", email, code);
    return { email, message: SENT_IF_ANY };
  }

  /** verify-otp: the code proves the email; answered as a sign-in. */
  async verifyOtp(body: unknown, address: string): Promise<{ access_token: string; user: UserView }> {
    const members = bodyOf(body, `{"email": "ada@example.com", "otp_code": "123456"}`);
    const email = emailOf(members.email);
    const row = await this.guessing([email, address], async () => {
      const found = await this.findByEmail(email);
      if (!(await this.useCode(["verify", "invite"], email, found !== undefined, members.otp_code)) || found === undefined) throw invalidCode();
      return found;
    });
    // The code proves the email, not who chose the password a sign-up left (anyone may sign any email
    // up): it is kept only when the proof comes from the client address of the sign-up that chose
    // it, and no other sign-up chose another. Else the prover is signed in by this answer and sets a
    // password with a reset.
    const credentials = await this.credentialsOf(row.id);
    const isChooser = credentials?.contested !== true && credentials?.chosenBy === chosenBy(row.id, address);
    const hash = isChooser ? (credentials?.hash ?? null) : null;
    await this.records.store.commit({ puts: [], meta: [{ key: meta.credentials(row.id), value: { hash, verified: true } satisfies Credentials }] });
    return this.signIn(row);
  }

  async login(body: unknown, address: string): Promise<{ access_token: string; user: UserView }> {
    const members = bodyOf(body, `{"email": "ada@example.com", "password": "…"}`);
    const email = emailOf(members.email);
    const password = members.password;
    if (typeof password !== "string") throw invalidField("password", "must be the user's password, a string.");
    const { row, credentials } = await this.guessing([email, address], async () => {
      const found = await this.findByEmail(email);
      const kept = found === undefined ? undefined : await this.credentialsOf(found.id);
      if (!(await this.isPasswordOf(email, kept, password))) throw invalidCredentials();
      return { row: found!, credentials: kept };
    });
    if (row.data.disabled === true) throw new ApiError(403, "user_disabled", "This user is disabled: an admin may enable it again.");
    if (credentials?.verified !== true) {
      throw new ApiError(403, "email_not_verified", "This email is not verified yet: send the code it was sent to auth/verify-otp, or ask for a new one (auth/resend-otp).");
    }
    return this.signIn(row);
  }

  async resetPasswordRequest(body: unknown, address: string): Promise<{ email: string; message: string }> {
    const email = emailOf(bodyOf(body, `{"email": "ada@example.com"}`).email);
    this.countRequest(address);
    const row = await this.findByEmail(email);
    if (row === undefined || row.data.disabled === true) return this.sameAnswer(email);
    const code = this.codeFor("reset", email);
    // A commit either way: its time (an fsync) tells no one whether a code was sent.
    await this.records.store.commit({ puts: [], meta: code === null ? [{ key: meta.nothing, value: null }] : [code.write] });
    await this.deliver("user.password_reset_requested", email, code);
    return { email, message: SENT_IF_ANY };
  }

  /**
   * reset-password: `reset_token` (as the reset event gives it: the email and the code together),
   * or `email` and `otp_code`; every session of the user ends.
   */
  async resetPassword(body: unknown, address: string): Promise<{ email: string; message: string }> {
    const members = bodyOf(body, `{"reset_token": "<from the reset event>", "new_password": "…"}`);
    const password = passwordOf(members.new_password, "new_password");
    const { email, code } = members.reset_token !== undefined ? resetTokenParts(members.reset_token) : { email: emailOf(members.email), code: members.otp_code };
    const { row, hash } = await this.guessing([email, address], async () => {
      const found = await this.findByEmail(email);
      const newHash = await hashPassword(password);
      if (!(await this.useCode(["reset"], email, found !== undefined, code)) || found === undefined) throw invalidCode();
      return { row: found, hash: newHash };
    });
    // The wrong passwords of the day are forgiven: the way back for an owner someone kept out by guessing.
    await this.changeUser(row.id, () => [
      { key: meta.credentials(row.id), value: { hash, verified: true } satisfies Credentials },
      { key: meta.sessions(row.id), value: [] },
      { key: meta.passwordGuesses(email), value: null },
    ]);
    return { email, message: "The password is changed and every session of this user has ended; sign in with the new password." };
  }

  /** change-password: the signed-in user's own; its other sessions end. */
  async changePassword(user: SessionUser, body: unknown): Promise<{ message: string }> {
    const members = bodyOf(body, `{"user_id": "<the user's id>", "current_password": "…", "new_password": "…"}`);
    if (members.user_id !== undefined && members.user_id !== user.id) throw forbidden("A user may change only its own password: user_id must be the signed-in user's id.");
    if (typeof members.current_password !== "string") throw invalidField("current_password", "must be the user's password now, a string.");
    const password = passwordOf(members.new_password, "new_password");
    const current = members.current_password;
    await this.guessing([user.email], async () => {
      if (!(await this.isPasswordOf(user.email, await this.credentialsOf(user.id), current))) {
        throw new ApiError(401, "invalid_credentials", "current_password is not this user's password.");
      }
    });
    const hash = await hashPassword(password);
    await this.changeUser(user.id, (sessions) => [
      { key: meta.credentials(user.id), value: { hash, verified: true } satisfies Credentials },
      { key: meta.sessions(user.id), value: sessions.filter((session) => session.sid === user.sid) },
    ]);
    return { message: "The password is changed; every other session of this user has ended." };
  }

  async logout(user: SessionUser): Promise<{ message: string }> {
    await this.changeUser(user.id, (sessions) => [{ key: meta.sessions(user.id), value: sessions.filter((session) => session.sid !== user.sid) }]);
    return { message: "Signed out: this token is no longer accepted." };
  }

  /** Ends every session of a user (DELETE /api/users/<id>/sessions, disabling it, the CLI). */
  async endSessions(userId: string): Promise<{ id: string; sessions_ended: number }> {
    await this.rowOf(userId);
    let ended = 0;
    await this.changeUser(userId, (sessions) => {
      ended = sessions.length;
      return [{ key: meta.sessions(userId), value: [] }];
    });
    return { id: userId, sessions_ended: ended };
  }

  async me(user: SessionUser): Promise<UserView> {
    return this.viewWithCredentials(await this.rowOf(user.id));
  }

  /** PUT entities/User/me: the user's own fields, but not email, role or disabled. */
  async updateMe(user: SessionUser, body: unknown): Promise<UserView> {
    const members = bodyOf(body, `{"full_name": "Ada Lovelace"}`);
    for (const name of ["email", "role", "disabled"]) {
      if (name in members) throw forbidden(`A user may not change its own ${name}; an admin or the secret key may.`);
    }
    // Fields the SDK's User type shows but no one writes are let through unchanged when sent back as they are.
    const writable = Object.fromEntries(Object.entries(members).filter(([name]) => !SHOWN_NOT_STORED.has(name)));
    for (;;) {
      const row = await this.rowOf(user.id);
      const changes = validateChanges(this.entity, writable, this.records.limits);
      const updated = this.records.changedRow(this.entity, row, changes, Date.now());
      // A field of User whose "rls"."write" the user does not meet (an admin-set department) stays as it is (docs/rules.md).
      checkFieldWrites(this.entity, { keyId: "", kind: "publishable", user }, "update", changes.keys(), updated);
      try {
        await this.records.store.commit({ puts: [{ entity: USER_ENTITY, row: updated, replaces: row.rev }] });
        return this.viewWithCredentials(updated);
      } catch (error) {
        if (!(error instanceof ConflictError)) throw error;
      }
    }
  }

  /** users/invite-user: by the secret key or an admin; the invitation's code goes to the email. */
  async invite(caller: Caller, body: unknown): Promise<{ email: string; role: string; message: string }> {
    const members = bodyOf(body, `{"user_email": "ada@example.com", "role": "user"}`);
    const email = emailOf(members.user_email, "user_email");
    const role = members.role === undefined ? "user" : textOf(members.role, "role");
    checkMayManage(caller);
    const invitation: Invitation = { role, by: caller.user?.email ?? caller.keyId };
    const code = this.codeFor("invite", email);
    await this.records.store.commit({ puts: [], meta: [{ key: meta.invitation(email), value: invitation }, ...writesOf(code)] });
    await this.deliver("user.invited", email, code, role);
    const sent = code === null ? `no code was sent this time (${CODES_PER_MINUTE} a minute go to one email; invite again in a minute)` : "the invitation's code is on its way";
    return { email, role, message: `${email} is invited; ${sent}. They sign up with auth/register, then prove the email with this code or the one that sends.` };
  }

  /** Every user, oldest first, with whether each is verified (GET /api/users, tabula-server users list). */
  async list(): Promise<UserView[]> {
    const views: UserView[] = [];
    for (let after: Row | null = null; ; ) {
      const sort = { field: "id", kind: "string", descending: false } as const;
      const position = after === null ? null : this.records.store.positionOf(USER_ENTITY, after, sort);
      const { rows, hasMore } = await this.records.store.list(USER_ENTITY, { filter: null, deleted: "exclude", sort, after: position, skip: 0, limit: 1000 });
      for (const row of rows) views.push(await this.viewWithCredentials(row));
      if (!hasMore || rows.length === 0) return views;
      after = rows[rows.length - 1]!;
    }
  }

  // ---- The command line (tabula-server users) ----

  /** A user made by the operator: proven, with a password or none (it then resets one). */
  async create(fields: { email: string; password?: string; role?: string; full_name?: string | null }): Promise<UserView> {
    const email = emailOf(fields.email);
    if (fields.password !== undefined) passwordOf(fields.password, "password");
    const row = this.newUserRow({ email, full_name: fields.full_name ?? null, role: fields.role ?? "user" });
    const hash = fields.password === undefined ? null : await hashPassword(fields.password);
    await this.records.store.commit({ puts: [{ entity: USER_ENTITY, row, replaces: 0 }], meta: [{ key: meta.credentials(row.id), value: { hash, verified: true } satisfies Credentials }] });
    return this.viewOf(row, true);
  }

  /** Sets fields of a user's record (role, disabled) as the operator or an admin; disabling ends its sessions. */
  async setFields(idOrEmail: string, body: unknown): Promise<UserView> {
    const members = bodyOf(body, `{"role": "admin"} or {"disabled": true}`);
    const fields: { role?: string; disabled?: boolean } = {};
    for (const name of Object.keys(members)) {
      if (name !== "role" && name !== "disabled") throw invalidField(name, "is not a field set here: send role and disabled (a user changes the rest of its own through entities/User/me).");
    }
    if (members.role !== undefined) fields.role = textOf(members.role, "role");
    if (members.disabled !== undefined) {
      if (typeof members.disabled !== "boolean") throw invalidField("disabled", "must be true or false.");
      fields.disabled = members.disabled;
    }
    for (;;) {
      const row = idOrEmail.includes("@") ? await this.findByEmail(emailOf(idOrEmail)) : await this.records.store.get(USER_ENTITY, idOrEmail);
      if (row === undefined || row.deleted) throw new ApiError(404, "record_not_found", `No user ${idOrEmail}: tabula-server users list shows them.`);
      const updated = this.records.changedRow(this.entity, row, validateChanges(this.entity, fields, this.records.limits), Date.now());
      try {
        await this.records.store.commit({ puts: [{ entity: USER_ENTITY, row: updated, replaces: row.rev }], meta: fields.disabled === true ? [{ key: meta.sessions(row.id), value: [] }] : [] });
        // Its role and state count from now on in this process (others read them again within SESSION_CHECK_MS).
        this.liveCache.delete(row.id);
        this.verdicts.clear();
        return this.viewWithCredentials(updated);
      } catch (error) {
        if (!(error instanceof ConflictError)) throw error;
      }
    }
  }

  /** A user as the SDK shows it. */
  viewOf(row: Row, isVerified: boolean): UserView {
    const { created_by_id: _createdBy, ...fields } = row.data;
    const role = roleOf(row);
    return { full_name: null, ...fields, disabled: row.data.disabled === true, is_verified: isVerified, app_id: this.options.appId, is_service: false, _app_role: role, role };
  }

  /** A user's view, with whether its email is proven. */
  async viewWithCredentials(row: Row): Promise<UserView> {
    return this.viewOf(row, (await this.credentialsOf(row.id))?.verified === true);
  }

  // ---- Inside ----

  private async signIn(row: Row): Promise<{ access_token: string; user: UserView }> {
    const now = Date.now();
    const session: Session = { sid: randomBytes(16).toString("base64url"), exp: now + this.options.sessionDays * 86_400_000 };
    await this.changeUser(row.id, (sessions) => [{ key: meta.sessions(row.id), value: [...sessions.filter((kept) => kept.exp > now).slice(-(MAX_SESSIONS - 1)), session] }]);
    const claims: TokenClaims = { sub: row.id, email: String(row.data.email), role: roleOf(row), sid: session.sid, iat: Math.floor(now / 1000), exp: Math.floor(session.exp / 1000) };
    return { access_token: signToken(claims, await this.signingSecret()), user: this.viewOf(row, true) };
  }

  /**
   * Writes metadata of one user computed from its sessions as stored: one change at a time per user
   * in this process, and under the store's lock across processes.
   */
  private changeUser(userId: string, writes: (sessions: readonly Session[]) => MetaWrite[]): Promise<void> {
    const store = this.records.store;
    const previous = this.userQueues.get(userId) ?? Promise.resolve();
    const next = previous.catch(() => {}).then(() =>
      store.exclusively(`users.${userId}`, async () => {
        const sessions = sessionsOf(await store.meta(meta.sessions(userId)));
        await store.commit({ puts: [], meta: writes(sessions) });
        this.liveCache.delete(userId);
        this.verdicts.clear();
      }),
    );
    this.userQueues.set(userId, next);
    void next.finally(() => {
      if (this.userQueues.get(userId) === next) this.userQueues.delete(userId);
    }).catch(() => {});
    return next;
  }

  private newUserRow(fields: { email: string; full_name: string | null; role: string }): Row {
    const values: Record<string, unknown> = { email: fields.email, role: fields.role, disabled: false };
    if (fields.full_name !== null) values.full_name = fields.full_name;
    const ordered: Record<string, unknown> = {};
    for (const name of this.entity.fieldNames) if (values[name] !== undefined) ordered[name] = values[name];
    const row = this.records.newRow(ordered, SIGN_UP, Date.now());
    // A user made itself: its own id is its creator's.
    return { ...row, data: { ...row.data, created_by_id: row.id } };
  }

  /** Commits a new user; a concurrent sign-up of the same email is answered as this one (the answer is the same). */
  private async commitOrSame(puts: Put[], writes: MetaWrite[]): Promise<void> {
    try {
      await this.records.store.commit({ puts, meta: writes });
    } catch (error) {
      if (!(error instanceof UniqueViolation)) throw error;
    }
  }

  /**
   * A new code for `email`, to commit (`write`, replacing its pending code of `purpose`) and then
   * deliver; null beyond CODES_PER_MINUTE for the email: then nothing is sent, and the code sent
   * last stays the one to enter (a code written and never sent would leave its person none).
   */
  private codeFor(purpose: Purpose, email: string): NewCode | null {
    if (this.codesSent.retryAfterMs([email]) > 0) return null;
    this.codesSent.fail([email]);
    const { code, pending } = newCode(Date.now());
    return { code, pending, write: { key: meta.code(purpose, email), value: pending } };
  }

  /**
   * Checks a code offered for `email` against its pending codes of `purposes`, in turn: a wrong one
   * uses up a try of each and counts once among the email's wrong codes of the day, the right one is
   * used up and forgives them. Once the day's are spent, no code is checked at all. An email no user
   * has (`isKnown` false) is refused in the same time (one lock, one commit), so that no one learns
   * which emails have codes pending.
   */
  private async useCode(purposes: readonly Purpose[], email: string, isKnown: boolean, offered: unknown): Promise<boolean> {
    const store = this.records.store;
    const nothing: MetaWrite[] = [{ key: meta.nothing, value: null }];
    // One lock for all of an email's codes and its count, taken alone: no nesting on a shared store's pool.
    return store.exclusively(`users.codes.${email}`, async () => {
      const now = Date.now();
      const guesses = (await store.meta(meta.codeGuesses(email))) as Guesses | undefined;
      if (!isKnown || isGuessingStopped(guesses, now, WRONG_CODES_PER_DAY)) {
        await store.commit({ puts: [], meta: nothing });
        return false;
      }
      const writes: MetaWrite[] = [];
      let outcome: CodeCheck["outcome"] = "none";
      for (const purpose of purposes) {
        const key = meta.code(purpose, email);
        const checked = checkCode((await store.meta(key)) as PendingCode | undefined, offered, now);
        if (checked.outcome === "none") continue;
        writes.push({ key, value: checked.next });
        if (checked.outcome === "accepted" || checked.outcome === "wrong" || outcome === "none") outcome = checked.outcome;
        if (outcome === "accepted") break;
      }
      // Only an offer that could have been right counts: one for an email with no code pending cannot.
      if (outcome === "accepted" && guesses !== undefined) writes.push({ key: meta.codeGuesses(email), value: null });
      if (outcome === "wrong") writes.push({ key: meta.codeGuesses(email), value: withWrongGuess(guesses, now) });
      await store.commit({ puts: [], meta: writes.length > 0 ? writes : nothing });
      return outcome === "accepted";
    });
  }

  /** Sends a code codeFor made (null: none is sent, and the answer stays the same). */
  private async deliver(type: UserEventType, email: string, code: NewCode | null, role?: string): Promise<void> {
    if (code === null) return;
    const event: UserEvent = {
      type,
      email,
      code: code.code,
      expires_at: new Date(code.pending.expiresAt).toISOString(),
      ...(type === "user.password_reset_requested" ? { reset_token: resetTokenOf(email, code.code) } : {}),
      ...(role === undefined ? {} : { role }),
    };
    let isSent = false;
    try {
      isSent = await this.options.send(event);
    } catch {
      isSent = false;
    }
    if (!isSent) this.options.print(`${type} for ${email}: code ${code.code}${event.reset_token ? ` (reset_token ${event.reset_token})` : ""}, valid until ${event.expires_at}`);
  }

  /**
   * Runs a guess (a password or a code) for `keys` (the email, the client's address) within the
   * minute's limit: 429 beyond it, counting guesses still running (a burst at once is no more than
   * ten). A guess that ends in invalid_credentials or invalid_code counts as a failure.
   */
  private async guessing<T>(keys: readonly string[], guess: () => Promise<T>): Promise<T> {
    const wait = this.failures.retryAfterMs(keys);
    if (wait > 0) throw tooManyTries(wait);
    this.failures.begin(keys);
    let isFailed = false;
    try {
      return await guess();
    } catch (error) {
      isFailed = error instanceof ApiError && (error.code === "invalid_credentials" || error.code === "invalid_code");
      throw error;
    } finally {
      this.failures.end(keys, isFailed);
    }
  }

  /**
   * Whether `password` is the one `credentials` keep for `email`, within the email's wrong passwords
   * of the day: once they are spent, none is (the right one neither). An unknown email (no
   * credentials) is checked against a dummy hash, and its count is written as nothing, under the
   * same lock: the same time as a known one, so that no one learns which emails are known.
   */
  private async isPasswordOf(email: string, credentials: Credentials | undefined, password: string): Promise<boolean> {
    const store = this.records.store;
    const key = meta.passwordGuesses(email);
    const canGuess = typeof credentials?.hash === "string";
    const guesses = (await store.meta(key)) as Guesses | undefined;
    const isStopped = isGuessingStopped(guesses, Date.now(), WRONG_PASSWORDS_PER_DAY);
    const isRight = (await verifyPassword(password, credentials?.hash ?? undefined)) && canGuess && !isStopped;
    if (isRight && guesses === undefined) return true;
    await store.exclusively(`users.passwords.${email}`, async () => {
      // Read again under the lock: guesses at once, here or in another process, each count.
      const now = Date.now();
      const counted = (await store.meta(key)) as Guesses | undefined;
      const value = isRight ? null : canGuess && !isGuessingStopped(counted, now, WRONG_PASSWORDS_PER_DAY) ? withWrongGuess(counted, now) : counted;
      await store.commit({ puts: [], meta: [canGuess && value !== undefined ? { key, value } : { key: meta.nothing, value: null }] });
    });
    return isRight;
  }

  private async findByEmail(email: string): Promise<Row | undefined> {
    const filter = parseFilter(this.entity, { email }, { mayUseCreatedBy: true });
    const { rows } = await this.records.store.list(USER_ENTITY, { filter, deleted: "exclude", sort: { field: "id", kind: "string", descending: false }, after: null, skip: 0, limit: 1 });
    return rows[0];
  }

  private async rowOf(userId: string): Promise<Row> {
    const row = await this.records.store.get(USER_ENTITY, userId);
    if (row === undefined || row.deleted) throw new ApiError(404, "record_not_found", `No user ${userId}.`, { entity: USER_ENTITY, id: userId });
    return row;
  }

  private async credentialsOf(userId: string): Promise<Credentials | undefined> {
    return (await this.records.store.meta(meta.credentials(userId))) as Credentials | undefined;
  }
}

/** Fields the SDK's User type has that are not stored: sent back by updateMe as they were read. */
const SHOWN_NOT_STORED = new Set(["id", "created_date", "updated_date", "created_by_id", "is_verified", "app_id", "is_service", "_app_role"]);

/** Who makes a user that signs itself up (created_by_id is then the user's own id). */
const SIGN_UP: Caller = { keyId: "", kind: "secret" };

/** Refuses a caller that is neither the secret key nor an admin user. */
export function checkMayManage(caller: Caller): void {
  if (caller.kind === "secret" && caller.user === undefined) return;
  if (caller.user?.role === "admin") return;
  throw forbidden("Only the secret key or a user whose role is admin may manage users.");
}

function roleOf(row: Row): string {
  return typeof row.data.role === "string" ? row.data.role : "user";
}

function sessionsOf(value: unknown): readonly Session[] {
  return Array.isArray(value) ? (value as Session[]) : [];
}

function secretOf(kept: string): Buffer {
  try {
    return secretBytes(kept);
  } catch {
    // A given secret that is not base64url of 32 bytes or more is used as its UTF-8 bytes, if long enough.
    const bytes = Buffer.from(kept, "utf8");
    if (bytes.length < 32) throw new Error(`The auth secret must be at least 32 bytes (got ${bytes.length}); leave --auth-secret out to have one made and kept.`);
    return bytes;
  }
}

function bodyOf(body: unknown, example: string): Record<string, unknown> {
  if (!isPlainObject(body)) throw invalidJson(`The body must be a JSON object, as in ${example}.`);
  return body;
}

/**
 * Who chose a password while the email was unproven: the sign-up's client address (one IPv4
 * address, or an IPv6 /64; behind a proxy, --trust-proxy), hashed with the user's id so that the
 * store keeps no address.
 */
function chosenBy(userId: string, address: string): string {
  return sha256Hex(`${userId} ${address}`);
}

function emailOf(value: unknown, member = "email"): string {
  if (typeof value !== "string" || value.length > MAX_EMAIL_LENGTH || !EMAIL_RE.test(value.trim())) {
    throw invalidField(member, `must be an email address such as "ada@example.com" (got ${JSON.stringify(value)?.slice(0, 80)}).`);
  }
  // Emails are compared lowercased (docs/users.md).
  return value.trim().toLowerCase();
}

function passwordOf(value: unknown, member: string): string {
  const problem = passwordProblem(value);
  if (problem !== null) throw invalidField(member, `is refused: ${problem}`);
  return value as string;
}

function textOf(value: unknown, member: string): string {
  if (typeof value !== "string" || value.length > 1000) throw invalidField(member, "must be a string of at most 1,000 characters.");
  return value;
}

function writesOf(code: NewCode | null): MetaWrite[] {
  return code === null ? [] : [code.write];
}

/** The reset token the SDK's resetPassword sends: the email and the code, so that a code's tries count for its email. */
function resetTokenOf(email: string, code: string): string {
  return `${Buffer.from(email, "utf8").toString("base64url")}.${code}`;
}

function resetTokenParts(token: unknown): { email: string; code: string } {
  const dot = typeof token === "string" ? token.lastIndexOf(".") : -1;
  if (typeof token !== "string" || dot <= 0) throw invalidCode();
  const email = Buffer.from(token.slice(0, dot), "base64url").toString("utf8");
  if (!EMAIL_RE.test(email)) throw invalidCode();
  return { email, code: token.slice(dot + 1) };
}

