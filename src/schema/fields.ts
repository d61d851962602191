// What a field is: its declared type and format, and how its values compare and sort.
// Loading declarations is load.ts's job; checking written values is validate.ts's.

export type FieldType = "string" | "number" | "integer" | "boolean" | "array" | "object";
/** `richtext` is Base44's: text holding HTML, kept and compared as any text. */
export type StringFormat = "date" | "date-time" | "email" | "uri" | "richtext";

/** How values of a field compare: dates chronologically, numbers numerically, and so on. */
export type ValueKind = "string" | "number" | "boolean" | "date" | "json";

/** A comparable value of a sort: numbers for numbers, booleans and dates, strings for text. */
export type SortKey = number | string | null;

export interface FieldDef {
  readonly name: string;
  readonly type: FieldType;
  readonly format?: StringFormat;
  readonly enum?: readonly unknown[];
  readonly default?: unknown;
  readonly required: boolean;
  /** Element declaration of an array field, when it declares `items`. */
  readonly items?: FieldDef;
  /** Declared members of an object field (`properties`): each checked where a value holds it; others are let through. */
  readonly properties?: ReadonlyMap<string, FieldDef>;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly pattern?: RegExp;
  /** Who may read and write this field: "read" and "write" rules as declared (docs/rules.md). */
  readonly rls?: Readonly<Record<string, RuleSource>>;
}

/** A rule as declared (docs/rules.md): true, false or a condition object; rules/ compiles it. */
export type RuleSource = boolean | Readonly<Record<string, unknown>>;

/** What a key may do with an entity's records (docs/entities.md): read covers get, list, count, aggregate, distinct. */
export type AccessOperation = "read" | "create" | "update" | "delete";
export const ACCESS_OPERATIONS: readonly AccessOperation[] = ["read", "create", "update", "delete"];

export interface EntityDef {
  readonly name: string;
  /** Where it was declared, for messages. */
  readonly file: string;
  /** Declared fields in declaration order (the order records are written in). */
  readonly fields: ReadonlyMap<string, FieldDef>;
  readonly fieldNames: readonly string[];
  /** Declared `string` fields: what `search` looks in. */
  readonly textFields: readonly string[];
  /** What a publishable key may do ("access" in the declaration; all four by default). Secret keys may do everything. */
  readonly publishableAccess: ReadonlySet<AccessOperation>;
  /** Sets of fields no two live records may hold the same values in ("unique", docs/entities.md). */
  readonly unique: ReadonlyArray<readonly string[]>;
  /** The built-in User, when the app declares no User of its own (docs/users.md): served, but not listed among the app's entities. */
  readonly isBuiltIn?: true;
  /** Who may create, read, update and delete which records: the rules as declared (docs/rules.md). */
  readonly rls?: Readonly<Record<string, RuleSource>>;
}

export const PLATFORM_FIELDS = ["id", "created_date", "updated_date", "created_by", "created_by_id"] as const;
export type PlatformField = (typeof PLATFORM_FIELDS)[number];

export function isPlatformField(name: string): name is PlatformField {
  return (PLATFORM_FIELDS as readonly string[]).includes(name);
}

/** Platform fields described like declared ones, so filters and sorts can treat all alike. */
export const PLATFORM_FIELD_DEFS: ReadonlyMap<string, FieldDef> = new Map<string, FieldDef>([
  ["id", { name: "id", type: "string", required: true }],
  ["created_date", { name: "created_date", type: "string", format: "date-time", required: true }],
  ["updated_date", { name: "updated_date", type: "string", format: "date-time", required: true }],
  // The email of the signed-in user who created the record (docs/users.md); absent when a key did.
  ["created_by", { name: "created_by", type: "string", required: false }],
  ["created_by_id", { name: "created_by_id", type: "string", required: true }],
]);

export function kindOf(field: FieldDef): ValueKind {
  switch (field.type) {
    case "string":
      return field.format === "date" || field.format === "date-time" ? "date" : "string";
    case "number":
    case "integer":
      return "number";
    case "boolean":
      return "boolean";
    case "array":
      return field.items ? kindOf(field.items) : "json";
    case "object":
      return "json";
  }
}

export function isScalar(field: FieldDef): boolean {
  return field.type !== "array" && field.type !== "object";
}

const DATE_TIME_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;
// A fraction with a digit other than 0 past its third: the instant lies inside a millisecond.
const FINER_THAN_MILLISECOND_RE = /:\d{2}\.\d{3}0*[1-9]/;
const DASH = 0x2d;
const ZERO = 0x30;
const COLON = 0x3a;
const DOT = 0x2e;
const UPPER_T = 0x54;
const UPPER_Z = 0x5a;

/**
 * Milliseconds since the epoch of a `YYYY-MM-DD` date or a full ISO timestamp; NaN if neither.
 * Digits past the millisecond are dropped (the millisecond the instant falls in); writes store
 * that, and filters mind the difference (isFinerThanMillisecond).
 */
export function parseDateValue(value: unknown): number {
  if (typeof value !== "string") return NaN;
  if (value.length === 10) return parseDayAtStart(value);
  if (value.length === 24 && value.charCodeAt(23) === UPPER_Z) {
    const ms = parseStoredTimestamp(value);
    if (!Number.isNaN(ms)) return ms;
  }
  const time = DATE_TIME_RE.exec(value);
  if (!time || !isRealDay(+time[1]!, +time[2]!, +time[3]!) || +time[4]! > 23 || +time[5]! > 59 || +(time[6] ?? 0) > 59) return NaN;
  return Date.parse(value);
}

/** Whether a timestamp names an instant inside a millisecond, such as `2026-01-01T00:00:00.0019Z`. */
export function isFinerThanMillisecond(value: unknown): boolean {
  return typeof value === "string" && FINER_THAN_MILLISECOND_RE.test(value);
}

/**
 * A `YYYY-MM-DD` date that exists, in milliseconds; NaN otherwise. Read character by character:
 * it runs for every date written and every date sort key, where a regex and a Date cost more.
 */
function parseDateOnly(value: string): number {
  return value.length === 10 ? parseDayAtStart(value) : NaN;
}

/** The `YYYY-MM-DD` date the value starts with, in milliseconds; NaN if it does not start with one. */
function parseDayAtStart(value: string): number {
  if (value.charCodeAt(4) !== DASH || value.charCodeAt(7) !== DASH) return NaN;
  const year = digitsAt(value, 0, 4);
  const month = digitsAt(value, 5, 2);
  const day = digitsAt(value, 8, 2);
  return isRealDay(year, month, day) ? utcDay(year, month, day) : NaN;
}

/**
 * A timestamp in the form every stored one has (toISOString: `YYYY-MM-DDTHH:mm:ss.sssZ`), read
 * character by character: sort keys of created_date and updated_date are read on every write
 * to a sorted index. NaN when it is not in that form or not a real time (the caller reads it
 * the general way then).
 */
function parseStoredTimestamp(value: string): number {
  if (value.charCodeAt(10) !== UPPER_T || value.charCodeAt(13) !== COLON || value.charCodeAt(16) !== COLON || value.charCodeAt(19) !== DOT) return NaN;
  const day = parseDayAtStart(value);
  const hours = digitsAt(value, 11, 2);
  const minutes = digitsAt(value, 14, 2);
  const seconds = digitsAt(value, 17, 2);
  const ms = digitsAt(value, 20, 3);
  if (hours < 0 || hours > 23 || minutes < 0 || minutes > 59 || seconds < 0 || seconds > 59 || ms < 0) return NaN;
  return day + ((hours * 60 + minutes) * 60 + seconds) * 1000 + ms;
}

/** The number written with `count` ASCII digits at `from`; -1 if any is not a digit. */
function digitsAt(value: string, from: number, count: number): number {
  let number = 0;
  for (let i = from; i < from + count; i++) {
    const digit = value.charCodeAt(i) - ZERO;
    if (digit < 0 || digit > 9) return -1;
    number = number * 10 + digit;
  }
  return number;
}

/** Rejects dates such as 2026-02-30 that Date.parse would roll over (proleptic Gregorian). */
function isRealDay(year: number, month: number, day: number): boolean {
  if (year < 0 || month < 1 || month > 12 || day < 1) return false;
  if (month !== 2) return day <= (month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31);
  const isLeap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= (isLeap ? 29 : 28);
}

/**
 * The start of a day in milliseconds, by arithmetic (Howard Hinnant's days_from_civil, proleptic
 * Gregorian): Date.UTC is a call into the runtime that cost more than the rest of a parse, and
 * aggregates and distinct parse a date per record. Unlike Date.UTC, years 0–99 are taken as written.
 */
function utcDay(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return (era * 146_097 + dayOfEra - 719_468) * 86_400_000;
}

export function isDateOnly(value: string): boolean {
  return !Number.isNaN(parseDateOnly(value));
}

/**
 * The sort key of a stored value: dates become milliseconds, booleans 0/1. A missing value, null,
 * or a value of the wrong type (left by an older declaration) becomes null, which sorts last.
 */
export function toSortKey(kind: ValueKind, value: unknown): SortKey {
  switch (kind) {
    case "string":
      return typeof value === "string" ? value : null;
    case "number":
      return typeof value === "number" ? value : null;
    case "boolean":
      return typeof value === "boolean" ? (value ? 1 : 0) : null;
    case "date": {
      const ms = parseDateValue(value);
      return Number.isNaN(ms) ? null : ms;
    }
    case "json":
      return typeof value === "number" || typeof value === "string" ? value : null;
  }
}

/** Ascending order of sort keys: null after every value, strings by code point. */
export function compareSortKeys(a: SortKey, b: SortKey): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  if (typeof a === "number" && typeof b === "number") return a < b ? -1 : 1;
  if (typeof a === "string" && typeof b === "string") return compareCodePoints(a, b);
  return typeof a === "number" ? -1 : 1; // mixed (only inside untyped JSON): numbers first
}

/**
 * JavaScript compares strings by UTF-16 code unit, which puts U+E000..U+FFFF after astral
 * characters; docs/query-language.md promises code point order, so fix up the first differing unit.
 */
export function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

function codePointRank(unit: number): number {
  if (unit >= 0xd800 && unit <= 0xdfff) return unit + 0x2000;
  if (unit >= 0xe000) return unit - 0x800;
  return unit;
}
