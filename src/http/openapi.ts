// The OpenAPI 3.1 document served at GET /api/openapi.json, built from the loaded schema.
// It only describes the API: statuses, headers and codes are decided by docs/api.md, docs/errors.md and the
// handlers, and a change there must be mirrored here (test/http/openapi.test.ts checks the shape).

import { keyPaths } from "./openapi-keys.ts";
import { webhookPaths } from "./openapi-webhooks.ts";
import { filePaths } from "./openapi-files.ts";
import type { ErrorCode } from "../errors.ts";
import { ACCESS_OPERATIONS, isScalar, kindOf, PLATFORM_FIELD_DEFS, type AccessOperation, type EntityDef, type FieldDef } from "../schema/fields.ts";
import type { Schema } from "../schema/load.ts";
import { DATE_BUCKET_UNITS, HAVING_OPERATORS, MAX_AGGREGATE_ROWS, MAX_GROUP_FIELDS } from "../records/aggregate-spec.ts";
import { MAX_BATCH_RECORDS, MAX_MATCH_FIELDS as MAX_UPSERT_MATCH_FIELDS } from "../records/batch.ts";
import { DEFAULT_DISTINCT_LIMIT, MAX_DISTINCT_LIMIT } from "../records/distinct.ts";
import { DEFAULT_LIMIT, MAX_LIMIT_PUBLISHABLE, MAX_LIMIT_SECRET } from "./list-params.ts";
import type { Mount } from "./mounts.ts";
import { routesOf, type OperationName } from "./routes.ts";

type Json = Record<string, unknown>;


// docs/errors.md, plus the router's `not_found` for a path that names no endpoint, and the codes of
// requests HTTP itself refuses (client-error.ts): `invalid_request`, `headers_too_large`,
// `request_timeout` and `expectation_failed`.
const ERROR_CODES = [
  "invalid_request", "headers_too_large", "request_timeout", "expectation_failed",
  "invalid_json", "invalid_multipart", "invalid_file", "unknown_field", "read_only_field", "invalid_field", "invalid_filter",
  "invalid_parameter", "invalid_cursor", "filter_required", "batch_too_large", "unauthorized",
  "forbidden", "entity_not_found", "record_not_found", "not_found", "app_not_found", "method_not_allowed",
  "ambiguous_match", "idempotency_key_in_use", "precondition_failed", "payload_too_large",
  "unsupported_media_type", "idempotency_key_reused", "internal", "store_unavailable", "insufficient_storage",
  "rate_limited", "unique_violation", "too_many_streams", "too_many_exports", "server_busy", "backup_target_exists", "backup_unsupported",
  "key_not_found", "last_secret_key", "key_not_managed", "webhook_not_found", "invalid_webhook_url",
  "invalid_credentials", "invalid_code", "email_not_verified", "user_disabled", "signup_closed",
  "file_not_found", "range_not_satisfiable",
] as const satisfies readonly ErrorCode[];
// Fails to compile when errors.ts gains a code that this document does not list.
const HAS_EVERY_ERROR_CODE: [Exclude<ErrorCode, (typeof ERROR_CODES)[number]>] extends [never] ? true : never = true;
void HAS_EVERY_ERROR_CODE;

// Error responses by status; each names the codes it carries, all sharing the Error schema.
const ERROR_RESPONSES: Record<number, [name: string, description: string]> = {
  400: ["BadRequest", "Refused: `invalid_json`, `unknown_field`, `read_only_field`, `invalid_field`, `invalid_filter`, `invalid_parameter`, `invalid_cursor`, `filter_required`, `batch_too_large`, `invalid_webhook_url` (a webhook URL on loopback, a private network, link-local or a metadata address, or not http(s)), `invalid_multipart` (an import upload whose multipart/form-data framing is broken, cut short or holds no `file` part), `invalid_file` (an uploaded file that is empty, malformed or not JSON, NDJSON or CSV; `details.line`) or `invalid_request` (HTTP itself refuses the request: a malformed request line, header or body framing, or no `Host`; or a user's token sent with a secret key), `invalid_code` (a sign-up or reset code that is wrong, used or expired). `details` names the field, parameter or batch `index` (an uploaded file's `line`) at fault. A body or `q` nesting arrays and objects deeper than 64 levels is `invalid_json` or `invalid_filter` (`details.maxDepth`), a body that is not UTF-8 `invalid_json` (`details.offset`)."],
  401: ["Unauthorized", "`unauthorized`: the `X-Api-Key` header is missing or matches no key, or a user's token has expired or its session ended; `invalid_credentials`: a sign-in's email or password is wrong."],
  403: ["Forbidden", "`forbidden`: a publishable key (or a signed-in user) may not do this; use a secret key. `email_not_verified`, `user_disabled`, `signup_closed`: a sign-up or sign-in this server refuses (docs/users.md)."],
  404: ["NotFound", "`entity_not_found` (no such entity; names are case-sensitive), `record_not_found` (no such live record), `key_not_found` (no key has that id: revoked, expired or never made), `webhook_not_found` (no webhook endpoint has that id) or `not_found` (no such path)."],
  409: ["Conflict", "`ambiguous_match` (an upsert match fits several records), `idempotency_key_in_use` (the same Idempotency-Key is still being processed; retry later), `unique_violation` (the write would give two live records the same values in fields the entity declares `unique`; `details` names the entity and fields, and the values and the `existing_id` of the record holding them to a caller who may read that entity), `backup_target_exists` (`POST /api/admin/backup` into a folder that exists and holds files), `last_secret_key` (revoking the last secret key: create another first) or `key_not_managed` (a key given by flag or environment cannot be revoked or rolled through the API)."],
  412: ["PreconditionFailed", "`precondition_failed`: `If-Match` differs from the record's current ETag; read it again and retry."],
  413: ["PayloadTooLarge", "`payload_too_large`: the body is over the server's limit (10 MiB by default). It is answered while the body is still arriving; the server reads and drops the rest (up to 64 MiB or 10 s) before it closes the connection."],
  415: ["UnsupportedMediaType", "`unsupported_media_type`: send the body as `Content-Type: application/json`."],
  416: ["RangeNotSatisfiable", "`range_not_satisfiable`: a file's `Range` starts past its end; `Content-Range` names its size."],
  422: ["IdempotencyKeyReused", "`idempotency_key_reused`: this Idempotency-Key was used with a different method, path or body."],
  429: ["RateLimited", "`rate_limited`: with `--rate-limit N`, a client sent more than N requests a second with a publishable key, or sign-ins failed 10 times in a minute for one email or client. Wait for `Retry-After` (seconds). Secret keys are never limited."],
  500: ["Internal", "`internal`: the server failed; it has been logged. Never caused by what the client sent."],
  503: [
    "StoreUnavailable",
    "`too_many_streams` (a change feed stream or long poll over `--max-streams`; retry after `Retry-After`), `too_many_exports` (on PostgreSQL, more exports at once than half the connection pool; retry after `Retry-After`), `server_busy` (heavy work, such as a bulk write, a body over 64 KiB, an aggregate, a distinct, an export or a list of over 1,000 records, while the server's memory is near `--max-memory`; retry after `Retry-After`, or send smaller batches) or `store_unavailable`: the store cannot serve the request now. On PostgreSQL, the database cannot be reached (nothing of the request was stored, unless the message says the database went while the write was being committed: then read it back, or retry with the same `Idempotency-Key`; retry after `Retry-After`), or other writes to the same records kept coming first. On the file store, writing to the data folder's disk failed (not for lack of space), so the server stops; whether a write answered so was stored is unknown. Read it back once the server is up again, or retry with the same `Idempotency-Key`.",
  ],
  501: ["NotImplemented", "`backup_unsupported`: `POST /api/admin/backup` on a store whose data is not a folder of this server's: back up the memory store with `tabula export`, PostgreSQL with `pg_dump`."],
  507: ["InsufficientStorage", "`insufficient_storage`: the data folder's disk is full, so the write was not stored (none of it). Reads go on; retry once space has been freed."],
};

// Errors a write with a JSON body may answer; 409 and 422 come from idempotency keys, 507 from a full disk.
const BODY_ERRORS = [400, 401, 404, 409, 413, 415, 422, 507];
const IDEMPOTENCY_KEY = parameterRef("IdempotencyKey");
const IF_MATCH = parameterRef("IfMatch");
const REPLAYED = "Idempotent-Replayed";
const SERVICE_TAG = "tabula server";
const SDK_TAG = "@base44/sdk prefix";

const FILTER_DESCRIPTION = [
  "A filter is a JSON object keyed by field name; in a query string it is URL-encoded JSON.",
  '- A plain value means equality: `{"status": "done"}`. On an array field it matches when any element equals the value.',
  '- A plain array means any of its values, on every field: `{"status": ["todo", "doing"]}` is `$in` (whole-array equality is `{"$eq": [...]}`).',
  '- An operator object compares: `{"priority": {"$gte": 3}}`. Operators: `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`, `$in` and `$nin` (with an array of values), `$contains` (case-insensitive substring, text fields only), `$exists` (`true`: present and not null), `$regex`, `$not`, `$all`, `$size` and `$elemMatch`.',
  "- `$ne` and `$nin` also match records that lack the field. `null` (plain, or listed in `$in`/`$nin`) means \"has no value\".",
  '- `$regex` (text fields; on an array of strings, any element) is a JavaScript regular expression run with the `u` flag; `$options` adds `i`, `m`, `s`: `{"title": {"$regex": "^re", "$options": "i"}}`. It runs on an automaton, in time linear in the value, whatever the pattern. A pattern over 256 characters, with a back-reference or lookaround (which no automaton runs), or needing over 2,000 states is `invalid_filter`; so is a scan that has taken 10 s of work (`details.timeLimitMs`).',
  '- `$not` inverts an operator object, so it also matches records lacking the field: `{"priority": {"$not": {"$gt": 3}}}`.',
  '- On array fields: `$all` lists values that must all be elements (`{"tags": {"$all": ["a", "b"]}}`), `$size` counts elements (`{"tags": {"$size": 2}}`), `$elemMatch` asks for one element meeting every condition: an operator object for values (`{"scores": {"$elemMatch": {"$gte": 80, "$lt": 85}}}`) or conditions on members for objects (`{"lines": {"$elemMatch": {"sku": "a", "qty": {"$gt": 1}}}}`).',
  '- Several fields in one object must all match; `{"$and": [<filter>, ...]}`, `{"$or": [<filter>, ...]}` and `{"$nor": [<filter>, ...]}` (none matches) combine non-empty arrays of filters, nested up to 64 levels. A filter holds at most 512 nodes (conditions and combinators) and 1,000 values in its `$in`, `$nin` and `$all` lists together; past either it is `invalid_filter` (`details.maxNodes`, `details.maxListItems`).',
  '- Dotted names reach inside object fields: `{"meta.owner": "ada"}`; a step over an array looks into each element (any element matches), a numeric step picks one (`meta.items.0.k`).',
  "- Object and array operands of `$eq` compare as JSON values: an object's members in any order, an array's items in order.",
  "- `$contains` and `search` compare by Unicode case folding (Σ, σ and ς are one letter; İ finds i).",
  '- Operands are typed by the field: `{"priority": {"$gt": "3"}}` is `invalid_filter`, and so is a value outside an enum. Date and date-time fields compare chronologically and accept `2026-01-01` or a full timestamp; digits past the millisecond compare exactly against stored values, which are whole milliseconds.',
  "- Platform fields `id`, `created_date`, `updated_date` and `created_by_id` (secret keys only) can be filtered too.",
  "- An undeclared field is `unknown_field` (the message lists the real ones), an unknown operator `invalid_filter`, malformed JSON `invalid_json`.",
].join("\n");

export function buildOpenApi(schema: Schema, serverVersion: string, mounts: readonly Mount[]): Record<string, unknown> {
  // The built-in User is described with the sign-in routes (docs/users.md), unless the app declares its own.
  const entities = [...schema.entities.values()].filter((entity) => !entity.isBuiltIn);
  const paths: Json = { ...servicePaths(), ...keyPaths({ errors, jsonContent, tag: SERVICE_TAG }), ...webhookPaths({ errors, jsonContent, tag: SERVICE_TAG }), ...filePaths({ errors, jsonContent, tag: SERVICE_TAG, sdkTag: SDK_TAG }) };
  for (const mount of mounts) {
    paths[mount.collection.replace("/entities/:entity", "/changes").replace(":appId", "{appId}")] = { get: allChangesOperation(mount) };
    for (const entity of entities) Object.assign(paths, entityPaths(entity, mount));
  }
  makeOperationIdsUnique(paths);
  return {
    openapi: "3.1.0",
    info: {
      title: "tabula",
      version: serverVersion,
      description: "tabula (npm package `tabula-server`, command `tabula`): each declared entity served as a REST collection of JSON records. Lists are bare arrays; paging and counts travel in headers. Every refusal is `{ error: { code, message, details } }`, including those of requests HTTP itself refuses, on any path: 400 `invalid_request`, 408 `request_timeout`, 417 `expectation_failed`, 431 `headers_too_large` (request line and headers over 16 KB), and 405 `method_not_allowed` for `CONNECT`.\n\n**From a browser**: CORS is on for every origin unless the server is started with `--cors` (a list of origins, or `off`). Preflights are answered 204 without a key; answers to cross-origin requests expose `ETag`, `Location`, `Link`, `X-Next-Cursor`, `X-Total-Count` and `Idempotent-Replayed`. Use the publishable key, e.g. `fetch(url, { headers: { Authorization: \"Bearer pk_...\" } })`.\n\n**With `@base44/sdk`**: `createClient({ serverUrl, appId, token })` calls the paths tagged `@base44/sdk prefix` (`/api/apps/{appId}/entities/...`), which serve the same records with the SDK's shapes.",
    },
    security: [{ secretKey: [] }, { publishableKey: [] }, { bearer: [] }],
    tags: [
      // The space keeps this tag apart from every entity's tag: entity names cannot hold one.
      { name: SERVICE_TAG, description: "Health, entity declarations and this document." },
      { name: SDK_TAG, description: "The same records at `/api/apps/{appId}/entities/<Entity>`, with the request and reply shapes of `@base44/sdk` 0.8.x (see docs/base44-sdk.md): `sort`, `/v2/list` pages, delete-many with a JSON body, update-many with `$set`/`$inc`/`$unset`, upsert by `key`." },
      ...entities.map((entity) => ({ name: entity.name, description: `Records of the ${entity.name} entity.` })),
    ],
    paths,
    components: components(entities),
  };
}

// The declaration of an entity as JSON Schema, as GET /api/entities may list it.
export function describeEntity(entity: EntityDef): Json {
  const properties: Json = {};
  for (const field of entity.fields.values()) {
    properties[field.name] = field.default === undefined ? fieldSchema(field) : { ...fieldSchema(field), default: field.default };
  }
  const required = entity.fieldNames.filter((name) => entity.fields.get(name)!.required);
  const access = entity.publishableAccess.size === ACCESS_OPERATIONS.length ? {} : { access: { publishable: ACCESS_OPERATIONS.filter((op) => entity.publishableAccess.has(op)) } };
  const unique = entity.unique.length === 0 ? {} : { unique: entity.unique };
  return { name: entity.name, type: "object", properties, required, additionalProperties: false, ...access, ...unique };
}

function components(entities: EntityDef[]): Json {
  const schemas: Json = {};
  for (const entity of entities) {
    schemas[entity.name] = recordSchema(entity);
    schemas[`${entity.name}Input`] = bodySchema(entity, true);
    schemas[`${entity.name}Changes`] = bodySchema(entity, false);
  }
  const responses: Json = {};
  for (const [name, description] of Object.values(ERROR_RESPONSES)) {
    responses[name] = { description, content: jsonContent(ref("Error")) };
  }
  return { schemas: { ...schemas, ...sharedSchemas() }, responses, parameters: sharedParameters(), headers: sharedHeaders(), securitySchemes: securitySchemes() };
}

function securitySchemes(): Json {
  const header = { type: "apiKey", in: "header", name: "X-Api-Key" };
  return {
    bearer: {
      type: "http",
      scheme: "bearer",
      description: "Either key sent as `Authorization: Bearer <key>` (as `@base44/sdk` sends it) instead of `X-Api-Key`: the key's kind decides what it may do, as below. Both headers naming different keys is 401.",
    },
    secretKey: {
      ...header,
      description: `A secret key (by convention \`sk_...\`): may do everything, sees \`created_by_id\`, may restore, update-many, delete-many, use \`deleted=\` and \`limit\` up to ${MAX_LIMIT_SECRET}. Keep it on servers.`,
    },
    publishableKey: {
      ...header,
      description: `A publishable key (by convention \`pk_...\`): may read, count, aggregate, list distinct values, create, update and delete single records, bulk create, bulk update and upsert. It may not restore, update-many, delete-many, use \`deleted=\`, sort, filter, group, measure or list by \`created_by_id\` (403), or ask for \`limit\` over ${MAX_LIMIT_PUBLISHABLE} (400). It never sees \`created_by_id\`.`,
    },
  };
}

// Paths that exist whatever the schema declares. Only /health answers without a key (docs/api.md).
function servicePaths(): Json {
  const get = (operationId: string, summary: string, description: string, schema: Json, responses: Json = errors(401)) => ({
    get: { operationId, tags: [SERVICE_TAG], summary, responses: { 200: { description, content: jsonContent(schema) }, ...responses } },
  });
  const health = get("getHealth", "Health check", "The server is up.", { type: "object", properties: { status: { const: "ok" } }, required: ["status"] }, {});
  return {
    "/health": { get: { ...health.get, security: [] } },
    "/api/entities": get("listEntities", "List the entities and their declarations", "Every entity, with its declared fields. The `X-Api-Key-Kind` header says which kind of key asked: `secret` or `publishable`.", { type: "array", items: ref("EntityDeclaration") }),
    "/api/openapi.json": get("getOpenApi", "This OpenAPI document", "The OpenAPI 3.1 document of this server and schema.", { type: "object" }),
    "/metrics": {
      get: {
        operationId: "getMetrics",
        tags: [SERVICE_TAG],
        summary: "Prometheus metrics (secret key)",
        description: "Requests by route template and status, latency histograms, records per entity, the file store's log, snapshot, fsync latency and compactions, open change feed streams. A publishable key gets 403.",
        responses: { 200: { description: "The Prometheus text exposition format, version 0.0.4.", content: { "text/plain": { schema: { type: "string" } } } }, ...errors(401, 403) },
      },
    },
    "/api/admin/backup": {
      post: {
        operationId: "backup",
        tags: [SERVICE_TAG],
        summary: "Back up the data folder (secret key)",
        description: "Copies the file store's data folder (the snapshot, the log up to its last whole entry, keys.json; fsynced) into `to`, a new or empty folder on the server's machine, while writes go on: every write answered before the request is in the copy. `tabula --data <to>` starts from it. A publishable key gets 403; the memory and PostgreSQL stores 501.",
        requestBody: { required: true, content: jsonContent({ type: "object", properties: { to: { type: "string", description: "An absolute path on the server's machine." } }, required: ["to"] }) },
        responses: {
          200: {
            description: "The copy is whole and synced.",
            content: jsonContent({
              type: "object",
              properties: {
                to: { type: "string" },
                seq: { type: "integer", description: "The last log entry in the copy." },
                bytes: { type: "integer" },
                files: { type: "array", items: { type: "string" } },
                records: { type: "object", additionalProperties: { type: "integer" }, description: "Live records per entity in the copy." },
                ms: { type: "integer" },
              },
              required: ["to", "seq", "bytes", "files", "records", "ms"],
            }),
          },
          ...errors(400, 401, 403, 409, 501),
        },
      },
    },
  };
}

// The paths of one entity on one mount, from the route table the router is built from: a route
// without a description here fails to compile (OPERATION_DOCS is keyed by every operation name).
function entityPaths(entity: EntityDef, mount: Mount): Json {
  const paths: Json = {};
  const collection = mount.collection.replace(":entity", entity.name).replace(":appId", "{appId}");
  for (const route of routesOf(mount)) {
    const path = collection + route.path.replace(":id", "{id}").replace(":field", "{field}");
    const item = (paths[path] ??= {}) as Json;
    const parameters = [
      ...(mount.name === "sdk" ? [parameterRef("AppId")] : []),
      ...(route.path.includes(":id") ? [parameterRef("Id")] : []),
      ...(route.path.includes(":field") ? [distinctFieldParameter(entity)] : []),
    ];
    if (parameters.length > 0) item.parameters = parameters;
    const doc = withAccess(OPERATION_DOCS[route.operation](entity, mount), entity, route.access);
    item[route.method.toLowerCase()] = mount.name === "sdk" ? sdkVariant(doc, entity) : doc;
  }
  return paths;
}

/** An operation a publishable key may not use on this entity (its "access", docs/entities.md) says so, and may answer 403. */
function withAccess(doc: Json, entity: EntityDef, needs: readonly AccessOperation[]): Json {
  const denied = needs.filter((operation) => !entity.publishableAccess.has(operation));
  if (denied.length === 0) return doc;
  const note = `**Not for publishable keys** on ${entity.name}: its declaration's \`access\` does not allow them to ${denied.join(" or ")} (403 \`forbidden\`). Use a secret key.`;
  const responses = { ...(doc.responses as Json), 403: { $ref: "#/components/responses/Forbidden" } };
  return { ...doc, description: doc.description ? `${note}\n\n${doc.description as string}` : note, responses };
}

const OPERATION_DOCS: Record<OperationName, (entity: EntityDef, mount: Mount) => Json> = {
  list: (entity, mount) => (mount.name === "sdk" ? sdkListOperation(entity) : listOperation(entity)),
  listPage: (entity) => pageOperation(entity),
  create: (entity) => createOperation(entity),
  deleteMany: (entity, mount) => (mount.name === "sdk" ? sdkDeleteManyOperation(entity) : deleteManyOperation(entity)),
  count: (entity) => countOperation(entity),
  aggregate: (entity) => aggregateOperation(entity),
  distinct: (entity) => distinctOperation(entity),
  bulkCreate: (entity) => bulkCreateOperation(entity),
  bulkUpdate: (entity) => bulkUpdateOperation(entity),
  upsert: (entity, mount) => (mount.name === "sdk" ? sdkUpsertOperation(entity) : upsertOperation(entity)),
  updateMany: (entity, mount) => (mount.name === "sdk" ? sdkUpdateManyOperation(entity) : updateManyOperation(entity)),
  get: (entity) => getOperation(entity),
  update: (entity) => updateOperation(entity, "update", `Update a ${entity.name} record (merge, as PATCH)`),
  patch: (entity) => updateOperation(entity, "patch", `Update a ${entity.name} record (merge)`),
  delete: (entity, mount) => deleteOperation(entity, mount.name === "sdk"),
  restore: (entity) => restoreOperation(entity),
  changes: (entity) => changesOperation(entity),
  export: (entity) => exportOperation(entity),
  importRecords: (entity, mount) => importOperation(entity, mount.name === "sdk"),
};

function importOperation(entity: EntityDef, isSdk: boolean): Json {
  const kept = {
    id: { type: "string", pattern: "^[A-Za-z0-9_.~-]{1,128}$" },
    created_date: { type: "string", format: "date-time" },
    updated_date: { type: "string", format: "date-time" },
    created_by_id: { type: "string", maxLength: 256 },
  };
  const doc = operation({
    verb: "import", entity, summary: `Import ${entity.name} records with their ids and timestamps`, isSecretOnly: true, parameters: [IDEMPOTENCY_KEY],
    description:
      "Bulk create that keeps the `id`, `created_date`, `updated_date` and `created_by_id` a record carries (those it lacks are made as for a create): what `tabula import --keep-ids` sends. " +
      `All or nothing, at most ${MAX_BATCH_RECORDS} records; an id already stored (live or deleted) or given twice is 409 \`unique_violation\` naming the record's \`details.index\`. ` +
      "Or a file as `multipart/form-data` in the field `file` (what `@base44/sdk`'s importEntities sends): a JSON array, NDJSON or CSV, the whole file one all-or-nothing write up to `--max-body`; a refusal names the file's `details.line`.",
    body: { type: "array", items: { allOf: [ref(`${entity.name}Input`), { type: "object", properties: kept }] }, maxItems: MAX_BATCH_RECORDS },
    responses: {
      201: isSdk
        ? response("`@base44/sdk`'s ImportResult: the created records as `output`, in the file's order.", importResult(entity), [REPLAYED])
        : response("The created records, in request order.", { type: "array", items: ref(entity.name) }, [REPLAYED]),
      ...errors(...BODY_ERRORS, 403),
    },
  });
  // The SDK's importEntities sends a file instead (docs/base44-sdk.md, "Importing a file").
  const requestBody = doc.requestBody as { content: Json };
  requestBody.content["multipart/form-data"] = {
    schema: {
      type: "object",
      properties: { file: { type: "string", contentMediaType: "application/octet-stream", description: "A JSON array, NDJSON or CSV (a header of field names; cells typed by the declaration), UTF-8." } },
      required: ["file"],
    },
  };
  return doc;
}

function importResult(entity: EntityDef): Json {
  return {
    type: "object",
    properties: {
      status: { const: "success" },
      details: { type: "string", description: "What was imported, in words." },
      output: { type: "array", items: ref(entity.name) },
    },
    required: ["status", "details", "output"],
  };
}

function exportOperation(entity: EntityDef): Json {
  const query = (name: string, description: string, schema: Json) => ({ name, in: "query", required: false, description, schema });
  const text = { schema: { type: "string" } };
  return operation({
    verb: "export", entity, summary: `Export ${entity.name} records`,
    description:
      "Every live record matching `q` and `search`, as they stood when the request came, oldest id first, streamed in pages while writes go on. " +
      "NDJSON: one record per line. JSON: one array. CSV (RFC 4180): a header of id, the declared fields, the timestamps (and created_by_id for a secret key); arrays and objects as JSON text.",
    parameters: [
      query("format", "ndjson (the default), json or csv.", { type: "string", enum: ["ndjson", "json", "csv"], default: "ndjson" }),
      filterParameter(entity, false),
      query("search", "Case-insensitive substring looked for in every declared string field; combined with `q` by AND.", { type: "string" }),
    ],
    responses: {
      200: { description: "The records, streamed.", content: { "application/x-ndjson": text, "application/json": { schema: { type: "array", items: ref(entity.name) } }, "text/csv": text } },
      ...errors(400, 401, 403, 404),
    },
  });
}

const FEED_DESCRIPTION =
  "The change feed (see docs/change-feed.md): one event per record written (`create`, `update`, `delete`, `restore`), in commit order, each sent once its write is durable; its id is `<seq>.<index>`. " +
  "With `Accept: text/event-stream`, a Server-Sent Events stream (`id:`, `event:`, `data:` lines; a comment every 15 s; `event: overflow` ends a stream that fell too far behind). It resumes after `Last-Event-ID` (or `since`), else starts from now. " +
  "Otherwise JSON: the changes after `since` (else from now), up to `limit`; with `wait`, a long poll. " +
  "A resume point older than the kept window (`--changes-keep`, `oldest` in JSON replies) first gets the latest version of each record written since (`sync`, with `deleted`), then every event. `since=0` catches up from the start. " +
  "EventSource cannot send headers: these routes also take the key as `?key=`.";

function feedParameters(): Json[] {
  const query = (name: string, description: string, schema: Json) => ({ name, in: "query", required: false, description, schema });
  return [
    query("since", "Resume after this event id (`<seq>.<index>`, or `<seq>` for after that whole batch; `0` for the start). Not given: from now. Malformed or never issued: 400 `invalid_cursor`.", { type: "string", pattern: "^[0-9]+(\\.[0-9]+)?$" }),
    query("limit", "JSON only: changes per reply, 1 to 1000 (default 100).", { type: "integer", minimum: 1, maximum: 1000 }),
    query("wait", "JSON only: seconds to wait for a change when there is none (a long poll), 0 to 30.", { type: "number", minimum: 0, maximum: 30 }),
    query("key", "The API key, for clients that cannot send headers (EventSource). Only these routes take it.", { type: "string" }),
    { name: "Last-Event-ID", in: "header", required: false, description: "SSE: resume after this event id (browsers send it when they reconnect). Wins over `since`.", schema: { type: "string" } },
  ];
}

function feedResponses(): Json {
  return {
    200: {
      description: "JSON: `{ changes, next, oldest }`; resume with `since=<next>`. SSE: a stream of the same change objects as `data:`.",
      content: { ...jsonContent(ref("Changes")), "text/event-stream": { schema: { type: "string" } } },
    },
    ...errors(400, 401, 403, 404),
  };
}

function changesOperation(entity: EntityDef): Json {
  return operation({
    verb: "changes", entity, summary: `Follow the changes of ${entity.name} records`, description: FEED_DESCRIPTION,
    parameters: [filterParameter(entity, false), ...feedParameters()], responses: feedResponses(),
  });
}

/** /api/changes: every entity the key may read, or those of entities=. */
function allChangesOperation(mount: Mount): Json {
  const entities = { name: "entities", in: "query", required: false, description: "The entities to follow, by name, separated by commas (default: every entity the key may read). `q` is checked against each.", schema: { type: "string" } };
  const doc = {
    operationId: mount.name === "sdk" ? "sdkChanges" : "changes", tags: [mount.name === "sdk" ? SDK_TAG : SERVICE_TAG],
    summary: "Follow the changes of every entity", description: FEED_DESCRIPTION,
    parameters: [...(mount.name === "sdk" ? [parameterRef("AppId")] : []), entities, { name: "q", in: "query", required: false, description: "A filter (JSON) on the version written.", schema: { type: "string" } }, ...feedParameters()],
    responses: feedResponses(),
  };
  return doc;
}

/** The SDK's prefix: the same operation, told apart by its id and tagged for the SDK. */
function sdkVariant(doc: Json, entity: EntityDef): Json {
  return { ...doc, operationId: `sdk${String(doc.operationId).replace(/^./, (c) => c.toUpperCase())}`, tags: [entity.name, SDK_TAG] };
}

interface OperationSpec {
  verb: string; entity: EntityDef; summary: string; description?: string;
  parameters: Json[]; body?: Json; responses: Json; isSecretOnly?: boolean;
}

function operation({ verb, entity, summary, description, parameters, body, responses, isSecretOnly }: OperationSpec): Json {
  return {
    operationId: `${verb}${entity.name}`, tags: [entity.name], summary,
    ...(description ? { description } : {}),
    ...(isSecretOnly ? { security: [{ secretKey: [] }] } : {}),
    parameters,
    ...(body ? { requestBody: { required: true, content: jsonContent(body) } } : {}),
    responses,
  };
}

function listOperation(entity: EntityDef): Json {
  return operation({
    verb: "list", entity, summary: `List ${entity.name} records`, parameters: listParameters(entity),
    description: "Filter, search, sort, select fields and page. The body is a bare array; paging and the total travel in headers. Default sort `-created_date`.",
    responses: {
      200: response(`A page of ${entity.name} records.`, { type: "array", items: ref(entity.name) }, ["X-Next-Cursor", "Link", "X-Total-Count"]),
      ...errors(400, 401, 403, 404),
    },
  });
}

function countOperation(entity: EntityDef): Json {
  return operation({
    verb: "count", entity, summary: `Count ${entity.name} records matching a filter`, parameters: [filterParameter(entity, false)],
    responses: { 200: response("The number of matching live records.", ref("CountResult")), ...errors(400, 401, 403, 404) },
  });
}

/** Declared and platform fields, in that order, that pass `fits`. */
function fieldsWhere(entity: EntityDef, fits: (field: FieldDef) => boolean): string[] {
  // created_by is left out: only records signed-in users made have it (docs/users.md).
  return [...entity.fields.values(), ...PLATFORM_FIELD_DEFS.values()].filter((field) => field.name !== "created_by" && fits(field)).map((field) => field.name);
}

/** Fields whose values (or array elements) are scalars: what groupBy, countDistinct and distinct take. */
function isListable(field: FieldDef): boolean {
  const items = field.type === "array" ? field.items : field;
  return items !== undefined && items.type !== "array" && items.type !== "object";
}

function fieldNameSchema(names: string[], description?: string): Json {
  return { type: "string", ...(names.length > 0 ? { enum: names } : {}), ...(description ? { description } : {}) };
}

function aggregateOperation(entity: EntityDef): Json {
  const oneOrMore = (names: string[], description: string, maxItems?: number) => ({
    description,
    oneOf: [fieldNameSchema(names), { type: "array", items: fieldNameSchema(names), ...(maxItems ? { maxItems } : {}) }],
  });
  const numbers = fieldsWhere(entity, (field) => field.type === "number" || field.type === "integer");
  const ordered = fieldsWhere(entity, (field) => field.type !== "array" && ["number", "date", "string"].includes(kindOf(field)));
  const dates = fieldsWhere(entity, (field) => field.type !== "array" && kindOf(field) === "date");
  const groupable = fieldsWhere(entity, isListable);
  const body = {
    type: "object", additionalProperties: false,
    description: "The `@base44/sdk` EntityAggregateSpec. Every member is optional (`null` counts as absent); no body at all counts every live record.",
    properties: {
      query: { ...ref("Filter"), description: "Which live records to aggregate, in the language of `q`." },
      groupBy: oneOrMore(groupable, `Up to ${MAX_GROUP_FIELDS} fields to group by; each row names its group by these fields. Records lacking a field group under \`null\`. An array field (at most one) groups by each distinct element; an empty or missing array is the \`null\` group. At most \`--max-groups\` groups (10,000 by default) are gathered, whatever \`limit\` says; more is \`invalid_parameter\` (\`details.maxGroups\`).`, MAX_GROUP_FIELDS),
      dateBucket: {
        type: "object", additionalProperties: false, required: ["field", "unit"],
        description: "Group by a UTC time bucket of a date or date-time field (every unit on each). The row names the bucket by the field: `YYYY-MM-DD` for day and for week (the week's Monday), `YYYY-MM` for month, `YYYY` for year; it comes before the groupBy fields.",
        properties: { field: fieldNameSchema(dates), unit: { type: "string", enum: [...DATE_BUCKET_UNITS] } },
      },
      count: { type: "boolean", default: true, description: "Include the number of records per group as `count`." },
      sum: oneOrMore(numbers, "Number fields to sum, as `sum_<field>` (0 when a group has no numbers)."),
      avg: oneOrMore(numbers, "Number fields to average, as `avg_<field>` (null when a group has no numbers)."),
      min: oneOrMore(ordered, "Number, date or string fields, as `min_<field>` (null when none)."),
      max: oneOrMore(ordered, "Number, date or string fields, as `max_<field>` (null when none)."),
      countDistinct: fieldNameSchema(groupable, "One field whose distinct values to count per group, as `count_distinct_<field>` (array fields: their elements)."),
      having: { type: "object", description: `A filter over the rows' columns, ANDed: a plain value or ${HAVING_OPERATORS.join(", ")}, operands typed by the column (\`null\`: no value). Example: \`{"count": {"$gt": 1}}\`.` },
      sort: { type: "string", description: "A column of the rows, with a leading `-` for descending. Ties, and the default order, go by the group columns ascending; no value sorts last ascending, first descending.", examples: ["-count"] },
      limit: { type: "integer", minimum: 1, maximum: MAX_AGGREGATE_ROWS, default: MAX_AGGREGATE_ROWS },
    },
  };
  return operation({
    verb: "aggregate", entity, summary: `Count, sum, average, min, max and count distinct ${entity.name} records, grouped`, parameters: [], body,
    description: "Live records only. A row holds the group fields by name, then `count`, `sum_<f>`, `avg_<f>`, `min_<f>`, `max_<f>` and `count_distinct_<f>`. A publishable key may not use `created_by_id` anywhere in the spec (403).",
    responses: { 200: response("One row per group, and whether `limit` cut rows off.", ref("AggregateResult")), ...errors(400, 401, 403, 404, 413, 415) },
  });
}

function distinctFieldParameter(entity: EntityDef): Json {
  const description = "The field whose distinct values to list: a field holding strings, numbers, booleans or dates, or an array of them (each element counts). `created_by_id`: secret keys only.";
  return { name: "field", in: "path", required: true, description, schema: fieldNameSchema(fieldsWhere(entity, isListable)) };
}

function distinctOperation(entity: EntityDef): Json {
  const query = (name: string, description: string, schema: Json) => ({ name, in: "query", description, schema });
  return operation({
    verb: "distinct", entity, summary: `List the distinct values of a ${entity.name} field`,
    description: "Among live records matching `q`, ascending by the field's order (strings by code point, numbers numerically, dates chronologically, `false` before `true`). Records lacking the field contribute nothing, so `null` is never listed.",
    parameters: [
      filterParameter(entity, false),
      query("limit", `Values per page, at most ${MAX_DISTINCT_LIMIT}.`, { type: "integer", minimum: 1, maximum: MAX_DISTINCT_LIMIT, default: DEFAULT_DISTINCT_LIMIT }),
      query("cursor", "The `X-Next-Cursor` of the previous page: it carries the field and `q`, and resumes strictly after the page's last value. Another field or `q` is `invalid_cursor`.", { type: "string" }),
    ],
    responses: {
      200: response("A page of distinct values.", { type: "array", items: { type: ["string", "number", "boolean"] } }, ["X-Next-Cursor", "Link"]),
      ...errors(400, 401, 403, 404),
    },
  });
}

function getOperation(entity: EntityDef): Json {
  return operation({
    verb: "get", entity, summary: `Read one ${entity.name} record`, parameters: [parameterRef("IfNoneMatch")],
    responses: {
      200: response("The record.", ref(entity.name), ["ETag"]),
      304: { description: "Not Modified: `If-None-Match` matches the current ETag; no body.", headers: headerRefs(["ETag"]) },
      ...errors(401, 404),
    },
  });
}

// Every write takes an Idempotency-Key (docs/api.md) and may answer with a replay.
function createOperation(entity: EntityDef): Json {
  return operation({
    verb: "create", entity, summary: `Create a ${entity.name} record`, parameters: [IDEMPOTENCY_KEY], body: ref(`${entity.name}Input`),
    responses: { 201: response("The created record.", ref(entity.name), ["Location", "ETag", REPLAYED]), ...errors(...BODY_ERRORS) },
  });
}

function updateOperation(entity: EntityDef, verb: "update" | "patch", summary: string): Json {
  return operation({
    verb, entity, summary, parameters: [IF_MATCH, IDEMPOTENCY_KEY], body: ref(`${entity.name}Changes`),
    description: "Omitted fields keep their value; `null` clears an optional field.",
    responses: { 200: response("The updated record.", ref(entity.name), ["ETag", REPLAYED]), ...errors(...BODY_ERRORS, 412) },
  });
}

function deleteOperation(entity: EntityDef, isSdk: boolean): Json {
  return operation({
    verb: "delete", entity, summary: `Delete a ${entity.name} record (soft)`, parameters: [IF_MATCH, IDEMPOTENCY_KEY],
    description: "The record is hidden from reads, updates and lists, not destroyed; a secret key can restore it.",
    responses: { 200: response("The record is deleted.", ref(isSdk ? "SdkDeleteResult" : "DeleteResult"), [REPLAYED]), ...errors(401, 404, 409, 412, 422, 507) },
  });
}

function restoreOperation(entity: EntityDef): Json {
  const restored = { type: "object", properties: { restored: { type: "boolean", description: "`false` when the record was already live." } }, required: ["restored"] };
  return operation({
    verb: "restore", entity, summary: `Restore a deleted ${entity.name} record`, parameters: [IDEMPOTENCY_KEY], isSecretOnly: true,
    responses: {
      200: response("The live record, with `restored`.", { allOf: [ref(entity.name), restored] }, ["ETag", REPLAYED]),
      ...errors(401, 403, 404, 409, 422, 507),
    },
  });
}

function bulkCreateOperation(entity: EntityDef): Json {
  return operation({
    verb: "bulkCreate", entity, summary: `Create many ${entity.name} records`, parameters: [IDEMPOTENCY_KEY],
    description: `All or nothing: one invalid record refuses the batch, and the error's \`details.index\` names it. At most ${MAX_BATCH_RECORDS} records.`,
    body: { type: "array", items: ref(`${entity.name}Input`), maxItems: MAX_BATCH_RECORDS },
    responses: { 201: response("The created records, in request order.", { type: "array", items: ref(entity.name) }, [REPLAYED]), ...errors(...BODY_ERRORS) },
  });
}

function bulkUpdateOperation(entity: EntityDef): Json {
  const changes = bodySchema(entity, false);
  const item = { ...changes, properties: { id: idSchema(), ...(changes.properties as Json) }, required: ["id"] };
  return operation({
    verb: "bulkUpdate", entity, summary: `Update many ${entity.name} records by id`, parameters: [IDEMPOTENCY_KEY],
    description: "Each item is `id` plus the fields to change (merge). All or nothing; `details.index` names a refused item.",
    body: { type: "array", items: item, maxItems: MAX_BATCH_RECORDS },
    responses: { 200: response("The updated records, in request order.", { type: "array", items: ref(entity.name) }, [REPLAYED]), ...errors(...BODY_ERRORS) },
  });
}

function upsertOperation(entity: EntityDef): Json {
  const matchField = { type: "string", ...(entity.fieldNames.length > 0 ? { enum: [...entity.fieldNames] } : {}) };
  const body = {
    type: "object", additionalProperties: false, required: ["match", "records"],
    properties: {
      match: { type: "array", items: matchField, minItems: 1, maxItems: MAX_UPSERT_MATCH_FIELDS, uniqueItems: true, description: "Fields whose values identify an existing record." },
      records: { type: "array", items: ref(`${entity.name}Changes`), maxItems: MAX_BATCH_RECORDS, description: "A record that matches none is created, so it must hold the required fields." },
    },
  };
  const created = { type: "object", properties: { created: { type: "boolean", description: "`true` if created, `false` if updated." } }, required: ["created"] };
  return operation({
    verb: "upsert", entity, summary: `Create or update ${entity.name} records by match fields`, parameters: [IDEMPOTENCY_KEY], body,
    responses: { 200: response("The records, in request order.", { type: "array", items: { allOf: [ref(entity.name), created] } }, [REPLAYED]), ...errors(...BODY_ERRORS) },
  });
}

function updateManyOperation(entity: EntityDef): Json {
  const q = { ...ref("Filter"), description: "Which records to change; `{}` is refused with `filter_required`." };
  return operation({
    verb: "updateMany", entity, summary: `Apply one change to every ${entity.name} record matching a filter`, parameters: [IDEMPOTENCY_KEY], isSecretOnly: entity.rls?.update === undefined,
    description: "The change is validated like an update and applied to all matches or to none. `set` writes values, `inc` adds to number fields (a missing field counts as 0), `unset` removes fields; each field in one of them only.",
    body: {
      type: "object", additionalProperties: false, required: ["q"], minProperties: 2,
      properties: {
        q, set: ref(`${entity.name}Changes`),
        inc: { type: "object", additionalProperties: { type: "number" }, description: "Numbers to add to number fields." },
        unset: { oneOf: [{ type: "array", items: { type: "string" } }, { type: "object" }], description: "Fields to remove: a list of names, or MongoDB's `{\"field\": \"\"}`." },
      },
    },
    responses: { 200: response("How many records changed, and their ids.", ref("ManyResult"), [REPLAYED]), ...errors(...BODY_ERRORS, 403) },
  });
}

function deleteManyOperation(entity: EntityDef): Json {
  return operation({
    verb: "deleteMany", entity, summary: `Delete every ${entity.name} record matching a filter (soft)`, isSecretOnly: entity.rls?.delete === undefined,
    parameters: [filterParameter(entity, true), IDEMPOTENCY_KEY],
    responses: { 200: response("How many records were deleted, and their ids.", ref("ManyResult"), [REPLAYED]), ...errors(400, 401, 403, 404, 409, 422, 507) },
  });
}

function sdkListOperation(entity: EntityDef): Json {
  const parameters = listParameters(entity).map((parameter) => (parameter.name === "sort_by" ? { ...parameter, name: "sort" } : parameter));
  const limit = parameters.find((parameter) => parameter.name === "limit")!;
  limit.description = `Records per page: by default, and at most, ${MAX_LIMIT_SECRET} with a secret key and ${MAX_LIMIT_PUBLISHABLE} with a publishable key (a larger limit is 400 \`invalid_parameter\`). Every sort pages by cursor here.`;
  limit.schema = { type: "integer", minimum: 1 };
  return operation({
    verb: "list", entity, summary: `List ${entity.name} records (the SDK's list() and filter())`, parameters,
    description: "As the native list, with the sort named `sort` (`sort_by` is accepted too; `+field` is ascending).",
    responses: {
      200: response(`${entity.name} records.`, { type: "array", items: ref(entity.name) }, ["X-Next-Cursor", "Link", "X-Total-Count"]),
      ...errors(400, 401, 403, 404),
    },
  });
}

function pageOperation(entity: EntityDef): Json {
  const query = (name: string, description: string, schema: Json) => ({ name, in: "query", description, schema });
  const parameters = [
    ...listParameters(entity).filter((parameter) => ["q", "search", "fields", "deleted"].includes(String(parameter.name))),
    query("sort", "One field, `-` for descending, `+` or nothing for ascending. Every sort pages by cursor.", { type: "string", default: "-created_date" }),
    query("limit", `Items per page: default ${DEFAULT_LIMIT}; at most ${MAX_LIMIT_SECRET} records (${MAX_LIMIT_PUBLISHABLE} with a publishable key); a larger limit is 400 \`invalid_parameter\`.`, { type: "integer", minimum: 1 }),
    query("cursor", "`next_cursor` of the previous page. It carries the walk: send it with `limit` alone.", { type: "string" }),
    query("distinct", "A field: the items are then its distinct values among the matching records, ascending (array fields contribute each element), up to 1,000 a page (default 100). Takes `q`, `limit` and `cursor` only.", { type: "string" }),
  ];
  const page = {
    type: "object", required: ["items", "next_cursor", "has_more"],
    properties: {
      items: { type: "array", items: { oneOf: [ref(entity.name), { not: { type: "object" }, description: "A distinct value." }] } },
      next_cursor: { type: ["string", "null"] }, has_more: { type: "boolean" },
    },
  };
  return operation({
    verb: "listPage", entity, summary: `One cursor page of ${entity.name} records (the SDK's list(options))`, parameters,
    responses: { 200: response("The page: its items, the cursor of the next page (null on the last), and whether one exists.", page), ...errors(400, 401, 403, 404) },
  });
}

function sdkDeleteManyOperation(entity: EntityDef): Json {
  return operation({
    verb: "deleteMany", entity, summary: `Delete every ${entity.name} record matching a filter (soft; the SDK's deleteMany())`, isSecretOnly: entity.rls?.delete === undefined,
    parameters: [IDEMPOTENCY_KEY], body: { ...ref("Filter"), description: "The filter itself is the body; `{}` is refused with `filter_required`." },
    responses: { 200: response("How many records were deleted.", object({ success: { const: true }, deleted: { type: "integer", minimum: 0 } })), ...errors(...BODY_ERRORS, 403) },
  });
}

function sdkUpdateManyOperation(entity: EntityDef): Json {
  const fields = (description: string, values: Json) => ({ type: "object", description, additionalProperties: values });
  const data = {
    type: "object", additionalProperties: false, minProperties: 1,
    properties: {
      $set: ref(`${entity.name}Changes`),
      $inc: fields("Numbers to add to number fields; a missing field counts as 0.", { type: "number" }),
      $unset: fields("Fields to remove (any value, as MongoDB writes it).", {}),
    },
  };
  return operation({
    verb: "updateMany", entity, summary: `Update every ${entity.name} record matching a filter (the SDK's updateMany())`, parameters: [IDEMPOTENCY_KEY], isSecretOnly: entity.rls?.update === undefined,
    description: "Each field may appear in one operator. All matches are updated at once, so `has_more` is always `false`.",
    body: { type: "object", additionalProperties: false, required: ["query", "data"], properties: { query: ref("Filter"), data } },
    responses: {
      200: response("How many records changed.", object({ success: { const: true }, updated: { type: "integer", minimum: 0 }, has_more: { const: false } }), [REPLAYED]),
      ...errors(...BODY_ERRORS, 403),
    },
  });
}

function sdkUpsertOperation(entity: EntityDef): Json {
  const name = { type: "string", ...(entity.fieldNames.length > 0 ? { enum: [...entity.fieldNames] } : {}) };
  const body = {
    type: "object", additionalProperties: false, required: ["records", "key"],
    properties: {
      records: { type: "array", items: ref(`${entity.name}Changes`), maxItems: MAX_BATCH_RECORDS },
      key: { oneOf: [name, { type: "array", items: name, minItems: 1, maxItems: MAX_UPSERT_MATCH_FIELDS, uniqueItems: true }], description: "The field, or fields, that identify a record." },
    },
  };
  const result = object({ created: { type: "integer", minimum: 0 }, updated: { type: "integer", minimum: 0 }, records: { type: "array", items: ref(entity.name) } });
  return operation({
    verb: "upsert", entity, summary: `Create or update ${entity.name} records by a key (the SDK's upsert())`, parameters: [IDEMPOTENCY_KEY], body,
    responses: { 200: response("How many were created and updated, and each written record once, as it now is.", result, [REPLAYED]), ...errors(...BODY_ERRORS) },
  });
}

function object(properties: Json): Json {
  return { type: "object", properties, required: Object.keys(properties) };
}

function listParameters(entity: EntityDef): Json[] {
  const fieldList = [...entity.fieldNames, "created_date", "updated_date", "created_by_id"].join(", ");
  const query = (name: string, description: string, schema: Json) => ({ name, in: "query", description, schema });
  const searched = entity.textFields.length > 0 ? entity.textFields.join(", ") : "none: this entity declares no string field";
  return [
    filterParameter(entity, false),
    query("search", `Case-insensitive substring looked for in every declared string field (${searched}); combined with \`q\` by AND.`, { type: "string" }),
    query("sort_by", `One field, with a leading \`-\` for descending: id, ${fieldList} (\`created_by_id\`: secret keys only). Ties break on \`id\`. Only \`created_date\`, \`updated_date\` and \`id\` allow cursors; other sorts page with \`skip\`.`, { type: "string", default: "-created_date", examples: ["-created_date", [...entity.fields.values()].find(isScalar)?.name ?? "id"] }),
    query("fields", `Comma-separated fields to return; \`id\` is always included. Fields: ${fieldList}. An unknown name is \`unknown_field\`.`, { type: "string" }),
    query("limit", `Records per page: at most ${MAX_LIMIT_SECRET} with a secret key, ${MAX_LIMIT_PUBLISHABLE} with a publishable key.`, { type: "integer", minimum: 1, maximum: MAX_LIMIT_SECRET, default: DEFAULT_LIMIT }),
    query("cursor", "The `X-Next-Cursor` of the previous page. It carries its sort, filter, search and fields: send only `cursor` and `limit`, or the same values; others are `invalid_cursor`.", { type: "string" }),
    query("skip", "Records to skip (offset paging, for shallow pages). Cannot be combined with `cursor`.", { type: "integer", minimum: 0 }),
    query("count", "When `true`, the `X-Total-Count` header carries the number of matching records.", { type: "boolean", default: false }),
    query("deleted", "Secret keys only: `only` lists deleted records, `include` live and deleted ones. Without it, only live records.", { type: "string", enum: ["include", "only"] }),
  ];
}

function filterParameter(entity: EntityDef, isRequired: boolean): Json {
  const examples = filterExamples(entity);
  const lead = isRequired
    ? "Required: the filter choosing the records; `{}` counts as none and is refused with `filter_required`."
    : "Filter: only records matching it are returned.";
  return {
    name: "q", in: "query", required: isRequired,
    description: `${lead}\n\n${FILTER_DESCRIPTION}\n\nExamples for ${entity.name}:\n${examples.map((example) => `- \`${JSON.stringify(example)}\``).join("\n")}`,
    schema: { type: "string", contentMediaType: "application/json", contentSchema: ref("Filter") },
    examples: Object.fromEntries(examples.map((example, i) => [`example${i + 1}`, { value: JSON.stringify(example) }])),
  };
}

// Filters built from the entity's own fields, so the examples can be pasted as they are.
function filterExamples(entity: EntityDef): Json[] {
  const fields = [...entity.fields.values()];
  const examples: Json[] = [];
  const withEnum = fields.find((field) => field.enum);
  if (withEnum) examples.push({ [withEnum.name]: withEnum.enum![0] });
  const numeric = fields.find((field) => field.type === "number" || field.type === "integer");
  if (numeric) examples.push({ [numeric.name]: { $gte: 3 } });
  const text = fields.find((field) => field.type === "string" && !field.format && !field.enum);
  if (text) examples.push({ [text.name]: { $contains: "report" } });
  if (examples.length >= 2) examples.push({ $or: [examples[0], examples[1]] });
  examples.push({ created_date: { $gte: "2026-01-01" } });
  return examples;
}

function recordSchema(entity: EntityDef): Json {
  const properties: Json = { id: idSchema() };
  for (const field of entity.fields.values()) properties[field.name] = fieldSchema(field);
  const timestamp = (description: string) => ({ type: "string", format: "date-time", description, examples: ["2026-11-22T12:00:00.000Z"] });
  properties.created_date = timestamp("When the record was created (UTC, milliseconds).");
  properties.updated_date = timestamp("When the record was last written (UTC, milliseconds).");
  properties.created_by_id = { type: "string", description: "The id of the API key that created the record. Only returned to secret keys." };
  return {
    type: "object", properties, required: ["id"],
    description:
      `A ${entity.name} record as returned. A field never set is omitted, and \`fields\` may restrict the output to \`id\` plus the named fields.` +
      entity.unique.map((fields) => ` No two live records share ${fields.map((field) => `\`${field}\``).join(" and ")} (409 \`unique_violation\`; a record lacking ${fields.length === 1 ? "it" : "one of them"} never clashes).`).join(""),
  };
}

// Write bodies: declared fields only. In a create body a required field without a default must
// be present; elsewhere `null` clears an optional field, so those accept null (docs/entities.md).
function bodySchema(entity: EntityDef, isCreate: boolean): Json {
  const properties: Json = {};
  for (const field of entity.fields.values()) {
    const schema = field.required ? fieldSchema(field) : nullable(fieldSchema(field));
    properties[field.name] = isCreate && field.default !== undefined ? { ...schema, default: field.default } : schema;
  }
  const required = entity.fieldNames.filter((name) => {
    const field = entity.fields.get(name)!;
    return field.required && field.default === undefined;
  });
  const description = isCreate
    ? `The fields of a new ${entity.name} record; platform fields are set by the server.`
    : `Fields of a ${entity.name} record to change; omitted fields keep their value.`;
  return { type: "object", description, properties, additionalProperties: false, ...(isCreate && required.length > 0 ? { required } : {}) };
}

function fieldSchema(field: FieldDef): Json {
  const schema: Json = { type: field.type };
  if (field.format) schema.format = field.format;
  if (field.enum) schema.enum = [...field.enum];
  if (field.items) schema.items = fieldSchema(field.items);
  for (const bound of ["minimum", "maximum", "minLength", "maxLength"] as const) {
    if (field[bound] !== undefined) schema[bound] = field[bound];
  }
  if (field.pattern) schema.pattern = field.pattern.source;
  return schema;
}

function nullable(schema: Json): Json {
  const widened: Json = { ...schema, type: [schema.type, "null"] };
  if (Array.isArray(schema.enum)) widened.enum = [...schema.enum, null];
  return widened;
}

function idSchema(): Json {
  return { type: "string", pattern: "^[0-9a-f]{24}$", description: "24 lowercase hex characters, time-ordered.", examples: ["6740a1b2c3d4e5f601234567"] };
}

function sharedSchemas(): Json {
  const object = (properties: Json, description: string) => ({ type: "object", properties, required: Object.keys(properties), description });
  return {
    Error: object({
      error: object({
        code: { type: "string", enum: [...ERROR_CODES], description: "Identifies the error permanently." },
        message: { type: "string", description: "Names what is wrong and how to mend it; may change." },
        details: { type: "object", description: "Facts about the error: `field`, `fields`, `parameter`, `index`, ..." },
      }, "The refusal."),
    }, "Every refusal."),
    CountResult: object({ count: { type: "integer", minimum: 0 } }, "The number of matching live records."),
    Changes: {
      type: "object", required: ["changes", "next", "oldest"], description: "A page of the change feed.",
      properties: {
        changes: {
          type: "array",
          items: {
            type: "object", required: ["type", "entity", "id", "data", "timestamp", "seq", "event_id"],
            properties: {
              type: { enum: ["create", "update", "delete", "restore", "sync"] },
              entity: { type: "string" }, id: idSchema(),
              data: { type: "object", description: "The version written, as a record (publishable keys never see `created_by_id`)." },
              timestamp: { type: "string", format: "date-time", description: "The version's `updated_date`." },
              seq: { type: "integer", description: "The seq of the batch that wrote it." },
              deleted: { type: "boolean", description: "`sync` events only: whether the record is deleted." },
              event_id: { type: "string", description: "This event's id: resume after it with `since`." },
            },
          },
        },
        next: { type: "string", description: "Resume here: `since=<next>`." },
        oldest: { type: ["string", "null"], description: "The first event the window keeps." },
      },
    },
    AggregateResult: object({
      rows: { type: "array", items: { type: "object" }, maxItems: MAX_AGGREGATE_ROWS, description: "One row per group: the group fields by name, then the measures." },
      truncated: { type: "boolean", description: "`true` when more rows than `limit` passed `having`." },
    }, "The rows of an aggregate."),
    ManyResult: object({ count: { type: "integer", minimum: 0 }, ids: { type: "array", items: idSchema() } }, "How many records were touched, and their ids."),
    DeleteResult: object({ id: idSchema(), deleted: { const: true } }, "A deleted record."),
    SdkDeleteResult: object({ id: idSchema(), deleted: { const: true }, success: { const: true } }, "A deleted record, as the SDK's DeleteResult."),
    Filter: { type: "object", description: FILTER_DESCRIPTION, examples: [{ status: "done" }, { $or: [{ priority: { $gte: 3 } }, { tags: "urgent" }] }] },
    EntityDeclaration: {
      type: "object", required: ["name", "type", "properties", "required"],
      description: "An entity's declaration as JSON Schema.",
      properties: {
        name: { type: "string" }, type: { const: "object" },
        properties: { type: "object", additionalProperties: { type: "object" } },
        required: { type: "array", items: { type: "string" } },
      },
    },
  };
}

function sharedParameters(): Json {
  const header = (name: string, description: string) => ({ name, in: "header", required: false, description, schema: { type: "string" } });
  return {
    Id: { name: "id", in: "path", required: true, description: "The record id.", schema: idSchema() },
    AppId: { name: "appId", in: "path", required: true, description: "Any app id, unless the server was started with `--app-id`: then only that one.", schema: { type: "string" } },
    IdempotencyKey: header("Idempotency-Key", "Any unique string (a UUID is suggested). Repeating the request with the same key within 24 hours replays the first answer, with `Idempotent-Replayed: true`, instead of redoing the work. Scoped to the API key."),
    IfMatch: header("If-Match", "Write only if the record's current ETag equals this one (`*` matches any live record); otherwise 412 `precondition_failed`."),
    IfNoneMatch: header("If-None-Match", "An ETag from an earlier read: when the record is unchanged the answer is 304 with no body."),
  };
}

function sharedHeaders(): Json {
  const header = (description: string, schema: Json = { type: "string" }) => ({ description, schema });
  return {
    "ETag": header("Strong, quoted and opaque; changes on every write of the record, including delete and restore."),
    "Location": header("The path of the created record: `/api/entities/<Entity>/<id>`.", { type: "string", format: "uri-reference" }),
    "X-Next-Cursor": header("Present when another page exists and the sort allows cursors: send it back as `cursor`."),
    "Link": header('Present when another page exists: `<URL>; rel="next"`, carrying `cursor` when the sort allows it, else `skip`.'),
    "X-Total-Count": header("The number of matching records, when `count=true`.", { type: "integer", minimum: 0 }),
    "Idempotent-Replayed": header("`true` when this answer replays an earlier one with the same Idempotency-Key.", { type: "string", enum: ["true"] }),
  };
}

function response(description: string, schema: Json, headers: string[] = []): Json {
  return { description, ...(headers.length > 0 ? { headers: headerRefs(headers) } : {}), content: jsonContent(schema) };
}

function headerRefs(names: string[]): Json {
  return Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name}` }]));
}

// Every /api/ operation may also answer 429 (a publishable key over --rate-limit), 500 and 503;
// they are added here so no operation forgets them.
function errors(...statuses: number[]): Json {
  return Object.fromEntries([...statuses, 429, 500, 503].map((status) => [status, { $ref: `#/components/responses/${ERROR_RESPONSES[status]![0]}` }]));
}

function jsonContent(schema: Json): Json {
  return { "application/json": { schema } };
}

function ref(schemaName: string): Json {
  return { $ref: `#/components/schemas/${schemaName}` };
}

function parameterRef(name: string): Json {
  return { $ref: `#/components/parameters/${name}` };
}

// Entity names are free, so `deleteMany` + "Task" can equal `delete` + "ManyTask"; a later
// operation that would repeat an id gets a numeric suffix, in document order.
function makeOperationIdsUnique(paths: Json): void {
  const seen = new Set<string>();
  for (const item of Object.values(paths) as Json[]) {
    for (const operation of Object.values(item) as Json[]) {
      if (typeof operation.operationId !== "string") continue; // a path-level `parameters` array
      let operationId = operation.operationId;
      for (let n = 2; seen.has(operationId); n++) operationId = `${operation.operationId}_${n}`;
      operation.operationId = operationId;
      seen.add(operationId);
    }
  }
}
