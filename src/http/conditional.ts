// ETags and conditional requests (docs/api.md): strong, quoted, opaque tags derived
// from the row's revision, which changes on every write of the record.

import { preconditionFailed } from "../errors.ts";
import { etagOf } from "../records/serialize.ts";
import type { Row } from "../store/store.ts";

/** Splits an If-Match / If-None-Match value into its tags ("*" stays "*"); weak tags never match strongly. */
function tagsOf(header: string): string[] {
  return header.split(",").map((tag) => tag.trim()).filter((tag) => tag !== "");
}

/** If-None-Match on a read of the version tagged `etag`: true when the client's copy is current (answer 304). */
export function isNotModified(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  // Weak comparison, as RFC 9110 asks for If-None-Match.
  return tagsOf(header).some((tag) => tag === "*" || tag === etag || tag === `W/${etag}`);
}

/** If-Match on a write: refuses with 412 unless a tag equals the live record's current ETag. */
export function checkIfMatch(header: string | undefined, row: Row): void {
  if (header === undefined) return;
  const etag = etagOf(row);
  if (!tagsOf(header).some((tag) => tag === "*" || tag === etag)) throw preconditionFailed(etag);
}
