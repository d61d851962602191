// Rows parsed from stored JSON (at start-up, or when a row kept as text is first read) share the
// strings that repeat between records, a large part of a row's memory: JSON.parse gives every row
// its own copy of each. Shared are the id (row.id and data.id), created_by_id (one per API key),
// updated_date of a record never updated (it equals created_date), and the dates of records written
// in the same batch as the row parsed before. Shared strings are equal strings, so no answer
// changes; fewer strings for the garbage collector to trace and move (counts, searches and updates
// over rows parsed on first use ran 15–27% slower without it: docs/benchmarks.md).

/** At most this many API key ids are kept for sharing: a few keys write most records. */
const MAX_SHARED_API_KEY_IDS = 1024;

export class RepeatedStrings {
  private readonly apiKeyIds = new Map<string, string>();
  private previous: Record<string, unknown> = {};

  /**
   * Shares the repeated strings of freshly parsed data owned by the store, changing it in place;
   * only existing string fields are touched, which keeps their order. Answers the id to use as
   * row.id: data.id when it is the row's.
   */
  share(id: string, data: Record<string, unknown>): string {
    const previous = this.previous;
    this.previous = data;
    const rowId = data.id === id ? (data.id as string) : id;
    const created = data.created_date;
    if (typeof created === "string") {
      if (created === previous.created_date) data.created_date = previous.created_date;
      if (data.updated_date === created) data.updated_date = data.created_date;
      else if (typeof data.updated_date === "string" && data.updated_date === previous.updated_date) data.updated_date = previous.updated_date;
    }
    const createdBy = data.created_by_id;
    if (typeof createdBy === "string") data.created_by_id = this.shareApiKeyId(createdBy);
    return rowId;
  }

  private shareApiKeyId(keyId: string): string {
    const shared = this.apiKeyIds.get(keyId);
    if (shared !== undefined) return shared;
    if (this.apiKeyIds.size < MAX_SHARED_API_KEY_IDS) this.apiKeyIds.set(keyId, keyId);
    return keyId;
  }
}
