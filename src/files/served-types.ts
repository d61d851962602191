// How a file's content type and name are told to a browser (docs/api.md, "Files"): files are
// served from the API's own origin, so only types a browser never runs as a page are shown inline;
// every other type (HTML, SVG, XML, anything unknown) is a download. Names are cleaned once, at upload.

const FALLBACK_TYPE = "application/octet-stream";
const MAX_NAME_CHARS = 255;
const TYPE_RE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

/** Types shown in the page that links them (an <img>, a <video>, a PDF): none runs script in the API's origin. */
const INLINE_TYPES = new Set([
  "image/png", "image/jpeg", "image/gif", "image/webp", "image/avif", "image/bmp", "image/x-icon", "image/vnd.microsoft.icon",
  "audio/mpeg", "audio/ogg", "audio/wav", "audio/webm", "audio/aac", "audio/flac", "audio/mp4",
  "video/mp4", "video/webm", "video/ogg", "video/quicktime",
  "application/pdf", "text/plain", "text/csv", "application/json",
]);

/**
 * What every file answer carries: no sniffing of another type, and a policy under which even a
 * page would run nothing and load nothing (sandbox: an opaque origin, no script).
 */
export const FILE_SAFETY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "X-Content-Type-Options": "nosniff",
  "Content-Security-Policy": "default-src 'none'; sandbox",
  "Cross-Origin-Resource-Policy": "cross-origin",
});

/** The content type as stored: lower case, without parameters; application/octet-stream when none or malformed. */
export function storedContentType(given: string | null | undefined): string {
  const type = (given ?? "").split(";")[0]!.trim().toLowerCase();
  return TYPE_RE.test(type) ? type : FALLBACK_TYPE;
}

/** The name as stored: its last path segment, without control characters, at most 255 characters; "file" when empty. */
export function storedFileName(given: string | null | undefined): string {
  const last = (given ?? "").split(/[\\/]/).pop() ?? "";
  // eslint-disable-next-line no-control-regex
  const clean = [...last.replace(/[\u0000-\u001f\u007f]/g, "").trim()].slice(0, MAX_NAME_CHARS).join("");
  return clean === "" || clean === "." || clean === ".." ? "file" : clean;
}

/** Content-Type and Content-Disposition of a file's answer. */
export function servedTypeHeaders(contentType: string, name: string): Record<string, string> {
  const isInline = INLINE_TYPES.has(contentType);
  // Text shown inline is UTF-8 unless the uploader said otherwise (the stored type keeps no charset).
  const type = isInline && contentType.startsWith("text/") ? `${contentType}; charset=utf-8` : contentType;
  const ascii = name.replace(/[^\x20-\x7e]/g, "_").replace(/["\\]/g, "_");
  return { "Content-Type": type, "Content-Disposition": `${isInline ? "inline" : "attachment"}; filename="${ascii}"; filename*=UTF-8''${encodeRfc5987(name)}` };
}

function encodeRfc5987(text: string): string {
  return encodeURIComponent(text).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
