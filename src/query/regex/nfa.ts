// Thompson's construction: a pattern's tree (parse.ts) as states joined by ε-edges, counted
// repetition written out copy by copy, refused past MAX_REGEX_STATES. Running the states over a
// text is matcher.ts's.

import { setKey, type CharSet } from "./char-set.ts";
import type { AssertionKind, RegexNode } from "./parse.ts";
import { RegexProblem } from "./regex-problem.ts";

/**
 * The most states a pattern's automaton may have. Each step of a match may visit every state, and
 * the matcher caches sets of them, so the bound keeps both the time per character and the memory
 * small; 256 characters of pattern without counted repetition stay far below it.
 */
export const MAX_REGEX_STATES = 2000;

/** Consumes one code point of `sets[setOf[state]]`, then goes to `next[state]`. */
export const STATE_CHAR = 0;
/** Goes, consuming nothing, to each of `targets[state]`. */
export const STATE_SPLIT = 1;
/** Goes to `next[state]` where the assertion `assertionOf[state]` holds. */
export const STATE_ASSERTION = 2;
export const STATE_MATCH = 3;

/** Assertions as bits, so that the matcher tests a state against all that hold at a position at once. */
export const ASSERTION_BITS: Readonly<Record<AssertionKind, number>> = {
  textStart: 1,
  lineStart: 2,
  textEnd: 4,
  lineEnd: 8,
  wordBoundary: 16,
  notWordBoundary: 32,
};

export interface Nfa {
  readonly start: number;
  readonly kinds: readonly number[];
  readonly next: readonly number[];
  readonly targets: ReadonlyArray<readonly number[]>;
  readonly setOf: readonly number[];
  readonly assertionOf: readonly number[];
  /** The distinct sets the states consume. */
  readonly sets: readonly CharSet[];
  /** The ASSERTION_BITS of every assertion the pattern holds. */
  readonly assertions: number;
}

export function buildNfa(tree: RegexNode): Nfa {
  const count = countStates(tree) + 1; // and the match state
  if (count > MAX_REGEX_STATES) {
    const size = Number.isFinite(count) && count < 1e9 ? count.toLocaleString("en-US") : "far more";
    throw new RegexProblem(
      `needs ${size} automaton states, more than the ${MAX_REGEX_STATES.toLocaleString("en-US")} the linear-time matcher allows (a counted repetition is written out: x{100} is 100 copies of x); reduce the {n,m} counts, or use * or + where any number will do.`,
    );
  }
  const builder = new NfaBuilder();
  const match = builder.add(STATE_MATCH);
  const start = builder.compile(tree, match);
  const { kinds, next, targets, setOf, assertionOf, sets, assertions } = builder;
  return { start, kinds, next, targets, setOf, assertionOf, sets, assertions };
}

/** As many as NfaBuilder.compile adds; the products may overflow to Infinity, which is refused. */
function countStates(node: RegexNode): number {
  switch (node.type) {
    case "set":
    case "assertion":
      return 1;
    case "concat":
      return node.items.reduce((sum, item) => sum + countStates(item), 0);
    case "alternation":
      return node.branches.reduce((sum, branch) => sum + countStates(branch), 1);
    case "repeat": {
      const inner = countStates(node.node);
      const optional = node.max === Infinity ? inner + 1 : (node.max - node.min) * (inner + 1);
      return node.min * inner + optional;
    }
  }
}

class NfaBuilder {
  readonly kinds: number[] = [];
  readonly next: number[] = [];
  readonly targets: number[][] = [];
  readonly setOf: number[] = [];
  readonly assertionOf: number[] = [];
  readonly sets: CharSet[] = [];
  assertions = 0;
  private readonly setIndexes = new Map<string, number>();

  add(kind: number, next = -1, targets: number[] = [], setIndex = -1, assertion = 0): number {
    this.kinds.push(kind);
    this.next.push(next);
    this.targets.push(targets);
    this.setOf.push(setIndex);
    this.assertionOf.push(assertion);
    return this.kinds.length - 1;
  }

  /** The state that matches `node` and then goes on to `next`: built back to front. */
  compile(node: RegexNode, next: number): number {
    switch (node.type) {
      case "set":
        return this.add(STATE_CHAR, next, [], this.indexOfSet(node.set));
      case "assertion":
        this.assertions |= ASSERTION_BITS[node.kind];
        return this.add(STATE_ASSERTION, next, [], -1, ASSERTION_BITS[node.kind]);
      case "concat":
        return node.items.reduceRight((after, item) => this.compile(item, after), next);
      case "alternation":
        return this.add(STATE_SPLIT, -1, node.branches.map((branch) => this.compile(branch, next)));
      case "repeat":
        return this.compileRepeat(node, next);
    }
  }

  /** x{2,4} is x x (x (x)?)?, and x{2,} is x x x*: each copy its own states. */
  private compileRepeat(node: Extract<RegexNode, { type: "repeat" }>, next: number): number {
    let tail = next;
    if (node.max === Infinity) {
      const loop = this.add(STATE_SPLIT);
      this.targets[loop] = [this.compile(node.node, loop), next];
      tail = loop;
    } else {
      for (let copy = node.min; copy < node.max; copy++) tail = this.add(STATE_SPLIT, -1, [this.compile(node.node, tail), next]);
    }
    for (let copy = 0; copy < node.min; copy++) tail = this.compile(node.node, tail);
    return tail;
  }

  private indexOfSet(set: CharSet): number {
    const key = setKey(set);
    let index = this.setIndexes.get(key);
    if (index === undefined) {
      index = this.sets.length;
      this.sets.push(set);
      this.setIndexes.set(key, index);
    }
    return index;
  }
}
