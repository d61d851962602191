// The entity declarations as GET /api/entities describes them (docs/api.md), and what the page
// makes of a field: its column, whether it sorts, its form input, and how a value goes to the
// input and back. No DOM here.

export interface FieldDecl {
  readonly type: "string" | "number" | "integer" | "boolean" | "array" | "object";
  readonly format?: string;
  readonly enum?: readonly unknown[];
  readonly default?: unknown;
}

export interface EntityDecl {
  readonly name: string;
  readonly properties: Readonly<Record<string, FieldDecl>>;
  readonly required: readonly string[];
  /** Present when publishable keys may do less than everything (docs/entities.md). */
  readonly access?: { readonly publishable: readonly string[] };
}

export type KeyKind = "secret" | "publishable";

export type InputKind = "select" | "boolean" | "number" | "integer" | "date" | "datetime" | "email" | "url" | "text" | "json";

export const PLATFORM_COLUMNS = ["created_date", "updated_date"] as const;

/** What a key may do with an entity: secret keys everything, publishable keys what "access" lists. */
export function mayDo(entity: EntityDecl, kind: KeyKind, operation: "read" | "create" | "update" | "delete"): boolean {
  return kind === "secret" || !entity.access || entity.access.publishable.includes(operation);
}

/** The table's columns: id, the declared fields, the timestamps, and created_by_id for secret keys (docs/api.md). */
export function columnsOf(entity: EntityDecl, kind: KeyKind): string[] {
  return ["id", ...Object.keys(entity.properties), ...PLATFORM_COLUMNS, ...(kind === "secret" ? ["created_by_id"] : [])];
}

/** Arrays and objects hold more than one value: the API refuses to sort by them. */
export function isSortable(entity: EntityDecl, column: string): boolean {
  const field = entity.properties[column];
  return !field || (field.type !== "array" && field.type !== "object");
}

export function inputKindOf(field: FieldDecl): InputKind {
  if (field.enum) return "select";
  switch (field.type) {
    case "boolean":
      return "boolean";
    case "number":
      return "number";
    case "integer":
      return "integer";
    case "array":
    case "object":
      return "json";
  }
  if (field.format === "date") return "date";
  if (field.format === "date-time") return "datetime";
  if (field.format === "email") return "email";
  if (field.format === "uri") return "url";
  return "text";
}

/** A stored value as the input shows it ("" for none). date-time inputs have no zone: they show UTC. */
export function toInputText(field: FieldDecl, value: unknown): string {
  if (value === undefined || value === null) return "";
  switch (inputKindOf(field)) {
    case "select":
      return JSON.stringify(value);
    case "json": {
      const compact = JSON.stringify(value);
      return compact.length <= 60 ? compact : JSON.stringify(value, null, 2);
    }
    case "datetime": {
      const time = new Date(String(value));
      return Number.isNaN(time.getTime()) ? String(value) : time.toISOString().slice(0, 23);
    }
    default:
      return String(value);
  }
}

export type Parsed = { readonly value: unknown } | { readonly problem: string };

/**
 * An input's text as the value to send: null when empty (no value), else typed. Only JSON is
 * checked here, as it cannot be sent otherwise; every other check is the API's, in its words.
 */
export function fromInputText(field: FieldDecl, text: string): Parsed {
  if (text.trim() === "") return { value: null };
  switch (inputKindOf(field)) {
    case "select":
      return { value: JSON.parse(text) };
    case "boolean":
      return { value: text === "true" };
    case "number":
    case "integer":
      return { value: Number(text) };
    case "datetime":
      // "2026-01-02T03:04" or with seconds and milliseconds, read as UTC like it was shown.
      return { value: Number.isNaN(new Date(`${text}Z`).getTime()) ? text : new Date(`${text}Z`).toISOString() };
    case "json":
      try {
        return { value: JSON.parse(text) };
      } catch (error) {
        return { problem: `is not valid JSON: ${(error as Error).message}` };
      }
    default:
      return { value: text };
  }
}

/** A value in a table cell: text as is, everything else as compact JSON. */
export function cellText(value: unknown): string {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

/**
 * The filter box's example, made of the entity's own fields and accepted by the API as written:
 * an enum or boolean field's value, a range on a number or date field, text found in a text field.
 */
export function exampleFilterOf(entity: EntityDecl): string {
  const fields = Object.entries(entity.properties);
  const parts: string[] = [];
  const equal = fields.find(([, field]) => (field.enum !== undefined && field.enum.length > 0) || field.type === "boolean");
  if (equal) parts.push(`${JSON.stringify(equal[0])}: ${JSON.stringify(equal[1].enum ? equal[1].enum[0] : true)}`);
  const range = fields.find(([, field]) => !field.enum && (field.type === "number" || field.type === "integer" || field.format === "date" || field.format === "date-time"));
  if (range) parts.push(`${JSON.stringify(range[0])}: {"$gte": ${range[1].type === "string" ? '"2026-01-01"' : "1"}}`);
  const text = fields.find(([, field]) => field.type === "string" && !field.enum && field.format === undefined);
  if (text && parts.length < 2) parts.push(`${JSON.stringify(text[0])}: {"$contains": "word"}`);
  if (parts.length === 0) parts.push(`"created_date": {"$gte": "2026-01-01"}`);
  return `{${parts.join(", ")}}`;
}
