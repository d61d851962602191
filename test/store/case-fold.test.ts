// foldCase and compileFoldedIncludes: the case fold of $contains and search (issue 16, defect 1).

import assert from "node:assert/strict";
import { test } from "node:test";
import { compileFoldedIncludes, FOLD_FIXUPS, foldCase } from "../../src/query/case-fold.ts";

const FOLDS: Array<[string, string]> = [
  ["", ""],
  ["Write the REPORT", "write the report"],
  // final and medial sigma are one letter
  ["ΟΔΟΣ", "οδοσ"],
  ["οδος", "οδοσ"],
  ["ΟΣΑ", "οσα"],
  ["Σ", "σ"],
  ["ς", "σ"],
  // the decisions: ß stays ß (no "ss"), ẞ folds to ß; İ folds to i; ı stays ı; I folds to i
  ["Straße", "straße"],
  ["STRAẞE", "straße"],
  ["İstanbul", "istanbul"],
  ["DİYARBAKIR", "diyarbakir"],
  ["ılık", "ılık"],
  ["ILIK", "ilik"],
  // the other letters toLowerCase leaves unfolded
  ["µs", "μs"],
  ["ſtop", "stop"],
  ["ϐϑϕϖϰϱϵ", "βθφπκρε"],
  ["ᲀᲂ", "во"],
  ["ﬅ", "ﬆ"],
  // no locale, and characters outside the BMP fold too
  ["𐐀𐐨", "𐐨𐐨"],
  ["Ǆ ǅ ǆ", "ǆ ǆ ǆ"],
];

test("foldCase folds each letter to one, final sigma to sigma, ß to itself and İ to i", () => {
  for (const [input, expected] of FOLDS) assert.equal(foldCase(input), expected, input);
});

const CONTAINS: Array<[string, string, boolean]> = [
  // [text, needle, found]
  ["ΟΔΟΣ", "Σ", true],
  ["ΟΔΟΣ", "ς", true],
  ["ΟΣΑ", "ΟΣ", true],
  ["ΟΣΑ", "ος", true],
  ["ΟΣ", "σ", true],
  ["Write the report", "REPORT", true],
  ["Write the report", "reports", false],
  ["ſtop", "STOP", true],
  ["µs", "μ", true],
  ["İstanbul", "istanbul", true],
  ["İstanbul", "İST", true],
  ["istanbul", "İST", true],
  ["Straße", "STRASSE", false],
  ["Straße", "STRAẞE", true],
  ["ılık", "ilik", false],
  ["ΟΔΟΣ ΚΑΙ ſ", "σ κ", true],
  ["ΟΔΟΣ", "οδοσ", true],
  ["ΟΔΟΣ", "ΟΔΟΣ", true],
  ["οδος", "ΟΔΟΣ", true],
  ["ſhip", "ship", true],
  ["Ship", "ſhip", true],
  ["µ", "Μ", true],
  ["", "", true],
  ["abc", "", true],
];

test("compileFoldedIncludes finds a needle in a text when both are folded", () => {
  for (const [text, needle, found] of CONTAINS) {
    assert.equal(compileFoldedIncludes(needle)(text), found, `${text} ∋ ${needle}`);
    assert.equal(foldCase(text).includes(foldCase(needle)), found, `${text} ∋ ${needle}, folded whole`);
  }
});

/** Every code point that has a case mapping or is folded by the fix-up table. */
function casedCodePoints(): string[] {
  const cased: string[] = [];
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const c = String.fromCodePoint(cp);
    if (c.toLowerCase() !== c || c.toUpperCase() !== c || FOLD_FIXUPS.has(c)) cased.push(c);
  }
  return cased;
}

test("no letter but Σ lower-cases into a letter of the fix-up table (compileFoldedIncludes relies on it)", () => {
  for (const c of casedCodePoints()) {
    for (const lower of [c.toLowerCase(), `a${c}`.toLowerCase(), `a${c}a`.toLowerCase()]) {
      for (const source of FOLD_FIXUPS.keys()) {
        if (c !== source && c !== "\u03a3") assert.ok(!lower.includes(source), `U+${c.codePointAt(0)!.toString(16)} lower-cases into ${source}`);
      }
    }
  }
});

test("foldCase equates exactly the letters a /iu regular expression equates (simple case folding), İ apart", () => {
  const escape = (c: string) => c.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const cased = casedCodePoints().filter((c) => c !== "\u0130");
  const folded = new Map<string, string[]>();
  for (const c of cased) {
    const fold = foldCase(c);
    assert.equal([...fold].length, 1, `${c} folds to one character`);
    assert.equal(foldCase(fold), fold, `${c}'s fold is folded`);
    folded.set(fold, [...(folded.get(fold) ?? []), c]);
  }
  // One representative per fold; each letter's /iu class holds exactly the representative of its fold.
  const representatives = [...folded.keys()];
  const text = representatives.join(" ");
  for (const c of cased) {
    const matches = text.match(new RegExp(escape(c), "giu")) ?? [];
    assert.deepEqual(matches, [foldCase(c)], `U+${c.codePointAt(0)!.toString(16)} ${c}`);
  }
});
