// How deeply JSON nests, found without recursion. Bodies (http/request.ts) and `q`
// (query/filter.ts) are scanned before JSON.parse, seeds (records/seed.ts) once parsed, so that
// nothing recursive downstream (JSON.stringify, validation messages, $eq on JSON values) ever meets
// a value deeper than this.

/** Arrays and objects inside one another; any record or filter a person writes fits in far fewer. */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/**
 * The position of the bracket that opens level MAX_JSON_DEPTH + 1, or -1 when the text nests no
 * deeper. Brackets inside strings do not count. On text that is not JSON the answer means
 * nothing, and JSON.parse refuses it next.
 */
export function findTooDeep(text: string): number {
  let depth = 0;
  for (let at = 0; at < text.length; at++) {
    const code = text.charCodeAt(at);
    if (code === QUOTE) {
      at = endOfString(text, at);
    } else if (code === OPEN_ARRAY || code === OPEN_OBJECT) {
      if (++depth > MAX_JSON_DEPTH) return at;
    } else if (code === CLOSE_ARRAY || code === CLOSE_OBJECT) {
      depth--;
    }
  }
  return -1;
}

/**
 * Whether a value already parsed (a seed given as an object) nests deeper than MAX_JSON_DEPTH,
 * found without recursion. A value that contains itself is, as it nests without end.
 */
export function isTooDeep(value: unknown): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (item === null || typeof item !== "object") continue;
    if (depth > MAX_JSON_DEPTH) return true;
    for (const child of Array.isArray(item) ? item : Object.values(item)) stack.push([child, depth + 1]);
  }
  return false;
}

/** The position of the quote that closes the string opened at `open` (the text's end if none). */
function endOfString(text: string, open: number): number {
  let close = text.indexOf('"', open + 1);
  while (close !== -1) {
    // A quote after an odd run of backslashes is escaped.
    let backslashes = 0;
    while (text.charCodeAt(close - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return close;
    close = text.indexOf('"', close + 1);
  }
  return text.length;
}

type Frame =
  | { readonly array: readonly unknown[]; readonly names: null; at: number; written: number }
  | { readonly object: Readonly<Record<string, unknown>>; readonly names: readonly string[]; at: number; written: number };

/**
 * JSON.stringify of plain JSON data (what JSON.parse returns), without recursion: for the records
 * older builds stored deeper than MAX_JSON_DEPTH, too deep for JSON.stringify's stack.
 */
export function stringifyDeep(value: unknown): string {
  const parts: string[] = [];
  const stack: Frame[] = [];
  const open = (item: unknown) => {
    if (Array.isArray(item)) {
      parts.push("[");
      stack.push({ array: item, names: null, at: 0, written: 0 });
    } else if (item !== null && typeof item === "object") {
      parts.push("{");
      stack.push({ object: item as Record<string, unknown>, names: Object.keys(item), at: 0, written: 0 });
    } else {
      parts.push(JSON.stringify(item) ?? "null"); // undefined in an array is null, as in JSON.stringify
    }
  };
  open(value);
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    if (frame.names === null) {
      if (frame.at === frame.array.length) {
        parts.push("]");
        stack.pop();
        continue;
      }
      if (frame.written++ > 0) parts.push(",");
      open(frame.array[frame.at++]);
    } else {
      const name = frame.names[frame.at++];
      if (name === undefined) {
        parts.push("}");
        stack.pop();
        continue;
      }
      const item = frame.object[name];
      if (item === undefined) continue; // skipped, as JSON.stringify skips it
      parts.push(`${frame.written++ > 0 ? "," : ""}${JSON.stringify(name)}:`);
      open(item);
    }
  }
  return parts.join("");
}
