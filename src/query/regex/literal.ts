// The plain text a pattern's matches must hold, read from its tree (parse.ts): a pattern that is
// only text is answered by String.prototype.includes (or startsWith, endsWith, ===); any other
// rejects a text lacking the texts it requires, and looks for its prefix to start the automaton.

import { singleCodePointOf } from "./char-set.ts";
import type { RegexNode } from "./parse.ts";

/** Longer texts are cut: a part of a required text is required too. */
const MAX_LITERAL_UNITS = 1024;
/** A shorter prefix, one letter, is found too often to pay for the search (start-classes.ts does better). */
const MIN_SEARCHED_PREFIX_UNITS = 2;
/** Branches of an alternation whose texts are kept as "one of these": each costs a search. */
const MAX_REQUIRED_TEXTS = 4;

export interface LiteralFacts {
  /** The one text the node consumes; null when there is not exactly one. */
  readonly exact: string | null;
  /** Whether an assertion (^ $ \b \B) takes part, so that `exact` alone does not decide a match. */
  readonly hasAssertion: boolean;
  /** Texts every match starts with and ends with, "" when none is known. */
  readonly prefix: string;
  readonly suffix: string;
  /** Every match holds one of these texts; none known when empty. */
  readonly required: readonly string[];
}

const NOTHING_KNOWN: LiteralFacts = { exact: null, hasAssertion: false, prefix: "", suffix: "", required: [] };
const EMPTY_TEXT: LiteralFacts = { exact: "", hasAssertion: false, prefix: "", suffix: "", required: [] };

// With u, a lone surrogate in the pattern matches only a lone one in the text, never half of a
// pair, which the String methods cannot tell apart.
const LONE_SURROGATE_RE = /\p{Cs}/u;

/**
 * The whole test when the pattern is one text, perhaps between `^` and `$` (without m): includes,
 * startsWith, endsWith or equality answer exactly what the RegExp would. Null otherwise.
 */
export function compileTextTest(tree: RegexNode): ((text: string) => boolean) | null {
  const items = tree.type === "concat" ? [...tree.items] : [tree];
  const first = items[0];
  const last = items[items.length - 1];
  const isAtStart = first?.type === "assertion" && first.kind === "textStart";
  if (isAtStart) items.shift();
  const isAtEnd = items.length > 0 && last?.type === "assertion" && last.kind === "textEnd";
  if (isAtEnd) items.pop();
  const { exact, hasAssertion } = literalFactsOf({ type: "concat", items });
  if (exact === null || hasAssertion || LONE_SURROGATE_RE.test(exact) || exact.length >= MAX_LITERAL_UNITS) return null;
  if (isAtStart && isAtEnd) return (text) => text === exact;
  if (isAtStart) return (text) => text.startsWith(exact);
  if (isAtEnd) return (text) => text.endsWith(exact);
  return (text) => text.includes(exact);
}

/**
 * A text every match starts with, for String.prototype.indexOf to find where a match may start;
 * "" when none is long enough to be worth it. Lone surrogates are left out: indexOf would find
 * one inside a pair, where no match starts under u.
 */
export function searchablePrefixOf(facts: LiteralFacts): string {
  return facts.prefix.length >= MIN_SEARCHED_PREFIX_UNITS && !LONE_SURROGATE_RE.test(facts.prefix) ? facts.prefix : "";
}

/** What the tree's matches consume, as far as plain text tells: an assertion consumes nothing. */
export function literalFactsOf(node: RegexNode): LiteralFacts {
  switch (node.type) {
    case "set": {
      const codePoint = singleCodePointOf(node.set);
      if (codePoint === undefined) return NOTHING_KNOWN;
      const text = String.fromCodePoint(codePoint);
      return { exact: text, hasAssertion: false, prefix: text, suffix: text, required: [text] };
    }
    case "assertion":
      return { ...EMPTY_TEXT, hasAssertion: true };
    case "concat":
      return node.items.map(literalFactsOf).reduce(concatFacts, EMPTY_TEXT);
    case "alternation":
      return alternationFacts(node.branches.map(literalFactsOf));
    case "repeat":
      return repeatFacts(literalFactsOf(node.node), node.min, node.max);
  }
}

function concatFacts(a: LiteralFacts, b: LiteralFacts): LiteralFacts {
  return bounded({
    exact: a.exact !== null && b.exact !== null ? a.exact + b.exact : null,
    hasAssertion: a.hasAssertion || b.hasAssertion,
    prefix: a.exact !== null ? a.exact + b.prefix : a.prefix,
    suffix: b.exact !== null ? a.suffix + b.exact : b.suffix,
    required: better(better(a.required, b.required), [a.suffix + b.prefix]),
  });
}

function alternationFacts(branches: readonly LiteralFacts[]): LiteralFacts {
  const [first] = branches as [LiteralFacts];
  const prefix = branches.map((branch) => branch.prefix).reduce(commonPrefix);
  const suffix = branches.map((branch) => branch.suffix).reduce(commonSuffix);
  const anyOf = [...new Set(branches.flatMap((branch) => branch.required))];
  const isEveryBranchKnown = branches.every((branch) => branch.required.length > 0) && anyOf.length <= MAX_REQUIRED_TEXTS;
  return {
    exact: branches.every((branch) => branch.exact !== null && branch.exact === first.exact) ? first.exact : null,
    hasAssertion: branches.some((branch) => branch.hasAssertion),
    prefix,
    suffix,
    required: better(better([prefix], [suffix]), isEveryBranchKnown ? anyOf : []),
  };
}

function repeatFacts(inner: LiteralFacts, min: number, max: number): LiteralFacts {
  if (max === 0) return EMPTY_TEXT;
  if (min === 0) return { ...EMPTY_TEXT, exact: null };
  const copies = Math.min(min, Math.ceil(MAX_LITERAL_UNITS / Math.max(1, inner.exact?.length ?? 1)));
  const repeated = inner.exact === null ? null : inner.exact.repeat(copies);
  return bounded({
    exact: min === max && copies === min ? repeated : null,
    hasAssertion: inner.hasAssertion,
    prefix: repeated ?? inner.prefix,
    suffix: repeated ?? inner.suffix,
    required: better([repeated ?? ""], inner.required),
  });
}

function bounded(facts: LiteralFacts): LiteralFacts {
  const cut = (text: string) => (text.length > MAX_LITERAL_UNITS ? text.slice(0, MAX_LITERAL_UNITS) : text);
  return {
    ...facts,
    exact: facts.exact !== null && facts.exact.length <= MAX_LITERAL_UNITS ? facts.exact : null,
    prefix: cut(facts.prefix),
    suffix: facts.suffix.length > MAX_LITERAL_UNITS ? facts.suffix.slice(-MAX_LITERAL_UNITS) : facts.suffix,
    required: facts.required.map(cut),
  };
}

/** The more selective: the longer shortest text, then the fewer texts. A list holding "" knows nothing. */
function better(a: readonly string[], b: readonly string[]): readonly string[] {
  const shortestOf = (texts: readonly string[]) => (texts.length === 0 ? 0 : Math.min(...texts.map((text) => text.length)));
  const [x, y] = [shortestOf(a), shortestOf(b)];
  const chosen = y > x || (y === x && y > 0 && b.length < a.length) ? b : a;
  return shortestOf(chosen) === 0 ? [] : chosen;
}

function commonPrefix(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return a.slice(0, i);
}

function commonSuffix(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[a.length - 1 - i] === b[b.length - 1 - i]) i++;
  return a.slice(a.length - i);
}
