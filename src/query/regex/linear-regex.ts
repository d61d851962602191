// The regex engine's one entry point: a `$regex` pattern (docs/query-language.md) compiled into a
// test that answers as `new RegExp(pattern, options + "u").test(text)` does, in time linear in the
// text. Which patterns a filter may send, and caching, are regex-guard.ts's.

import { LINE_TERMINATOR_SET } from "./char-set.ts";
import { compileTextTest, literalFactsOf, searchablePrefixOf } from "./literal.ts";
import { LazyDfa } from "./matcher.ts";
import { buildNfa } from "./nfa.ts";
import { parsePattern, wordSetOf, type RegexFlags } from "./parse.ts";
import { RegexProblem } from "./regex-problem.ts";

export { RegexProblem };

const SURROGATE_PAIR_RE = /[\uD800-\uDBFF][\uDC00-\uDFFF]/;

export interface LinearRegex {
  test(text: string): boolean;
}

/** `options` holds some of i, m and s. Throws a RegexProblem for a pattern it will not run. */
export function compileLinearRegex(pattern: string, options: string): LinearRegex {
  try {
    // The parser trusts the syntax: V8 checks it first, with the same flags.
    new RegExp(pattern, options + "u");
  } catch (error) {
    throw new RegexProblem(
      `is not a valid regular expression (${(error as Error).message}); fix its syntax (it is read with the u flag, so escape literal brackets and braces).`,
    );
  }
  const flags: RegexFlags = { ignoreCase: options.includes("i"), multiline: options.includes("m"), dotAll: options.includes("s") };
  const tree = parsePattern(pattern, flags);
  // Built even when a text test answers, so that every pattern meets the same bound on states.
  const nfa = buildNfa(tree);
  const textTest = compileTextTest(tree);
  if (textTest) return { test: textTest };
  const facts = literalFactsOf(tree);
  const prefix = searchablePrefixOf(facts);
  const dfa = new LazyDfa(nfa, { wordSet: wordSetOf(flags), lineTerminatorSet: LINE_TERMINATOR_SET, prefix });
  if (dfa.matchesInsidePairs) return { test: (text) => dfa.test(text) || SURROGATE_PAIR_RE.test(text) };
  // Searching for a text is native and fast; most texts a filter sees lack it and stop there. A
  // required text within the prefix the automaton looks for first would only be looked for twice.
  const required = facts.required;
  if (required.length === 0 || (required.length === 1 && prefix.includes(required[0]!))) return dfa;
  if (required.length === 1) {
    const [only] = required as [string];
    return { test: (text) => text.includes(only) && dfa.test(text) };
  }
  return { test: (text) => required.some((part) => text.includes(part)) && dfa.test(text) };
}
