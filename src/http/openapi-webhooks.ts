// The OpenAPI description of the webhook routes (http/webhooks-routes.ts, docs/webhooks.md),
// beside openapi.ts, which builds the rest of the document and hands in its helpers.

type Json = Record<string, unknown>;

interface Helpers {
  readonly errors: (...statuses: number[]) => Json;
  readonly jsonContent: (schema: Json) => Json;
  readonly tag: string;
}

const EVENTS = { type: "array", items: { enum: ["create", "update", "delete", "restore"] }, minItems: 1, description: "The changes sent (sync events, a catch-up's, are always sent). Default all four." };
const ENTITIES = { type: ["array", "null"], items: { type: "string" }, minItems: 1, description: "The entities whose changes are sent; null (the default) for every entity, those declared later too." };
const FILTER = { type: ["object", "null"], description: "A filter (docs/query-language.md) on the version written, as the change feed's `q`: only matching changes are sent." };

const ATTEMPT: Json = {
  type: "object",
  properties: {
    event_id: { type: "string", description: "The `webhook-id` sent: the change event's id (`seq.index`), or `ping_…` for a test." },
    at: { type: "string", format: "date-time" },
    status: { type: ["integer", "null"], description: "The receiver's HTTP status; null when none came." },
    latency_ms: { type: "integer" },
    error: { type: ["string", "null"], description: "Why it is not a delivery (a status other than 2xx, a timeout, a refused address, a redirect); null for a delivery." },
  },
  required: ["event_id", "at", "status", "latency_ms", "error"],
};

const ENDPOINT: Json = {
  type: "object",
  properties: {
    id: { type: "string" },
    url: { type: "string", format: "uri" },
    entities: ENTITIES,
    events: EVENTS,
    q: FILTER,
    description: { type: "string" },
    enabled: { type: "boolean" },
    state: { enum: ["active", "retrying", "disabled"] },
    disabled_reason: { type: ["string", "null"], description: "Why tabula disabled it: its retries ran out, or the receiver answered 410 Gone. null when a user disabled it." },
    created_date: { type: "string", format: "date-time" },
    updated_date: { type: "string", format: "date-time" },
    position: { type: "string", description: "The last event delivered (or passed over by the filters): the change feed's event id after which delivery resumes." },
    failing: {
      type: ["object", "null"],
      properties: { attempts: { type: "integer" }, next_at: { type: "string", format: "date-time" }, error: { type: "string" } },
      required: ["attempts", "next_at", "error"],
      description: "While an event fails: the attempts made at it, when the next is due, and the last error.",
    },
    last_attempt: { oneOf: [ATTEMPT, { type: "null" }] },
  },
  required: ["id", "url", "entities", "events", "q", "description", "enabled", "state", "disabled_reason", "created_date", "updated_date", "position", "failing", "last_attempt"],
};

const NEW_ENDPOINT: Json = {
  ...ENDPOINT,
  properties: { ...(ENDPOINT.properties as Json), secret: { type: "string", description: "`whsec_` and the base64 of 32 random bytes: verifies `webhook-signature`. In this answer only, never again." } },
  required: [...(ENDPOINT.required as string[]), "secret"],
};

const FIELDS: Json = {
  url: { type: "string", format: "uri", description: "Where each change is POSTed: http or https, not on loopback, a private network, link-local or a metadata address (unless the server runs with `--webhooks-allow-private`)." },
  entities: ENTITIES,
  events: EVENTS,
  q: FILTER,
  description: { type: "string", maxLength: 500 },
  enabled: { type: "boolean", description: "false stops delivery (the position is kept); true resumes it from there, clearing `disabled_reason`." },
};

const ID_PARAMETER = { name: "id", in: "path", required: true, schema: { type: "string" }, description: "The endpoint's id (`wh_…`)." };

export function webhookPaths({ errors, jsonContent, tag }: Helpers): Json {
  const secretOnly = { tags: [tag], security: [{ secretKey: [] }, { bearer: [] }] };
  const endpoint = (status: number, description: string, schema: Json = ENDPOINT) => ({ [status]: { description, content: jsonContent(schema) } });
  return {
    "/api/webhooks": {
      get: { ...secretOnly, operationId: "listWebhooks", summary: "List the webhook endpoints (secret key)", description: "Every endpoint with its state, position and last attempt; never a secret.", responses: { 200: { description: "The endpoints.", content: jsonContent({ type: "array", items: ENDPOINT }) }, ...errors(401, 403) } },
      post: {
        ...secretOnly,
        operationId: "createWebhook",
        summary: "Create a webhook endpoint (secret key)",
        description: "Each change written after this request is POSTed to `url`, signed by the Standard Webhooks specification, in commit order, at least once. The answer holds the `secret`, once.",
        requestBody: { required: true, content: jsonContent({ type: "object", properties: FIELDS, required: ["url"], additionalProperties: false }) },
        responses: { ...endpoint(201, "The endpoint, with its `secret`.", NEW_ENDPOINT), ...errors(400, 401, 403) },
      },
    },
    "/api/webhooks/{id}": {
      parameters: [ID_PARAMETER],
      get: { ...secretOnly, operationId: "getWebhook", summary: "Read a webhook endpoint (secret key)", responses: { ...endpoint(200, "The endpoint."), ...errors(401, 403, 404) } },
      patch: {
        ...secretOnly,
        operationId: "updateWebhook",
        summary: "Change a webhook endpoint (secret key)",
        description: "The fields given change. A change of `url`, `entities`, `events` or `q` applies from the next event; an event being retried is tried again at once.",
        requestBody: { required: true, content: jsonContent({ type: "object", properties: FIELDS, additionalProperties: false }) },
        responses: { ...endpoint(200, "The endpoint as changed."), ...errors(400, 401, 403, 404) },
      },
      delete: {
        ...secretOnly,
        operationId: "deleteWebhook",
        summary: "Delete a webhook endpoint (secret key)",
        responses: { 200: { description: "Deleted.", content: jsonContent({ type: "object", properties: { id: { type: "string" }, deleted: { const: true } }, required: ["id", "deleted"] }) }, ...errors(401, 403, 404) },
      },
    },
    "/api/webhooks/{id}/test": {
      parameters: [ID_PARAMETER],
      post: { ...secretOnly, operationId: "testWebhook", summary: "Send a ping to a webhook endpoint (secret key)", description: "A `ping` event (`{\"type\":\"ping\",\"timestamp\",\"data\":{\"endpoint\",\"description\"}}`), signed like the others, sent now whatever the endpoint's state.", responses: { 200: { description: "The attempt: a delivery when `error` is null.", content: jsonContent(ATTEMPT) }, ...errors(401, 403, 404) } },
    },
    "/api/webhooks/{id}/deliveries": {
      parameters: [ID_PARAMETER],
      get: { ...secretOnly, operationId: "listWebhookDeliveries", summary: "The last 100 attempts of a webhook endpoint (secret key)", responses: { 200: { description: "Newest first.", content: jsonContent({ type: "array", items: ATTEMPT }) }, ...errors(401, 403, 404) } },
    },
    "/api/webhooks/{id}/replay": {
      parameters: [ID_PARAMETER, { name: "since", in: "query", required: true, schema: { type: "string" }, description: "An event id: every change after it is sent again (0: every record, as sync events)." }],
      post: {
        ...secretOnly,
        operationId: "replayWebhook",
        summary: "Send the changes after an event again (secret key)",
        description: "Delivery goes back to `since` and goes on from there, with the same `webhook-id`s. A point older than the change feed's window sends one `sync` event per record written since.",
        responses: { 202: { description: "Accepted: delivery resumes from `since`.", content: jsonContent({ type: "object", properties: { id: { type: "string" }, since: { type: "string" } }, required: ["id", "since"] }) }, ...errors(400, 401, 403, 404) },
      },
    },
  };
}
