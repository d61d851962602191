// How stored values read in PostgreSQL: statement parameters, a field's sort key as one never-null
// expression a btree can index, a date's milliseconds (parseDateValue in SQL), and text folded for
// $contains and search. sql-filter.ts and sql-sort.ts build their SQL from these.

import type { ValueKind } from "../../schema/fields.ts";
import { foldCase } from "../../query/case-fold.ts";
import { encodeText, storedJson } from "./stored-text.ts";

/**
 * The values of one statement's $n placeholders. The SQL built here sends every value as text and
 * casts it in SQL ($1::text::jsonb), so that no driver serializer reinterprets it (postgres.js
 * would JSON-encode a string sent for a jsonb parameter a second time).
 */
export class SqlParams {
  readonly values: unknown[];

  /** `values`: those of a statement this one extends (a next chunk of the same query). */
  constructor(values: readonly unknown[] = []) {
    this.values = [...values];
  }

  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/**
 * A list of texts as a PostgreSQL array literal, sent as one text parameter and cast
 * (`$1::text[]`): the driver's own array encoding needs type information it lacks here.
 */
export function arrayLiteral(items: readonly string[]): string {
  return `{${items.map((item) => `"${item.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`).join(",")}}`;
}

/** Text compared with stored text (a value, a member name, a LIKE pattern), encoded as stored (stored-text.ts). */
export function textParam(params: SqlParams, text: string): string {
  return `${params.add(encodeText(text))}::text`;
}

export function jsonbParam(params: SqlParams, value: unknown): string {
  return `${params.add(storedJson(value))}::text::jsonb`;
}

export function numericParam(params: SqlParams, value: number): string {
  return `${params.add(String(value))}::text::numeric`;
}

/**
 * Whether PostgreSQL text can hold a string, once encoded (stored-text.ts: U+0000 is escaped): it
 * has no lone surrogate. No stored value holds one (jsonb refuses them), so an operand that is not
 * storable equals nothing.
 */
export function isStorable(text: string): boolean {
  return !UNSTORABLE_RE.test(text);
}

/** Where a lone surrogate first stands in a text; -1 when it is storable. */
export function firstUnstorable(text: string): number {
  return UNSTORABLE_RE.exec(text)?.index ?? -1;
}

const UNSTORABLE_RE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Whether every string inside a JSON value, members' names included, is storable. Walked without recursion. */
export function isStorableJson(value: unknown): boolean {
  const pending = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === "string") {
      if (!isStorable(item)) return false;
    } else if (Array.isArray(item)) pending.push(...item);
    else if (typeof item === "object" && item !== null) {
      for (const [name, member] of Object.entries(item)) {
        if (!isStorable(name)) return false;
        pending.push(member);
      }
    }
  }
  return true;
}

// ---------------------------------------------------------------- sort keys

/**
 * What a missing value (or one of another type) sorts as: after every value, as toSortKey's null
 * does (compareSortKeys). A sentinel instead of SQL NULL keeps the key never null, so that a row
 * comparison (key, id) > ($1, $2) is one btree range at any depth of a cursor walk.
 */
export const NUMERIC_LAST = "'Infinity'::numeric";
/** Present strings sort as "a" + the string and missing ones as "b": bytes of "b" follow every "a…". */
export const TEXT_LAST = "'b'";
export const TEXT_PRESENT_PREFIX = "a";

/**
 * How many characters of a text sort key its index holds. A btree row holds at most 2,704 bytes, and
 * a text may be as long as a request body: the index holds the key's first 512 characters (at most
 * 2,048 bytes of UTF-8) and the id (at most 128), and ORDER BY sorts rows whose prefixes tie by the
 * whole key (an incremental sort, in memory, over each run of equal prefixes). Comparing prefixes
 * first keeps code point order: a prefix that sorts before another is the start of a key that does.
 */
export const SORT_PREFIX_CHARS = 512;

/** The indexed part of a text sort key (SQL); `(prefix, key)` sorts as `key` alone. */
export function sortPrefixOf(textKey: string): string {
  return `(left(${textKey}, ${SORT_PREFIX_CHARS}) COLLATE "C")`;
}

/**
 * The sort key of top-level field `key` (SQL of its name: a quoted literal, or a text parameter
 * that a custom plan folds into one) in the order of toSortKey and compareSortKeys: strings by
 * code point (COLLATE "C" compares UTF-8 bytes, which is code point order), numbers numerically,
 * booleans 0 < 1, dates by their milliseconds, missing values and values of another type last.
 */
export function sortKeyExpression(kind: ValueKind, key: string): string {
  const value = `(data -> ${key})`;
  switch (kind) {
    case "string":
      return `((CASE WHEN jsonb_typeof(${value}) = 'string' THEN '${TEXT_PRESENT_PREFIX}' || (data ->> ${key}) ELSE ${TEXT_LAST} END) COLLATE "C")`;
    case "number":
      return `(CASE WHEN jsonb_typeof(${value}) = 'number' THEN (${value})::numeric ELSE ${NUMERIC_LAST} END)`;
    case "boolean":
      return `(CASE ${value} WHEN 'false'::jsonb THEN 0::numeric WHEN 'true'::jsonb THEN 1::numeric ELSE ${NUMERIC_LAST} END)`;
    case "date":
      return `COALESCE(${millisecondsOf(`(data ->> ${key})`)}::numeric, ${NUMERIC_LAST})`;
    case "json":
      // toSortKey orders JSON numbers before strings; parseSort refuses object and array fields, the only JSON ones.
      throw new Error("sortKeyExpression: JSON fields are not sortable (parseSort refuses them)");
  }
}

// ---------------------------------------------------------------- dates

// parseDateValue's two forms: YYYY-MM-DD, or a timestamp whose fields are in range (DATE_TIME_RE in
// schema/fields.ts, T and Z in either case, as Date.parse takes them); Date.parse also refuses an
// offset past 23:59. [.] rather than \. keeps the literal free of backslashes.
const DAY = "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])";
const CLOCK = "[Tt]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9]([.][0-9]{1,9})?)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";
const DATE_VALUE_RE = `^${DAY}(${CLOCK})?$`;

/**
 * The milliseconds parseDateValue gives a text (SQL of type text), as bigint; NULL where it gives
 * NaN. Plain arithmetic on the digits, so it is immutable (an index may hold it) and needs no
 * time zone setting: the day's start (year 0000 is 1 BC for make_date), the clock, the first
 * three digits of the fraction (Date.parse drops the rest), less the offset. Each CASE guards
 * the casts after it: SQL does not promise to evaluate AND from left to right. About 5 µs a
 * value, most of it the regular expression: filters that scan pay it per row, indexes once.
 */
export function millisecondsOf(text: string): string {
  const t = text;
  const year = `substr(${t}, 1, 4)::int`;
  const month = `substr(${t}, 6, 2)::int`;
  const day = `substr(${t}, 9, 2)::int`;
  const isLeap = `(${year} % 4 = 0 AND (${year} % 100 <> 0 OR ${year} % 400 = 0))`;
  const monthLength = `CASE ${month} WHEN 2 THEN CASE WHEN ${isLeap} THEN 29 ELSE 28 END WHEN 4 THEN 30 WHEN 6 THEN 30 WHEN 9 THEN 30 WHEN 11 THEN 30 ELSE 31 END`;
  const dayStart = `(make_date(CASE WHEN ${year} = 0 THEN -1 ELSE ${year} END, ${month}, ${day}) - DATE '1970-01-01')::bigint * 86400000`;
  const seconds = `CASE WHEN substr(${t}, 17, 1) = ':' THEN substr(${t}, 18, 2)::int * 1000 ELSE 0 END`;
  const isUtc = `right(${t}, 1) IN ('Z', 'z')`;
  // The fraction runs from character 21 to the zone: the last one (Z) or the last six (+hh:mm).
  const zoneStart = `(CASE WHEN ${isUtc} THEN length(${t}) ELSE length(${t}) - 5 END)`;
  const fraction = `CASE WHEN substr(${t}, 20, 1) = '.' THEN rpad(substr(${t}, 21, least(3, ${zoneStart} - 21)), 3, '0')::int ELSE 0 END`;
  const offsetMinutes =
    `CASE WHEN ${isUtc} THEN 0 ` +
    `ELSE (CASE WHEN substr(${t}, length(${t}) - 5, 1) = '-' THEN -1 ELSE 1 END) * (substr(${t}, length(${t}) - 4, 2)::int * 60 + right(${t}, 2)::int) END`;
  const clock = `CASE WHEN length(${t}) = 10 THEN 0 ELSE substr(${t}, 12, 2)::int * 3600000 + substr(${t}, 15, 2)::int * 60000 + ${seconds} + ${fraction} - (${offsetMinutes}) * 60000 END`;
  // Days up to the 28th exist in every month: most dates skip the month's length.
  return `(CASE WHEN ${t} ~ '${DATE_VALUE_RE}' THEN (CASE WHEN ${day} <= 28 OR ${day} <= ${monthLength} THEN ${dayStart} + (${clock}) END) END)`;
}

// ---------------------------------------------------------------- case folding

/**
 * Text folded as far as SQL can do it the same on every database: ASCII letters, plus the three
 * letters whose fold (case-fold.ts) is ASCII (İ → i, ſ → s, Kelvin sign → k). lower() and ILIKE
 * depend on the database's locale instead (under "C" they fold ASCII only, so "É" would miss "é";
 * a Turkish locale lowers I to ı), so their answer could be neither the memory store's nor a
 * superset of it. No other character folds to ASCII, nor ASCII to anything else: where the folded
 * needle is ASCII, this fold finds exactly what foldCase finds.
 */
export function foldedText(text: string): string {
  return `translate(${text}, '${FOLD_FROM}', '${FOLD_TO}')`;
}

const FOLD_FROM = "ABCDEFGHIJKLMNOPQRSTUVWXYZ\u0130\u017f\u212a";
const FOLD_TO = "abcdefghijklmnopqrstuvwxyzisk";

/**
 * The LIKE pattern (`%` needle `%`, with \ % _ escaped) that finds `needle` in foldedText(...). A
 * character whose fold is not ASCII becomes `_`: it stands for one character of the text whose
 * fold it is, which foldedText leaves alone, so the pattern finds a superset (exact = false). A
 * lone surrogate becomes `_` too: it can match half of a character above U+FFFF.
 */
export function containsPatternOf(needle: string): { pattern: string; isExact: boolean } {
  let pattern = "%";
  let isExact = true;
  for (const char of foldCase(needle)) {
    if (char.codePointAt(0)! >= 0x80) {
      pattern += "_";
      isExact = false;
    } else pattern += char === "\\" || char === "%" || char === "_" ? `\\${char}` : char;
  }
  return { pattern: pattern + "%", isExact };
}

/**
 * The text that search looks in: each of `keys` (SQL of field names) that holds a string (as
 * stored: encoded), after a U+0001, folded. The same expression with literal names is the search
 * index's (sql-sort.ts).
 */
export function searchText(keys: readonly string[]): string {
  const parts = keys.map((key) => `COALESCE(chr(1) || (CASE WHEN jsonb_typeof(data -> ${key}) = 'string' THEN data ->> ${key} END), '')`);
  return foldedText(`(${parts.join(" || ")})`);
}
