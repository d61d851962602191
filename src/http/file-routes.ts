// Files' routes (docs/api.md, "Files"; docs/base44-sdk.md): uploads by any key or signed-in user,
// natively (POST /api/files) and as the SDK's integrations.Core; signed URLs; the list, one file's
// description and deletes for a secret key; and the file itself, readable without a key at an
// unguessable URL (a private one only signed), served with ranges, an ETag and no way to run as a page.

import { pipeline } from "node:stream";
import { ApiError, invalidJson, invalidParameter, rangeNotSatisfiable } from "../errors.ts";
import { parseRange } from "../files/byte-ranges.ts";
import { DEFAULT_SIGNED_SECONDS, MAX_SIGNED_SECONDS, type Files } from "../files/files.ts";
import { FILE_SAFETY_HEADERS, servedTypeHeaders } from "../files/served-types.ts";
import type { FileInfo } from "../store/file-storage.ts";
import { isPlainObject } from "../schema/load.ts";
import { isNotModified } from "./conditional.ts";
import { openRoute, secretOnly, type Handler, type Outcome, type RequestContext } from "./context.ts";
import { isFormBody, receiveFile } from "./file-upload.ts";
import type { Mount } from "./mounts.ts";
import { jsonReply, type Reply } from "./response.ts";
import type { Router } from "./router.ts";
import { noteStreamed } from "../streamed-garbage.ts";

const SDK_CORE = "/api/apps/:appId/integration-endpoints/Core";
const CONTENT_PATH_RE = /^\/api\/files\/[0-9a-f]{32}\/[^/]+\/?$/;
const DEFAULT_LIST_LIMIT = 100;
const MAX_LIST_LIMIT = 1000;
/** Public files never change under their id, and ids are never reused. */
const PUBLIC_CACHE = "public, max-age=31536000, immutable";
const PRIVATE_CACHE = "private, no-store";
const SECRET_ONLY = "Only a secret key may list, describe or delete files; a publishable key or a user may upload them and read them by their URLs.";

/** A file's content is read without a key (an <img src> sends none): the pipeline asks for none on these paths (app.ts). */
export function isFileContentPath(path: string): boolean {
  return CONTENT_PATH_RE.test(path);
}

export interface FileRouteOptions {
  /** The SDK's mount, whose app id check (--app-id) the integration routes share. */
  readonly sdk: Mount;
}

export function addFileRoutes(router: Router<Handler>, files: Files, options: FileRouteOptions): void {
  const { sdk } = options;
  const upload = (isPrivate: (ctx: RequestContext) => boolean, answer: (info: FileInfo, ctx: RequestContext) => Reply, isSdk: boolean): Handler =>
    Object.assign(
      async (ctx: RequestContext): Promise<Outcome> => {
        if (isSdk) {
          sdk.checkPath(ctx);
          // The SDK sends a form; a raw body here is a mistake, not a file named "file".
          if (!isFormBody(ctx)) {
            const type = ctx.header("content-type") ?? "";
            throw new ApiError(415, "unsupported_media_type", `Send the file as multipart/form-data with the file in the form field "file", as the SDK's UploadFile({ file }) does (got ${type || "no Content-Type"}).`, { contentType: type || null });
          }
        }
        return { reply: answer(await receiveFile(ctx, files, isPrivate(ctx)), ctx) };
      },
      // The body is the file, read here as it arrives; a kept file is no answer to replay. Near
      // --max-memory an upload is refused (503) before a byte of it is read, as heavy work is.
      { readsOwnBody: true, isReplayable: false, isHeavy: true },
    );
  const native = (info: FileInfo, ctx: RequestContext) => jsonReply(201, JSON.stringify(describe(info, ctx.origin)), { Location: `/api/files/${info.id}` });
  router.add("POST", "/api/files", upload((ctx) => privateParam(ctx.query), native, false));
  router.add("POST", `${SDK_CORE}/UploadFile`, upload(() => false, (info, ctx) => jsonReply(200, JSON.stringify({ file_url: contentUrl(ctx.origin, info) })), true));
  router.add("POST", `${SDK_CORE}/UploadPrivateFile`, upload(() => true, (info) => jsonReply(200, JSON.stringify({ file_uri: info.id })), true));

  // Anyone who may upload may sign: a private file's id is as good as a secret among its uploaders.
  const sign = (isSdk: boolean): Handler =>
    Object.assign(
      async (ctx: RequestContext): Promise<Outcome> => {
        if (isSdk) sdk.checkPath(ctx);
        const { id, seconds } = signRequest(ctx.body);
        const info = await files.find(id);
        const { query, expires } = await files.signedQuery(info, seconds, Date.now());
        const signedUrl = `${contentUrl(ctx.origin, info)}?${query}`;
        return { reply: jsonReply(200, JSON.stringify(isSdk ? { signed_url: signedUrl } : { signed_url: signedUrl, expires_at: new Date(expires * 1000).toISOString() })) };
      },
      { isReplayable: false },
    );
  router.add("POST", `${SDK_CORE}/CreateFileSignedUrl`, sign(true));
  router.add("POST", "/api/files/signed-url", sign(false));

  router.add(
    "GET",
    "/api/files",
    secretOnly(async (ctx) => {
      const { limit, skip } = listParams(ctx.query);
      const page = await files.list(skip, limit);
      const origin = ctx.origin;
      const headers: Record<string, string> = { "X-Total-Count": String(page.total), "Cache-Control": "no-store" };
      if (skip + page.files.length < page.total) headers.Link = `</api/files?limit=${limit}&skip=${skip + page.files.length}>; rel="next"`;
      return { reply: jsonReply(200, JSON.stringify(page.files.map((info) => describe(info, origin))), headers) };
    }, SECRET_ONLY),
  );
  router.add("GET", "/api/files/:id", secretOnly(async (ctx) => ({ reply: jsonReply(200, JSON.stringify(describe(await files.find(ctx.params.id!), ctx.origin))) }), SECRET_ONLY));
  router.add(
    "DELETE",
    "/api/files/:id",
    secretOnly(async (ctx) => {
      await files.delete(ctx.params.id!);
      return { reply: jsonReply(200, JSON.stringify({ id: ctx.params.id, deleted: true })) };
    }, SECRET_ONLY, { isReplayable: false }),
  );
  router.add("GET", "/api/files/:id/:name", openRoute(async (ctx) => ({ reply: await serveFile(ctx, files) })));
}

/** The file's bytes: whole, or the one range asked; 304 when the client holds them already. */
async function serveFile(ctx: RequestContext, files: Files): Promise<Reply> {
  const info = await files.find(ctx.params.id!);
  await files.checkRead(info, ctx.query, Date.now());
  const etag = `"${info.sha256}"`;
  const headers: Record<string, string> = { ...FILE_SAFETY_HEADERS, ETag: etag, "Cache-Control": info.isPrivate ? PRIVATE_CACHE : PUBLIC_CACHE, "Accept-Ranges": "bytes" };
  if (isNotModified(ctx.header("if-none-match"), etag)) return { status: 304, headers, body: null };
  Object.assign(headers, servedTypeHeaders(info.contentType, info.name));
  // If-Range with another validator asks for the whole file (RFC 9110 §13.1.5).
  const ifRange = ctx.header("if-range");
  const range = parseRange(ifRange === undefined || ifRange === etag ? ctx.header("range") : undefined, info.size);
  if (range.kind === "unsatisfiable") throw rangeNotSatisfiable(info.size);
  const [status, start, end] = range.kind === "part" ? [206, range.start, range.end] : [200, 0, info.size - 1];
  if (range.kind === "part") headers["Content-Range"] = `bytes ${start}-${end}/${info.size}`;
  if (info.size === 0) return { status, headers, body: "" };
  headers["Content-Length"] = String(end - start + 1);
  return {
    status,
    headers,
    body: null,
    stream: (res) => {
      const source = files.storage.read(info, start, end);
      // A store failing midway cuts the body short, which is how HTTP says it is incomplete.
      pipeline(source, res, (error) => void (error && res.destroy()));
      source.on("data", (piece: Buffer) => noteStreamed(piece.length));
    },
  };
}

/** A file as the API describes it; a private one has no URL but a signed one (CreateFileSignedUrl). */
function describe(info: FileInfo, origin: string) {
  return {
    id: info.id,
    name: info.name,
    size: info.size,
    content_type: info.contentType,
    private: info.isPrivate,
    sha256: info.sha256,
    created_date: info.createdDate,
    url: info.isPrivate ? null : contentUrl(origin, info),
  };
}

function contentUrl(origin: string, info: FileInfo): string {
  return `${origin}/api/files/${info.id}/${encodeURIComponent(info.name)}`;
}

function signRequest(body: unknown): { id: string; seconds: number } {
  const example = `{"file_uri": "<the file's id>", "expires_in": 300}`;
  if (!isPlainObject(body)) throw invalidJson(`The body must be an object such as ${example}.`);
  const given = body.file_uri ?? body.id;
  if (typeof given !== "string" || given === "") throw invalidJson(`"file_uri" must be the file's id (UploadPrivateFile's file_uri), as in ${example}.`, { field: "file_uri" });
  // A file's URL is taken too: its id follows /api/files/.
  const id = /\/api\/files\/([0-9a-f]{32})(?:[/?]|$)/.exec(given)?.[1] ?? given;
  const seconds = body.expires_in ?? DEFAULT_SIGNED_SECONDS;
  if (!Number.isSafeInteger(seconds) || (seconds as number) < 1 || (seconds as number) > MAX_SIGNED_SECONDS) {
    throw invalidJson(`"expires_in" must be a whole number of seconds from 1 to ${MAX_SIGNED_SECONDS} (a week); default ${DEFAULT_SIGNED_SECONDS}.`, { field: "expires_in" });
  }
  return { id, seconds: seconds as number };
}

/** POST /api/files?private=true keeps a private file; ?name= names a raw body's file. */
function privateParam(query: URLSearchParams): boolean {
  for (const name of query.keys()) if (name !== "private" && name !== "name") throw invalidParameter(name, `POST /api/files takes private and name; "${name}" is not one of them.`);
  const text = query.get("private");
  if (text !== null && text !== "true" && text !== "false") throw invalidParameter("private", `private must be true or false (got "${text}").`);
  return text === "true";
}

function listParams(query: URLSearchParams): { limit: number; skip: number } {
  for (const name of query.keys()) if (name !== "limit" && name !== "skip") throw invalidParameter(name, `GET /api/files takes limit and skip; "${name}" is not one of them.`);
  const limit = wholeParam(query, "limit", DEFAULT_LIST_LIMIT, 1, MAX_LIST_LIMIT);
  return { limit, skip: wholeParam(query, "skip", 0, 0, Number.MAX_SAFE_INTEGER) };
}

function wholeParam(query: URLSearchParams, name: string, fallback: number, min: number, max: number): number {
  const text = query.get(name);
  if (text === null) return fallback;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max) throw invalidParameter(name, `${name} must be a whole number from ${min} to ${max} (got "${text}").`);
  return value;
}
