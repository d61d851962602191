// What an operation answers, as typed data: the rows, pages, counts and ids it found or wrote. A
// mount's presenter (presenters.ts) turns a Result into the reply its clients expect, so that one
// operation serves both URL prefixes (docs/base44-sdk.md) without building or re-parsing JSON text twice.

import type { UpsertResult } from "../records/batch.ts";
import type { RecordView } from "../records/read-cache.ts";
import type { EntityDef } from "../schema/fields.ts";
import type { Row } from "../store/store.ts";
import type { Reply } from "./response.ts";

/** Where the next page starts: its query string (for Link) and its cursor, when the walk has one. */
export interface NextPage {
  readonly query: string;
  readonly cursor: string | null;
}

export type Result =
  /** One record: created (201), updated (200). */
  | { readonly type: "record"; readonly entity: EntityDef; readonly row: Row; readonly created: boolean }
  /** One record read (200), as the caller sees it. */
  | { readonly type: "view"; readonly view: RecordView }
  /** If-None-Match named the current version, whose ETag this is. */
  | { readonly type: "notModified"; readonly etag: string }
  | { readonly type: "restored"; readonly entity: EntityDef; readonly row: Row; readonly restored: boolean }
  /** One record deleted; `row` is its deleted version. */
  | { readonly type: "deleted"; readonly row: Row }
  /** A list page (next and total set), or the records a bulk write wrote in request order. */
  | {
      readonly type: "records";
      readonly entity: EntityDef;
      readonly rows: readonly Row[];
      readonly fields: readonly string[] | null;
      readonly created: boolean;
      readonly next: NextPage | null;
      readonly total: number | null;
      /** A list page (held to MAX_PAGE_CHARS), not the records a write wrote (answered whatever their size). */
      readonly isPage?: true;
    }
  /** The records an import stored (201), in the order they were sent. */
  | { readonly type: "imported"; readonly entity: EntityDef; readonly rows: readonly Row[] }
  /** A page whose position travels in the body (the SDK's /v2/list): records or distinct values. */
  | { readonly type: "page"; readonly items: PageItems; readonly nextCursor: string | null }
  /** Distinct values of a field, ascending, with the next page in headers. */
  | { readonly type: "values"; readonly values: readonly unknown[]; readonly next: NextPage | null }
  | { readonly type: "count"; readonly count: number }
  | { readonly type: "upserted"; readonly entity: EntityDef; readonly results: readonly UpsertResult[] }
  | { readonly type: "updatedMany"; readonly ids: readonly string[] }
  | { readonly type: "deletedMany"; readonly ids: readonly string[] }
  | { readonly type: "aggregated"; readonly rows: readonly Record<string, unknown>[]; readonly truncated: boolean }
  /** An answer the operation built whole, the same on every prefix: the change feed's, an export's stream. */
  | { readonly type: "reply"; readonly reply: Reply };

export type PageItems =
  | { readonly entity: EntityDef; readonly rows: readonly Row[]; readonly fields: readonly string[] | null }
  | { readonly values: readonly unknown[] };
