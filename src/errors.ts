// The one error type of the API and the helpers that build it (docs/errors.md).
// Codes identify an error permanently; messages may change and always say how to mend it.

export type ErrorCode =
  | "invalid_request"
  | "invalid_json"
  | "invalid_multipart"
  | "invalid_file"
  | "unknown_field"
  | "read_only_field"
  | "invalid_field"
  | "invalid_filter"
  | "invalid_parameter"
  | "invalid_cursor"
  | "filter_required"
  | "batch_too_large"
  | "unauthorized"
  | "invalid_credentials"
  | "invalid_code"
  | "email_not_verified"
  | "user_disabled"
  | "signup_closed"
  | "forbidden"
  | "rate_limited"
  | "unique_violation"
  | "entity_not_found"
  | "record_not_found"
  | "method_not_allowed"
  | "ambiguous_match"
  | "idempotency_key_in_use"
  | "precondition_failed"
  | "payload_too_large"
  | "headers_too_large"
  | "request_timeout"
  | "expectation_failed"
  | "unsupported_media_type"
  | "idempotency_key_reused"
  | "not_found"
  | "app_not_found"
  | "internal"
  | "store_unavailable"
  | "too_many_streams"
  | "too_many_exports"
  | "server_busy"
  | "insufficient_storage"
  | "backup_target_exists"
  | "backup_unsupported"
  | "key_not_found"
  | "last_secret_key"
  | "key_not_managed"
  | "webhook_not_found"
  | "invalid_webhook_url"
  | "file_not_found"
  | "range_not_satisfiable";

export type ErrorDetails = Record<string, unknown>;

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details: ErrorDetails = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "ApiError";
  }

  toJSON(): unknown {
    return { error: { code: this.code, message: this.message, details: this.details } };
  }

  /** The same error for the record at `index` of a batch (docs/api.md: details.index). */
  atIndex(index: number): ApiError {
    return new ApiError(
      this.status,
      this.code,
      `Record ${index} of the batch: ${this.message}`,
      { ...this.details, index },
      this.headers,
    );
  }

  /** The same error for the record that starts at `line` of an uploaded file (docs/base44-sdk.md: details.line). */
  atLine(line: number): ApiError {
    return new ApiError(this.status, this.code, `Line ${line} of the file: ${this.message}`, { ...this.details, line }, this.headers);
  }
}

/** A request HTTP itself refuses (docs/errors.md, "Requests HTTP refuses"). */
export const invalidRequest = (message: string, details: ErrorDetails = {}) =>
  new ApiError(400, "invalid_request", message, details);

/** The client may be holding its body back until told to send it: the connection closes. */
export const expectationFailed = (expect: string) =>
  new ApiError(417, "expectation_failed", `Expect: ${expect} is not an expectation this server meets; send Expect: 100-continue or none.`, { expect }, { Connection: "close" });

export const invalidJson = (message: string, details: ErrorDetails = {}) =>
  new ApiError(400, "invalid_json", message, details);

/** An uploaded file that cannot be read as records: empty, malformed, or of another format. */
export const invalidFile = (message: string, details: ErrorDetails = {}) =>
  new ApiError(400, "invalid_file", message, details);

export const unknownField = (field: string, fields: string[], entity: string) =>
  new ApiError(
    400,
    "unknown_field",
    `Unknown field "${field}". ${entity} has the fields: ${fields.join(", ") || "(none)"}.`,
    { field, fields },
  );

export const readOnlyField = (field: string) =>
  new ApiError(
    400,
    "read_only_field",
    `Field "${field}" is set by the server and cannot be written; remove it from the body.`,
    { field },
  );

export const invalidField = (field: string, message: string, details: ErrorDetails = {}) =>
  new ApiError(400, "invalid_field", `Field "${field}" ${message}`, { field, ...details });

export const invalidFilter = (message: string, details: ErrorDetails = {}) =>
  new ApiError(400, "invalid_filter", message, details);

export const invalidParameter = (parameter: string, message: string) =>
  new ApiError(400, "invalid_parameter", message, { parameter });

/** A list page whose records' JSON would pass what one page answers (records/serialize.ts). */
export const pageTooLarge = (maxChars: number) =>
  new ApiError(
    400,
    "invalid_parameter",
    `This page's records come to more than ${(maxChars / 1048576).toFixed(0)} MiB of JSON, the most one page answers. Ask for fewer records (a smaller limit) or fewer fields (fields=…), or read them all as a stream (GET …/export).`,
    { parameter: "limit", maxPageBytes: maxChars },
  );

export const invalidCursor = (message: string, parameter = "cursor") =>
  new ApiError(400, "invalid_cursor", message, { parameter });

export const forbidden = (message: string) => new ApiError(403, "forbidden", message);

export const recordNotFound = (entity: string, id: string) =>
  new ApiError(404, "record_not_found", `No live ${entity} record has id "${id}".`, { entity, id });

export const entityNotFound = (entity: string, entities: string[]) =>
  new ApiError(
    404,
    "entity_not_found",
    `No entity is named "${entity}" (names are case-sensitive). Entities: ${entities.join(", ") || "(none)"}.`,
    { entity, entities },
  );

export const internalError = () =>
  new ApiError(500, "internal", "The server failed while handling this request; it has been logged.");

export const insufficientStorage = () =>
  new ApiError(507, "insufficient_storage", "The disk of the data folder is full, so this write was not stored (none of it). Reads go on; retry once space has been freed.");

export const storeUnavailable = () =>
  new ApiError(503, "store_unavailable", "The store failed to write to its disk and is shutting down; whether this write was stored is unknown. Read it back once the server is up again, or retry it with the same Idempotency-Key.");

export const uniqueViolation = (entity: string, fields: readonly string[], values: readonly unknown[], id: string) =>
  new ApiError(
    409,
    "unique_violation",
    `A live ${entity} record (${id}) already has ${fields.map((field, i) => `${field} = ${JSON.stringify(values[i])}`).join(", ")}, and the declaration makes ${fields.length === 1 ? "it" : "them"} unique; nothing was stored. Use other values, or change that record instead.`,
    // existing_id is the documented name; id stays beside it for clients written before it.
    { entity, fields: [...fields], values: [...values], existing_id: id, id },
  );

/**
 * A unique_violation (uniqueViolation, idTaken) as a caller who may not read the entity's records
 * gets it: the same refusal, naming neither the record that holds the values nor the values, which
 * would tell anyone with a create-only key who signed up (docs/errors.md). The index in a batch
 * and the line of a file stay.
 */
export function withoutHolder(error: ApiError): ApiError {
  const { values: _values, existing_id: _existing, id: _id, ...details } = error.details;
  const fields = (details.fields as readonly string[] | undefined) ?? [];
  let message = `A ${String(details.entity)} record already holds the ${fields.length === 1 ? "value" : "values"} given for ${fields.join(" and ")}, which must be unique; nothing was stored. Use other values.`;
  if (typeof details.line === "number") message = `Line ${details.line} of the file: ${message}`;
  if (typeof details.index === "number") message = `Record ${details.index} of the batch: ${message}`;
  return new ApiError(error.status, error.code, message, details, error.headers);
}

/** An import's id that a stored record (live or deleted) or an earlier record of its batch holds. */
export const idTaken = (entity: string, id: string, inBatch: boolean) =>
  new ApiError(
    409,
    "unique_violation",
    `${inBatch ? `An earlier record of this batch has the id "${id}"` : `A ${entity} record with the id "${id}" is already stored (live or deleted)`}. Give this record another id, or leave "id" out to get a new one; nothing was stored.`,
    { entity, fields: ["id"], values: [id], existing_id: id, id },
  );

/** `isOutcomeUnknown`: the database went while this write's commit was on its way (see docs/postgresql.md). */
export const databaseUnreachable = (isOutcomeUnknown = false) =>
  new ApiError(
    503,
    "store_unavailable",
    isOutcomeUnknown
      ? "The database behind the store cannot be reached, and went while this write was being committed: whether it was stored is unknown. Read it back once the database is back, or retry with the same Idempotency-Key, which answers as the stored write did if it was."
      : "The database behind the store cannot be reached, so nothing of this request was stored. Retry shortly; with an Idempotency-Key a retry is safe.",
    {},
    { "Retry-After": "1" },
  );

export const writeContended = (attempts: number) =>
  new ApiError(
    503,
    "store_unavailable",
    `Other writes to the same records kept coming first (${attempts} tries), so this one was not stored. Retry shortly.`,
    { attempts },
    { "Retry-After": "1" },
  );

export const filterRequired = (operation: string) =>
  new ApiError(
    400,
    "filter_required",
    `${operation} needs a filter that is not empty, such as {"status":"done"}: it would otherwise touch every record, which cannot be asked for by omission.`,
  );

export const batchTooLarge = (size: number, max: number) =>
  new ApiError(400, "batch_too_large", `The batch holds ${size} records; the most one request may hold is ${max}. Split it into smaller batches.`, { size, max });

export const ambiguousMatch = (match: Record<string, unknown>, ids: string[]) =>
  new ApiError(
    409,
    "ambiguous_match",
    `The match ${JSON.stringify(match)} fits ${ids.length} records, so it is not clear which to update; match on fields that identify one record.`,
    { match, ids },
  );

export const preconditionFailed = (etag: string) =>
  new ApiError(412, "precondition_failed", `The record has changed since you read it (its ETag is now ${etag}); read it again and retry with the new ETag.`, { etag });

export const notFound = (path: string) =>
  new ApiError(404, "not_found", `Nothing is served at ${path}. Records live at /api/entities/<Entity>; see GET /api/openapi.json.`, { path });

export const methodNotAllowed = (method: string, allowed: string[]) =>
  new ApiError(405, "method_not_allowed", `${method} is not allowed here; use ${allowed.join(", ")}.`, { method, allowed }, { Allow: allowed.join(", ") });

export const unauthorized = (hasKey: boolean) =>
  new ApiError(
    401,
    "unauthorized",
    hasKey
      ? "The API key sent is not known, or was revoked or has expired. Use a key printed when it was made (at first start, or by POST /api/keys)."
      : "Send an API key in the X-Api-Key header or as Authorization: Bearer <key>; the server printed its keys at start-up. (A public app's visitors need none where the server lets anonymous visitors in: --anonymous, or a Base44 project's \"visibility\": \"public\".)",
  );

export const tooManyStreams = (max: number) =>
  new ApiError(
    503,
    "too_many_streams",
    `This server already holds ${max} change feed streams and long polls (--max-streams). Retry in a few seconds, close streams you no longer read, or start the server with a higher --max-streams.`,
    { maxStreams: max },
    { "Retry-After": "5" },
  );

/** An export over the store's limit (PostgreSQL: each holds one of the pool's connections). */
export const tooManyExports = (max: number) =>
  new ApiError(
    503,
    "too_many_exports",
    `${max} exports are being read from this server already, each holding one of its database connections (which writes need too). Retry in a few seconds.`,
    { maxExports: max },
    { "Retry-After": "5" },
  );

export const passwordsBusy = () =>
  new ApiError(503, "server_busy", "The server is checking too many passwords at once (sign-ups, sign-ins, password changes) to take this one in good time; retry in a few seconds (Retry-After).", { retryAfterSeconds: 5 }, { "Retry-After": "5" });

/**
 * A heavy request while memory is near its limit (http/memory-guard.ts): `limit` is --max-memory
 * (named by `setting`) for resident memory, V8's heap limit for the heap.
 */
export const serverBusy = (what: "resident" | "heap", usedBytes: number, limitBytes: number, setting: string) =>
  new ApiError(
    503,
    "server_busy",
    `${what === "resident" ? `The server's memory is near ${setting}` : "The server's JavaScript heap is near its limit (node --max-old-space-size)"}: ${mebibytes(usedBytes)} of ${mebibytes(limitBytes)} MiB in use, so heavy requests (bulk, upsert, update-many, delete-many and import writes, bodies over 64 KiB, aggregates, distinct, exports, lists of over 1,000 records) wait. Retry after Retry-After seconds, send smaller batches, or give the server more memory (${setting}).`,
    { resource: what === "resident" ? "memory" : "heap", usedBytes, limitBytes },
    { "Retry-After": "2" },
  );

/** Any write while the records fill V8's heap (http/memory-guard.ts): storing more would end the process. */
export const heapFull = (keptBytes: number, limitBytes: number) =>
  new ApiError(
    503,
    "server_busy",
    `The server's JavaScript heap is full of what it keeps (${mebibytes(keptBytes)} of ${mebibytes(limitBytes)} MiB after a collection), so it stores nothing more for now: writes are refused, reads go on. Give node a larger heap (node --max-old-space-size=MiB, or NODE_OPTIONS) and restart, or use the PostgreSQL store, whose records live in the database.`,
    { resource: "heap", usedBytes: keptBytes, limitBytes },
    { "Retry-After": "10" },
  );

const mebibytes = (bytes: number) => (bytes / 1048576).toFixed(0);

/** POST /api/admin/backup into a folder that holds files (docs/operating.md): a backup never mixes with other files. */
export const backupTargetExists = (message: string, to: string) => new ApiError(409, "backup_target_exists", message, { to });

/** POST /api/admin/backup on a store whose data is not a folder of this server's (memory, PostgreSQL). */
export const backupUnsupported = (message: string) => new ApiError(501, "backup_unsupported", message);

/** DELETE /api/keys/<id> and POST /api/keys/<id>/roll of an id no stored key has (docs/api.md, "Managing keys"). */
export const webhookNotFound = (id: string) =>
  new ApiError(404, "webhook_not_found", `No webhook endpoint has the id "${id}" (it may have been deleted). GET /api/webhooks lists them.`, { id });

/** A webhook URL that may not be reached (docs/webhooks.md, "Safety"). */
export const invalidWebhookUrl = (message: string, url: unknown) =>
  new ApiError(
    400,
    "invalid_webhook_url",
    `${message} Give an http:// or https:// URL that reaches your receiver over the public network (or start tabula with --webhooks-allow-private for one on this machine or network).`,
    { url },
  );

export const keyNotFound = (id: string) =>
  new ApiError(404, "key_not_found", `No key has the id "${id}" (it may have been revoked, or have expired). GET /api/keys lists the keys.`, { id });

/** The server would accept no secret key at all: nobody could manage keys again. */
export const lastSecretKey = (id: string) =>
  new ApiError(409, "last_secret_key", `Key ${id} is the last secret key, and is not revoked: without one, nobody could manage keys. Create another secret key first (POST /api/keys), or roll this one.`, { id });

/** A key given by flag or environment (or made for one process) is not in the store: the API cannot change it. */
export const keyFromFlagRefused = (id: string, source: "flag" | "process") =>
  new ApiError(
    409,
    "key_not_managed",
    source === "flag"
      ? `Key ${id} was given by --secret-key, --publishable-key, their environment variables or the program embedding tabula; it cannot be revoked or rolled through the API. Restart the server without it.`
      : `Key ${id} was made for one process and ends with it; it cannot be revoked or rolled.`,
    { id, source },
  );

/** An uploaded file over --max-file-size: reading stops, and the connection closes after the answer. */
export const fileTooLarge = (maxBytes: number) =>
  new ApiError(413, "payload_too_large", `The file is larger than ${maxBytes} bytes, the most this server keeps (--max-file-size). Send a smaller file, or start the server with a larger --max-file-size.`, { maxBytes }, { Connection: "close" });

export const memoryFilesFull = (maxBytes: number) =>
  new ApiError(507, "insufficient_storage", `A server in memory keeps at most ${maxBytes} bytes of files (four times --max-file-size), and this file would pass it: it was not stored. Delete files (DELETE /api/files/<id>, with a secret key), or serve from a data folder, then retry.`, { maxBytes });

export const filesFull = (maxBytes: number) =>
  new ApiError(507, "insufficient_storage", `Uploaded files take at most ${maxBytes} bytes in all (--max-files-total), and this file would pass it: it was not stored. Delete files (DELETE /api/files/<id>, with a secret key), or start the server with a larger --max-files-total, then retry.`, { maxBytes });

export const fileNotFound = (id: string) =>
  new ApiError(404, "file_not_found", `No file has the id "${id}" (it may have been deleted). GET /api/files lists the files, with a secret key.`, { id });

export const rangeNotSatisfiable = (size: number) =>
  new ApiError(416, "range_not_satisfiable", `The Range asked starts past the file's end: it holds ${size} bytes. Ask for bytes=0-${Math.max(size - 1, 0)} or less, or leave Range out.`, { size }, { "Content-Range": `bytes */${size}` });
