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
  400: ["BadRequest", "`invalid_json`, `unknown_field`, `read_only_field`, `invalid_field`, `invalid_filter`, `invalid_parameter`, `invalid_cursor`, `filter_required`, `batch_too_large`, `invalid_webhook_url`, `invalid_multipart`, `invalid_file`, `invalid_request` or `invalid_code`; `details` names the field, parameter, batch `index` or file `line` (docs/errors.md)."],
  401: ["Unauthorized", "`unauthorized` (no valid key or token) or `invalid_credentials` (wrong email or password)."],
  403: ["Forbidden", "`forbidden` (not for this key or user; use a secret key), `email_not_verified`, `user_disabled` or `signup_closed` (docs/users.md)."],
  404: ["NotFound", "`entity_not_found`, `record_not_found`, `key_not_found`, `webhook_not_found`, `file_not_found`, `app_not_found` or `not_found` (no such path)."],
  409: ["Conflict", "`ambiguous_match`, `idempotency_key_in_use` (retry later), `unique_violation` (`details` names the fields and `existing_id`), `backup_target_exists`, `last_secret_key` or `key_not_managed`."],
  412: ["PreconditionFailed", "`precondition_failed`: `If-Match` is not the current ETag."],
  413: ["PayloadTooLarge", "`payload_too_large`: the body is over the limit (10 MiB by default)."],
  415: ["UnsupportedMediaType", "`unsupported_media_type`: send `Content-Type: application/json`."],
  416: ["RangeNotSatisfiable", "`range_not_satisfiable`: `Range` starts past the end; `Content-Range` names the size."],
  422: ["IdempotencyKeyReused", "`idempotency_key_reused`: this Idempotency-Key came with another method, path or body."],
  429: ["RateLimited", "`rate_limited` (`--rate-limit`, publishable keys only, or failed sign-ins): wait `Retry-After` seconds."],
  500: ["Internal", "`internal`: the server failed (logged)."],
  503: ["StoreUnavailable", "`too_many_streams`, `too_many_exports`, `server_busy` or `store_unavailable`: retry after `Retry-After`. A write answered `store_unavailable` may be stored: read it back or retry it with the same `Idempotency-Key`."],
  501: ["NotImplemented", "`backup_unsupported`: only the file store backs up this way (docs/operating.md)."],
  507: ["InsufficientStorage", "`insufficient_storage`: the disk is full; nothing was stored. Retry once space is freed."],
};

// Errors a write with a JSON body may answer; 409 and 422 come from idempotency keys, 507 from a full disk.
const BODY_ERRORS = [400, 401, 404, 409, 413, 415, 422, 507];
const IDEMPOTENCY_KEY = parameterRef("IdempotencyKey");
const IF_MATCH = parameterRef("IfMatch");
const REPLAYED = "Idempotent-Replayed";
const SERVICE_TAG = "tabula server";
const SDK_TAG = "@base44/sdk prefix";

const FILTER_DESCRIPTION =
  "A JSON object keyed by field (docs/query-language.md). A value means equality (on an array field, any element); an array means any of its values. " +
  "Operators: `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`, `$in`, `$nin`, `$contains`, `$exists`, `$regex` (`$options`), `$not`, `$all`, `$size`, `$elemMatch`; combine with `$and`, `$or`, `$nor`. " +
  "Dotted names reach into objects (`meta.owner`). Operands are typed by the field: a bad one is `invalid_filter`, an unknown field `unknown_field`. `created_by_id`: secret keys only.";

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
      description: "tabula (npm `tabula-server`): each declared entity as a REST collection of JSON records (docs/api.md). Every refusal is `{ error: { code, message, details } }` (docs/errors.md), on any path also 400 `invalid_request`, 405 `method_not_allowed`, 408 `request_timeout`, 417 `expectation_failed`, 431 `headers_too_large`.\n\n**Browsers**: CORS is open unless `--cors`; send the publishable key as `Authorization: Bearer pk_...`.\n\n**`@base44/sdk`**: `createClient({ serverUrl, appId, token })` uses the paths tagged `@base44/sdk prefix`.",
    },
    security: [{ secretKey: [] }, { publishableKey: [] }, { bearer: [] }],
    tags: [
      // The space keeps this tag apart from every entity's tag: entity names cannot hold one.
      { name: SERVICE_TAG, description: "Health, entity declarations and this document." },
      { name: SDK_TAG, description: "The same records in the shapes of `@base44/sdk` 0.8.x (docs/base44-sdk.md)." },
      ...entities.map((entity) => ({ name: entity.name, description: `${entity.name} records.` })),
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
      description: "Either key as `Authorization: Bearer <key>` instead of `X-Api-Key`; two different keys is 401.",
    },
    secretKey: {
      ...header,
      description: `A secret key (\`sk_...\`): may do everything, incl. \`created_by_id\`, restore, update-many, delete-many, \`deleted=\`, \`limit\` up to ${MAX_LIMIT_SECRET}. Keep it on servers.`,
    },
    publishableKey: {
      ...header,
      description: `A publishable key (\`pk_...\`): reads and single, bulk and upsert writes; not restore, update-many, delete-many, \`deleted=\` or \`created_by_id\` (403), nor \`limit\` over ${MAX_LIMIT_PUBLISHABLE} (400).`,
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
    "/api/entities": get("listEntities", "List the entities and their declarations", "Every entity's declaration; `X-Api-Key-Kind` names the key's kind.", { type: "array", items: ref("EntityDeclaration") }),
    "/api/openapi.json": get("getOpenApi", "This OpenAPI document", "This document.", { type: "object" }),
    "/metrics": {
      get: {
        operationId: "getMetrics",
        tags: [SERVICE_TAG],
        summary: "Prometheus metrics (secret key)",
        description: "Requests, latencies, records, store and streams (docs/operating.md).",
        responses: { 200: { description: "Prometheus text format 0.0.4.", content: { "text/plain": { schema: { type: "string" } } } }, ...errors(401, 403) },
      },
    },
    "/api/admin/backup": {
      post: {
        operationId: "backup",
        tags: [SERVICE_TAG],
        summary: "Back up the data folder (secret key)",
        description: "Copies the file store's data folder into `to` while writes go on; `tabula --data <to>` starts from it. Other stores: 501 (docs/operating.md).",
        requestBody: { required: true, content: jsonContent({ type: "object", properties: { to: { type: "string", description: "A new or empty folder (absolute path) on the server." } }, required: ["to"] }) },
        responses: {
          200: {
            description: "Copied and synced.",
            content: jsonContent({
              type: "object",
              properties: {
                to: { type: "string" },
                seq: { type: "integer", description: "Last log entry copied." },
                bytes: { type: "integer" },
                files: { type: "array", items: { type: "string" } },
                records: { type: "object", additionalProperties: { type: "integer" }, description: "Live records per entity." },
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
  const note = `**Not for publishable keys** on ${entity.name}: \`access\` denies ${denied.join(" or ")} (403).`;
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
      `Bulk create keeping each record's \`id\`, timestamps and \`created_by_id\`. All or nothing, at most ${MAX_BATCH_RECORDS}; a taken id is 409 \`unique_violation\` (\`details.index\`). ` +
      "Or a `multipart/form-data` `file` (the SDK's importEntities); a refusal names `details.line`.",
    body: { type: "array", items: { allOf: [ref(`${entity.name}Input`), { type: "object", properties: kept }] }, maxItems: MAX_BATCH_RECORDS },
    responses: {
      201: isSdk
        ? response("The SDK's ImportResult: the created records as `output`.", importResult(entity), [REPLAYED])
        : response("The created records, in order.", { type: "array", items: ref(entity.name) }, [REPLAYED]),
      ...errors(...BODY_ERRORS, 403),
    },
  });
  // The SDK's importEntities sends a file instead (docs/base44-sdk.md, "Importing a file").
  const requestBody = doc.requestBody as { content: Json };
  requestBody.content["multipart/form-data"] = {
    schema: {
      type: "object",
      properties: { file: { type: "string", contentMediaType: "application/octet-stream", description: "A JSON array, NDJSON or CSV (a header of field names), UTF-8." } },
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
      details: { type: "string", description: "A summary." },
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
    description: "Live records matching `q` and `search`, as of the request, oldest first. CSV: a header row; arrays and objects as JSON.",
    parameters: [
      query("format", "ndjson (default), json or csv.", { type: "string", enum: ["ndjson", "json", "csv"], default: "ndjson" }),
      filterParameter(entity, false),
      query("search", "Case-insensitive substring of any string field; ANDed with `q`.", { type: "string" }),
    ],
    responses: {
      200: { description: "The records, streamed.", content: { "application/x-ndjson": text, "application/json": { schema: { type: "array", items: ref(entity.name) } }, "text/csv": text } },
      ...errors(400, 401, 403, 404),
    },
  });
}

const FEED_DESCRIPTION =
  "The change feed (docs/change-feed.md): one event per write, in commit order, id `<seq>.<index>`. `Accept: text/event-stream` streams SSE from `Last-Event-ID` or `since`; " +
  "otherwise JSON after `since`, up to `limit`, long-polled with `wait`. Default: from now. An old point first gets `sync` events. The key may also be `?key=`.";

function feedParameters(): Json[] {
  const query = (name: string, description: string, schema: Json) => ({ name, in: "query", required: false, description, schema });
  return [
    query("since", "Resume after this event id (`<seq>.<index>`, `<seq>`, or `0`: the start); else from now. Unknown: `invalid_cursor`.", { type: "string", pattern: "^[0-9]+(\\.[0-9]+)?$" }),
    query("limit", "JSON only: changes per reply (default 100).", { type: "integer", minimum: 1, maximum: 1000 }),
    query("wait", "JSON only: seconds to long-poll.", { type: "number", minimum: 0, maximum: 30 }),
    query("key", "The API key, for EventSource.", { type: "string" }),
    { name: "Last-Event-ID", in: "header", required: false, description: "SSE: resume after this id; wins over `since`.", schema: { type: "string" } },
  ];
}

function feedResponses(): Json {
  return {
    200: {
      description: "JSON `{ changes, next, oldest }` (resume with `since=<next>`), or SSE of the same changes.",
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
  const entities = { name: "entities", in: "query", required: false, description: "Entities to follow, comma-separated (default: all the key may read).", schema: { type: "string" } };
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
    description: "Filter, search, sort, select and page; paging and the total are in headers.",
    responses: {
      200: response("A page of records.", { type: "array", items: ref(entity.name) }, ["X-Next-Cursor", "Link", "X-Total-Count"]),
      ...errors(400, 401, 403, 404),
    },
  });
}

function countOperation(entity: EntityDef): Json {
  return operation({
    verb: "count", entity, summary: `Count ${entity.name} records`, parameters: [filterParameter(entity, false)],
    responses: { 200: response("The count.", ref("CountResult")), ...errors(400, 401, 403, 404) },
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
    description: "The `@base44/sdk` EntityAggregateSpec (docs/aggregates.md); every member is optional.",
    properties: {
      query: { ...ref("Filter"), description: "Which records, as `q`." },
      groupBy: oneOrMore(groupable, `Up to ${MAX_GROUP_FIELDS} fields (one array field at most); missing values group as \`null\`. Over \`--max-groups\` groups is \`invalid_parameter\`.`, MAX_GROUP_FIELDS),
      dateBucket: {
        type: "object", additionalProperties: false, required: ["field", "unit"],
        description: "Group by a UTC day, week, month or year of a date field, named by the field.",
        properties: { field: fieldNameSchema(dates), unit: { type: "string", enum: [...DATE_BUCKET_UNITS] } },
      },
      count: { type: "boolean", default: true, description: "Include `count` per group." },
      sum: oneOrMore(numbers, "Sum, as `sum_<field>`."),
      avg: oneOrMore(numbers, "Average, as `avg_<field>`."),
      min: oneOrMore(ordered, "Minimum, as `min_<field>`."),
      max: oneOrMore(ordered, "Maximum, as `max_<field>`."),
      countDistinct: fieldNameSchema(groupable, "Distinct values, as `count_distinct_<field>`."),
      having: { type: "object", description: `A filter on the rows' columns: a value or ${HAVING_OPERATORS.join(", ")}.` },
      sort: { type: "string", description: "A column, `-` for descending; default: the group columns.", examples: ["-count"] },
      limit: { type: "integer", minimum: 1, maximum: MAX_AGGREGATE_ROWS, default: MAX_AGGREGATE_ROWS },
    },
  };
  return operation({
    verb: "aggregate", entity, summary: `Aggregate ${entity.name} records by group`, parameters: [], body,
    description: "Live records only; `created_by_id` is for secret keys (403).",
    responses: { 200: response("One row per group, and whether `limit` cut some.", ref("AggregateResult")), ...errors(400, 401, 403, 404, 413, 415) },
  });
}

function distinctFieldParameter(entity: EntityDef): Json {
  const description = "A field of scalars, or of arrays of them (each element counts); `created_by_id`: secret keys only.";
  return { name: "field", in: "path", required: true, description, schema: fieldNameSchema(fieldsWhere(entity, isListable)) };
}

function distinctOperation(entity: EntityDef): Json {
  const query = (name: string, description: string, schema: Json) => ({ name, in: "query", description, schema });
  return operation({
    verb: "distinct", entity, summary: `Distinct values of a ${entity.name} field`,
    description: "Among live records matching `q`, ascending; never `null`.",
    parameters: [
      filterParameter(entity, false),
      query("limit", `Values per page, at most ${MAX_DISTINCT_LIMIT}.`, { type: "integer", minimum: 1, maximum: MAX_DISTINCT_LIMIT, default: DEFAULT_DISTINCT_LIMIT }),
      query("cursor", "The previous page's `X-Next-Cursor` (it carries the field and `q`).", { type: "string" }),
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
      304: { description: "Unchanged (`If-None-Match`); no body.", headers: headerRefs(["ETag"]) },
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
    description: "Omitted fields stay; `null` clears one.",
    responses: { 200: response("The updated record.", ref(entity.name), ["ETag", REPLAYED]), ...errors(...BODY_ERRORS, 412) },
  });
}

function deleteOperation(entity: EntityDef, isSdk: boolean): Json {
  return operation({
    verb: "delete", entity, summary: `Delete a ${entity.name} record (soft)`, parameters: [IF_MATCH, IDEMPOTENCY_KEY],
    description: "Hidden, not destroyed; a secret key can restore it.",
    responses: { 200: response("Deleted.", ref(isSdk ? "SdkDeleteResult" : "DeleteResult"), [REPLAYED]), ...errors(401, 404, 409, 412, 422, 507) },
  });
}

function restoreOperation(entity: EntityDef): Json {
  const restored = { type: "object", properties: { restored: { type: "boolean", description: "`false` if already live." } }, required: ["restored"] };
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
    description: `All or nothing, at most ${MAX_BATCH_RECORDS}; \`details.index\` names a refused record.`,
    body: { type: "array", items: ref(`${entity.name}Input`), maxItems: MAX_BATCH_RECORDS },
    responses: { 201: response("The created records, in order.", { type: "array", items: ref(entity.name) }, [REPLAYED]), ...errors(...BODY_ERRORS) },
  });
}

function bulkUpdateOperation(entity: EntityDef): Json {
  const changes = bodySchema(entity, false);
  const item = { ...changes, properties: { id: idSchema(), ...(changes.properties as Json) }, required: ["id"] };
  return operation({
    verb: "bulkUpdate", entity, summary: `Update many ${entity.name} records by id`, parameters: [IDEMPOTENCY_KEY],
    description: "Items are `id` plus fields to change; all or nothing (`details.index`).",
    body: { type: "array", items: item, maxItems: MAX_BATCH_RECORDS },
    responses: { 200: response("The updated records, in order.", { type: "array", items: ref(entity.name) }, [REPLAYED]), ...errors(...BODY_ERRORS) },
  });
}

function upsertOperation(entity: EntityDef): Json {
  const matchField = { type: "string", ...(entity.fieldNames.length > 0 ? { enum: [...entity.fieldNames] } : {}) };
  const body = {
    type: "object", additionalProperties: false, required: ["match", "records"],
    properties: {
      match: { type: "array", items: matchField, minItems: 1, maxItems: MAX_UPSERT_MATCH_FIELDS, uniqueItems: true, description: "Fields identifying a record." },
      records: { type: "array", items: ref(`${entity.name}Changes`), maxItems: MAX_BATCH_RECORDS, description: "Unmatched records are created: give required fields." },
    },
  };
  const created = { type: "object", properties: { created: { type: "boolean", description: "`true` if created." } }, required: ["created"] };
  return operation({
    verb: "upsert", entity, summary: `Create or update ${entity.name} records by match fields`, parameters: [IDEMPOTENCY_KEY], body,
    responses: { 200: response("The records, in order.", { type: "array", items: { allOf: [ref(entity.name), created] } }, [REPLAYED]), ...errors(...BODY_ERRORS) },
  });
}

function updateManyOperation(entity: EntityDef): Json {
  const q = { ...ref("Filter"), description: "Which records; `{}` is `filter_required`." };
  return operation({
    verb: "updateMany", entity, summary: `Update every ${entity.name} record matching a filter`, parameters: [IDEMPOTENCY_KEY], isSecretOnly: entity.rls?.update === undefined,
    description: "All matches or none. `set` writes, `inc` adds, `unset` removes; a field in one only.",
    body: {
      type: "object", additionalProperties: false, required: ["q"], minProperties: 2,
      properties: {
        q, set: ref(`${entity.name}Changes`),
        inc: { type: "object", additionalProperties: { type: "number" }, description: "Numbers to add." },
        unset: { oneOf: [{ type: "array", items: { type: "string" } }, { type: "object" }], description: "Fields to remove: names, or `{\"field\": \"\"}`." },
      },
    },
    responses: { 200: response("Count and ids changed.", ref("ManyResult"), [REPLAYED]), ...errors(...BODY_ERRORS, 403) },
  });
}

function deleteManyOperation(entity: EntityDef): Json {
  return operation({
    verb: "deleteMany", entity, summary: `Delete every ${entity.name} record matching a filter (soft)`, isSecretOnly: entity.rls?.delete === undefined,
    parameters: [filterParameter(entity, true), IDEMPOTENCY_KEY],
    responses: { 200: response("Count and ids deleted.", ref("ManyResult"), [REPLAYED]), ...errors(400, 401, 403, 404, 409, 422, 507) },
  });
}

function sdkListOperation(entity: EntityDef): Json {
  const parameters = listParameters(entity).map((parameter) => (parameter.name === "sort_by" ? { ...parameter, name: "sort" } : parameter));
  const limit = parameters.find((parameter) => parameter.name === "limit")!;
  limit.description = `Per page: default and at most ${MAX_LIMIT_SECRET} (${MAX_LIMIT_PUBLISHABLE} publishable); more is \`invalid_parameter\`.`;
  limit.schema = { type: "integer", minimum: 1 };
  return operation({
    verb: "list", entity, summary: `List ${entity.name} records (the SDK's list() and filter())`, parameters,
    description: "As the native list; sort by `sort` (`+field` ascending). Every sort pages by cursor.",
    responses: {
      200: response("The records.", { type: "array", items: ref(entity.name) }, ["X-Next-Cursor", "Link", "X-Total-Count"]),
      ...errors(400, 401, 403, 404),
    },
  });
}

function pageOperation(entity: EntityDef): Json {
  const query = (name: string, description: string, schema: Json) => ({ name, in: "query", description, schema });
  const parameters = [
    ...listParameters(entity).filter((parameter) => ["q", "search", "fields", "deleted"].includes(String(parameter.name))),
    query("sort", "One field, `-` for descending.", { type: "string", default: "-created_date" }),
    query("limit", `Per page: default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT_SECRET} (${MAX_LIMIT_PUBLISHABLE} publishable).`, { type: "integer", minimum: 1 }),
    query("cursor", "The previous `next_cursor`; send with `limit` only.", { type: "string" }),
    query("distinct", "A field: list its distinct values instead (with `q`, `limit`, `cursor` only).", { type: "string" }),
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
    responses: { 200: response("Items, `next_cursor` (null on the last page), `has_more`.", page), ...errors(400, 401, 403, 404) },
  });
}

function sdkDeleteManyOperation(entity: EntityDef): Json {
  return operation({
    verb: "deleteMany", entity, summary: `Delete every ${entity.name} record matching a filter (soft; the SDK's deleteMany())`, isSecretOnly: entity.rls?.delete === undefined,
    parameters: [IDEMPOTENCY_KEY], body: { ...ref("Filter"), description: "The filter; `{}` is `filter_required`." },
    responses: { 200: response("How many were deleted.", object({ success: { const: true }, deleted: { type: "integer", minimum: 0 } })), ...errors(...BODY_ERRORS, 403) },
  });
}

function sdkUpdateManyOperation(entity: EntityDef): Json {
  const fields = (description: string, values: Json) => ({ type: "object", description, additionalProperties: values });
  const data = {
    type: "object", additionalProperties: false, minProperties: 1,
    properties: {
      $set: ref(`${entity.name}Changes`),
      $inc: fields("Numbers to add (missing counts as 0).", { type: "number" }),
      $unset: fields("Fields to remove.", {}),
    },
  };
  return operation({
    verb: "updateMany", entity, summary: `Update every ${entity.name} record matching a filter (the SDK's updateMany())`, parameters: [IDEMPOTENCY_KEY], isSecretOnly: entity.rls?.update === undefined,
    description: "A field in one operator only; `has_more` is always `false`.",
    body: { type: "object", additionalProperties: false, required: ["query", "data"], properties: { query: ref("Filter"), data } },
    responses: {
      200: response("How many changed.", object({ success: { const: true }, updated: { type: "integer", minimum: 0 }, has_more: { const: false } }), [REPLAYED]),
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
      key: { oneOf: [name, { type: "array", items: name, minItems: 1, maxItems: MAX_UPSERT_MATCH_FIELDS, uniqueItems: true }], description: "Field(s) identifying a record." },
    },
  };
  const result = object({ created: { type: "integer", minimum: 0 }, updated: { type: "integer", minimum: 0 }, records: { type: "array", items: ref(entity.name) } });
  return operation({
    verb: "upsert", entity, summary: `Create or update ${entity.name} records by a key (the SDK's upsert())`, parameters: [IDEMPOTENCY_KEY], body,
    responses: { 200: response("Counts created and updated, and the written records.", result, [REPLAYED]), ...errors(...BODY_ERRORS) },
  });
}

function object(properties: Json): Json {
  return { type: "object", properties, required: Object.keys(properties) };
}

function listParameters(entity: EntityDef): Json[] {
  const fieldList = [...entity.fieldNames, "created_date", "updated_date", "created_by_id"].join(", ");
  const query = (name: string, description: string, schema: Json) => ({ name, in: "query", description, schema });
  const searched = entity.textFields.length > 0 ? entity.textFields.join(", ") : "none";
  return [
    filterParameter(entity, false),
    query("search", `Case-insensitive substring of a string field (${searched}); ANDed with \`q\`.`, { type: "string" }),
    query("sort_by", `A field, \`-\` for descending: id, ${fieldList}. Cursors only for \`id\`, \`created_date\`, \`updated_date\`; else \`skip\`.`, { type: "string", default: "-created_date", examples: ["-created_date", [...entity.fields.values()].find(isScalar)?.name ?? "id"] }),
    query("fields", `Comma-separated fields to return (and \`id\`): ${fieldList}.`, { type: "string" }),
    query("limit", `Per page: at most ${MAX_LIMIT_SECRET} (${MAX_LIMIT_PUBLISHABLE} publishable).`, { type: "integer", minimum: 1, maximum: MAX_LIMIT_SECRET, default: DEFAULT_LIMIT }),
    query("cursor", "The previous page's `X-Next-Cursor`; send with `limit` only.", { type: "string" }),
    query("skip", "Records to skip; not with `cursor`.", { type: "integer", minimum: 0 }),
    query("count", "`true`: `X-Total-Count` holds the total.", { type: "boolean", default: false }),
    query("deleted", "Secret keys only: `only` deleted, or `include` deleted records.", { type: "string", enum: ["include", "only"] }),
  ];
}

function filterParameter(entity: EntityDef, isRequired: boolean): Json {
  const examples = filterExamples(entity);
  const lead = isRequired
    ? "Required filter; `{}` is `filter_required`."
    : "Filter: only matching records.";
  return {
    name: "q", in: "query", required: isRequired,
    description: `${lead} ${FILTER_DESCRIPTION} E.g. ${examples.map((example) => `\`${JSON.stringify(example)}\``).join(", ")}.`,
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
  properties.created_date = timestamp("Created (UTC, ms).");
  properties.updated_date = timestamp("Last written (UTC, ms).");
  properties.created_by_id = { type: "string", description: "The creating API key's id; secret keys only." };
  return {
    type: "object", properties, required: ["id"],
    description:
      `A ${entity.name} record; unset fields are omitted.` +
      entity.unique.map((fields) => ` Unique: ${fields.map((field) => `\`${field}\``).join(" and ")} (409 \`unique_violation\`).`).join(""),
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
    ? `A new ${entity.name} record.`
    : `${entity.name} fields to change.`;
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
  return { type: "string", pattern: "^[0-9a-f]{24}$", description: "24 hex digits, time-ordered.", examples: ["6740a1b2c3d4e5f601234567"] };
}

function sharedSchemas(): Json {
  const object = (properties: Json, description: string) => ({ type: "object", properties, required: Object.keys(properties), description });
  return {
    Error: object({
      error: object({
        code: { type: "string", enum: [...ERROR_CODES], description: "Stable: match on it." },
        message: { type: "string", description: "For people; may change." },
        details: { type: "object", description: "Facts: `field`, `parameter`, `index`, ..." },
      }, "The refusal."),
    }, "Every refusal."),
    CountResult: object({ count: { type: "integer", minimum: 0 } }, "Matching live records."),
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
              data: { type: "object", description: "The version written." },
              timestamp: { type: "string", format: "date-time", description: "Its `updated_date`." },
              seq: { type: "integer", description: "Its batch's seq." },
              deleted: { type: "boolean", description: "`sync` only: deleted or not." },
              event_id: { type: "string", description: "Resume after it with `since`." },
            },
          },
        },
        next: { type: "string", description: "Resume with `since=<next>`." },
        oldest: { type: ["string", "null"], description: "The oldest event kept." },
      },
    },
    AggregateResult: object({
      rows: { type: "array", items: { type: "object" }, maxItems: MAX_AGGREGATE_ROWS, description: "One per group: group fields, then measures." },
      truncated: { type: "boolean", description: "More rows than `limit`." },
    }, "The rows of an aggregate."),
    ManyResult: object({ count: { type: "integer", minimum: 0 }, ids: { type: "array", items: idSchema() } }, "Count and ids."),
    DeleteResult: object({ id: idSchema(), deleted: { const: true } }, "A deleted record."),
    SdkDeleteResult: object({ id: idSchema(), deleted: { const: true }, success: { const: true } }, "The SDK's DeleteResult."),
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
    AppId: { name: "appId", in: "path", required: true, description: "Any, unless `--app-id` fixes one.", schema: { type: "string" } },
    IdempotencyKey: header("Idempotency-Key", "A unique string (a UUID): a repeat within 24 h, same API key, replays the first answer (`Idempotent-Replayed: true`)."),
    IfMatch: header("If-Match", "Write only if the ETag matches (`*`: any live record); else 412."),
    IfNoneMatch: header("If-None-Match", "An earlier ETag: unchanged is 304."),
  };
}

function sharedHeaders(): Json {
  const header = (description: string, schema: Json = { type: "string" }) => ({ description, schema });
  return {
    "ETag": header("Strong; changes on every write."),
    "Location": header("The created record's path.", { type: "string", format: "uri-reference" }),
    "X-Next-Cursor": header("The next page's `cursor`, if any."),
    "Link": header('`<URL>; rel="next"`, if another page exists.'),
    "X-Total-Count": header("Matching records, with `count=true`.", { type: "integer", minimum: 0 }),
    "Idempotent-Replayed": header("`true` on a replayed answer.", { type: "string", enum: ["true"] }),
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
