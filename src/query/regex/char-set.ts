// Sets of code points as sorted ranges: what one position of a pattern may match, and the fixed sets
// of JavaScript's escapes (\d \w \s, `.`). Case closure and \p{…} are unicode-tables.ts's; splitting
// the sets into the matcher's classes is matcher.ts's.

export const MAX_CODE_POINT = 0x10ffff;

/** Flat [lo0, hi0, lo1, hi1, …]: inclusive bounds, sorted, neither overlapping nor touching. */
export type CharSet = readonly number[];

export const EMPTY_SET: CharSet = [];
export const ANY_SET: CharSet = [0, MAX_CODE_POINT];

/** Bounds in any order and overlap, normalised. */
export function setOfRanges(bounds: readonly number[]): CharSet {
  const pairs: Array<[number, number]> = [];
  for (let i = 0; i < bounds.length; i += 2) pairs.push([bounds[i]!, bounds[i + 1]!]);
  pairs.sort((a, b) => a[0] - b[0]);
  const merged: number[] = [];
  for (const [lo, hi] of pairs) {
    const last = merged.length - 1;
    // Touching ranges merge too, so that equal sets have equal bounds (setKey relies on it).
    if (last > 0 && lo <= merged[last]! + 1) merged[last] = Math.max(merged[last]!, hi);
    else merged.push(lo, hi);
  }
  return merged;
}

export function setOfCodePoint(codePoint: number): CharSet {
  return [codePoint, codePoint];
}

export function unionOfSets(sets: readonly CharSet[]): CharSet {
  return setOfRanges(sets.flat());
}

export function complementOfSet(set: CharSet): CharSet {
  const result: number[] = [];
  let next = 0;
  for (let i = 0; i < set.length; i += 2) {
    if (set[i]! > next) result.push(next, set[i]! - 1);
    next = set[i + 1]! + 1;
  }
  if (next <= MAX_CODE_POINT) result.push(next, MAX_CODE_POINT);
  return result;
}

export function hasCodePoint(set: CharSet, codePoint: number): boolean {
  let lo = 0;
  let hi = set.length / 2 - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (codePoint < set[2 * mid]!) hi = mid - 1;
    else if (codePoint > set[2 * mid + 1]!) lo = mid + 1;
    else return true;
  }
  return false;
}

/** The one code point of a set that holds exactly one, else undefined. */
export function singleCodePointOf(set: CharSet): number | undefined {
  return set.length === 2 && set[0] === set[1] ? set[0] : undefined;
}

export function setKey(set: CharSet): string {
  return set.join(",");
}

// The sets ECMAScript fixes (RegExp "CharacterClassEscape", "WhiteSpace", "LineTerminator").
export const DIGIT_SET = setOfRanges([0x30, 0x39]);
export const BASIC_WORD_SET = setOfRanges([0x30, 0x39, 0x41, 0x5a, 0x5f, 0x5f, 0x61, 0x7a]);
export const LINE_TERMINATOR_SET = setOfRanges([0x0a, 0x0a, 0x0d, 0x0d, 0x2028, 0x2029]);
export const SPACE_SET = setOfRanges([
  0x09, 0x0d, 0x20, 0x20, 0xa0, 0xa0, 0x1680, 0x1680, 0x2000, 0x200a,
  0x2028, 0x2029, 0x202f, 0x202f, 0x205f, 0x205f, 0x3000, 0x3000, 0xfeff, 0xfeff,
]);
export const DOT_SET = complementOfSet(LINE_TERMINATOR_SET);
