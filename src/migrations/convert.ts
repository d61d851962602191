// A convert step's conversions (docs/schema-changes.md): a stored value to the type a declaration
// now says, or undefined when it does not convert (the step's "else" decides what then).

import { isDateOnly, parseDateValue } from "../schema/fields.ts";

export const CONVERT_TYPES = ["string", "number", "integer", "boolean", "date", "date-time"] as const;
export type ConvertType = (typeof CONVERT_TYPES)[number];

const NUMBER_TEXT_RE = /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i;

export function convertValue(value: unknown, to: ConvertType): unknown {
  switch (to) {
    case "string":
      if (typeof value === "string") return value;
      if (typeof value === "number" || typeof value === "boolean") return String(value);
      return undefined;
    case "number":
    case "integer": {
      const number = typeof value === "number" ? value : typeof value === "string" && NUMBER_TEXT_RE.test(value.trim()) ? Number(value.trim()) : NaN;
      if (!Number.isFinite(number)) return undefined;
      return to === "integer" && !Number.isInteger(number) ? undefined : number;
    }
    case "boolean":
      if (typeof value === "boolean") return value;
      if (value === 1 || value === 0) return value === 1;
      if (typeof value === "string" && /^(true|false)$/i.test(value.trim())) return value.trim().toLowerCase() === "true";
      return undefined;
    case "date": {
      if (typeof value !== "string") return undefined;
      const text = value.trim();
      if (isDateOnly(text)) return text;
      // A timestamp's day as written, whatever its zone: the day a person meant.
      if (!Number.isNaN(parseDateValue(text))) return text.slice(0, 10);
      return undefined;
    }
    case "date-time": {
      if (typeof value !== "string") return undefined;
      const ms = parseDateValue(value.trim());
      return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
    }
  }
}
