// The OpenAPI description of the key routes (http/keys-routes.ts, docs/api.md "Managing keys"),
// beside openapi.ts, which builds the rest of the document and hands in its helpers.

type Json = Record<string, unknown>;

interface Helpers {
  readonly errors: (...statuses: number[]) => Json;
  readonly jsonContent: (schema: Json) => Json;
  readonly tag: string;
}

const KEY_VIEW: Json = {
  type: "object",
  properties: {
    id: { type: "string", description: "The `created_by_id` of its records." },
    kind: { enum: ["secret", "publishable"] },
    name: { type: "string" },
    prefix: { type: "string", description: "First 8 characters." },
    created: { type: ["string", "null"], format: "date-time", description: "null for a flag key." },
    last_used: { type: ["string", "null"], format: "date-time", description: "To the minute." },
    expires_at: { type: ["string", "null"], format: "date-time" },
    source: { enum: ["stored", "flag", "process"], description: "`flag`: given at start-up; not revocable through the API." },
  },
  required: ["id", "kind", "name", "prefix", "created", "last_used", "expires_at", "source"],
};

const NEW_KEY: Json = { ...KEY_VIEW, properties: { ...(KEY_VIEW.properties as Json), key: { type: "string", description: "The full key; shown only here." } }, required: [...(KEY_VIEW.required as string[]), "key"] };

const ID_PARAMETER = { name: "id", in: "path", required: true, schema: { type: "string" }, description: "The key's id (not the key)." };

export function keyPaths({ errors, jsonContent, tag }: Helpers): Json {
  const secretOnly = { tags: [tag], security: [{ secretKey: [] }, { bearer: [] }] };
  return {
    "/api/keys": {
      get: {
        ...secretOnly,
        operationId: "listKeys",
        summary: "List API keys (secret key)",
        description: "Ids, names and prefixes; never the keys (docs/api.md).",
        responses: { 200: { description: "The keys.", content: jsonContent({ type: "array", items: KEY_VIEW }) }, ...errors(401, 403) },
      },
      post: {
        ...secretOnly,
        operationId: "createKey",
        summary: "Create an API key (secret key)",
        description: "Answers the full key once; only its hash is kept.",
        requestBody: {
          required: true,
          content: jsonContent({
            type: "object",
            properties: { kind: { enum: ["secret", "publishable"] }, name: { type: "string", minLength: 1, maxLength: 100 }, expires_at: { type: "string", format: "date-time" } },
            required: ["kind", "name"],
            additionalProperties: false,
          }),
        },
        responses: { 201: { description: "The new key, with `key`.", content: jsonContent(NEW_KEY) }, ...errors(400, 401, 403) },
      },
    },
    "/api/keys/{id}": {
      parameters: [ID_PARAMETER],
      delete: {
        ...secretOnly,
        operationId: "revokeKey",
        summary: "Revoke an API key (secret key)",
        description: "Refused (401) within a second. Not the last secret key or a flag key (409).",
        responses: { 200: { description: "The key, `revoked: true`.", content: jsonContent({ ...KEY_VIEW, properties: { ...(KEY_VIEW.properties as Json), revoked: { const: true } } }) }, ...errors(401, 403, 404, 409) },
      },
    },
    "/api/keys/{id}/roll": {
      parameters: [ID_PARAMETER],
      post: {
        ...secretOnly,
        operationId: "rollKey",
        summary: "Roll an API key (secret key)",
        description: "Makes a successor (answered in full once); the old key works `expires_in` seconds more (default 86400).",
        requestBody: { required: false, content: jsonContent({ type: "object", properties: { expires_in: { type: "integer", minimum: 0, maximum: 31622400 } }, additionalProperties: false }) },
        responses: {
          201: { description: "The successor with `key`, and the old key as `rolled`.", content: jsonContent({ ...NEW_KEY, properties: { ...(NEW_KEY.properties as Json), rolled: KEY_VIEW } }) },
          ...errors(400, 401, 403, 404, 409),
        },
      },
    },
  };
}
