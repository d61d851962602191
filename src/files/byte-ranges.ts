// The Range header of a file's GET (RFC 9110 §14): one range of bytes is answered 206, a range past
// the end 416; a header that is not one well-formed byte range (several ranges, another unit, a
// syntax error) is ignored and the whole file answered, as the RFC allows.

export type RangeAnswer = { readonly kind: "whole" } | { readonly kind: "part"; readonly start: number; readonly end: number } | { readonly kind: "unsatisfiable" };

const WHOLE: RangeAnswer = { kind: "whole" };
const RANGE_RE = /^bytes=(\d*)-(\d*)$/;

/** What a Range header asks of a file of `size` bytes; `end` is inclusive. */
export function parseRange(header: string | undefined, size: number): RangeAnswer {
  if (header === undefined) return WHOLE;
  const match = RANGE_RE.exec(header.trim());
  if (match === null) return WHOLE;
  const [, first = "", last = ""] = match;
  if (first === "" && last === "") return WHOLE;
  if (first === "") {
    // bytes=-n: the last n bytes (all of them when the file is shorter).
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return { kind: "unsatisfiable" };
    return { kind: "part", start: Math.max(size - suffix, 0), end: size - 1 };
  }
  const start = Number(first);
  const end = last === "" ? Number.MAX_SAFE_INTEGER : Number(last);
  // bytes=5-2 is not a range at all; bytes=100- of 100 bytes is one past the end.
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || end < start) return WHOLE;
  if (start >= size) return { kind: "unsatisfiable" };
  return { kind: "part", start, end: Math.min(end, size - 1) };
}
