// multipart/form-data (RFC 7578 over RFC 2046 §5.1) read as it arrives: a part's headers, then its
// content in pieces, without holding the body whole. What the parts mean is upload.ts's business;
// a body that breaks the framing is refused here, naming what is wrong (docs/base44-sdk.md).

import { ApiError } from "../errors.ts";

/** A part's header block (Content-Disposition, Content-Type) may be no longer than this. */
export const MAX_PART_HEADER_BYTES = 16 * 1024;
/** RFC 2046 §5.1.1: a boundary is 1 to 70 characters. */
const MAX_BOUNDARY_LENGTH = 70;

export interface PartHeaders {
  /** The Content-Disposition's name parameter; null when it has none. */
  readonly name: string | null;
  /** The Content-Disposition's filename (filename* when given); null for a field that is not a file. */
  readonly filename: string | null;
  /** The part's Content-Type, lower case, without parameters; null when it states none. */
  readonly contentType: string | null;
}

/** Where the parser hands what it reads: a part's start, pieces of its content, its end. */
export interface PartSink {
  part(headers: PartHeaders): void;
  data(piece: Buffer): void;
  partEnd(): void;
}

export const invalidMultipart = (message: string, details: Record<string, unknown> = {}) => new ApiError(400, "invalid_multipart", message, details);

/** The boundary a Content-Type of multipart/form-data names, or a refusal saying how to send one. */
export function boundaryOf(contentType: string): string {
  const boundary = parameterOf(contentType, "boundary");
  if (boundary === null || boundary.length === 0) {
    throw invalidMultipart("The Content-Type multipart/form-data names no boundary; send it as multipart/form-data; boundary=<text>, as FormData does (leave Content-Type to the HTTP client).");
  }
  if (boundary.length > MAX_BOUNDARY_LENGTH) throw invalidMultipart(`The multipart boundary is ${boundary.length} characters; RFC 2046 allows at most ${MAX_BOUNDARY_LENGTH}.`);
  return boundary;
}

type State = "preamble" | "afterDelimiter" | "headers" | "content" | "epilogue";

/**
 * Push the body's chunks in order, then end(). Each delimiter is CRLF "--" boundary; the body
 * is read as if a CRLF came before it, so that the first delimiter, which may open the body, is
 * found like the others. Content is handed on as soon as it cannot be the start of a delimiter.
 */
export class MultipartParser {
  private readonly delimiter: Buffer;
  private state: State = "preamble";
  private pending: Buffer = Buffer.from("\r\n");
  private partCount = 0;

  constructor(
    boundary: string,
    private readonly sink: PartSink,
  ) {
    this.delimiter = Buffer.from(`\r\n--${boundary}`, "latin1");
  }

  push(chunk: Buffer): void {
    this.pending = this.pending.length === 0 ? chunk : this.joined(chunk);
    while (this.step());
  }

  /**
   * The pending bytes and the chunk as one buffer. Inside a part's content, the few bytes held back
   * (a possible start of the delimiter) are joined only with the chunk's head: when no delimiter
   * starts in them, they are content, and the chunk is taken as it is, not copied (an upload of
   * 50 MiB would otherwise copy every byte once more).
   */
  private joined(chunk: Buffer): Buffer {
    const held = this.pending.length;
    if (this.state === "content" && held < this.delimiter.length && chunk.length >= this.delimiter.length) {
      const at = Buffer.concat([this.pending, chunk.subarray(0, this.delimiter.length)]).indexOf(this.delimiter);
      if (at === -1 || at >= held) {
        this.sink.data(this.pending);
        return chunk;
      }
    }
    return Buffer.concat([this.pending, chunk]);
  }

  end(): void {
    if (this.state === "epilogue") return;
    const where = this.state === "preamble" ? "before its first boundary" : this.state === "content" || this.state === "headers" ? `inside part ${this.partCount}` : "after a boundary";
    throw invalidMultipart(`The multipart body ends ${where}, without its closing delimiter "--${this.boundaryText()}--": it was cut short. Send the whole body.`);
  }

  /** Does what the pending bytes allow; false when it needs more. */
  private step(): boolean {
    switch (this.state) {
      case "preamble": {
        const at = this.pending.indexOf(this.delimiter);
        if (at === -1) {
          this.keepTail();
          return false;
        }
        this.pending = this.pending.subarray(at + this.delimiter.length);
        this.state = "afterDelimiter";
        return true;
      }
      case "afterDelimiter":
        return this.afterDelimiter();
      case "headers":
        return this.headers();
      case "content": {
        const at = this.pending.indexOf(this.delimiter);
        if (at === -1) {
          const keep = Math.min(this.pending.length, this.delimiter.length - 1);
          const safe = this.pending.length - keep;
          if (safe > 0) this.sink.data(this.pending.subarray(0, safe));
          this.pending = this.pending.subarray(safe);
          return false;
        }
        if (at > 0) this.sink.data(this.pending.subarray(0, at));
        this.sink.partEnd();
        this.pending = this.pending.subarray(at + this.delimiter.length);
        this.state = "afterDelimiter";
        return true;
      }
      case "epilogue":
        this.pending = Buffer.alloc(0);
        return false;
    }
  }

  /** "--" closes the body; otherwise optional white space (transport padding) and CRLF open a part. */
  private afterDelimiter(): boolean {
    if (this.pending.length < 2) return false;
    if (this.pending[0] === DASH && this.pending[1] === DASH) {
      this.state = "epilogue";
      return true;
    }
    let at = 0;
    while (at < this.pending.length && (this.pending[at] === SPACE || this.pending[at] === TAB)) at++;
    if (at + 2 > this.pending.length) {
      if (at > MAX_BOUNDARY_LENGTH) throw this.badDelimiter();
      return false;
    }
    if (this.pending[at] !== CR || this.pending[at + 1] !== LF) throw this.badDelimiter();
    this.pending = this.pending.subarray(at + 2);
    this.state = "headers";
    this.partCount++;
    return true;
  }

  private headers(): boolean {
    const end = this.pending.indexOf(HEADERS_END);
    // A part with no headers at all starts its content at once (its blank line is the delimiter's CRLF).
    if (this.pending.length >= 2 && this.pending[0] === CR && this.pending[1] === LF) {
      this.pending = this.pending.subarray(2);
      this.startPart("");
      return true;
    }
    if (end === -1) {
      if (this.pending.length > MAX_PART_HEADER_BYTES) {
        throw invalidMultipart(`Part ${this.partCount}'s headers run over ${MAX_PART_HEADER_BYTES} bytes without the blank line that ends them; a part's headers end with CRLF CRLF.`);
      }
      return false;
    }
    const text = this.pending.subarray(0, end).toString("utf8");
    this.pending = this.pending.subarray(end + HEADERS_END.length);
    this.startPart(text);
    return true;
  }

  private startPart(text: string): void {
    this.sink.part(parsePartHeaders(text, this.partCount));
    this.state = "content";
  }

  /** What could still be the start of the first delimiter: the rest of the preamble is skipped. */
  private keepTail(): void {
    this.pending = this.pending.subarray(Math.max(0, this.pending.length - (this.delimiter.length - 1)));
  }

  private badDelimiter(): ApiError {
    return invalidMultipart(`The boundary "--${this.boundaryText()}" is followed by neither a line break nor "--" (part ${this.partCount + 1}); the body does not follow multipart/form-data.`);
  }

  private boundaryText(): string {
    return this.delimiter.subarray(4).toString("latin1");
  }
}

const CR = 13;
const LF = 10;
const DASH = 45;
const SPACE = 32;
const TAB = 9;
const HEADERS_END = Buffer.from("\r\n\r\n");

function parsePartHeaders(text: string, partNumber: number): PartHeaders {
  let disposition: string | null = null;
  let contentType: string | null = null;
  for (const line of text === "" ? [] : text.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon <= 0) throw invalidMultipart(`Part ${partNumber} has a header line without a name and ":" (${JSON.stringify(line.slice(0, 60))}).`);
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === "content-disposition") disposition = value;
    else if (name === "content-type") contentType = value.split(";")[0]!.trim().toLowerCase() || null;
  }
  if (disposition === null) return { name: null, filename: null, contentType };
  const extended = parameterOf(disposition, "filename*");
  return { name: parameterOf(disposition, "name"), filename: extended === null ? parameterOf(disposition, "filename") : decodeExtended(extended), contentType };
}

/**
 * A parameter of a header value (`type; a=b; c="d e"`), unquoted; null when absent. Browsers send
 * a quote in a file name as %22 (the WHATWG HTML form encoding), so only \" escapes are undone.
 */
export function parameterOf(header: string, wanted: string): string | null {
  const re = /;\s*([^\s=;]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
  for (let match = re.exec(header); match !== null; match = re.exec(header)) {
    if (match[1]!.toLowerCase() !== wanted) continue;
    return match[2] !== undefined ? match[2].replace(/\\(.)/g, "$1") : match[3]!.trim();
  }
  return null;
}

/** RFC 8187: charset'language'percent-encoded; UTF-8 is the one charset a client sends. */
function decodeExtended(value: string): string {
  const quote = value.indexOf("'", value.indexOf("'") + 1);
  try {
    return decodeURIComponent(value.slice(quote + 1));
  } catch {
    // A malformed escape: the name is only used to tell the file's format, so keep it as sent.
    return value.slice(quote + 1);
  }
}
