// Who is asking: the API key's id and kind, as keys/ resolved it from X-Api-Key (docs/api.md).

export type KeyKind = "secret" | "publishable";

export interface Caller {
  readonly keyId: string;
  readonly kind: KeyKind;
}

/** A key by its id and kind, without the key: who acts for the seed and server.changes(). */
export interface KeyRef {
  readonly id: string;
  readonly kind: KeyKind;
}
