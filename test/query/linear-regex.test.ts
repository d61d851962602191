// compileLinearRegex (src/query/regex/): answers as `new RegExp(pattern, options + "u").test(text)`
// does, as tables of cases and a seeded comparison with V8; refuses what an automaton cannot run;
// and takes time linear in the text where backtracking would not.

import assert from "node:assert/strict";
import { test } from "node:test";
import { compileLinearRegex, RegexProblem } from "../../src/query/regex/linear-regex.ts";
import { MAX_REGEX_STATES } from "../../src/query/regex/nfa.ts";
import { closeOverCase } from "../../src/query/regex/unicode-tables.ts";
import { seeded, type Random } from "../support/random.ts";

type Case = [pattern: string, options: string, text: string, expected: boolean];

const TABLE: Case[] = [
  // literals, by code point
  ["abc", "", "xxabcxx", true],
  ["abc", "", "ab c", false],
  ["", "", "", true],
  ["^.$", "", "😀", true],
  ["^..$", "", "😀", false],
  ["😀+$", "", "x😀😀", true],
  ["\\uD83D\\uDE00", "", "😀", true],
  ["\\u{1F600}", "", "😀", true],
  ["\\uD83D", "", "😀", false], // a lone surrogate matches no half of a pair
  ["\\uD83D", "", "a\uD83Db", true],
  ["^[😀-😂]$", "", "😁", true],
  ["[^a]", "", "😀", true],
  // escapes
  ["\\t\\n\\v\\f\\r", "", "\t\n\v\f\r", true],
  ["\\0", "", "a\u0000", true],
  ["\\cJ", "", "\n", true],
  ["\\x41\\u0042", "", "AB", true],
  ["\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\\\\\/", "", ".*+?()[]{}|^$\\/", true],
  ["[\\b]", "", "\b", true],
  ["[\\-a]", "", "-", true],
  ["[a-]", "", "-", true],
  ["[a-c-e]", "", "-", true],
  ["[a-c-e]", "", "d", false],
  // the escape classes
  ["^\\d+$", "", "0123456789", true],
  ["\\d", "", "٣", false], // only ASCII digits
  ["^\\w+$", "", "az_AZ09", true],
  ["\\w", "", "é", false],
  ["^\\s+$", "", " \t\n\v\f\r\u00a0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000\ufeff", true],
  ["\\s", "", "\u200b", false],
  ["^\\S\\D\\W$", "", "aa!", true],
  // . and s
  ["a.b", "", "a\nb", false],
  ["a.b", "", "a\rb", false],
  ["a.b", "", "a\u2028b", false],
  ["a.b", "", "a\u2029b", false],
  ["a.b", "s", "a\nb", true],
  ["a.b", "", "a\u0085b", true],
  // ^ $ and m
  ["^b", "", "a\nb", false],
  ["^b", "m", "a\nb", true],
  ["^b", "m", "a\rb", true],
  ["^b", "m", "a\u2028b", true],
  ["a$", "", "a\nb", false],
  ["a$", "m", "a\nb", true],
  ["a$", "m", "a\r\nb", true],
  ["^$", "", "", true],
  ["^$", "m", "a\n\nb", true],
  ["^$", "", "a\n\nb", false],
  ["x^", "m", "x\ny", false],
  ["$\\n^", "m", "x\ny", true],
  // \b and \B
  ["\\bfoo\\b", "", "a foo.", true],
  ["\\bfoo\\b", "", "afoo", false],
  ["\\bfoo\\b", "", "foo_", false],
  ["\\Boo\\B", "", "foot", true],
  ["\\Boo\\B", "", "oo", false],
  ["\\b", "", "", false],
  ["\\B", "", "", true],
  ["^\\b$", "", "", false],
  ["\\bé", "", " é", false], // é is no word character
  ["a\\b\\s", "", "a ", true],
  ["\\bſ", "i", "ſ", true], // with i and u, ſ and K count as word characters
  ["\\bK", "i", "K", true],
  ["x\\B\\u212A", "i", "xK", true],
  ["x\\B\\u212A", "", "xK", false],
  // groups and alternation
  ["^(?:foo|bar)+$", "", "foobarfoo", true],
  ["^(foo|bar)+$", "", "foobaz", false],
  ["(?<word>ab)c", "", "abc", true],
  ["a|b|", "", "zzz", true],
  ["^(?:a|ab)(?:c|bcd)(?:d*)$", "", "abcd", true],
  // quantifiers, lazy forms included
  ["^a{3}$", "", "aaa", true],
  ["^a{3}$", "", "aaaa", false],
  ["^a{2,}$", "", "a", false],
  ["^a{2,}$", "", "aaaaa", true],
  ["^a{2,4}$", "", "aaaaa", false],
  ["^a{2,4}?$", "", "aaaa", true],
  ["^a{0}$", "", "", true],
  ["^(?:ab){1,2}c", "", "ababc", true],
  ["a+?b", "", "aaab", true],
  ["a*?$", "", "b", true],
  ["^a??b$", "", "ab", true],
  ["^(?:a?){5}a{5}$", "", "aaaaa", true],
  ["^(?:a*)*$", "", "aaa", true],
  ["^(?:a*)+b", "", "aaa", false],
  ["^(?:|a)+$", "", "aa", true],
  // classes, and negation under i
  ["^[a-cx-z]+$", "", "abzyx", true],
  ["[^a-z]", "", "abc", false],
  ["[^a]", "i", "A", false],
  ["[^a]", "i", "b", true],
  ["[^\\W]", "i", "ſ", true],
  ["\\W", "i", "ſ", false],
  ["\\W", "i", "\u212a", false],
  ["[^\\w]", "", "!", true],
  ["[]", "", "a", false],
  ["[^]", "", "\n", true],
  // case folding as /iu folds: simple folding, both sides
  ["ſ", "i", "S", true],
  ["s", "i", "ſ", true],
  ["\\u212A", "i", "k", true],
  ["k", "i", "\u212a", true],
  ["ß", "i", "ẞ", true],
  ["ß", "i", "ss", false],
  ["ẞ", "i", "ß", true],
  ["σ", "i", "ς", true],
  ["ς", "i", "Σ", true],
  ["^[σ]+$", "i", "ΣσςΣ", true],
  ["İ", "i", "i", false], // İ folds to nothing else: simple folding has no İ → i
  ["i", "i", "İ", false],
  ["ı", "i", "I", false],
  ["I", "i", "i", true],
  ["µ", "i", "Μ", true],
  ["ΐ", "i", "\u1fd3", true],
  ["ﬅ", "i", "ﬆ", true],
  ["𐐀", "i", "𐐨", true],
  ["ǅ", "i", "ǆ", true],
  ["ǅ", "i", "Ǆ", true],
  ["[a-z]", "i", "K", true],
  ["[a-z]", "i", "\u212a", true],
  ["[^a-z]", "i", "\u212a", false],
  ["\\u{1F600}", "i", "😀", true],
  ["^re", "i", "REPORT", true],
  ["^re", "i", "PRE", false],
  // Unicode properties
  ["^\\p{L}+$", "", "Größe", true],
  ["\\p{L}", "", "123", false],
  ["^\\p{L}$", "", "𐐀", true],
  ["\\P{Lu}", "", "ABC", false],
  ["\\P{Lu}", "", "ABc", true],
  ["\\P{Lu}", "i", "A", true], // a folds as A, and a is not Lu
  ["\\p{Lu}", "i", "a", true],
  ["^\\p{Script=Greek}+$", "", "αβγ", true],
  ["\\p{sc=Greek}", "", "abc", false],
  ["^[\\p{N}\\p{P}]+$", "", "1,2.3", true],
  ["^\\p{Emoji_Presentation}$", "", "😀", true],
  ["\\p{Any}", "", "\uD800", true],
  ["[^\\p{L}\\d]", "", "a1", false],
  // where a match may start: found by indexOf or by V8 before the automaton runs
  ["\\Bta", "", "ta ata", true],
  ["\\Bta", "", "ta ta", false],
  ["task \\d+5$", "", "task 12 task 15", true],
  ["task \\d+5$", "", "task 15 task 12", false],
  ["\\d{2}x", "", "1x 22 33x", true],
  ["report", "i", "a RePoRt", true],
  ["\\b\\u{1F600}x", "", "a😀x", true],
  ["\\b\\u{1F600}x", "", "😀😀x", false],
  // V8 also tries the position inside a surrogate pair, where \B holds: so does the engine
  ["\\B", "", "k😀a", true],
  ["\\B", "", "k a", false],
  ["^\\B", "", "k😀a", false],
  // what a match may not straddle
  ["a[^b]*$", "", "a" + "c".repeat(500), true],
  ["[a-z]+ing$", "", "testing things", false],
  ["[a-z]+ing$", "", "testing thing", true],
  ["(?:foo|bar)\\d+", "", "xx bar42", true],
  ["(?:foo|bar)\\d+", "", "xx bar", false],
];

test("a table of patterns answers as V8's RegExp with the u flag does", () => {
  for (const [pattern, options, text, expected] of TABLE) {
    const label = `/${pattern}/${options} on ${JSON.stringify(text).slice(0, 40)}`;
    assert.equal(new RegExp(pattern, options + "u").test(text), expected, `the table itself: ${label}`);
    assert.equal(compileLinearRegex(pattern, options).test(text), expected, label);
  }
});

// Seeded patterns from a small grammar, each tested against seeded texts, compared with V8.
const SEED = 20261130;
const PATTERN_COUNT = 2500;
const TEXTS_PER_PATTERN = 12;
const MAX_TEXT_LENGTH = 16;
const TEXT_ALPHABET = [..."aabbcAB_ -1\n\r", "ſ", "s", "S", "k", "K", "\u212a", "ß", "ẞ", "σ", "ς", "Σ", "İ", "i", "ı", "é", "😀", "𐐀", "𐐨", "\uD83D", "\uDE00"];
const LITERALS = ["a", "b", "c", "A", "s", "k", "ß", "σ", "i", "é", "😀", "𐐨", "\\n", "\\u212A", "\\u{1F600}", "\\uD83D", "\\uD83D\\uDE00", "-", "\\.", " "];
const CLASSES = [".", "\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "[ab]", "[^a]", "[a-c]", "[^a-cK]", "[\\w-]", "[^\\W]", "[σk]", "[^\\s\\d]", "[😀-😂]", "\\p{L}", "\\P{Lu}", "\\p{Ll}", "[\\p{Lu}1]", "[^\\p{L}]"];
const ASSERTIONS = ["^", "$", "\\b", "\\B"];
const QUANTIFIERS = ["*", "+", "?", "{2}", "{0,2}", "{1,}", "{2,3}", "*?", "+?", "??", "{1,2}?"];

function pick<T>(next: Random, values: readonly T[]): T {
  return values[Math.floor(next() * values.length)]!;
}

function randomPattern(next: Random, depth: number): string {
  const terms = 1 + Math.floor(next() * 4);
  let pattern = "";
  for (let i = 0; i < terms; i++) {
    const roll = next();
    if (roll < 0.12) {
      pattern += pick(next, ASSERTIONS);
      continue;
    }
    let atom: string;
    if (roll < 0.5) atom = pick(next, LITERALS);
    else if (roll < 0.8 || depth >= 2) atom = pick(next, CLASSES);
    else atom = `(${next() < 0.5 ? "?:" : ""}${randomPattern(next, depth + 1)}${next() < 0.4 ? `|${randomPattern(next, depth + 1)}` : ""})`;
    if (next() < 0.35) atom += pick(next, QUANTIFIERS);
    pattern += atom;
  }
  return next() < 0.1 ? `${pattern}|${randomPattern(next, depth + 1)}` : pattern;
}

function randomText(next: Random): string {
  const length = Math.floor(next() * (MAX_TEXT_LENGTH + 1));
  let text = "";
  for (let i = 0; i < length; i++) text += pick(next, TEXT_ALPHABET);
  return text;
}

test("seeded random patterns and texts answer as V8's RegExp does", () => {
  const next = seeded(SEED);
  let compared = 0;
  for (let i = 0; i < PATTERN_COUNT; i++) {
    const pattern = randomPattern(next, 0);
    const options = ["i", "m", "s"].filter(() => next() < 0.4).join("");
    const regex = compileLinearRegex(pattern, options);
    const reference = new RegExp(pattern, options + "u");
    for (let j = 0; j < TEXTS_PER_PATTERN; j++) {
      const text = randomText(next);
      const expected = reference.test(text);
      if (regex.test(text) !== expected) assert.fail(`/${pattern}/${options} on ${JSON.stringify(text)}: V8 says ${expected}`);
      compared++;
    }
  }
  assert.equal(compared, PATTERN_COUNT * TEXTS_PER_PATTERN);
});

test("a DFA with more states than its cache holds still answers right", () => {
  // Remembering the last 13 letters takes up to 2^13 DFA states, so the cache is flushed as it
  // reads. (V8 backtracks quadratically here, so the answer is worked out by hand: the 13th
  // letter from the end is an a.)
  const regex = compileLinearRegex("(?:a|b)*a(?:a|b){12}$", "");
  const next = seeded(SEED + 1);
  for (let round = 0; round < 20; round++) {
    let text = "";
    for (let i = 0; i < 5000; i++) text += next() < 0.5 ? "a" : "b";
    assert.equal(regex.test(text), text[text.length - 13] === "a", `round ${round}`);
  }
});

/** Every code point that case-maps to another: those with case partners, and then some. */
function casedCodePoints(): number[] {
  const cased: number[] = [];
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const char = String.fromCodePoint(cp);
    if (char.toLowerCase() !== char || char.toUpperCase() !== char) cased.push(cp);
  }
  return cased;
}

test("with i, every letter that has a case matches exactly the letters V8's /iu matches", () => {
  // The case classes are read out of V8 (unicode-tables.ts); this checks them all against it, so
  // a Node whose Unicode version moves a fold shows here first.
  const cased = casedCodePoints();
  const classes = new Map(cased.map((cp) => [cp, codePointsOf(closeOverCase([cp, cp]))]));
  const haystack = String.fromCodePoint(...new Set([...classes.values()].flat()));
  for (const [cp, ours] of classes) {
    const engine = [...haystack.matchAll(new RegExp(`\\u{${cp.toString(16)}}`, "giu"))].map((match) => match[0].codePointAt(0)!);
    assert.deepEqual(ours, engine.sort((a, b) => a - b), `U+${cp.toString(16)}`);
  }
});

function codePointsOf(set: readonly number[]): number[] {
  const list: number[] = [];
  for (let i = 0; i < set.length; i += 2) for (let cp = set[i]!; cp <= set[i + 1]!; cp++) list.push(cp);
  return list;
}

const REFUSALS: Array<[pattern: string, refusal: RegExp]> = [
  ["(a)\\1", /^uses a back-reference \(\\1\), which the linear-time matcher cannot run.*Spell the repeated text out/],
  ["(?<x>a)\\k<x>", /^uses a back-reference \(\\k<x>\)/],
  ["a(?=b)", /^uses a lookahead \(\(\?=…\), which the linear-time matcher cannot run.*\$not/],
  ["a(?!b)", /^uses a lookahead \(\(\?!…\)/],
  ["(?<=a)b", /^uses a lookbehind \(\(\?<=…\)/],
  ["(?<!a)b", /^uses a lookbehind \(\(\?<!…\)/],
  ["[ab]{2001}", /^needs 2,002 automaton states, more than the 2,000 .*reduce the \{n,m\} counts/],
  ["(?:a{100}){30}", /^needs 3,001 automaton states/],
  ["(?:(?:a{1000}){1000}){1000}", /^needs far more automaton states/],
  ["(a", /^is not a valid regular expression/],
  ["a{", /^is not a valid regular expression/],
  ["\\1", /^is not a valid regular expression/],
];

test("back-references, lookaround and too many states are refused with a RegexProblem that says how to mend the pattern", () => {
  for (const [pattern, refusal] of REFUSALS) {
    assert.throws(() => compileLinearRegex(pattern, ""), (error) => error instanceof RegexProblem && refusal.test(error.message), pattern);
  }
  assert.equal(MAX_REGEX_STATES, 2000);
  assert.doesNotThrow(() => compileLinearRegex("[ab]{1998}", ""));
});

const LONG_TEXT_LENGTH = 50_000;
const A_RUN = "a".repeat(LONG_TEXT_LENGTH);

// Each would backtrack for hours (or longer) on a near miss; the automaton reads each text once.
const LINEAR: Array<[pattern: string, text: string, expected: boolean]> = [
  ["a*a*a*a*b", A_RUN, false],
  ["a*a*a*a*b", A_RUN + "b", true],
  ["a*a*a*a*b$", A_RUN + "b!", false],
  ["(a+)+b", A_RUN, false],
  ["(a+)+b$", A_RUN + "b!", false],
  ["^(a+)+$", A_RUN + "!", false],
  ["(a|aa)*b", A_RUN, false],
  ["(a|aa)*b", A_RUN + "b", true],
  ["(a|aa)*b$", A_RUN + "b!", false],
  ["(.*a){20}", A_RUN, true],
  ["(.*a){20}", "a".repeat(19) + "b".repeat(LONG_TEXT_LENGTH), false],
  ["(.*a){20}$", A_RUN + "b", false],
  ["\\w*\\w*\\w*x", A_RUN, false],
  ["\\w*\\w*\\w*x", A_RUN + "x", true],
  ["\\w*\\w*\\w*x$", A_RUN + "x!", false],
  ["(?:a|b|ab)*c", "ab".repeat(LONG_TEXT_LENGTH / 2), false],
  ["(?:a|b|ab)*c$", "ab".repeat(LONG_TEXT_LENGTH / 2) + "c!", false],
];

test("patterns that backtrack catastrophically answer at once on 50,000 characters", () => {
  for (const [pattern, text, expected] of LINEAR) {
    assert.equal(compileLinearRegex(pattern, "").test(text), expected, `/${pattern}/ on ${text.length} characters`);
  }
});
