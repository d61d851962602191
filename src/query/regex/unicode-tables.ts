// The code point sets only the JavaScript engine knows exactly: \p{…} properties and the case classes
// of /iu (Unicode simple case folding). Both are read out of V8 itself, so they follow the Unicode
// version of the running Node exactly as `new RegExp(…, "u")` does. Range arithmetic is char-set.ts's.

import { Buffer } from "node:buffer";
import { setOfRanges, type CharSet } from "./char-set.ts";

/** Property sets kept, by the text between the braces; each costs one scan of every code point. */
export const MAX_CACHED_PROPERTIES = 64;

const FIRST_ASTRAL = 0x10000;

/**
 * The scanned string holds every code point once. Lone surrogates are placed lows first, so that no
 * high surrogate stands before a low one (the two would pair into one astral code point).
 */
const SEGMENTS: ReadonlyArray<readonly [first: number, last: number]> = [
  [0x0000, 0xd7ff],
  [0xdc00, 0xdfff],
  [0xd800, 0xdbff],
  [0xe000, 0xffff],
  [FIRST_ASTRAL, 0x10ffff],
];

interface Segment {
  readonly first: number;
  readonly last: number;
  readonly startUnit: number;
  /** UTF-16 units per code point. */
  readonly width: 1 | 2;
}

const LAID_OUT: readonly Segment[] = (() => {
  let startUnit = 0;
  return SEGMENTS.map(([first, last]) => {
    const width = first >= FIRST_ASTRAL ? 2 : 1;
    const segment = { first, last, startUnit, width } as const;
    startUnit += (last - first + 1) * width;
    return segment;
  });
})();

function encodeCodePoints(segments: readonly Segment[]): string {
  const last = segments[segments.length - 1]!;
  const base = segments[0]!.startUnit;
  const units = new Uint16Array(last.startUnit - base + (last.last - last.first + 1) * last.width);
  let j = 0;
  for (const { first, last: end, width } of segments) {
    for (let cp = first; cp <= end; cp++) {
      if (width === 1) units[j++] = cp;
      else {
        units[j++] = 0xd800 + ((cp - FIRST_ASTRAL) >> 10);
        units[j++] = 0xdc00 + ((cp - FIRST_ASTRAL) & 0x3ff);
      }
    }
  }
  return Buffer.from(units.buffer).toString("utf16le");
}

// About 4 MB, needed only when a new property or the case table is read: held weakly, so that
// the collector may take it back between such reads.
let everyCodePointRef: WeakRef<{ text: string }> | undefined;

function everyCodePoint(): string {
  let held = everyCodePointRef?.deref();
  if (!held) {
    held = { text: encodeCodePoints(LAID_OUT) };
    everyCodePointRef = new WeakRef(held);
  }
  return held.text;
}

/** The code points of the units [from, to) of the scanned string, as bounds. */
function pushCodePointsOfUnits(from: number, to: number, bounds: number[]): void {
  for (const { first, last, startUnit, width } of LAID_OUT) {
    const endUnit = startUnit + (last - first + 1) * width;
    const lo = Math.max(from, startUnit);
    const hi = Math.min(to, endUnit);
    if (lo < hi) bounds.push(first + (lo - startUnit) / width, first + (hi - startUnit) / width - 1);
  }
}

/**
 * The set a class matches, read as runs over every code point. Two sticky expressions take turns,
 * one consuming a run inside the set, the other a run outside it: V8 walks a run quickly, while
 * searching for the next member from every position would cost several times more.
 */
function scanSet(inside: RegExp, outside: RegExp): CharSet {
  const text = everyCodePoint();
  const bounds: number[] = [];
  let at = 0;
  while (at < text.length) {
    inside.lastIndex = at;
    if (inside.test(text)) {
      pushCodePointsOfUnits(at, inside.lastIndex, bounds);
      at = inside.lastIndex;
    } else {
      outside.lastIndex = at;
      outside.test(text);
      at = outside.lastIndex;
    }
  }
  return setOfRanges(bounds);
}

const propertySets = new Map<string, CharSet>();

/** The set of `\p{name}`, where `name` is the text between the braces (already valid, see parse.ts). */
export function propertySet(name: string): CharSet {
  let set = propertySets.get(name);
  if (set) {
    // Refreshed, so that the map forgets the least recently used first.
    propertySets.delete(name);
  } else {
    set = scanSet(new RegExp(`\\p{${name}}+`, "uy"), new RegExp(`\\P{${name}}+`, "uy"));
    if (propertySets.size >= MAX_CACHED_PROPERTIES) propertySets.delete(propertySets.keys().next().value!);
  }
  propertySets.set(name, set);
  return set;
}

interface CaseClasses {
  /** Each code point that has case partners → its class (itself included), sorted. */
  readonly classOf: ReadonlyMap<number, readonly number[]>;
  /** The keys of classOf, sorted. */
  readonly members: Int32Array;
}

let caseClasses: CaseClasses | undefined;

/**
 * Adds to `set` every code point that /iu treats as equal to one of its members: ECMAScript's
 * Canonicalize with the u flag is simple case folding, and a class matches a character when one of
 * its members folds as that character does. Negation is the caller's, after the closure.
 */
export function closeOverCase(set: CharSet): CharSet {
  const { classOf, members } = (caseClasses ??= buildCaseClasses());
  const added: number[] = [];
  for (let i = 0; i < set.length; i += 2) {
    for (let m = lowerBound(members, set[i]!); m < members.length && members[m]! <= set[i + 1]!; m++) {
      for (const partner of classOf.get(members[m]!)!) added.push(partner, partner);
    }
  }
  return added.length === 0 ? set : setOfRanges([...set, ...added]);
}

function lowerBound(sorted: Int32Array, value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Links each code point that case-maps to another (the property Changes_When_Casemapped) to its
 * lower and upper case where those are one code point, and the letters whose mappings are longer
 * (ΐ and ΐ, ﬅ and ﬆ) by their compatibility decomposition. Then V8 has the last word: each group
 * but a plain pair of cases is split by asking /iu which members it finds equal, so a wrong link
 * costs nothing (ı upper-cases to I, yet /ı/iu does not match I).
 */
function buildCaseClasses(): CaseClasses {
  const links = new LinkedGroups();
  const byDecomposition = new Map<string, number>();
  const decomposed = new Set<number>();
  const mapped = propertySet("Changes_When_Casemapped");
  for (let i = 0; i < mapped.length; i += 2) {
    for (let cp = mapped[i]!; cp <= mapped[i + 1]!; cp++) {
      const char = String.fromCodePoint(cp);
      for (const other of [char.toLowerCase(), char.toUpperCase()]) {
        if (other === char) continue;
        if (other.length === [...other][0]!.length) {
          links.link(cp, other.codePointAt(0)!);
          continue;
        }
        const key = char.normalize("NFKD").toLowerCase();
        const first = byDecomposition.get(key);
        if (first === undefined) byDecomposition.set(key, cp);
        decomposed.add(cp);
        links.link(cp, first ?? cp);
      }
    }
  }
  const classOf = new Map<number, readonly number[]>();
  for (const group of links.groups()) {
    const isPlainPair = group.length === 2 && !group.some((cp) => decomposed.has(cp));
    for (const members of isPlainPair ? [group.sort((a, b) => a - b)] : splitByEngine(group)) {
      if (members.length > 1) for (const member of members) classOf.set(member, members);
    }
  }
  return { classOf, members: Int32Array.from([...classOf.keys()].sort((a, b) => a - b)) };
}

function splitByEngine(group: readonly number[]): number[][] {
  const classes: number[][] = [];
  let rest = [...group].sort((a, b) => a - b);
  while (rest.length > 0) {
    const equal = new RegExp(`^\\u{${rest[0]!.toString(16)}}$`, "iu");
    classes.push(rest.filter((cp) => equal.test(String.fromCodePoint(cp))));
    rest = rest.filter((cp) => !equal.test(String.fromCodePoint(cp)));
  }
  return classes;
}

/** Union–find over code points. */
class LinkedGroups {
  private readonly parent = new Map<number, number>();

  link(a: number, b: number): void {
    const rootA = this.rootOf(a);
    const rootB = this.rootOf(b);
    if (rootA !== rootB) this.parent.set(rootA, rootB);
  }

  groups(): number[][] {
    const byRoot = new Map<number, number[]>();
    for (const cp of this.parent.keys()) {
      const root = this.rootOf(cp);
      const group = byRoot.get(root);
      if (group) group.push(cp);
      else byRoot.set(root, [cp]);
    }
    return [...byRoot.values()];
  }

  private rootOf(cp: number): number {
    let root = cp;
    for (let up = this.parent.get(root); up !== undefined && up !== root; up = this.parent.get(root)) root = up;
    if (!this.parent.has(cp)) this.parent.set(cp, cp);
    // Path halving is not needed: groups hold a handful of code points.
    return root;
  }
}
