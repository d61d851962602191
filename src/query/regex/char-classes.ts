// Splits the code points into the classes that every set of one pattern treats alike, so that the
// matcher keeps a transition per class rather than per character (RE2's byte classes). Which sets
// there are is nfa.ts's; reading a text is matcher.ts's.

import { MAX_CODE_POINT, type CharSet } from "./char-set.ts";

/** Code points below this are classed by a table; the others by a binary search over intervals. */
export const TABLED_CODE_POINTS = 256;

export interface CharClasses {
  readonly count: number;
  /** The class of each code point below TABLED_CODE_POINTS. */
  readonly tabled: Int32Array;
  /** Where each interval of code points with one class starts, ascending from 0. */
  readonly starts: Int32Array;
  readonly classOfInterval: Int32Array;
  /** For each set given, in order: 1 for each class inside it. */
  readonly memberships: readonly Uint8Array[];
}

export function partitionCodePoints(sets: readonly CharSet[]): CharClasses {
  const starts = intervalStarts(sets);
  // Which sets hold each interval, as a key: intervals with equal keys share a class.
  const holders: string[] = new Array<string>(starts.length).fill("");
  sets.forEach((set, index) => {
    forEachInterval(starts, set, (interval) => {
      holders[interval] += `${index},`;
    });
  });
  const classOfKey = new Map<string, number>();
  const classOfInterval = Int32Array.from(holders, (key) => {
    let id = classOfKey.get(key);
    if (id === undefined) classOfKey.set(key, (id = classOfKey.size));
    return id;
  });
  const count = classOfKey.size;
  const memberships = sets.map((set) => {
    const membership = new Uint8Array(count);
    forEachInterval(starts, set, (interval) => {
      membership[classOfInterval[interval]!] = 1;
    });
    return membership;
  });
  const tabled = new Int32Array(TABLED_CODE_POINTS);
  for (let cp = 0; cp < TABLED_CODE_POINTS; cp++) tabled[cp] = classOfInterval[intervalOf(starts, cp)]!;
  return { count, tabled, starts, classOfInterval, memberships };
}

export function classOfCodePoint(classes: CharClasses, codePoint: number): number {
  return codePoint < TABLED_CODE_POINTS ? classes.tabled[codePoint]! : classes.classOfInterval[intervalOf(classes.starts, codePoint)]!;
}

/** The index of the last start at or below `codePoint`. */
export function intervalOf(starts: Int32Array, codePoint: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= codePoint) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

function intervalStarts(sets: readonly CharSet[]): Int32Array {
  const bounds = new Set<number>([0]);
  for (const set of sets) {
    for (let i = 0; i < set.length; i += 2) {
      bounds.add(set[i]!);
      if (set[i + 1]! < MAX_CODE_POINT) bounds.add(set[i + 1]! + 1);
    }
  }
  return Int32Array.from(bounds).sort();
}

function forEachInterval(starts: Int32Array, set: CharSet, visit: (interval: number) => void): void {
  for (let i = 0; i < set.length; i += 2) {
    for (let interval = intervalOf(starts, set[i]!); interval < starts.length && starts[interval]! <= set[i + 1]!; interval++) visit(interval);
  }
}
