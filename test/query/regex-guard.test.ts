// findRegexProblem and linearRegexOf (docs/query-language.md): which $regex patterns may run, as a
// table of [pattern, options, the start of the refusal or null], and how they are handed out.

import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError } from "../../src/errors.ts";
import { parseFilter } from "../../src/query/filter.ts";
import { findRegexProblem, linearRegexOf, MAX_REGEX_CHARACTERS } from "../../src/query/regex-guard.ts";
import { loadSchemaObject } from "../../src/schema/load.ts";
import { TASK } from "../support/server.ts";

const BACK_REFERENCE = "uses a back-reference";
const LOOKAHEAD = "uses a lookahead";
const LOOKBEHIND = "uses a lookbehind";
const TOO_MANY_STATES = "needs";
const INVALID = "is not a valid regular expression";

const TABLE: Array<[pattern: string, options: string, refusal: string | null]> = [
  // the shapes that backtrack catastrophically run in linear time now, so they are accepted
  ["(a+)+", "", null],
  ["(a*)*", "", null],
  ["(a|aa)*", "", null],
  ["(a|a)+", "", null],
  ["(.*a){20}", "", null],
  ["([a-z]+)*", "", null],
  ["^(a+)+$", "", null],
  ["(a+)+?", "", null],
  ["(a{1,3}){2,}", "", null],
  ["(x(a|b)c)*", "", null],
  ["((a+)?)+", "", null],
  ["(?<word>\\w+)+", "", null],
  ["(a|b)+", "", null],
  // what the automaton cannot run
  ["(a)\\1", "", BACK_REFERENCE],
  ["(?<x>a)\\k<x>", "", BACK_REFERENCE],
  ["(?=a)b", "", LOOKAHEAD],
  ["a(?!b)", "", LOOKAHEAD],
  ["(?<=a)b", "", LOOKBEHIND],
  ["(?<!a)b+", "", LOOKBEHIND],
  ["(?:[a-z]{100}){30}", "", TOO_MANY_STATES],
  // invalid under the u flag, or at all
  ["(a", "", INVALID],
  ["a{", "", INVALID],
  ["[", "", INVALID],
  ["*a", "", INVALID],
  ["\\1", "", INVALID],
  ["a", "ii", INVALID], // filter.ts lets through only i, m and s, once each; the engine is the last word
  // what looks like a quantifier, a group or a reference inside a class or an escape is neither
  ["([+*])+", "", null],
  ["(\\(a+\\))", "", null],
  ["(\\u{61})+", "", null],
  ["(\\p{L})+", "", null],
  ["([\\]+])+", "", null],
  ["[(?=a)]", "", null],
  ["\\(?=a\\)", "", null],
  // everyday patterns
  ["^ab", "", null],
  ["foo$", "m", null],
  ["^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$", "i", null],
  ["\\d{4}-\\d{2}-\\d{2}", "", null],
  ["a.b", "s", null],
  ["", "", null],
];

test("findRegexProblem accepts nested quantifiers, and refuses back-references, lookaround, too many states and invalid syntax", () => {
  for (const [pattern, options, refusal] of TABLE) {
    const problem = findRegexProblem(pattern, options);
    if (refusal === null) assert.equal(problem, null, `${pattern} /${options}`);
    else assert.ok(problem?.startsWith(refusal), `${pattern} /${options}: ${problem}`);
  }
});

test("a refusal names what the automaton cannot run and what to write instead", () => {
  assert.match(findRegexProblem("(a)\\1", "")!, /\(\\1\), which the linear-time matcher cannot run.*Spell the repeated text out/);
  assert.match(findRegexProblem("a(?=b)", "")!, /\(\(\?=…\), which the linear-time matcher cannot run.*Match the text itself instead/);
  assert.match(findRegexProblem("[ab]{3000}", "")!, /reduce the \{n,m\} counts/);
});

test("a pattern of more than 256 characters is refused, counted in code points", () => {
  assert.equal(MAX_REGEX_CHARACTERS, 256);
  assert.equal(findRegexProblem("a".repeat(256), ""), null);
  assert.match(findRegexProblem("a".repeat(257), "")!, /^is 257 characters long; at most 256/);
  assert.equal(findRegexProblem("😀".repeat(256), ""), null, "256 astral characters are 512 UTF-16 units");
});

test("linearRegexOf answers with the u flag and the options, and hands out one compiled pattern per pattern and options", () => {
  assert.equal(linearRegexOf("^.$", "").test("😀"), true, "one code point is one character");
  assert.equal(linearRegexOf("A.B", "is").test("a\nb"), true);
  assert.equal(linearRegexOf("A.B", "").test("a\nb"), false);
  assert.equal(linearRegexOf("(a|aa)*b", "").test("a".repeat(50_000)), false);
  assert.equal(linearRegexOf("x+", "i"), linearRegexOf("x+", "i"));
  assert.notEqual(linearRegexOf("x+", "i"), linearRegexOf("x+", ""));
});

const entity = loadSchemaObject({ Task: TASK }).entities.get("Task")!;

test("a refused pattern is invalid_filter, naming the field", () => {
  for (const pattern of ["(a)\\1", "(?<=a)b", "(?:[a-z]{100}){30}"]) {
    assert.throws(
      () => parseFilter(entity, { title: { $regex: pattern } }, { mayUseCreatedBy: true }),
      (error) => error instanceof ApiError && error.status === 400 && error.code === "invalid_filter" && error.message.startsWith('The $regex pattern on "title" '),
      pattern,
    );
  }
  assert.doesNotThrow(() => parseFilter(entity, { title: { $regex: "(a+)+b" } }, { mayUseCreatedBy: true }));
});
