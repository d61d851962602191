// Where in a text a match can start, found by V8: the classes of the first few characters of every
// match, as a RegExp of fixed length that V8 searches for natively. A search for a fixed run of
// classes cannot backtrack, so it stays linear; the automaton (matcher.ts) then resumes there.

import { setOfRanges, type CharSet } from "./char-set.ts";
import { STATE_ASSERTION, STATE_CHAR, STATE_MATCH, STATE_SPLIT, type Nfa } from "./nfa.ts";

/** Classes searched for: more make the search more selective, and each costs V8 a test per candidate. */
export const MAX_START_CLASSES = 8;

// A search pays off only when it skips most of a text. Lower-case letters fill most texts, so the
// first class may hold few of them, and few other printable ASCII characters.
const MAX_LOWER_CASE_LETTERS = 2;
const MAX_OTHER_PRINTABLE = 20;

export interface StartSearch {
  /** Global: test() from `lastIndex` leaves `lastIndex` after the run of classes it found. */
  readonly search: RegExp;
  /** UTF-16 units to step back from `lastIndex` to where the run starts. */
  readonly length: number;
}

/**
 * The search, or null when the pattern gains nothing from one (it can match an empty text, or its
 * first characters are common).
 */
export function compileStartSearch(nfa: Nfa): StartSearch | null {
  const classes = startClassesOf(nfa);
  if (classes.length === 0 || !isSelective(classes[0]!)) return null;
  const source = classes.map(classSource).join("");
  // Code points below 0x10000 are one unit each, so the run's start is known without a lookahead,
  // which would double V8's time.
  const isOneUnitEach = classes.every((set) => set.length === 0 || set[set.length - 1]! <= 0xffff);
  if (isOneUnitEach) return { search: new RegExp(source, "gu"), length: classes.length };
  return { search: new RegExp(`(?=${source})`, "gu"), length: 0 };
}

/**
 * The sets the first characters of every match fall in, position by position, taking every
 * assertion as holding: so each is a superset, and a text without them holds no match. They stop
 * where some match may already have ended.
 */
function startClassesOf(nfa: Nfa): CharSet[] {
  const classes: CharSet[] = [];
  let frontier = [nfa.start];
  while (classes.length < MAX_START_CLASSES) {
    const reached = closeAssumingAssertions(nfa, frontier);
    if (reached === null || reached.length === 0) break;
    const bounds: number[] = [];
    for (const state of reached) for (const bound of nfa.sets[nfa.setOf[state]!]!) bounds.push(bound);
    classes.push(setOfRanges(bounds));
    frontier = reached.map((state) => nfa.next[state]!);
  }
  return classes;
}

/** The CHAR states ε-reachable from `from` when every assertion holds; null when the match state is. */
function closeAssumingAssertions(nfa: Nfa, from: readonly number[]): number[] | null {
  const seen = new Set<number>();
  const stack = [...from];
  const reached: number[] = [];
  while (stack.length > 0) {
    const state = stack.pop()!;
    if (seen.has(state)) continue;
    seen.add(state);
    switch (nfa.kinds[state]) {
      case STATE_MATCH:
        return null;
      case STATE_CHAR:
        reached.push(state);
        break;
      case STATE_SPLIT:
        stack.push(...nfa.targets[state]!);
        break;
      case STATE_ASSERTION:
        stack.push(nfa.next[state]!);
        break;
    }
  }
  return reached;
}

function isSelective(set: CharSet): boolean {
  let lowerCase = 0;
  let other = 0;
  for (let i = 0; i < set.length; i += 2) {
    for (let cp = Math.max(set[i]!, 0x20); cp <= Math.min(set[i + 1]!, 0x7e); cp++) {
      if (cp >= 0x61 && cp <= 0x7a) lowerCase++;
      else other++;
    }
  }
  return lowerCase <= MAX_LOWER_CASE_LETTERS && other <= MAX_OTHER_PRINTABLE;
}

function classSource(set: CharSet): string {
  let source = "[";
  for (let i = 0; i < set.length; i += 2) {
    source += `\\u{${set[i]!.toString(16)}}`;
    if (set[i + 1]! > set[i]!) source += `-\\u{${set[i + 1]!.toString(16)}}`;
  }
  return `${source}]`;
}
