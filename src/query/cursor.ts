// Cursors (docs/query-language.md): opaque base64url JSON carrying the walk they belong to (entity, sort,
// filter, search, fields, deleted) and the position of the last record of the page. The next page
// resumes strictly after that position, so inserts and deletes never repeat or skip a record.
// A distinct walk's cursor carries entity, field and filter, and the last value of its page.

import { invalidCursor } from "../errors.ts";
import type { SortPosition } from "./filter-tree.ts";

/** The request parameters a cursor is bound to, as text, so that they compare exactly. */
export interface Walk {
  readonly entity: string;
  readonly sort: string;
  readonly q: string | null;
  readonly search: string | null;
  readonly fields: string | null;
  readonly deleted: string | null;
}

export interface Cursor {
  readonly walk: Walk;
  readonly after: SortPosition;
}

export function encodeCursor(cursor: Cursor): string {
  const { walk, after } = cursor;
  return toWire([walk.entity, walk.sort, walk.q, walk.search, walk.fields, walk.deleted, after.key, after.id]);
}

export function decodeCursor(text: string): Cursor {
  const wire = fromWire(text);
  if (!Array.isArray(wire) || wire.length !== 8) throw malformed();
  const [entity, sort, q, search, fields, deleted, key, id] = wire;
  const isText = (value: unknown) => typeof value === "string";
  const isOptionalText = (value: unknown) => value === null || typeof value === "string";
  if (!isText(entity) || !isText(sort) || !isText(id) || ![q, search, fields, deleted].every(isOptionalText)) throw malformed();
  if (key !== null && typeof key !== "string" && typeof key !== "number") throw malformed();
  return { walk: { entity, sort, q, search, fields, deleted }, after: { key, id } };
}

/** A cursor on the wire: its parts as a JSON array, in base64url. */
function toWire(parts: unknown[]): string {
  return Buffer.from(JSON.stringify(parts)).toString("base64url");
}

function fromWire(text: string): unknown {
  try {
    return JSON.parse(Buffer.from(text, "base64url").toString("utf8"));
  } catch {
    throw malformed();
  }
}

function malformed() {
  return invalidCursor("The cursor is malformed. Pass back the X-Next-Cursor header of the previous page unchanged.");
}

/** The request a distinct cursor is bound to: the entity, the field, and the text of `q`. */
export interface DistinctWalk {
  readonly entity: string;
  readonly field: string;
  readonly q: string | null;
}

export interface DistinctCursor {
  readonly walk: DistinctWalk;
  /** The last value of the previous page; the next starts strictly after it. */
  readonly after: string | number | boolean;
}

/** Tagged, and shaped unlike a list cursor, so that neither is ever taken for the other. */
const DISTINCT_TAG = "distinct";

export function encodeDistinctCursor(cursor: DistinctCursor): string {
  const { walk, after } = cursor;
  return toWire([DISTINCT_TAG, walk.entity, walk.field, walk.q, after]);
}

export function decodeDistinctCursor(text: string): DistinctCursor {
  const wire = fromWire(text);
  if (!Array.isArray(wire) || wire.length !== 5 || wire[0] !== DISTINCT_TAG) throw malformed();
  const [, entity, field, q, after] = wire;
  if (typeof entity !== "string" || typeof field !== "string" || (q !== null && typeof q !== "string")) throw malformed();
  if (typeof after !== "string" && typeof after !== "number" && typeof after !== "boolean") throw malformed();
  return { walk: { entity, field, q }, after };
}
