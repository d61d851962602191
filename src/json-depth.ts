// How deeply JSON nests, found without recursion. Bodies (http/request.ts) and `q`
// (query/filter.ts) are scanned before JSON.parse, seeds (records/seed.ts) once parsed, so that
// nothing recursive downstream (JSON.stringify, validation messages, $eq on JSON values) ever meets
// a value deeper than this. And how wide a written value is (findOversize), for schema/validate.ts.

/** Arrays and objects inside one another; any record or filter a person writes fits in far fewer. */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

const COLON = 0x3a;
const COMMA = 0x2c;

/**
 * The position of the bracket that opens level MAX_JSON_DEPTH + 1, or -1 when the text nests no
 * deeper. Brackets inside strings do not count. On text that is not JSON the answer means
 * nothing, and JSON.parse refuses it next.
 */
export function findTooDeep(text: string): number {
  const found = findOverreach(text, Infinity);
  return found === null ? -1 : found.at;
}

/**
 * An object of more keys than this many times --max-object-keys, or an array inside the body of
 * more items than this many times --max-array-items (or a batch's most records), is refused before
 * its body is parsed: V8 takes long to build them (600,000 keys in a 10 MiB body held the event loop
 * 1.7 s, 4,500,000 items 1.1 s, in JSON.parse and the check after it), and the record holding them
 * would be refused anyway. One over the limit by less is parsed and refused as any record is, its
 * field named (docs/entities.md).
 */
export const UNPARSED_FACTOR = 10;

/**
 * One record's (or one value's) JSON far past `limits` (UNPARSED_FACTOR times, every array
 * counted): what it holds in words, and the limit as an error's details; null when it is not.
 * Nesting is left to JSON.parse's own refusal.
 */
export function recordOverreach(text: string, limits: SizeLimits): { readonly words: string; readonly details: Record<string, number> } | null {
  const found = findOverreach(text, UNPARSED_FACTOR * limits.maxObjectKeys, UNPARSED_FACTOR * limits.maxArrayItems, 0);
  if (found === null || found.kind === "depth") return null;
  const [what, limit, details] =
    found.kind === "keys"
      ? ["an object of more keys", `${limits.maxObjectKeys} keys, --max-object-keys`, { maxObjectKeys: limits.maxObjectKeys }]
      : ["an array of more items", `${limits.maxArrayItems} items, --max-array-items`, { maxArrayItems: limits.maxArrayItems }];
  return { words: `${what} than ten times what a record may hold (${limit})`, details };
}

/** Where a body's JSON first goes past what is parsed: nesting past MAX_JSON_DEPTH, an object of too many keys, an array of too many items. */
export interface Overreach {
  readonly kind: "depth" | "keys" | "items";
  /** The position of the bracket that opens the level, the object or the array. */
  readonly at: number;
}

/**
 * findTooDeep, and also the first object of more than `maxKeys` keys or array of more than
 * `maxItems` items, in one pass. Arrays at depth `topArrayDepth` or less are not counted: a body's
 * top level is a batch, whose own limit bounds it (0 counts every array, as in a value's own JSON).
 * Keys are counted by their colons outside strings, items by their commas, each container's count
 * kept on a stack as deep as the nesting allows.
 */
export function findOverreach(text: string, maxKeys: number, maxItems = Infinity, topArrayDepth = 1): Overreach | null {
  // counts[d]: keys of the object, or commas of the array, open at depth d.
  const counts = new Int32Array(MAX_JSON_DEPTH + 1);
  const isArray = new Uint8Array(MAX_JSON_DEPTH + 1);
  const opened = new Int32Array(MAX_JSON_DEPTH + 1);
  let depth = 0;
  for (let at = 0; at < text.length; at++) {
    const code = text.charCodeAt(at);
    if (code === QUOTE) {
      at = endOfString(text, at);
    } else if (code === OPEN_ARRAY || code === OPEN_OBJECT) {
      if (++depth > MAX_JSON_DEPTH) return { kind: "depth", at };
      counts[depth] = 0;
      isArray[depth] = code === OPEN_ARRAY ? 1 : 0;
      opened[depth] = at;
    } else if (code === CLOSE_ARRAY || code === CLOSE_OBJECT) {
      depth--;
    } else if (code === COLON && depth > 0 && isArray[depth] === 0) {
      if (++counts[depth]! > maxKeys) return { kind: "keys", at: opened[depth]! };
    } else if (code === COMMA && depth > topArrayDepth && isArray[depth] === 1) {
      // n commas separate n + 1 items
      if (++counts[depth]! >= maxItems) return { kind: "items", at: opened[depth]! };
    }
  }
  return null;
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

// A record's arrays and objects cost memory and time in every read, index and aggregate that walks
// them (an object of 100,000 keys takes about 8.5 times its JSON in memory), so writes are held to
// these by default (docs/entities.md#sizes-of-arrays-and-objects): a list longer than 10,000 items
// belongs in records of its own, and 1,000 keys is more than any form or settings object holds.
export const DEFAULT_MAX_ARRAY_ITEMS = 10_000;
export const DEFAULT_MAX_OBJECT_KEYS = 1_000;

export interface SizeLimits {
  /** Elements of one array, at any depth. */
  readonly maxArrayItems: number;
  /** Keys of one object, at any depth. */
  readonly maxObjectKeys: number;
}

export const DEFAULT_SIZE_LIMITS: SizeLimits = { maxArrayItems: DEFAULT_MAX_ARRAY_ITEMS, maxObjectKeys: DEFAULT_MAX_OBJECT_KEYS };

/** An array or object wider than its limit, and where: the steps from the value walked into it. */
export interface Oversize {
  readonly steps: readonly string[];
  readonly isArray: boolean;
  /** Its elements or keys. */
  readonly count: number;
  readonly limit: number;
}

/** An array or object met on the walk, and how it was reached: its name in its parent. */
interface Step {
  readonly item: object;
  readonly parent: Step | null;
  readonly name: string;
}

/**
 * The first array with more than maxArrayItems elements, or object with more than maxObjectKeys
 * keys, in a parsed value (itself included), found without recursion; null when there is none.
 */
export function findOversize(value: unknown, limits: SizeLimits): Oversize | null {
  if (value === null || typeof value !== "object") return null;
  const stack: Step[] = [{ item: value, parent: null, name: "" }];
  while (stack.length > 0) {
    const step = stack.pop()!;
    const isArray = Array.isArray(step.item);
    const names = isArray ? null : Object.keys(step.item);
    const count = names ? names.length : (step.item as unknown[]).length;
    const limit = isArray ? limits.maxArrayItems : limits.maxObjectKeys;
    if (count > limit) {
      const steps: string[] = [];
      for (let at: Step | null = step; at !== null && at.parent !== null; at = at.parent) steps.unshift(at.name);
      return { steps, isArray, count, limit };
    }
    // Scalars are skipped here, so that a long array of them costs no step each.
    if (names === null) {
      const array = step.item as unknown[];
      for (let i = 0; i < count; i++) {
        const item = array[i];
        if (item !== null && typeof item === "object") stack.push({ item, parent: step, name: String(i) });
      }
    } else {
      for (const name of names) {
        const item = (step.item as Record<string, unknown>)[name];
        if (item !== null && typeof item === "object") stack.push({ item, parent: step, name });
      }
    }
  }
  return null;
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
