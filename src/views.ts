// The shapes of answers that both the server writes and the data browser reads (src/ui/browser/):
// declared once, here, with no imports, so that the browser's code (checked without node's types)
// takes them as they are. docs/api.md and docs/webhooks.md describe them for users.

/** The kind of change a feed event, a webhook or an endpoint's filter names. */
export type ChangeType = "create" | "update" | "delete" | "restore";
/** What is sent to people signing up and in (docs/users.md): to the webhook endpoints that ask for it. */
export type UserEventType = "user.verification_requested" | "user.password_reset_requested" | "user.invited";
export const USER_EVENT_TYPES: readonly UserEventType[] = ["user.verification_requested", "user.password_reset_requested", "user.invited"];
/** What a webhook endpoint may ask for: record changes, and the users' events. */
export type WebhookEventType = ChangeType | UserEventType;

/** A key as GET /api/keys lists it: never the key itself. */
export interface KeyView {
  readonly id: string;
  readonly kind: "secret" | "publishable";
  readonly name: string;
  readonly prefix: string;
  readonly created: string | null;
  readonly last_used: string | null;
  readonly expires_at: string | null;
  readonly source: "stored" | "flag" | "process";
}

/** One try to deliver a webhook, as GET /api/webhooks/<id>/deliveries lists it. */
export interface Attempt {
  /** The webhook-id sent: the change event's id (a ping's own). */
  readonly event_id: string;
  readonly at: string;
  /** The answer's HTTP status; null when none came (refused, unreachable, timed out). */
  readonly status: number | null;
  readonly latency_ms: number;
  /** Why it is not a delivery; null when it is one (a 2xx). */
  readonly error: string | null;
}

export type EndpointState = "active" | "retrying" | "disabled";

/** An endpoint as the API shows it: never its secret. */
export interface EndpointView {
  readonly id: string;
  readonly url: string;
  /** null: every entity, those declared later too. */
  readonly entities: readonly string[] | null;
  readonly events: readonly WebhookEventType[];
  /** A filter on the version written, as the change feed's q; null: none. */
  readonly q: Record<string, unknown> | null;
  readonly description: string;
  readonly enabled: boolean;
  readonly state: EndpointState;
  /** Why tabula disabled it (its last retry failed, or 410 Gone); null when enabled, or disabled by a user. */
  readonly disabled_reason: string | null;
  readonly created_date: string;
  readonly updated_date: string;
  /** The last event delivered, as an event id (resume point of the change feed). */
  readonly position: string;
  /** Deliveries failing since: how many tries, when the next is, and the last error. */
  readonly failing: { readonly attempts: number; readonly next_at: string; readonly error: string } | null;
  readonly last_attempt: Attempt | null;
}
