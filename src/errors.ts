// The one error type of the API and the helpers that build it (CONTRACT §5).
// Codes identify an error permanently; messages may change and always say how to mend it.

export type ErrorCode =
  | "invalid_json"
  | "unknown_field"
  | "read_only_field"
  | "invalid_field"
  | "invalid_filter"
  | "invalid_parameter"
  | "invalid_cursor"
  | "filter_required"
  | "batch_too_large"
  | "unauthorized"
  | "forbidden"
  | "entity_not_found"
  | "record_not_found"
  | "method_not_allowed"
  | "ambiguous_match"
  | "idempotency_key_in_use"
  | "precondition_failed"
  | "payload_too_large"
  | "unsupported_media_type"
  | "idempotency_key_reused"
  | "internal";

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

  /** The same error for the record at `index` of a batch (CONTRACT §4: details.index). */
  atIndex(index: number): ApiError {
    return new ApiError(
      this.status,
      this.code,
      `Record ${index} of the batch: ${this.message}`,
      { ...this.details, index },
      this.headers,
    );
  }
}

export const invalidJson = (message: string, details: ErrorDetails = {}) =>
  new ApiError(400, "invalid_json", message, details);

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

export const invalidCursor = (message: string) =>
  new ApiError(400, "invalid_cursor", message, { parameter: "cursor" });

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
