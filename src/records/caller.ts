// Who is asking: the API key's id and kind, as keys/ resolved it from X-Api-Key (CONTRACT §3).

export type KeyKind = "secret" | "publishable";

export interface Caller {
  readonly keyId: string;
  readonly kind: KeyKind;
}
