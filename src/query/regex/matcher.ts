// Runs a pattern's automaton (nfa.ts) over a text in time linear in its length, as RE2 and Rust's
// regex do: a DFA built lazily, each of its states a set of NFA states, cached up to
// MAX_DFA_CACHE_WORDS and flushed when full. It answers only whether some part of the text matches.

import { intervalOf, partitionCodePoints, TABLED_CODE_POINTS } from "./char-classes.ts";
import type { CharSet } from "./char-set.ts";
import { ASSERTION_BITS, STATE_ASSERTION, STATE_CHAR, STATE_MATCH, STATE_SPLIT, type Nfa } from "./nfa.ts";
import { compileStartSearch, type StartSearch } from "./start-classes.ts";
import { invalidFilter } from "../../errors.ts";

/**
 * The memory one pattern's DFA may hold, in 32-bit words (a state costs a transition per class
 * and its set of NFA states): 256 KB. Past it the cache is emptied and rebuilt as the text is read,
 * which bounds memory and keeps the time linear (each step then costs at most one pass over the NFA).
 */
export const MAX_DFA_CACHE_WORDS = 1 << 16;
/**
 * The work one test may spend building DFA states, in NFA states visited (tens to hundreds of ns each): a
 * pattern whose states multiply on its text (`[ab]{1000}` on a long run of a's and b's) would
 * otherwise hold the event loop for seconds on one long text, linear as it is. Normal patterns
 * build a few dozen states once and reuse them; past this the filter is refused.
 */
export const MAX_TEST_WORK = 500_000;

// Transitions that are not states.
const UNKNOWN = -1;
const MATCH = -2;
const NO_MATCH = -3;
/** Back to the start state alone, nothing pending: the search for a start takes over (restart). */
const RESTART = -4;
/** The walk over the prefix stopped before its end (an assertion failed): the characters are read one by one. */
const NO_SHORTCUT = -5;

// What a DFA state knows of the character before its position, kept only where an assertion asks.
const AT_TEXT_START = 1;
const AFTER_WORD = 2;
const AFTER_LINE_TERMINATOR = 4;

const { textStart, lineStart, textEnd, lineEnd, wordBoundary, notWordBoundary } = ASSERTION_BITS;
const ALL_ASSERTIONS = textStart | lineStart | textEnd | lineEnd | wordBoundary | notWordBoundary;
const BIT_COMBINATIONS = (AT_TEXT_START | AFTER_WORD | AFTER_LINE_TERMINATOR) + 1;
const INITIAL_CAPACITY = 16;

export interface MatcherOptions {
  /** What \b counts as word characters, and what ^ and $ with m count as line ends. */
  readonly wordSet: CharSet;
  readonly lineTerminatorSet: CharSet;
  /** A text every match starts with (literal.ts), found by indexOf to start the automaton; or "". */
  readonly prefix: string;
}

export class LazyDfa {
  private readonly nfa: Nfa;
  private readonly memberships: readonly Uint8Array[];
  private readonly tabled: Int32Array;
  private readonly starts: Int32Array;
  private readonly classOfInterval: Int32Array;
  /** Classes and one more, the end of the text. */
  private readonly stride: number;
  private readonly endClass: number;
  /** Per class: AFTER_WORD and AFTER_LINE_TERMINATOR, as far as the pattern asks. */
  private readonly classBits: Int32Array;
  private readonly startBits: number;
  /** When only the start of the text can begin a match: then a search stops once no state is left. */
  private readonly isAnchored: boolean;
  /** How a search finds where a match may start, if it does: indexOf of the prefix, or V8 (start-classes.ts). */
  private readonly startPrefix: string;
  private readonly startSearch: StartSearch | null;
  /**
   * Whether the pattern matches an empty text between the halves of a surrogate pair, where only
   * \B holds (both halves are non-word characters). ECMAScript never tries that position under u,
   * but V8's search does, and finds such a match (/\B/u.test("k😀a") is true in Node).
   */
  readonly matchesInsidePairs: boolean;

  private transitions: Int32Array;
  private stateSets: Int32Array[] = [];
  private stateBits: number[] = [];
  /** DFA states by a hash of their bits and set: the ids with that hash. */
  private stateIds = new Map<number, number[]>();
  private cacheWords = 0;
  private flushes = 0;
  /** What the test under way has spent in step(), against MAX_TEST_WORK. */
  private work = 0;
  private startState = 0;
  /** Per bits of the character before: the start state's row, and the row after the prefix (or MATCH, NO_SHORTCUT); UNKNOWN until needed. */
  private startRows = new Int32Array(BIT_COMBINATIONS).fill(UNKNOWN);
  private afterPrefixRows = new Int32Array(BIT_COMBINATIONS).fill(UNKNOWN);
  /** Where restart() left the text. */
  private position = 0;

  // Scratch for the ε-closure: a state is visited when its mark is the current one.
  private readonly marks: Int32Array;
  private mark = 0;
  private readonly stack: number[] = [];
  private readonly reached: number[] = [];
  /** The set a step leads to, before it is known to be new: copied only then. */
  private readonly targets: Int32Array;

  constructor(nfa: Nfa, { wordSet, lineTerminatorSet, prefix }: MatcherOptions) {
    this.nfa = nfa;
    const asksWord = (nfa.assertions & (wordBoundary | notWordBoundary)) !== 0;
    const asksLine = (nfa.assertions & (lineStart | lineEnd)) !== 0;
    const classes = partitionCodePoints([...nfa.sets, wordSet, lineTerminatorSet]);
    this.memberships = classes.memberships;
    this.tabled = classes.tabled;
    this.starts = classes.starts;
    this.classOfInterval = classes.classOfInterval;
    this.endClass = classes.count;
    this.stride = classes.count + 1;
    const isWord = classes.memberships[nfa.sets.length]!;
    const isLineTerminator = classes.memberships[nfa.sets.length + 1]!;
    this.classBits = new Int32Array(this.stride);
    for (let cls = 0; cls < classes.count; cls++) {
      this.classBits[cls] = (asksWord && isWord[cls] ? AFTER_WORD : 0) | (asksLine && isLineTerminator[cls] ? AFTER_LINE_TERMINATOR : 0);
    }
    this.startBits = nfa.assertions & (textStart | lineStart) ? AT_TEXT_START : 0;
    this.marks = new Int32Array(nfa.kinds.length);
    this.targets = new Int32Array(nfa.kinds.length);
    // Anywhere but the start, nothing can be reached from the start state: the pattern is anchored.
    this.isAnchored = !this.close([nfa.start], ALL_ASSERTIONS & ~textStart) && this.reached.length === 0;
    this.matchesInsidePairs = this.close([nfa.start], notWordBoundary);
    this.startPrefix = this.isAnchored ? "" : prefix;
    this.startSearch = this.isAnchored || prefix !== "" ? null : compileStartSearch(nfa);
    this.transitions = new Int32Array(INITIAL_CAPACITY * this.stride).fill(UNKNOWN);
    this.startState = this.intern(Int32Array.of(nfa.start), this.startBits);
  }

  test(text: string): boolean {
    this.work = 0;
    const { stride, tabled, starts, classOfInterval } = this;
    // A state is read as its row's offset in `transitions`, which spares a multiplication a character.
    let row = this.startState * stride;
    let i = 0;
    if (this.startSearch || this.startPrefix) {
      row = this.restart(text, 0);
      if (row < 0) return row === MATCH;
      i = this.position;
    }
    let transitions = this.transitions;
    const length = text.length;
    while (i < length) {
      let cp = text.charCodeAt(i++);
      let cls: number;
      if (cp < TABLED_CODE_POINTS) {
        cls = tabled[cp]!;
      } else {
        if (cp >= 0xd800 && cp <= 0xdbff && i < length) {
          const trail = text.charCodeAt(i);
          if (trail >= 0xdc00 && trail <= 0xdfff) {
            cp = 0x10000 + ((cp - 0xd800) << 10) + (trail - 0xdc00);
            i++;
          }
        }
        cls = classOfInterval[intervalOf(starts, cp)]!;
      }
      let next = transitions[row + cls]!;
      if (next < 0) {
        if (next === UNKNOWN) {
          next = this.step(row / stride, cls);
          transitions = this.transitions;
        }
        if (next === MATCH) return true;
        if (next === NO_MATCH) return false;
        if (next === RESTART) {
          row = this.restart(text, i);
          if (row < 0) return row === MATCH;
          i = this.position;
          transitions = this.transitions;
          continue;
        }
      }
      row = next;
    }
    const last = transitions[row + this.endClass]!;
    return (last === UNKNOWN ? this.step(row / stride, this.endClass) : last) === MATCH;
  }

  /**
   * The transition from state `from` on `cls` as a row offset (or MATCH, NO_MATCH), computed and
   * remembered unless the cache was flushed meanwhile.
   */
  private step(from: number, cls: number): number {
    this.work += this.stateSets[from]!.length + 1;
    if (this.work > MAX_TEST_WORK) {
      throw invalidFilter(
        "The $regex needs too much work on a text it was tried on: its automaton keeps too many states alive at once, as a count over a class such as [ab]{1000} does. Lower its {n,m} counts, or anchor it (^…).",
        { maxWork: MAX_TEST_WORK },
      );
    }
    const flushes = this.flushes;
    const next = this.computeStep(from, cls);
    const transition = next < 0 ? next : next * this.stride;
    if (this.flushes === flushes) this.transitions[from * this.stride + cls] = transition;
    return transition;
  }

  /**
   * The assertions are decided here, where both neighbours of the position are known: the one
   * before from the state's bits, the one after from `cls` (RE2 does the same). A state holds
   * the NFA states before their ε-closure, which depends on that next character.
   */
  private computeStep(from: number, cls: number): number {
    if (this.close(this.stateSets[from]!, this.assertionsHolding(this.stateBits[from]!, cls))) return MATCH;
    if (cls === this.endClass) return NO_MATCH;
    const { next, setOf, start } = this.nfa;
    const mark = this.nextMark();
    const { targets, marks } = this;
    let count = 0;
    for (const state of this.reached) {
      const target = next[state]!;
      if (this.memberships[setOf[state]!]![cls] && marks[target] !== mark) {
        marks[target] = mark;
        targets[count++] = target;
      }
    }
    // An unanchored search starts a match at every position, as RegExp.prototype.test does.
    if (!this.isAnchored && marks[start] !== mark) targets[count++] = start;
    if (count === 0) return NO_MATCH;
    if ((this.startSearch || this.startPrefix) && count === 1 && targets[0] === start) return RESTART;
    return this.intern(targets.subarray(0, count).sort(), this.classBits[cls]!);
  }

  /**
   * Finds, at or after `from`, where the next match may start, and returns the row to go on
   * from there (this.position), or MATCH or NO_MATCH. After a prefix found by indexOf, the
   * automaton's walk over it is remembered, so that its characters are not read again.
   */
  private restart(text: string, from: number): number {
    const at = this.nextStart(text, from);
    if (at < 0) return NO_MATCH;
    const bits = at === 0 ? this.startBits : this.bitsBefore(text, at);
    if (this.startPrefix) {
      let after = this.afterPrefixRows[bits]!;
      if (after === UNKNOWN) after = this.afterPrefixRows[bits] = this.walkPrefix(bits);
      if (after === MATCH) return MATCH;
      if (after !== NO_SHORTCUT) {
        this.position = at + this.startPrefix.length;
        return after;
      }
    }
    this.position = at;
    return this.startRowFor(bits);
  }

  private nextStart(text: string, from: number): number {
    if (this.startPrefix) return text.indexOf(this.startPrefix, from);
    const { search, length } = this.startSearch!;
    search.lastIndex = from;
    return search.test(text) ? search.lastIndex - length : -1;
  }

  /** The DFA walked over the prefix from the start state: the row it ends on, MATCH, or NO_SHORTCUT. */
  private walkPrefix(bits: number): number {
    let row = this.startRowFor(bits);
    for (const char of this.startPrefix) {
      const cp = char.codePointAt(0)!;
      const cls = cp < TABLED_CODE_POINTS ? this.tabled[cp]! : this.classOfInterval[intervalOf(this.starts, cp)]!;
      let next = this.transitions[row + cls]!;
      if (next === UNKNOWN) next = this.step(row / this.stride, cls);
      if (next === MATCH) return MATCH;
      if (next < 0) return NO_SHORTCUT;
      row = next;
    }
    return row;
  }

  /** The bits of the code point before `at` (a pair read whole). */
  private bitsBefore(text: string, at: number): number {
    let before = text.charCodeAt(at - 1);
    if (before >= 0xdc00 && before <= 0xdfff && at >= 2) {
      const lead = text.charCodeAt(at - 2);
      if (lead >= 0xd800 && lead <= 0xdbff) before = 0x10000 + ((lead - 0xd800) << 10) + (before - 0xdc00);
    }
    return this.classBits[before < TABLED_CODE_POINTS ? this.tabled[before]! : this.classOfInterval[intervalOf(this.starts, before)]!]!;
  }

  /** The row of the start state alone, after a character with `bits`. */
  private startRowFor(bits: number): number {
    let row = this.startRows[bits]!;
    if (row === UNKNOWN) {
      const state = this.intern(Int32Array.of(this.nfa.start), bits);
      row = this.startRows[bits] = state * this.stride;
    }
    return row;
  }

  private assertionsHolding(before: number, cls: number): number {
    const atEnd = cls === this.endClass;
    const after = atEnd ? 0 : this.classBits[cls]!;
    let holds = (before & AFTER_WORD) === (after & AFTER_WORD) ? notWordBoundary : wordBoundary;
    if (before & AT_TEXT_START) holds |= textStart | lineStart;
    if (before & AFTER_LINE_TERMINATOR) holds |= lineStart;
    if (atEnd) holds |= textEnd | lineEnd;
    if (after & AFTER_LINE_TERMINATOR) holds |= lineEnd;
    return holds;
  }

  /** Follows ε-edges from `from` through the assertions that hold; true at the match state, else the CHAR states are left in `reached`. */
  private close(from: ArrayLike<number>, holds: number): boolean {
    const { kinds, next, targets, assertionOf } = this.nfa;
    const { marks, stack, reached } = this;
    const mark = this.nextMark();
    reached.length = 0;
    for (let i = from.length - 1; i >= 0; i--) stack.push(from[i]!);
    while (stack.length > 0) {
      const state = stack.pop()!;
      if (marks[state] === mark) continue;
      marks[state] = mark;
      switch (kinds[state]) {
        case STATE_CHAR:
          reached.push(state);
          break;
        case STATE_MATCH:
          stack.length = 0;
          return true;
        case STATE_SPLIT: {
          const out = targets[state]!;
          for (let i = out.length - 1; i >= 0; i--) stack.push(out[i]!);
          break;
        }
        case STATE_ASSERTION:
          if (assertionOf[state]! & holds) stack.push(next[state]!);
          break;
      }
    }
    return false;
  }

  private nextMark(): number {
    if (this.mark === 0x7fffffff) {
      this.marks.fill(0);
      this.mark = 0;
    }
    return ++this.mark;
  }

  /** The id of the DFA state of `set` (sorted; copied when new) after a character with `bits`. */
  private intern(set: Int32Array, bits: number): number {
    const hash = hashOfState(set, bits);
    const sameHash = this.stateIds.get(hash);
    const known = sameHash?.find((id) => this.stateBits[id] === bits && isSameSet(this.stateSets[id]!, set));
    if (known !== undefined) return known;
    const words = this.stride + set.length;
    // The start state alone may stay past the budget: flushing it would only rebuild it.
    if (this.cacheWords + words > MAX_DFA_CACHE_WORDS && this.stateSets.length > 1) {
      this.flush();
      return this.intern(set, bits);
    }
    const id = this.stateSets.length;
    this.stateSets.push(set.slice());
    this.stateBits.push(bits);
    if (sameHash) sameHash.push(id);
    else this.stateIds.set(hash, [id]);
    this.cacheWords += words;
    if ((id + 1) * this.stride > this.transitions.length) {
      const grown = new Int32Array(this.transitions.length * 2).fill(UNKNOWN);
      grown.set(this.transitions);
      this.transitions = grown;
    }
    return id;
  }

  private flush(): void {
    const start = this.stateSets[this.startState]!;
    this.stateSets = [];
    this.stateBits = [];
    this.stateIds = new Map();
    this.cacheWords = 0;
    this.flushes++;
    this.transitions.fill(UNKNOWN);
    this.startRows.fill(UNKNOWN);
    this.afterPrefixRows.fill(UNKNOWN);
    this.startState = this.intern(start, this.startBits);
  }
}

function hashOfState(set: Int32Array, bits: number): number {
  let hash = Math.imul(bits + 1, 0x9e3779b1);
  for (let i = 0; i < set.length; i++) hash = Math.imul(hash ^ set[i]!, 0x01000193);
  return hash;
}

function isSameSet(a: Int32Array, b: Int32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
