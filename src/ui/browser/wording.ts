// What the page says when the API refuses something: worded for what the person did (the key box,
// the sign-in form, the filter box, the form), from the refusal's code and details, which never change. The API's
// own message is written for someone sending requests (a body, a query string, a data folder);
// it is shown only where it speaks of what the person wrote (a filter's operator, a field's rule).
// No DOM here.

import { ApiFailure, messageOf } from "./api-client.ts";
import type { EntityDecl } from "./declarations.ts";

/** This tab's key, accepted before, refused now (docs/api.md, "Managing keys"). */
export const KEY_GONE = "The server no longer accepts the key this tab was using: it was revoked or has expired, or the server restarted with other keys. Paste a current key.";

/** This tab's user session, accepted before, refused now (docs/users.md): signed out elsewhere, ended, disabled or expired. */
export const SESSION_GONE = "Your session has ended: you signed out elsewhere, an admin ended your sessions or disabled you, or it expired. Sign in again.";

/** A refusal of the sign-in form's email and password (POST /api/auth/login). */
export function wordSignInRefusal(error: unknown): string {
  if (!(error instanceof ApiFailure)) return messageOf(error);
  switch (error.code) {
    case "invalid_credentials":
      return "The email or the password is wrong. Check both, and try again.";
    case "email_not_verified":
      return "This email is not verified yet: finish signing up with the 6-digit code that was sent to it, then sign in here.";
    case "user_disabled":
      return "This user is disabled, so it cannot sign in. An admin can enable it again on the Users page.";
    case "rate_limited":
      return `Too many failed sign-ins for this email or from this computer: wait ${waitWords(error)}, then try again.`;
    case "invalid_field":
      if (error.details.field === "email") return "That is not an email address: write it as name@example.com.";
  }
  return wordRefusal(error);
}

/** A refusal of the key pasted into the key box; `unknownWords` for a 401, when the key was known before. */
export function wordKeyRefusal(error: unknown, unknownWords?: string): string {
  if (error instanceof ApiFailure && error.code === "unauthorized") {
    return unknownWords ?? "This server knows no such key. Paste a secret key (sk_…) or a publishable key (pk_…) as tabula printed it when it started.";
  }
  return wordRefusal(error);
}

/** A refusal of what the filter box (`q`) and the search box asked for. */
export function wordFilterRefusal(error: unknown, entity: EntityDecl, filterText: string, example: string): string {
  if (!(error instanceof ApiFailure)) return messageOf(error);
  const { code, details } = error;
  if (code === "invalid_json") {
    const problem = jsonProblemOf(filterText);
    if (problem !== null) return `The filter is not valid JSON: ${problem}. Write an object such as ${example}.`;
    return `The filter must be a JSON object of field names and conditions, such as ${example}.`;
  }
  if (code === "unknown_field" && typeof details.field === "string") {
    const fields = Array.isArray(details.fields) ? details.fields.join(", ") : Object.keys(entity.properties).join(", ");
    return `${entity.name} has no field "${details.field}". Its fields: ${fields}.`;
  }
  if (code === "invalid_filter" && typeof details.maxDepth === "number") {
    return `The filter nests arrays and objects more than ${details.maxDepth} levels deep; flatten it.`;
  }
  // The rest (an operator, an operand, a sort) speaks of what was typed into the filter.
  return wordRefusal(error);
}

/**
 * A refusal of the form's create or save, for the field it names (details.field), else for the
 * form as a whole. `isBesideField` leaves out the field's name, which its label already shows.
 */
export function wordFormRefusal(error: unknown, entity: EntityDecl, isBesideField: boolean): string {
  if (!(error instanceof ApiFailure)) return messageOf(error);
  const { code, details } = error;
  const field = typeof details.field === "string" ? details.field : null;
  if (code === "invalid_field" && field !== null) {
    // No value in the details: the field was left empty, and it is required.
    if (!("value" in details)) return isBesideField ? "Required: give it a value." : `${field} is required: give it a value.`;
    const rule = error.message.startsWith(`Field "${field}" `) ? error.message.slice(`Field "${field}" `.length) : null;
    if (rule !== null) return isBesideField ? capitalize(rule) : `${field} ${rule}`;
  }
  if (code === "unique_violation" && Array.isArray(details.fields)) {
    const fields = details.fields as string[];
    const which = fields.length === 1 ? `its ${fields[0]}` : `its ${fields.join(" and ")} together`;
    return `Another ${entity.name} record (${String(details.existing_id ?? details.id)}) has this value already, and ${which} must be unique. Use another value, or edit that record instead.`;
  }
  if (code === "unknown_field" || code === "read_only_field") {
    return `This form no longer matches how the server declares ${entity.name} (it refused the field "${field ?? "?"}"). Reload the page to get the current form.`;
  }
  return wordRefusal(error);
}

/** Refusals that can meet any action: a key that may not, a record gone, the server's own trouble. */
export function wordRefusal(error: unknown): string {
  if (!(error instanceof ApiFailure)) return messageOf(error);
  const { code, details } = error;
  if (code === "forbidden" && typeof details.operation === "string" && typeof details.entity === "string") {
    return `A ${String(details.keyKind ?? "publishable")} key may not ${details.operation} ${details.entity} records; open the page with a secret key to do that.`;
  }
  if (code === "record_not_found") return "That record is no longer there: it was deleted since the table was read. Refresh the table.";
  if (code === "unauthorized") return "The server no longer knows this key (it was revoked, or the server restarted with other keys). Forget the key and paste a current one.";
  if (code === "rate_limited") return `Too many requests from here for a publishable key or a user; wait ${waitWords(error)}, then try again.`;
  return error.message;
}

/** "12 s" from the answer's Retry-After, else "a few seconds". */
function waitWords(error: ApiFailure): string {
  return error.retryAfterS === null ? "a few seconds" : `${error.retryAfterS} s`;
}

/** Why `text` is not JSON, in the browser's words; null when it is. */
function jsonProblemOf(text: string): string | null {
  try {
    JSON.parse(text);
    return null;
  } catch (error) {
    return (error as Error).message.replace(/\.$/, "");
  }
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
