// The OpenAPI description of the files' routes (http/file-routes.ts, docs/api.md "Files") and of the
// SDK's analytics (http/analytics-route.ts), beside openapi.ts, which hands in its helpers.

type Json = Record<string, unknown>;

interface Helpers {
  readonly errors: (...statuses: number[]) => Json;
  readonly jsonContent: (schema: Json) => Json;
  readonly tag: string;
  readonly sdkTag: string;
}

const FILE_VIEW: Json = {
  type: "object",
  properties: {
    id: { type: "string", pattern: "^[0-9a-f]{32}$", description: "128 random bits." },
    name: { type: "string" },
    size: { type: "integer", minimum: 0 },
    content_type: { type: "string" },
    private: { type: "boolean" },
    sha256: { type: "string", description: "Hex; the ETag." },
    created_date: { type: "string", format: "date-time" },
    url: { type: ["string", "null"], format: "uri", description: "Readable with no key; null if private." },
  },
  required: ["id", "name", "size", "content_type", "private", "sha256", "created_date", "url"],
};

const UPLOAD_BODY: Json = {
  required: true,
  content: {
    "multipart/form-data": { schema: { type: "object", properties: { file: { type: "string", contentMediaType: "application/octet-stream" } }, required: ["file"] } },
  },
};

const ID = { name: "id", in: "path", required: true, schema: { type: "string" } };
const APP_ID = { name: "appId", in: "path", required: true, schema: { type: "string" } };
const SIGN_BODY = { type: "object", properties: { file_uri: { type: "string", description: "The file's id or URL." }, expires_in: { type: "integer", minimum: 1, maximum: 604800, default: 300 } }, required: ["file_uri"] };

export function filePaths({ errors, jsonContent, tag, sdkTag }: Helpers): Json {
  const secretOnly = { tags: [tag], security: [{ secretKey: [] }, { bearer: [] }] };
  const sdkUpload = (operationId: string, summary: string, answer: Json): Json => ({
    post: { tags: [sdkTag], operationId, summary, parameters: [APP_ID], requestBody: UPLOAD_BODY, responses: { 200: { description: "Kept durably.", content: jsonContent(answer) }, ...errors(400, 401, 404, 413, 415, 507) } },
  });
  return {
    "/api/files": {
      post: {
        tags: [tag],
        operationId: "uploadFile",
        summary: "Upload a file (any key or user)",
        description: "Form field `file`, or a raw body with `?name=`. At most `--max-file-size` (50 MiB); all files `--max-files-total` (10 GiB).",
        parameters: [
          { name: "private", in: "query", schema: { type: "boolean", default: false }, description: "Readable only by a signed URL." },
          { name: "name", in: "query", schema: { type: "string" }, description: "A raw body's file name." },
        ],
        requestBody: { required: true, content: { ...(UPLOAD_BODY.content as Json), "application/octet-stream": { schema: { type: "string", contentMediaType: "application/octet-stream" } } } },
        responses: { 201: { description: "The file.", content: jsonContent(FILE_VIEW) }, ...errors(400, 401, 413, 507) },
      },
      get: {
        ...secretOnly,
        operationId: "listFiles",
        summary: "List the files (secret key)",
        parameters: [
          { name: "limit", in: "query", schema: { type: "integer", minimum: 1, maximum: 1000, default: 100 } },
          { name: "skip", in: "query", schema: { type: "integer", minimum: 0, default: 0 } },
        ],
        responses: { 200: { description: "In upload order; X-Total-Count and Link.", content: jsonContent({ type: "array", items: FILE_VIEW }) }, ...errors(400, 401, 403) },
      },
    },
    "/api/files/signed-url": {
      post: {
        tags: [tag],
        operationId: "signFileUrl",
        summary: "A signed, expiring file URL (any key or user)",
        requestBody: { required: true, content: jsonContent(SIGN_BODY) },
        responses: { 200: { description: "The URL.", content: jsonContent({ type: "object", properties: { signed_url: { type: "string", format: "uri" }, expires_at: { type: "string", format: "date-time" } }, required: ["signed_url", "expires_at"] }) }, ...errors(400, 401, 404) },
      },
    },
    "/api/files/{id}": {
      parameters: [ID],
      get: { ...secretOnly, operationId: "describeFile", summary: "A file's description (secret key)", responses: { 200: { description: "The description.", content: jsonContent(FILE_VIEW) }, ...errors(401, 403, 404) } },
      delete: {
        ...secretOnly,
        operationId: "deleteFile",
        summary: "Delete a file (secret key)",
        responses: { 200: { description: "Deleted; its URLs now 404.", content: jsonContent({ type: "object", properties: { id: { type: "string" }, deleted: { const: true } }, required: ["id", "deleted"] }) }, ...errors(401, 403, 404) },
      },
    },
    "/api/files/{id}/{name}": {
      parameters: [ID, { name: "name", in: "path", required: true, schema: { type: "string" } }],
      get: {
        tags: [tag],
        operationId: "readFile",
        summary: "A file's bytes (no key; a private file by a signed URL)",
        security: [{}],
        parameters: [
          { name: "expires", in: "query", schema: { type: "integer" } },
          { name: "signature", in: "query", schema: { type: "string" } },
        ],
        responses: {
          200: { description: "The bytes; HTML, SVG and XML as attachments.", content: { "*/*": { schema: { type: "string", contentMediaType: "application/octet-stream" } } } },
          206: { description: "The `Range` asked.", content: { "*/*": { schema: { type: "string", contentMediaType: "application/octet-stream" } } } },
          304: { description: "Unchanged (If-None-Match)." },
          ...errors(403, 404, 416),
        },
      },
    },
    "/api/apps/{appId}/integration-endpoints/Core/UploadFile": sdkUpload("sdkUploadFile", "integrations.Core.UploadFile: a public file", { type: "object", properties: { file_url: { type: "string", format: "uri" } }, required: ["file_url"] }),
    "/api/apps/{appId}/integration-endpoints/Core/UploadPrivateFile": sdkUpload("sdkUploadPrivateFile", "integrations.Core.UploadPrivateFile: a private file", { type: "object", properties: { file_uri: { type: "string" } }, required: ["file_uri"] }),
    "/api/apps/{appId}/integration-endpoints/Core/CreateFileSignedUrl": {
      post: {
        tags: [sdkTag],
        operationId: "sdkCreateFileSignedUrl",
        summary: "integrations.Core.CreateFileSignedUrl",
        parameters: [APP_ID],
        requestBody: { required: true, content: jsonContent(SIGN_BODY) },
        responses: { 200: { description: "The URL.", content: jsonContent({ type: "object", properties: { signed_url: { type: "string", format: "uri" } }, required: ["signed_url"] }) }, ...errors(400, 401, 404) },
      },
    },
    "/api/apps/{appId}/analytics/track/batch": {
      post: {
        tags: [sdkTag],
        operationId: "sdkAnalyticsBatch",
        summary: "The SDK's analytics: dropped (no key)",
        security: [{}],
        parameters: [APP_ID],
        requestBody: { content: jsonContent({ type: "object" }) },
        responses: { 204: { description: "Dropped." }, ...errors(404) },
      },
    },
  };
}
