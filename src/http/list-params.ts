// The list parameters (docs/query-language.md) → a typed ListRequest, and those of a distinct (docs/aggregates.md) →
// a DistinctRequest, plus what the next page's cursor and Link need. A cursor carries its walk
// (docs/query-language.md): parameters it binds may be omitted on later pages, and sending different ones is
// invalid_cursor.

import { ApiError, forbidden, invalidCursor, invalidParameter } from "../errors.ts";
import { decodeCursor, decodeDistinctCursor, encodeCursor, encodeDistinctCursor, type DistinctWalk, type Walk } from "../query/cursor.ts";
import { parseFieldSelection } from "../query/fields.ts";
import { parseFilterText, type FieldAccess } from "../query/filter.ts";
import type { FilterNode } from "../query/filter-tree.ts";
import { allowsCursor, DEFAULT_SORT, formatSort, parseSort } from "../query/sort.ts";
import type { Caller } from "../keys/caller.ts";
import { EXPORT_FORMATS, isExportFormat, type ExportFormat } from "../records/export-format.ts";
import { DEFAULT_DISTINCT_LIMIT, isDistinctValue, MAX_DISTINCT_LIMIT, resolveDistinctField, type DistinctAnswer, type DistinctRequest } from "../records/distinct.ts";
import type { ListAnswer, ListRequest } from "../records/records.ts";
import { isPlatformField, type EntityDef } from "../schema/fields.ts";
import type { NextPage } from "./results.ts";
import type { DeletedFilter } from "../store/store.ts";
import { hiddenFieldsOf, narrowedFilter } from "../rules/grants.ts";

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT_SECRET = 5000;
export const MAX_LIMIT_PUBLISHABLE = 500;
/**
 * The most a list page's records come to, in characters of JSON: a page of 500 records of 1 MiB was
 * 500 MiB, and six such lists at once ended a server under a 512 MiB heap. A page past it is
 * refused (invalid_parameter, limit) as soon as its JSON passes it; GET …/export streams any
 * number (presenters.ts holds pages to it).
 */
export const MAX_PAGE_CHARS = 32 * 1024 * 1024;

const COUNT_PARAMETERS = ["q", "search"];
const EXPORT_PARAMETERS = ["format", "q", "search"];
const DISTINCT_PARAMETERS = ["q", "limit", "cursor"];

/** How a URL prefix spells a list request (docs/api.md natively, docs/base44-sdk.md on the SDK's prefix). */
export interface ListDialect {
  /** The parameters it takes. */
  readonly parameters: readonly string[];
  /** The names the sort may be given by (the SDK sends `sort`); at most one per request. */
  readonly sortParameters: readonly string[];
  /** Records per page when no limit is given. */
  defaultLimit(caller: Caller): number;
  /** Every sort pages by cursor (its value and id are the position), not only the time-ordered ones. */
  readonly cursorsForEverySort: boolean;
}

export const NATIVE_LIST: ListDialect = {
  parameters: ["q", "search", "sort_by", "fields", "limit", "cursor", "skip", "count", "deleted"],
  sortParameters: ["sort_by"],
  defaultLimit: () => DEFAULT_LIMIT,
  cursorsForEverySort: false,
};

export interface ListPlan {
  readonly request: ListRequest;
  readonly fields: string[] | null;
  readonly walk: Walk;
  readonly limitText: string | null;
  /** Whether the next page is reached by cursor (else by skip). */
  readonly pagesByCursor: boolean;
}

/** What fields `caller` may name in a request about `entity`: created_by_id for the secret key, none its rules hide (docs/rules.md). */
export function accessOf(caller: Caller, entity: EntityDef): FieldAccess {
  const hidden = hiddenFieldsOf(entity, caller);
  if (hidden === null) return caller.kind === "secret" ? SECRET_ACCESS : PUBLISHABLE_ACCESS;
  return { mayUseCreatedBy: caller.kind === "secret", hidden };
}

const SECRET_ACCESS: FieldAccess = { mayUseCreatedBy: true };
const PUBLISHABLE_ACCESS: FieldAccess = { mayUseCreatedBy: false };

export function parseListParams(entity: EntityDef, query: URLSearchParams, caller: Caller, dialect: ListDialect = NATIVE_LIST): ListPlan {
  checkParameterNames(query, dialect.parameters, entity);
  const access = accessOf(caller, entity);
  const cursorText = query.get("cursor");
  const sortParameter = sortParameterOf(query, dialect);
  const sent: Walk = {
    entity: entity.name,
    sort: (query.get(sortParameter) ?? "").replace(/^\+/, ""), // "+f" and "f" are one walk
    q: query.get("q"),
    search: query.get("search"),
    fields: query.get("fields"),
    deleted: query.get("deleted"),
  };
  const cursor = cursorText === null ? null : decodeCursor(cursorText);
  if (cursor) {
    if (query.has("skip")) throw invalidParameter("skip", "skip cannot be combined with cursor; page with one or the other.");
    checkSameWalk(cursor.walk, sent, sortParameter);
  }
  const walk = cursor?.walk ?? sent;
  const sort = parseSort(entity, walk.sort || DEFAULT_SORT, access, sortParameter);
  const pagesByCursor = dialect.cursorsForEverySort || allowsCursor(sort);
  if (cursor && !pagesByCursor) throw invalidCursor(`Sorting by ${sort.field} allows no cursor; page with skip, or sort by created_date, updated_date or id.`);
  if (cursor && !fitsSort(cursor.after.key, sort.kind)) throw invalidCursor("The cursor's position does not fit its sort; pass back X-Next-Cursor unchanged.");
  const request: ListRequest = {
    filter: narrowedFilter(entity, caller, combine(parseFilterText(entity, walk.q, access), searchNode(entity, walk.search, access))),
    sort,
    after: cursor?.after ?? null,
    skip: parseInteger(query, "skip", 0, Number.MAX_SAFE_INTEGER) ?? 0,
    limit: parseLimit(query, caller, dialect),
    deleted: parseDeleted(walk.deleted, caller),
    count: parseBoolean(query, "count"),
  };
  const fields = walk.fields === null ? null : parseFieldSelection(entity, walk.fields, access);
  return { request, fields, walk: { ...walk, sort: formatSort(sort) }, limitText: query.get("limit"), pagesByCursor };
}

/** The filter of a count request: `q` and `search`, ANDed. */
export function parseCountParams(entity: EntityDef, query: URLSearchParams, caller: Caller): FilterNode | null {
  checkParameterNames(query, COUNT_PARAMETERS, entity);
  const access = accessOf(caller, entity);
  return narrowedFilter(entity, caller, combine(parseFilterText(entity, query.get("q"), access), searchNode(entity, query.get("search"), access)));
}

export interface ExportRequest {
  readonly format: ExportFormat;
  readonly filter: FilterNode | null;
}

/** An export's format (ndjson when not given) and its filter: `q` and `search`, as a count's. */
export function parseExportParams(entity: EntityDef, query: URLSearchParams, caller: Caller): ExportRequest {
  checkParameterNames(query, EXPORT_PARAMETERS, entity);
  const format = query.get("format") ?? "ndjson";
  if (!isExportFormat(format)) throw invalidParameter("format", `Parameter format must be one of ${EXPORT_FORMATS.join(", ")} (got "${format}").`);
  const access = accessOf(caller, entity);
  return { format, filter: narrowedFilter(entity, caller, combine(parseFilterText(entity, query.get("q"), access), searchNode(entity, query.get("search"), access))) };
}

/** Where the next page starts (its query string and cursor), or null when this page is the last. */
export function nextPage(plan: ListPlan, answer: ListAnswer, query: URLSearchParams): NextPage | null {
  if (!answer.hasMore) return null;
  const next = new URLSearchParams();
  if (plan.pagesByCursor && answer.last) {
    const cursor = encodeCursor({ walk: plan.walk, after: answer.last });
    next.set("cursor", cursor);
    if (plan.limitText !== null) next.set("limit", plan.limitText);
    return { query: next.toString(), cursor };
  }
  for (const [name, value] of query) if (name !== "skip") next.append(name, value);
  next.set("skip", String(plan.request.skip + plan.request.limit));
  return { query: next.toString(), cursor: null };
}

export interface DistinctPlan {
  readonly request: DistinctRequest;
  readonly walk: DistinctWalk;
  readonly limitText: string | null;
}

/** The parameters of GET …/distinct/<field>: `q`, `limit` (1 to 1,000, default 100) and `cursor`. */
export function parseDistinctParams(entity: EntityDef, fieldName: string, query: URLSearchParams, caller: Caller): DistinctPlan {
  checkParameterNames(query, DISTINCT_PARAMETERS, entity);
  const access = accessOf(caller, entity);
  const field = resolveDistinctField(entity, fieldName, access);
  const sent: DistinctWalk = { entity: entity.name, field: fieldName, q: query.get("q") };
  const cursorText = query.get("cursor");
  const cursor = cursorText === null ? null : decodeDistinctCursor(cursorText);
  if (cursor) {
    const { walk } = cursor;
    if (walk.entity !== sent.entity || walk.field !== sent.field) {
      throw invalidCursor(`The cursor belongs to the distinct values of ${walk.entity}.${walk.field}, not of ${sent.entity}.${sent.field}; start a new walk without it.`);
    }
    if (sent.q !== null && sent.q !== "" && sent.q !== walk.q) {
      throw invalidCursor("The cursor belongs to a walk with another q; send the cursor alone (with limit), or start a new walk without it.");
    }
    if (!isDistinctValue(field, cursor.after)) throw invalidCursor("The cursor's position does not fit its field; pass back X-Next-Cursor unchanged.");
  }
  const walk = cursor?.walk ?? sent;
  const request: DistinctRequest = {
    field,
    filter: narrowedFilter(entity, caller, parseFilterText(entity, walk.q, access)),
    after: cursor?.after,
    limit: parseInteger(query, "limit", 1, MAX_DISTINCT_LIMIT) ?? DEFAULT_DISTINCT_LIMIT,
  };
  return { request, walk, limitText: query.get("limit") };
}

/** Where the next page of distinct values starts, or null when this page is the last. */
export function nextDistinctPage(plan: DistinctPlan, answer: DistinctAnswer): NextPage | null {
  if (!answer.hasMore) return null;
  const next = new URLSearchParams();
  const cursor = encodeDistinctCursor({ walk: plan.walk, after: answer.last as string | number | boolean });
  next.set("cursor", cursor);
  if (plan.limitText !== null) next.set("limit", plan.limitText);
  return { query: next.toString(), cursor };
}

function sortParameterOf(query: URLSearchParams, dialect: ListDialect): string {
  const given = dialect.sortParameters.filter((name) => query.has(name));
  if (given.length > 1) throw invalidParameter(given[1]!, `Give the sort once, as ${given[0]} or as ${given[1]}, not both.`);
  return given[0] ?? dialect.sortParameters[0]!;
}

function checkSameWalk(walk: Walk, sent: Walk, sortParameter: string): void {
  const names = { sort: sortParameter, q: "q", search: "search", fields: "fields", deleted: "deleted" } as const;
  for (const [property, parameter] of Object.entries(names) as Array<[keyof typeof names, string]>) {
    const value = sent[property];
    if (value !== null && value !== "" && value !== walk[property]) {
      throw invalidCursor(`The cursor belongs to a walk with another ${parameter}; send the cursor alone (with limit), or start a new walk without it.`);
    }
  }
  if (walk.entity !== sent.entity) throw invalidCursor(`The cursor belongs to ${walk.entity}, not ${sent.entity}.`);
}

/** Sort keys are text for text and numbers otherwise (dates as milliseconds); a forged position of another type is refused. */
function fitsSort(key: unknown, kind: string): boolean {
  return key === null || (kind === "string" ? typeof key === "string" : typeof key === "number");
}

/** `search` looks in the text fields the caller may read (docs/rules.md). */
function searchNode(entity: EntityDef, text: string | null, access: FieldAccess): FilterNode | null {
  if (text === null || text === "") return null;
  const fields = access.hidden ? entity.textFields.filter((name) => !access.hidden!.has(name)) : entity.textFields;
  return { type: "search", fields, text };
}

function combine(a: FilterNode | null, b: FilterNode | null): FilterNode | null {
  if (!a || !b) return a ?? b;
  return { type: "and", nodes: [a, b] };
}

function checkParameterNames(query: URLSearchParams, known: readonly string[], entity: EntityDef): void {
  const seen = new Set<string>();
  for (const name of query.keys()) {
    if (!known.includes(name)) throw unknownParameter(query, name, known, entity);
    if (seen.has(name)) throw invalidParameter(name, `Parameter "${name}" is given twice; give it once.`);
    seen.add(name);
  }
}

/**
 * An unknown parameter; one named like a field (json-server's `?status=todo`) is answered with the
 * filter it meant, in q.
 */
function unknownParameter(query: URLSearchParams, name: string, known: readonly string[], entity: EntityDef): ApiError {
  const takes = `This endpoint takes: ${known.join(", ")}.`;
  const field = entity.fields.get(name) ?? (isPlatformField(name) ? name : undefined);
  if (field === undefined) return invalidParameter(name, `Unknown parameter "${name}". ${takes}`);
  const text = query.get(name)!;
  const isTyped = typeof field !== "string" && (field.type === "number" || field.type === "integer" || field.type === "boolean");
  const value: unknown = isTyped && /^(-?\d+(\.\d+)?|true|false)$/.test(text) ? JSON.parse(text) : text;
  const q = JSON.stringify({ [name]: value });
  return invalidParameter(name, `Unknown parameter "${name}": to list records whose ${name} is ${JSON.stringify(value)}, filter with q=${q} (URL-encoded: q=${encodeURIComponent(q)}). ${takes}`);
}

function parseInteger(query: URLSearchParams, name: string, min: number, max: number): number | null {
  const text = query.get(name);
  if (text === null) return null;
  const value = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(value >= min && value <= max)) throw invalidParameter(name, `Parameter ${name} must be a whole number from ${min} to ${max} (got "${text}").`);
  return value;
}

function parseLimit(query: URLSearchParams, caller: Caller, dialect: ListDialect): number {
  const max = caller.kind === "secret" ? MAX_LIMIT_SECRET : MAX_LIMIT_PUBLISHABLE;
  const text = query.get("limit");
  // Refused on both prefixes, never capped: a client asking for more than it may get would take a
  // short page for the whole list. Only a list that sends no limit gets the key's maximum (the SDK's).
  if (text !== null && /^\d+$/.test(text) && Number(text) > max && caller.kind !== "secret") {
    throw invalidParameter("limit", `A publishable key may ask for at most ${max} records per page (got ${text}); send limit=${max} or less and page with the cursor.`);
  }
  return parseInteger(query, "limit", 1, max) ?? dialect.defaultLimit(caller);
}

function parseBoolean(query: URLSearchParams, name: string): boolean {
  const text = query.get(name);
  if (text === null || text === "false") return false;
  if (text === "true") return true;
  throw invalidParameter(name, `Parameter ${name} must be true or false (got "${text}").`);
}

function parseDeleted(text: string | null, caller: Caller): DeletedFilter {
  if (text === null) return "exclude";
  if (caller.kind !== "secret") throw forbidden("A publishable key cannot list deleted records; use a secret key for deleted=only or deleted=include.");
  if (text === "only" || text === "include") return text;
  throw invalidParameter("deleted", `Parameter deleted must be "only" or "include" (got "${text}").`);
}
