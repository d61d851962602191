// Decides whether a `$regex` pattern (docs/query-language.md) may run, and hands out its compiled
// test: short, valid, and runnable by the linear-time engine (query/regex/). Parsing the filter is
// filter.ts's job and testing values predicate.ts's.

import { compileLinearRegex, RegexProblem, type LinearRegex } from "./regex/linear-regex.ts";

export const MAX_REGEX_CHARACTERS = 256;
/** Compiled patterns kept, by pattern and options: the same `q` texts come back request after request. */
export const MAX_CACHED_REGEXES = 256;

const compiledRegexes = new Map<string, LinearRegex>();

/**
 * A $regex as the engine runs it: the answers of a JavaScript RegExp with the u flag (code
 * points, strict syntax) plus its options, in time linear in the text. Throws a RegexProblem
 * for a pattern findRegexProblem refuses.
 */
export function linearRegexOf(pattern: string, options: string): LinearRegex {
  const cacheKey = `${options}/${pattern}`;
  let regex = compiledRegexes.get(cacheKey);
  if (regex) {
    // Refreshed, so that the map forgets the least recently used first.
    compiledRegexes.delete(cacheKey);
  } else {
    regex = compileLinearRegex(pattern, options);
    if (compiledRegexes.size >= MAX_CACHED_REGEXES) compiledRegexes.delete(compiledRegexes.keys().next().value!);
  }
  compiledRegexes.set(cacheKey, regex);
  return regex;
}

/** What is wrong with a pattern, said so that the sender can mend it; null when it may run. */
export function findRegexProblem(pattern: string, options: string): string | null {
  const characters = [...pattern].length;
  if (characters > MAX_REGEX_CHARACTERS) {
    return `is ${characters} characters long; at most ${MAX_REGEX_CHARACTERS} are accepted, so shorten it (or use $contains for a plain substring).`;
  }
  try {
    new RegExp(pattern, options + "u");
  } catch (error) {
    return `is not a valid regular expression (${(error as Error).message}); fix its syntax (it is read with the u flag, so escape literal brackets and braces).`;
  }
  try {
    // Compiled here, once, so that a pattern the engine cannot run is refused before any scan.
    linearRegexOf(pattern, options);
  } catch (error) {
    if (error instanceof RegexProblem) return error.message;
    throw error;
  }
  return null;
}
