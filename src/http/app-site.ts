// The app's own front end (docs/base44-sdk.md, "Run your Base44 app on tabula"): a built
// single-page app served at / beside the API, so that one process serves a Base44 app and its
// backend from one origin. Its files go out with their types; hashed assets are cached for good;
// any other path a browser navigates to gets index.html, where the app's router takes over.

import { createReadStream, realpathSync, statSync, type Stats } from "node:fs";
import { readFile } from "node:fs/promises";
import { extname, join, sep } from "node:path";
import { pipeline } from "node:stream";
import { promisify } from "node:util";
import { brotliCompress, constants, gzip } from "node:zlib";
import type { IncomingMessage } from "node:http";
import { ApiError, notFound } from "../errors.ts";
import { acceptedCoding, type ContentCoding } from "./compression.ts";
import { isNotModified } from "./conditional.ts";
import { headerOf } from "./request.ts";
import type { Reply } from "./response.ts";

/** Types by extension; anything else goes out as bytes, and nosniff keeps a browser from guessing. */
const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".webmanifest": "application/manifest+json",
  ".txt": "text/plain; charset=utf-8",
  ".xml": "application/xml",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".avif": "image/avif",
  ".ico": "image/x-icon",
  ".woff": "font/woff",
  ".woff2": "font/woff2",
  ".ttf": "font/ttf",
  ".otf": "font/otf",
  ".wasm": "application/wasm",
  ".pdf": "application/pdf",
  ".mp3": "audio/mpeg",
  ".mp4": "video/mp4",
  ".webm": "video/webm",
};

/**
 * A bundler's content-hashed name (Vite's index-BX3k2a9f.js, webpack's main.3f2a1b9c.js): its
 * content never changes under that name, so a browser may keep it a year without asking again.
 */
const HASHED_NAME = /[.-][A-Za-z0-9_-]{8,}\.[a-z0-9]+$/;
const FOR_GOOD = "public, max-age=31536000, immutable";
/** Text that packs well (scripts, styles, pages, source maps, SVG); pictures and fonts are packed already. */
const PACKABLE = /^(text\/|application\/(json|manifest\+json|xml|wasm)|image\/svg)/;
/** Smaller files fit in a packet or two either way. */
const MIN_PACKED_FILE_BYTES = 1024;
/** Files this size or more go out as they are: packing them would hold too much memory. */
const MAX_PACKED_FILE_BYTES = 8 * 1024 * 1024;
/** Packed files kept for the next request; past this, the kept ones are let go and packed again when asked. */
const MAX_PACKED_BYTES = 32 * 1024 * 1024;
const packWith = { br: promisify(brotliCompress), gzip: promisify(gzip) };

export class AppSite {
  /** The folder as its real path: a file whose real path leaves it (a symbolic link out) is not served. */
  private readonly root: string;
  /**
   * Each file packed once per coding and version (its ETag), at the best level: an app's files
   * change only with a new build, and a 300 kB script goes out as 90 kB.
   */
  private readonly packed = new Map<string, Promise<Buffer>>();
  private packedBytes = 0;

  private constructor(root: string) {
    this.root = root;
  }

  /** The app in `dir`, or an error saying why it cannot be served (no such folder, no index.html). */
  static open(dir: string): AppSite {
    let root: string;
    try {
      root = realpathSync(dir);
    } catch {
      throw new Error(`The app folder ${dir} does not exist: build the app first (npm run build), or name its build folder.`);
    }
    if (!statSync(join(root, "index.html"), { throwIfNoEntry: false })?.isFile()) {
      throw new Error(`The app folder ${dir} holds no index.html: name the folder the app's build writes (Vite's dist/).`);
    }
    return new AppSite(root);
  }

  /** GET or HEAD of a path no route took: the file it names, index.html for a page of the app, else 404. */
  answer(req: IncomingMessage, path: string): Reply | Promise<Reply> {
    const file = this.fileOf(path);
    if (file !== null) return this.fileReply(req, file.path, file.stats, HASHED_NAME.test(file.path) ? FOR_GOOD : "no-cache");
    if (!acceptsPage(req, path)) throw notFound(path);
    const index = join(this.root, "index.html");
    const stats = statSync(index, { throwIfNoEntry: false });
    if (!stats?.isFile()) throw notFound(path); // the build was removed while serving
    return this.fileReply(req, index, stats, "no-cache");
  }

  private fileReply(req: IncomingMessage, path: string, stats: Stats, cacheControl: string): Reply | Promise<Reply> {
    const type = TYPES[extname(path).toLowerCase()] ?? "application/octet-stream";
    const etag = `W/"${stats.size.toString(16)}-${Math.floor(stats.mtimeMs).toString(16)}"`;
    const headers: Record<string, string> = { "Content-Type": type, "Cache-Control": cacheControl, ETag: etag, "Last-Modified": stats.mtime.toUTCString(), "X-Content-Type-Options": "nosniff" };
    const isPackable = PACKABLE.test(type) && stats.size >= MIN_PACKED_FILE_BYTES && stats.size < MAX_PACKED_FILE_BYTES;
    if (isPackable) headers.Vary = "Accept-Encoding";
    if (isNotModified(headerOf(req, "if-none-match"), etag)) return { status: 304, headers, body: null };
    const coding = isPackable ? acceptedCoding(req) : null;
    if (coding === null) {
      headers["Content-Length"] = String(stats.size);
      return { status: 200, headers, body: null, stream: (res) => pipeline(createReadStream(path), res, () => {}) };
    }
    return this.packedOf(path, etag, coding).then((packed) => {
      headers["Content-Encoding"] = coding;
      headers["Content-Length"] = String(packed.length);
      return { status: 200, headers, body: null, stream: (res) => res.end(packed) };
    });
  }

  private packedOf(path: string, etag: string, coding: ContentCoding): Promise<Buffer> {
    const key = `${coding} ${etag} ${path}`;
    let packed = this.packed.get(key);
    if (packed === undefined) {
      if (this.packedBytes > MAX_PACKED_BYTES) {
        this.packed.clear();
        this.packedBytes = 0;
      }
      const level = coding === "br" ? { params: { [constants.BROTLI_PARAM_QUALITY]: 9 } } : { level: 9 };
      packed = readFile(path).then((bytes) => packWith[coding](bytes, level));
      packed.then(
        (bytes) => void (this.packedBytes += bytes.length),
        () => this.packed.delete(key), // read again on the next request
      );
      this.packed.set(key, packed);
    }
    return packed;
  }

  /** The regular file `path` names inside the folder, or null. Hidden files (.env) are never served. */
  private fileOf(path: string): { path: string; stats: Stats } | null {
    let segments: string[];
    try {
      segments = path.split("/").filter((segment) => segment !== "").map((segment) => decodeURIComponent(segment));
    } catch {
      throw new ApiError(400, "invalid_request", "The path holds a malformed %-escape; escape each byte as %XX.");
    }
    if (segments.some((segment) => segment.startsWith(".") || segment.includes("\0") || segment.includes("/") || segment.includes("\\"))) return null;
    const candidate = join(this.root, ...segments);
    const stats = statSync(candidate, { throwIfNoEntry: false });
    if (!stats?.isFile()) return null;
    let real: string;
    try {
      real = realpathSync(candidate);
    } catch {
      return null;
    }
    return real.startsWith(this.root + sep) ? { path: real, stats } : null;
  }
}

/**
 * A navigation (the browser asks for HTML), or a path with no extension asked for by a client that
 * takes anything (curl): the app's page. A missing script or picture is a 404, not a page of HTML.
 */
function acceptsPage(req: IncomingMessage, path: string): boolean {
  const accept = headerOf(req, "accept") ?? "";
  if (accept.includes("text/html")) return true;
  return accept.includes("*/*") && extname(path) === "";
}
