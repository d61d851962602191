// findRegexProblem (docs/query-language.md): which $regex patterns may run, as a table of
// [pattern, options, the start of the refusal or null].

import assert from "node:assert/strict";
import { test } from "node:test";
import { findRegexProblem, MAX_REGEX_CHARACTERS, regexOf } from "../../src/query/regex-guard.ts";

const NESTED = "repeats a group that holds a quantifier or an alternation";
const BACK_REFERENCE = "uses a back-reference";
const INVALID = "is not a valid regular expression";

const TABLE: Array<[pattern: string, options: string, refusal: string | null]> = [
  // the classic catastrophic shapes
  ["(a+)+", "", NESTED],
  ["(a*)*", "", NESTED],
  ["(a|aa)*", "", NESTED],
  ["(a|a)+", "", NESTED],
  ["(.*a){20}", "", NESTED],
  ["([a-z]+)*", "", NESTED],
  ["(?:a+)+", "", NESTED],
  ["^(a+)+$", "", NESTED],
  ["(a+)+?", "", NESTED],
  ["(a?){2}", "", NESTED],
  ["(a{1,3}){2,}", "", NESTED],
  ["(x(a|b)c)*", "", NESTED],
  ["((a+)?)+", "", NESTED],
  ["((a)+)+", "", NESTED],
  ["(?<word>\\w+)+", "", NESTED],
  ["(?:(?:a|b)c)+", "", NESTED],
  ["(a+){1,}", "", NESTED],
  // back-references
  ["(a)\\1", "", BACK_REFERENCE],
  ["(?<x>a)\\k<x>", "", BACK_REFERENCE],
  // invalid under the u flag, or at all
  ["(a", "", INVALID],
  ["a{", "", INVALID],
  ["[", "", INVALID],
  ["*a", "", INVALID],
  ["\\1", "", INVALID],
  ["a", "ii", INVALID], // filter.ts lets through only i, m and s, once each; the engine is the last word
  // quantifiers that cannot repeat the group, or groups with nothing to repeat inside
  ["(a+)?", "", null],
  ["(a|b)", "", null],
  ["(a|b){1}", "", null],
  ["(a+){0,1}", "", null],
  ["(ab)+", "", null],
  ["(?:ab)*c", "", null],
  ["(a)(b+)", "", null],
  ["a|b|c", "", null],
  // what looks like a quantifier or a group inside a class or an escape is neither
  ["([+*])+", "", null],
  ["(\\+)+", "", null],
  ["(\\(a+\\))", "", null],
  ["(\\|)+", "", null],
  ["([|])*", "", null],
  ["([()+])+", "", null],
  ["(\\u{61})+", "", null],
  ["(\\p{L})+", "", null],
  ["([\\]+])+", "", null],
  ["(\\u0041)+", "", null],
  ["(?<name>ab)+", "", null],
  ["(?=a)b", "", null],
  ["(?<!a)b+", "", null],
  // everyday patterns
  ["^ab", "", null],
  ["foo$", "m", null],
  ["^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$", "i", null],
  ["\\d{4}-\\d{2}-\\d{2}", "", null],
  ["a.b", "s", null],
  ["", "", null],
];

test("findRegexProblem refuses nested quantifiers, back-references and invalid syntax, and lets everyday patterns run", () => {
  for (const [pattern, options, refusal] of TABLE) {
    const problem = findRegexProblem(pattern, options);
    if (refusal === null) assert.equal(problem, null, `${pattern} /${options}`);
    else assert.ok(problem?.startsWith(refusal), `${pattern} /${options}: ${problem}`);
  }
});

test("a nested repetition is named in the refusal, with a way to mend it", () => {
  assert.match(findRegexProblem("x(a|aa)*y", "")!, /\(a\|aa\)\*.*rewrite it without the nesting/);
  assert.match(findRegexProblem("(a)\\1", "")!, /\(\\1\)/);
});

test("a pattern of more than 256 characters is refused, counted in code points", () => {
  assert.equal(MAX_REGEX_CHARACTERS, 256);
  assert.equal(findRegexProblem("a".repeat(256), ""), null);
  assert.match(findRegexProblem("a".repeat(257), "")!, /^is 257 characters long; at most 256/);
  assert.equal(findRegexProblem("😀".repeat(256), ""), null, "256 astral characters are 512 UTF-16 units");
});

test("regexOf compiles with the u flag and the options", () => {
  assert.equal(regexOf("a", "is").flags, "isu");
  assert.equal(regexOf("^.$", "").test("😀"), true, "one code point is one character");
});
