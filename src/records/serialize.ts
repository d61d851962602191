// A record as clients see it (docs/api.md): id, the declared fields in declaration order, then the
// platform timestamps, and created_by_id for secret keys only. Fields no longer declared stay in
// the stored row but are never shown. The JSON of a row version is built once per key kind, or
// taken from the data JSON a new version carries (records.ts); its ETag comes from its revision.

import { pageTooLarge } from "../errors.ts";
import type { EntityDef } from "../schema/fields.ts";
import type { Row } from "../store/store.ts";
import type { Caller } from "../keys/caller.ts";
import { forEachMemberName } from "../store/member-names.ts";
import { unparsedDataJson } from "../rows/stored-row.ts";
import { fieldsHiddenIn } from "../rules/grants.ts";

export function recordJson(entity: EntityDef, row: Row, caller: Caller, cache = true): string {
  // A version this server has just built carries its data's JSON, which is the secret-key record
  // (records.ts). It is not cached: most written records are not read back soon, and a read caches.
  const memo = row.memo;
  const isSecret = caller.kind === "secret";
  // Fields the caller's rules keep from it (docs/rules.md): built for it alone, never cached.
  if (!isSecret && fieldsHiddenIn(entity, caller, row) !== null) return JSON.stringify(recordObject(entity, row, caller, null));
  // A row still held as the text it was loaded as (store/stored-row.ts) is sent as it is, when that
  // text is this record's JSON: no parse, no stringify, and nothing to cache on the row.
  if (isSecret) {
    const stored = unparsedDataJson(row);
    if (stored !== undefined && isRecordJson(entity, stored)) return stored;
  }
  if (memo !== undefined) {
    const dataJson = memo.dataJson;
    if (dataJson !== undefined) return isSecret ? dataJson : withoutCreatedBy(dataJson, row.data.created_by_id);
    // Named loads: a keyed load by a computed slot name goes megamorphic over memos' shapes.
    const cached = isSecret ? memo.secretJson : memo.publicJson;
    if (cached !== undefined) return cached;
  }
  const slot = isSecret ? "secretJson" : "publicJson";
  const json = JSON.stringify(recordObject(entity, row, caller, null));
  if (cache && row.isTransient !== true) cacheJson(row, slot, json);
  return json;
}

/**
 * Read JSON is cached on at most this many row versions, and the one cached longest ago loses it:
 * enough for the records and pages clients read again and again, while a walk over a big table
 * does not leave every record's JSON (about 300 bytes each) in memory for good. Shared by every
 * server in the process; it is only a cache.
 */
export const MAX_CACHED_JSON_ROWS = 65_536;
/**
 * The rows of a bigger page (an export, a walk over the table) do not enter the cache: they are
 * seldom read again soon, and each would push out a row that is, leaving its JSON behind as old
 * garbage (at 1,000,000 records a walk in pages of 5,000 grew the heap by 500 MB).
 */
export const MAX_CACHED_PAGE_ROWS = 1000;
const cachedRows: Array<Row | undefined> = [];
let nextSlot = 0;

function cacheJson(row: Row, slot: "secretJson" | "publicJson", json: string): void {
  const memo = (row.memo ??= {});
  if (memo.secretJson === undefined && memo.publicJson === undefined) {
    const evicted = cachedRows[nextSlot];
    if (evicted?.memo) evicted.memo.secretJson = evicted.memo.publicJson = undefined;
    cachedRows[nextSlot] = row;
    nextSlot = (nextSlot + 1) % MAX_CACHED_JSON_ROWS;
  }
  if (slot === "secretJson") memo.secretJson = json;
  else memo.publicJson = json;
}

const PLATFORM_FIELDS = ["created_date", "updated_date", "created_by", "created_by_id"];

/**
 * Whether stored data JSON is the secret-key record JSON recordObject would give: "id" first, then
 * declared fields in declaration order with no null among them, then the platform fields in their
 * order. Rows written under the current declarations are stored so (records.ts); a field since
 * dropped, or declarations reordered, leave rows that are not, and those are built as usual.
 */
export function isRecordJson(entity: EntityDef, json: string): boolean {
  const names = entity.fieldNames;
  let isFirst = true;
  let declared = -1;
  let platform = -1;
  let isRecord = true;
  const isName = (name: string, from: number, to: number): boolean => name.length === to - from && json.startsWith(name, from);
  const isScanned = forEachMemberName(json, (_json, from, to) => {
    if (!isRecord) return;
    if (isFirst) {
      isFirst = false;
      isRecord = isName("id", from, to);
      return;
    }
    if (platform < 0) {
      for (let at = declared + 1; at < names.length; at++) {
        if (!isName(names[at]!, from, to)) continue;
        declared = at;
        // recordObject leaves a null out; the stored text has it.
        isRecord = !json.startsWith("null", to + 2);
        return;
      }
    }
    for (let at = platform + 1; at < PLATFORM_FIELDS.length; at++) {
      if (!isName(PLATFORM_FIELDS[at]!, from, to)) continue;
      platform = at;
      return;
    }
    isRecord = false;
  });
  return isScanned && isRecord && !isFirst;
}

/** A record version's ETag (docs/api.md): strong, quoted, from its revision, which every write changes. */
export function etagOf(row: Row): string {
  return `"${row.rev.toString(36)}"`;
}

/** Record JSON in record order ends with created_by_id; publishable callers never see it. */
function withoutCreatedBy(json: string, createdById: unknown): string {
  if (createdById === undefined) return json;
  return json.slice(0, json.length - `,"created_by_id":${JSON.stringify(createdById)}}`.length) + "}";
}

/** The record as an object, restricted to `fields` (plus id) when given. */
export function recordObject(entity: EntityDef, row: Row, caller: Caller, fields: readonly string[] | null): Record<string, unknown> {
  const data = row.data;
  const out: Record<string, unknown> = { id: row.id };
  const names = fields ?? entity.fieldNames;
  const hidden = caller.kind === "secret" ? null : fieldsHiddenIn(entity, caller, row);
  for (const name of names) {
    if (fields && !entity.fields.has(name)) continue; // platform fields go last, below
    if (hidden?.includes(name)) continue;
    const value = data[name];
    if (value !== undefined && value !== null) out[name] = value;
  }
  for (const name of PLATFORM_FIELDS) {
    if (fields && !fields.includes(name)) continue;
    if (name === "created_by_id" && caller.kind !== "secret") continue;
    // Only a signed-in user's records have a creator's email.
    if (name === "created_by" && data.created_by === undefined) continue;
    out[name] = data[name];
  }
  return out;
}

/** The JSON array of a page of records. */
export function recordsJson(entity: EntityDef, rows: readonly Row[], caller: Caller, fields: readonly string[] | null, maxChars = Infinity): string {
  const isBounded = maxChars !== Infinity;
  if (!isBounded && (fields || rows.every(isBuiltEachTime))) return JSON.stringify(rows.map((row) => recordObject(entity, row, caller, fields)));
  const cache = rows.length <= MAX_CACHED_PAGE_ROWS;
  let out = "[";
  for (let i = 0; i < rows.length; i++) {
    out += (i === 0 ? "" : ",") + (fields ? JSON.stringify(recordObject(entity, rows[i]!, caller, fields)) : recordJson(entity, rows[i]!, caller, cache));
    // Given up as soon as it passes: never built whole (http/routes.ts, MAX_PAGE_CHARS).
    if (isBounded && out.length > maxChars) throw pageTooLarge(maxChars);
  }
  return out + "]";
}

/**
 * A row whose JSON recordJson would build from its object and not keep (a transient row with no
 * memo, such as the PostgreSQL store's): a page of them is one JSON.stringify over the array,
 * which writes into one buffer rather than joining a string per record (docs/benchmarks.md,
 * "PostgreSQL").
 */
function isBuiltEachTime(row: Row): boolean {
  return row.isTransient === true && row.memo === undefined;
}

/** A record with extra members (`restored`, `created`) after its own fields. */
export function recordJsonWith(entity: EntityDef, row: Row, caller: Caller, extra: Record<string, unknown>): string {
  const json = recordJson(entity, row, caller);
  return json.slice(0, -1) + "," + JSON.stringify(extra).slice(1);
}
