// Text as the PostgreSQL store keeps it in jsonb, which cannot hold U+0000 (docs/postgresql.md, "Text
// PostgreSQL cannot hold"): U+0001 escapes. U+0000 is kept as U+0001 U+0001 and U+0001 as U+0001
// U+0002, every other character as itself, in strings and member names alike. No code word is the
// start of another, and the words keep code point order (U+0000 < U+0001 < U+0002), so kept texts
// are equal, ordered and prefixed as the texts are: a filter operand or cursor key encoded the same
// way compares in SQL exactly (sql-values.ts). Writes encode (JSON text on its way to jsonb); every
// jsonb the driver reads is decoded (connection.ts), so nothing above the store sees an escape.

export const ESCAPE = "\u0001";

const TO_ENCODE_RE = /[\u0000\u0001]/;
const TO_ENCODE_ALL_RE = /[\u0000\u0001]/g;
const ENCODED_ALL_RE = /\u0001[\u0001\u0002]/g;

export function encodeText(text: string): string {
  return TO_ENCODE_RE.test(text) ? text.replace(TO_ENCODE_ALL_RE, (char) => (char === "\u0000" ? "\u0001\u0001" : "\u0001\u0002")) : text;
}

export function decodeText(text: string): string {
  return text.includes(ESCAPE) ? text.replace(ENCODED_ALL_RE, (word) => (word === "\u0001\u0001" ? "\u0000" : "\u0001")) : text;
}

// JSON text writes U+0000 and U+0001 only as \u0000 and \u0001 (JSON.stringify, and PostgreSQL's
// jsonb output, write every character below U+0020 so; a body cannot hold them raw). Escapes are
// matched from the left, a backslash with what follows it, so that an escaped backslash before
// "u0000" is never taken for one.
const JSON_TO_ENCODE_RE = /\\u000[01]|\\[^]/g;
const JSON_ENCODED_RE = /\\u0001\\u000[12]|\\[^]/g;

/** JSON text whose strings and member names are encoded: the text to send for a jsonb value. */
export function encodeJsonText(json: string): string {
  if (!json.includes("\\u000")) return json;
  return json.replace(JSON_TO_ENCODE_RE, (escape) => (escape === "\\u0000" ? "\\u0001\\u0001" : escape === "\\u0001" ? "\\u0001\\u0002" : escape));
}

/** The JSON text of a jsonb value as PostgreSQL writes it, decoded. */
export function decodeJsonText(json: string): string {
  if (!json.includes("\\u0001")) return json;
  return json.replace(JSON_ENCODED_RE, (escape) => (escape === "\\u0001\\u0001" ? "\\u0000" : escape === "\\u0001\\u0002" ? "\\u0001" : escape));
}

/** A value as jsonb's text, encoded: JSON.stringify, then encodeJsonText. */
export function storedJson(value: unknown): string {
  return encodeJsonText(JSON.stringify(value));
}

/**
 * How the driver reads jsonb (postgres.js `types`): decoded, then parsed. Sent values are text cast
 * in SQL (sql-values.ts), so the serializer is the driver's JSON one, for completeness.
 */
export const STORED_JSONB_TYPE = {
  to: 3802,
  from: [3802],
  serialize: (value: unknown): string => storedJson(value),
  parse: (text: string): unknown => JSON.parse(decodeJsonText(text)),
};
