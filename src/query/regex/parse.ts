// Reads a pattern into a tree of code point sets, assertions and repetitions, with the case fold of
// /iu already applied to every set. The pattern was accepted by `new RegExp(pattern, flags + "u")`
// first (linear-regex.ts), so the syntax is valid here; what an automaton cannot run is refused.

import {
  ANY_SET, BASIC_WORD_SET, complementOfSet, DIGIT_SET, DOT_SET, setOfCodePoint, setOfRanges, SPACE_SET, type CharSet,
} from "./char-set.ts";
import { RegexProblem } from "./regex-problem.ts";
import { closeOverCase, propertySet } from "./unicode-tables.ts";

export type AssertionKind = "textStart" | "lineStart" | "textEnd" | "lineEnd" | "wordBoundary" | "notWordBoundary";

export type RegexNode =
  /** One code point of the set. */
  | { readonly type: "set"; readonly set: CharSet }
  | { readonly type: "assertion"; readonly kind: AssertionKind }
  /** No items: the empty text. */
  | { readonly type: "concat"; readonly items: readonly RegexNode[] }
  | { readonly type: "alternation"; readonly branches: readonly RegexNode[] }
  /** `max` is Infinity when unbounded; laziness does not change whether a text matches. */
  | { readonly type: "repeat"; readonly min: number; readonly max: number; readonly node: RegexNode };

export interface RegexFlags {
  readonly ignoreCase: boolean;
  readonly multiline: boolean;
  readonly dotAll: boolean;
}

export function parsePattern(pattern: string, flags: RegexFlags): RegexNode {
  const reader = new PatternReader(pattern, flags);
  return reader.readDisjunction();
}

/**
 * What \w and \b count as word characters: with i and u, also the letters that fold into one
 * (ſ folds to s, K, the Kelvin sign, to k), as ECMAScript's WordCharacters says.
 */
export function wordSetOf(flags: RegexFlags): CharSet {
  return flags.ignoreCase ? closeOverCase(BASIC_WORD_SET) : BASIC_WORD_SET;
}

const CONTROL_ESCAPES: Readonly<Record<string, number>> = { t: 0x09, n: 0x0a, v: 0x0b, f: 0x0c, r: 0x0d };

const LOOKAROUND_REFUSAL =
  "which the linear-time matcher cannot run: its automaton reads each character once and never looks ahead or back. " +
  'Match the text itself instead ("ab" for "a(?=b)"), combine two conditions with $and, or exclude one with $not ({"$not": {"$regex": "…"}}).';

const BACK_REFERENCE_REFUSAL =
  "which the linear-time matcher cannot run: its automaton does not remember what a group matched. " +
  'Spell the repeated text out instead ("(?:aa|bb)" for "(a|b)\\1"), or use a class ("[ab]{2}").';

class PatternReader {
  private readonly chars: readonly string[];
  private at = 0;
  private readonly wordSet: CharSet;

  constructor(pattern: string, private readonly flags: RegexFlags) {
    this.chars = [...pattern];
    this.wordSet = wordSetOf(flags);
  }

  readDisjunction(): RegexNode {
    const branches = [this.readAlternative()];
    while (this.peek() === "|") {
      this.at++;
      branches.push(this.readAlternative());
    }
    return branches.length === 1 ? branches[0]! : { type: "alternation", branches };
  }

  private readAlternative(): RegexNode {
    const items: RegexNode[] = [];
    while (this.at < this.chars.length && this.peek() !== "|" && this.peek() !== ")") items.push(this.readTerm());
    return items.length === 1 ? items[0]! : { type: "concat", items };
  }

  private readTerm(): RegexNode {
    const assertion = this.readAssertion();
    if (assertion) return assertion;
    return this.readQuantifier(this.readAtom());
  }

  private readAssertion(): RegexNode | null {
    const char = this.peek();
    const { multiline } = this.flags;
    let kind: AssertionKind | null = null;
    if (char === "^") kind = multiline ? "lineStart" : "textStart";
    else if (char === "$") kind = multiline ? "lineEnd" : "textEnd";
    else if (char === "\\" && this.peek(1) === "b") kind = "wordBoundary";
    else if (char === "\\" && this.peek(1) === "B") kind = "notWordBoundary";
    if (kind === null) {
      this.refuseLookaround();
      return null;
    }
    this.at += char === "\\" ? 2 : 1;
    return { type: "assertion", kind };
  }

  private refuseLookaround(): void {
    if (this.peek() !== "(" || this.peek(1) !== "?") return;
    const isBehind = this.peek(2) === "<";
    const sign = this.peek(isBehind ? 3 : 2);
    if (sign !== "=" && sign !== "!") return;
    const opener = this.chars.slice(this.at, this.at + (isBehind ? 4 : 3)).join("");
    throw new RegexProblem(`uses a ${isBehind ? "lookbehind" : "lookahead"} (${opener}…), ${LOOKAROUND_REFUSAL}`);
  }

  private readAtom(): RegexNode {
    const char = this.chars[this.at++]!;
    switch (char) {
      case ".":
        return { type: "set", set: this.flags.dotAll ? ANY_SET : DOT_SET };
      case "(":
        return this.readGroup();
      case "[":
        return { type: "set", set: this.readClass() };
      case "\\": {
        const escaped = this.readEscape(false);
        return { type: "set", set: this.folded(typeof escaped === "number" ? setOfCodePoint(escaped) : escaped) };
      }
      default:
        return { type: "set", set: this.folded(setOfCodePoint(char.codePointAt(0)!)) };
    }
  }

  /** After `(`: `?:` and `?<name>` open groups as plain ones do (captures play no part in a yes or no). */
  private readGroup(): RegexNode {
    if (this.peek() === "?") {
      if (this.peek(1) === ":") this.at += 2;
      else this.at = this.chars.indexOf(">", this.at) + 1;
    }
    const inner = this.readDisjunction();
    this.at++; // the `)`
    return inner;
  }

  private readQuantifier(atom: RegexNode): RegexNode {
    let min: number;
    let max: number;
    switch (this.peek()) {
      case "*":
        [min, max] = [0, Infinity];
        break;
      case "+":
        [min, max] = [1, Infinity];
        break;
      case "?":
        [min, max] = [0, 1];
        break;
      case "{": {
        const close = this.chars.indexOf("}", this.at);
        const [low, high] = this.chars.slice(this.at + 1, close).join("").split(",");
        min = Number(low);
        max = high === undefined ? min : high === "" ? Infinity : Number(high);
        this.at = close;
        break;
      }
      default:
        return atom;
    }
    this.at++;
    if (this.peek() === "?") this.at++;
    return { type: "repeat", min, max, node: atom };
  }

  /** After `[`: the class, folded before it is negated, as ECMAScript's CharacterClass under /iu. */
  private readClass(): CharSet {
    const isNegated = this.peek() === "^";
    if (isNegated) this.at++;
    const bounds: number[] = [];
    while (this.peek() !== "]") {
      const first = this.readClassAtom();
      // With u, a class escape cannot bound a range, so `-` after one is a literal dash.
      if (typeof first === "number" && this.peek() === "-" && this.peek(1) !== "]" && this.peek(1) !== undefined) {
        this.at++;
        bounds.push(first, this.readClassAtom() as number);
      } else if (typeof first === "number") {
        bounds.push(first, first);
      } else {
        for (const bound of first) bounds.push(bound);
      }
    }
    this.at++; // the `]`
    const set = this.folded(setOfRanges(bounds));
    return isNegated ? complementOfSet(set) : set;
  }

  private readClassAtom(): number | CharSet {
    const char = this.chars[this.at++]!;
    return char === "\\" ? this.readEscape(true) : char.codePointAt(0)!;
  }

  /** After `\`: a set for \d, \w, \s, \p{…} and their negations; a code point for the rest. */
  private readEscape(isInClass: boolean): number | CharSet {
    const start = this.at - 1;
    const char = this.chars[this.at++]!;
    if (char in CONTROL_ESCAPES) return CONTROL_ESCAPES[char]!;
    switch (char) {
      case "d":
        return DIGIT_SET;
      case "D":
        return complementOfSet(DIGIT_SET);
      case "w":
        return this.wordSet;
      case "W":
        return complementOfSet(this.wordSet);
      case "s":
        return SPACE_SET;
      case "S":
        return complementOfSet(SPACE_SET);
      case "p":
      case "P": {
        const close = this.chars.indexOf("}", this.at);
        const set = propertySet(this.chars.slice(this.at + 1, close).join(""));
        this.at = close + 1;
        return char === "P" ? complementOfSet(set) : set;
      }
      case "b":
        return 0x08; // inside a class; outside, \b is an assertion (readAssertion)
      case "0":
        return 0;
      case "c":
        return this.chars[this.at++]!.codePointAt(0)! % 32;
      case "x":
        return this.readHex(2);
      case "u":
        return this.readUnicodeEscape();
      case "k":
        throw new RegexProblem(`uses a back-reference (${this.chars.slice(start, this.chars.indexOf(">", this.at) + 1).join("")}), ${BACK_REFERENCE_REFUSAL}`);
      default:
        if (char >= "1" && char <= "9" && !isInClass) {
          let end = this.at;
          while (end < this.chars.length && this.chars[end]! >= "0" && this.chars[end]! <= "9") end++;
          throw new RegexProblem(`uses a back-reference (${this.chars.slice(start, end).join("")}), ${BACK_REFERENCE_REFUSAL}`);
        }
        return char.codePointAt(0)!; // an identity escape: \. \* \/ \- …
    }
  }

  /** After `\u`: `{…}`, or four digits, where a lead and a trail surrogate written so make one code point. */
  private readUnicodeEscape(): number {
    if (this.peek() === "{") {
      const close = this.chars.indexOf("}", this.at);
      const codePoint = parseInt(this.chars.slice(this.at + 1, close).join(""), 16);
      this.at = close + 1;
      return codePoint;
    }
    const lead = this.readHex(4);
    if (lead >= 0xd800 && lead <= 0xdbff && this.peek() === "\\" && this.peek(1) === "u" && this.peek(2) !== "{") {
      const trail = parseInt(this.chars.slice(this.at + 2, this.at + 6).join(""), 16);
      if (trail >= 0xdc00 && trail <= 0xdfff) {
        this.at += 6;
        return 0x10000 + ((lead - 0xd800) << 10) + (trail - 0xdc00);
      }
    }
    return lead;
  }

  private readHex(digits: number): number {
    const value = parseInt(this.chars.slice(this.at, this.at + digits).join(""), 16);
    this.at += digits;
    return value;
  }

  private folded(set: CharSet): CharSet {
    return this.flags.ignoreCase ? closeOverCase(set) : set;
  }

  private peek(ahead = 0): string | undefined {
    return this.chars[this.at + ahead];
  }
}
