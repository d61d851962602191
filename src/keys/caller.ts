// Who is asking: the API key's id and kind, as keys/ resolved it from X-Api-Key (docs/api.md).

export type KeyKind = "secret" | "publishable";

export interface Caller {
  readonly keyId: string;
  readonly kind: KeyKind;
  /**
   * The signed-in user a token names (docs/users.md): it acts with a publishable key's limits, and
   * its records are its own (created_by_id, created_by). Absent for a key alone.
   */
  readonly user?: SessionUser;
}

/**
 * The caller of an open route, and an anonymous visitor where the server lets them in (docs/base44-sdk.md):
 * the least a publishable key may do, with no key's id and no user.
 */
export const NO_KEY: Caller = { keyId: "", kind: "publishable" };

/** A signed-in user, as a caller carries it (users/users.ts makes them). */
export interface SessionUser {
  readonly id: string;
  readonly email: string;
  readonly role: string;
  /** The session its token belongs to. */
  readonly sid: string;
  /** The user's record as it stood when the token was checked: what rules' {{user.data.<field>}} read (docs/rules.md). */
  readonly fields?: Readonly<Record<string, unknown>>;
  /** The revision of that record (Row.rev): a later version means the user changed. */
  readonly rev?: number;
}

/** A key by its id and kind, without the key: who acts for the seed and server.changes(). */
export interface KeyRef {
  readonly id: string;
  readonly kind: KeyKind;
}
