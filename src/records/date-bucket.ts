// The date buckets of an aggregate (docs/aggregates.md), in UTC: a stored date or timestamp → the number
// of its bucket, which groups without allocating and orders as the buckets do; a bucket's number →
// its label: YYYY-MM-DD for day and for week (the week's Monday), YYYY-MM for month, YYYY for year.

import { parseDateValue } from "../schema/fields.ts";
import type { DateBucketUnit } from "./aggregate-spec.ts";

const DAY_MS = 86_400_000;
/** 1970-01-01, day 0, was a Thursday: three days after a Monday. */
const DAYS_AFTER_MONDAY_AT_EPOCH = 3;
const DASH = 0x2d;
const ZERO = 0x30;
const UPPER_Z = 0x5a;

/** The bucket a date or timestamp falls in; null when the value is no date. */
export function bucketOf(unit: DateBucketUnit, value: unknown): number | null {
  const ms = parseDateValue(value);
  if (Number.isNaN(ms)) return null;
  const days = Math.floor(ms / DAY_MS);
  switch (unit) {
    case "day":
      return days;
    case "week":
      return days - modulo(days + DAYS_AFTER_MONDAY_AT_EPOCH, 7);
    case "month":
      return monthIndexOf(value as string, days);
    case "year":
      return Math.floor(monthIndexOf(value as string, days) / 12);
  }
}

/**
 * Year × 12 + month - 1. The forms dates are stored in (YYYY-MM-DD, and timestamps in UTC ending
 * in Z) carry it in their first seven characters, read in a fraction of the civil arithmetic's time.
 */
function monthIndexOf(value: string, days: number): number {
  const isStoredForm = (value.length === 10 || (value.length === 24 && value.charCodeAt(23) === UPPER_Z)) && value.charCodeAt(4) === DASH;
  if (!isStoredForm) return Math.floor(civilOf(days) / 32);
  const year = (value.charCodeAt(0) - ZERO) * 1000 + (value.charCodeAt(1) - ZERO) * 100 + (value.charCodeAt(2) - ZERO) * 10 + value.charCodeAt(3) - ZERO;
  return year * 12 + (value.charCodeAt(5) - ZERO) * 10 + value.charCodeAt(6) - ZERO - 1;
}

export function bucketLabel(unit: DateBucketUnit, bucket: number): string {
  switch (unit) {
    case "day":
    case "week": {
      const civil = civilOf(bucket);
      const monthIndex = Math.floor(civil / 32);
      return `${yearText(Math.floor(monthIndex / 12))}-${twoDigits(modulo(monthIndex, 12) + 1)}-${twoDigits(modulo(civil, 32))}`;
    }
    case "month":
      return `${yearText(Math.floor(bucket / 12))}-${twoDigits(modulo(bucket, 12) + 1)}`;
    case "year":
      return yearText(bucket);
  }
}

/**
 * The proleptic Gregorian date of a day number, packed into one number, (year × 12 + month - 1)
 * × 32 + day, so that grouping by month or year allocates nothing. Howard Hinnant's
 * civil_from_days (chrono-Compatible Low-Level Date Algorithms), in integer arithmetic.
 */
function civilOf(days: number): number {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365);
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const shiftedMonth = Math.floor((5 * dayOfYear + 2) / 153); // 0 is March
  const day = dayOfYear - Math.floor((153 * shiftedMonth + 2) / 5) + 1;
  const month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  return (year * 12 + month - 1) * 32 + day;
}

function modulo(a: number, n: number): number {
  return ((a % n) + n) % n;
}

function twoDigits(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

/** Four digits, or ISO 8601's signed six beyond them (as toISOString writes such a year). */
function yearText(year: number): string {
  if (year >= 0 && year <= 9999) return String(year).padStart(4, "0");
  return (year < 0 ? "-" : "+") + String(Math.abs(year)).padStart(6, "0");
}
