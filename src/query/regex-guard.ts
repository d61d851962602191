// Decides whether a `$regex` pattern (docs/query-language.md) may run: short, valid, and free of the shapes
// that make a backtracking engine take exponential time. It reads patterns; parsing the filter is
// filter.ts's job and running the compiled expression a store's (store/memory/predicate.ts).

export const MAX_REGEX_CHARACTERS = 256;

/** A $regex runs as a JavaScript RegExp with the u flag (code points, strict syntax), plus its options. */
export function regexOf(pattern: string, options: string): RegExp {
  return new RegExp(pattern, options + "u");
}

/** What is wrong with a pattern, said so that the sender can mend it; null when it may run. */
export function findRegexProblem(pattern: string, options: string): string | null {
  const characters = [...pattern].length;
  if (characters > MAX_REGEX_CHARACTERS) {
    return `is ${characters} characters long; at most ${MAX_REGEX_CHARACTERS} are accepted, so shorten it (or use $contains for a plain substring).`;
  }
  try {
    regexOf(pattern, options);
  } catch (error) {
    return `is not a valid regular expression (${(error as Error).message}); fix its syntax (it is read with the u flag, so escape literal brackets and braces).`;
  }
  // The scan below leans on the syntax being valid: with the u flag every `{` outside a class or
  // an escape is a quantifier, and every `(` opens a group that a `)` closes.
  return findNestedRepetition(pattern);
}

interface OpenGroup {
  readonly start: number;
  /** A quantifier or an alternation somewhere inside: repeating the group multiplies the ways to match. */
  hasRepetition: boolean;
}

/**
 * Refuses a quantifier that can repeat a group holding a quantifier or an alternation, such as
 * `(a+)+`, `(a|aa)*` or `(.*a){20}`: on a near miss a backtracking engine tries every way of
 * splitting the text among the repetitions, exponentially many. Also refuses back-references,
 * which no such engine can match in bounded time. Conservative: `(a|b)+` is refused too.
 */
function findNestedRepetition(pattern: string): string | null {
  const open: OpenGroup[] = [];
  // The group that ended just before the current position, while nothing else has followed it.
  let closed: OpenGroup | undefined;
  let i = 0;
  while (i < pattern.length) {
    const char = pattern[i]!;
    const quantifier = quantifierAt(pattern, i);
    if (quantifier) {
      if (closed?.hasRepetition && quantifier.canRepeat) {
        const snippet = pattern.slice(closed.start, i + quantifier.length);
        return `repeats a group that holds a quantifier or an alternation (${snippet}), which can take exponential time on a near miss; rewrite it without the nesting, e.g. "a+" for "(a+)+", or a character class such as "[ab]+" for "(a|b)+".`;
      }
      markRepetition(open);
      i += quantifier.length;
    } else if (char === "\\") {
      const next = pattern[i + 1]!;
      if ((next >= "1" && next <= "9") || next === "k") {
        return `uses a back-reference (${pattern.slice(i, next === "k" ? pattern.indexOf(">", i) + 1 : i + 2)}), which can take exponential time; rewrite the pattern without it.`;
      }
      i += escapeLength(pattern, i);
    } else if (char === "[") {
      i = endOfClass(pattern, i);
    } else if (char === "(") {
      open.push({ start: i, hasRepetition: false });
      i += groupOpenerLength(pattern, i);
    } else if (char === ")") {
      closed = open.pop()!;
      // What is inside a group is inside the groups around it too.
      if (closed.hasRepetition) markRepetition(open);
      i++;
      continue;
    } else {
      if (char === "|") markRepetition(open);
      i++;
    }
    closed = undefined;
  }
  return null;
}

function markRepetition(open: OpenGroup[]): void {
  const innermost = open[open.length - 1];
  if (innermost) innermost.hasRepetition = true;
}

const BOUNDS_RE = /^\{(\d+)(,(\d*))?\}/;

/** The quantifier at `i` (with its lazy `?`), and whether it can match more than once. */
function quantifierAt(pattern: string, i: number): { length: number; canRepeat: boolean } | null {
  const char = pattern[i];
  let length: number;
  let canRepeat: boolean;
  if (char === "*" || char === "+" || char === "?") {
    length = 1;
    canRepeat = char !== "?";
  } else if (char === "{") {
    const bounds = BOUNDS_RE.exec(pattern.slice(i));
    if (!bounds) return null;
    length = bounds[0].length;
    const max = bounds[2] === undefined ? Number(bounds[1]) : bounds[3] === "" ? Infinity : Number(bounds[3]);
    canRepeat = max >= 2;
  } else {
    return null;
  }
  if (pattern[i + length] === "?") length++;
  return { length, canRepeat };
}

/** The length of the escape at `i`; `\u{…}` and `\p{…}` hold braces that are no quantifier. */
function escapeLength(pattern: string, i: number): number {
  const letter = pattern[i + 1];
  if ((letter === "u" || letter === "p" || letter === "P") && pattern[i + 2] === "{") return pattern.indexOf("}", i) + 1 - i;
  return 2;
}

/** The position after the `]` that closes the class opened at `i` (classes do not nest under u). */
function endOfClass(pattern: string, i: number): number {
  let j = i + 1;
  while (j < pattern.length && pattern[j] !== "]") j += pattern[j] === "\\" ? escapeLength(pattern, j) : 1;
  return j + 1;
}

/** `(`, `(?:`, `(?=`, `(?!`, `(?<=`, `(?<!` or `(?<name>`: what opens a group, so that its `?` is no quantifier. */
function groupOpenerLength(pattern: string, i: number): number {
  if (pattern[i + 1] !== "?") return 1;
  if (pattern[i + 2] !== "<") return 3;
  if (pattern[i + 3] === "=" || pattern[i + 3] === "!") return 4;
  return pattern.indexOf(">", i) + 1 - i;
}
