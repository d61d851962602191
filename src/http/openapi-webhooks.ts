// The OpenAPI description of the webhook routes (http/webhooks-routes.ts, docs/webhooks.md),
// beside openapi.ts, which builds the rest of the document and hands in its helpers.

type Json = Record<string, unknown>;

interface Helpers {
  readonly errors: (...statuses: number[]) => Json;
  readonly jsonContent: (schema: Json) => Json;
  readonly tag: string;
}

const EVENTS = { type: "array", items: { enum: ["create", "update", "delete", "restore"] }, minItems: 1, description: "Changes to send (default all; `sync` always)." };
const ENTITIES = { type: ["array", "null"], items: { type: "string" }, minItems: 1, description: "Entities to send; null (default): all." };
const FILTER = { type: ["object", "null"], description: "Send only changes matching this filter (docs/query-language.md)." };

const ATTEMPT: Json = {
  type: "object",
  properties: {
    event_id: { type: "string", description: "The `webhook-id`: the event id, or `ping_…`." },
    at: { type: "string", format: "date-time" },
    status: { type: ["integer", "null"], description: "The receiver's status; null if none." },
    latency_ms: { type: "integer" },
    error: { type: ["string", "null"], description: "Why it failed; null for a delivery." },
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
    disabled_reason: { type: ["string", "null"], description: "Why tabula disabled it (retries ran out, or 410); null if a user did." },
    created_date: { type: "string", format: "date-time" },
    updated_date: { type: "string", format: "date-time" },
    position: { type: "string", description: "Delivery resumes after this event id." },
    failing: {
      type: ["object", "null"],
      properties: { attempts: { type: "integer" }, next_at: { type: "string", format: "date-time" }, error: { type: "string" } },
      required: ["attempts", "next_at", "error"],
      description: "While an event fails: attempts, next try, last error.",
    },
    last_attempt: { oneOf: [ATTEMPT, { type: "null" }] },
  },
  required: ["id", "url", "entities", "events", "q", "description", "enabled", "state", "disabled_reason", "created_date", "updated_date", "position", "failing", "last_attempt"],
};

const NEW_ENDPOINT: Json = {
  ...ENDPOINT,
  properties: { ...(ENDPOINT.properties as Json), secret: { type: "string", description: "`whsec_…`: verifies `webhook-signature`. Shown only here." } },
  required: [...(ENDPOINT.required as string[]), "secret"],
};

const FIELDS: Json = {
  url: { type: "string", format: "uri", description: "Where changes are POSTed: http(s), public unless `--webhooks-allow-private`." },
  entities: ENTITIES,
  events: EVENTS,
  q: FILTER,
  description: { type: "string", maxLength: 500 },
  enabled: { type: "boolean", description: "false pauses delivery; true resumes it." },
};

const ID_PARAMETER = { name: "id", in: "path", required: true, schema: { type: "string" }, description: "The endpoint's id (`wh_…`)." };

export function webhookPaths({ errors, jsonContent, tag }: Helpers): Json {
  const secretOnly = { tags: [tag], security: [{ secretKey: [] }, { bearer: [] }] };
  const endpoint = (status: number, description: string, schema: Json = ENDPOINT) => ({ [status]: { description, content: jsonContent(schema) } });
  return {
    "/api/webhooks": {
      get: { ...secretOnly, operationId: "listWebhooks", summary: "List webhook endpoints (secret key)", description: "Never the secrets.", responses: { 200: { description: "The endpoints.", content: jsonContent({ type: "array", items: ENDPOINT }) }, ...errors(401, 403) } },
      post: {
        ...secretOnly,
        operationId: "createWebhook",
        summary: "Create a webhook endpoint (secret key)",
        description: "Later changes are POSTed to `url`, signed (Standard Webhooks), in order, at least once (docs/webhooks.md).",
        requestBody: { required: true, content: jsonContent({ type: "object", properties: FIELDS, required: ["url"], additionalProperties: false }) },
        responses: { ...endpoint(201, "The endpoint, with `secret`.", NEW_ENDPOINT), ...errors(400, 401, 403) },
      },
    },
    "/api/webhooks/{id}": {
      parameters: [ID_PARAMETER],
      get: { ...secretOnly, operationId: "getWebhook", summary: "Read a webhook endpoint (secret key)", responses: { ...endpoint(200, "The endpoint."), ...errors(401, 403, 404) } },
      patch: {
        ...secretOnly,
        operationId: "updateWebhook",
        summary: "Change a webhook endpoint (secret key)",
        description: "Changes apply from the next event.",
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
      post: { ...secretOnly, operationId: "testWebhook", summary: "Send a ping to a webhook endpoint (secret key)", description: "Sends a signed `ping` event now, whatever the state.", responses: { 200: { description: "The attempt; delivered if `error` is null.", content: jsonContent(ATTEMPT) }, ...errors(401, 403, 404) } },
    },
    "/api/webhooks/{id}/deliveries": {
      parameters: [ID_PARAMETER],
      get: { ...secretOnly, operationId: "listWebhookDeliveries", summary: "Last 100 attempts of a webhook endpoint (secret key)", responses: { 200: { description: "Newest first.", content: jsonContent({ type: "array", items: ATTEMPT }) }, ...errors(401, 403, 404) } },
    },
    "/api/webhooks/{id}/replay": {
      parameters: [ID_PARAMETER, { name: "since", in: "query", required: true, schema: { type: "string" }, description: "Resend every change after this event id (0: all records, as `sync`)." }],
      post: {
        ...secretOnly,
        operationId: "replayWebhook",
        summary: "Send the changes after an event again (secret key)",
        description: "Same `webhook-id`s; a point older than the feed's window sends `sync` events.",
        responses: { 202: { description: "Delivery resumes from `since`.", content: jsonContent({ type: "object", properties: { id: { type: "string" }, since: { type: "string" } }, required: ["id", "since"] }) }, ...errors(400, 401, 403, 404) },
      },
    },
  };
}
