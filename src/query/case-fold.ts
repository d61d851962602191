// The one case fold of case-insensitive matching ($contains and search; a SQL store must do the
// same): Unicode simple case folding, one character to one character, with one exception, İ → i.
// docs/query-language.md ("Search") states the rule; test/store/case-fold.test.ts checks it against /iu.

/**
 * Lower-case letters that toLowerCase leaves alone but that simple case folding maps to another
 * (CaseFolding.txt, statuses C and S): final sigma, the micro sign, long s, Greek symbol forms,
 * old Cyrillic forms, and three pairs Unicode 15.1 made equal.
 */
export const FOLD_FIXUPS: ReadonlyMap<string, string> = new Map([
  ["\u00b5", "\u03bc"], // µ micro sign → μ
  ["\u017f", "s"], // ſ long s
  ["\u0345", "\u03b9"], // combining ypogegrammeni → ι
  ["\u03c2", "\u03c3"], // ς final sigma → σ
  ["\u03d0", "\u03b2"], // ϐ → β
  ["\u03d1", "\u03b8"], // ϑ → θ
  ["\u03d5", "\u03c6"], // ϕ → φ
  ["\u03d6", "\u03c0"], // ϖ → π
  ["\u03f0", "\u03ba"], // ϰ → κ
  ["\u03f1", "\u03c1"], // ϱ → ρ
  ["\u03f5", "\u03b5"], // ϵ → ε
  ["\u1c80", "\u0432"], // old Cyrillic forms of в д о с т т ъ ѣ ꙋ
  ["\u1c81", "\u0434"],
  ["\u1c82", "\u043e"],
  ["\u1c83", "\u0441"],
  ["\u1c84", "\u0442"],
  ["\u1c85", "\u0442"],
  ["\u1c86", "\u044a"],
  ["\u1c87", "\u0463"],
  ["\u1c88", "\ua64b"],
  ["\u1e9b", "\u1e61"], // ẛ → ṡ
  ["\u1fbe", "\u03b9"], // Greek prosgegrammeni → ι
  ["\u1fd3", "\u0390"], // ΐ (oxia) → ΐ (tonos)
  ["\u1fe3", "\u03b0"], // ΰ (oxia) → ΰ (tonos)
  ["\ufb05", "\ufb06"], // ﬅ → ﬆ
]);

const FIXUP_RE = new RegExp(`[${[...FOLD_FIXUPS.keys()].join("")}]`, "g");
const CAPITAL_I_WITH_DOT = "\u0130";

/**
 * The case-folded text. ß stays ß (folding it to "ss" is full folding, which changes lengths);
 * İ folds to a plain i (toLowerCase gives i + U+0307, which "istanbul" would not find), and ı
 * stays ı (the dotless i is its own letter). No locale applies.
 */
export function foldCase(text: string): string {
  let lower = text.toLowerCase();
  // İ is the only character toLowerCase lengthens, so a length change says it is there.
  if (lower.length !== text.length) lower = text.replaceAll(CAPITAL_I_WITH_DOT, "i").toLowerCase();
  return lower.replace(FIXUP_RE, (letter) => FOLD_FIXUPS.get(letter)!);
}

/**
 * A test of whether a value is a text that contains `needle`, both folded. It runs per row in
 * scans, so it folds a text fully only when that could change the answer: when the text holds İ,
 * or a letter whose fold appears in the folded needle. Elsewhere the fold and toLowerCase differ
 * only in letters that neither the needle nor their folds can match.
 */
export function compileFoldedIncludes(needle: string): (value: unknown) => boolean {
  const wanted = foldCase(needle);
  // Looked for in the text as given, which costs next to nothing when they are absent: each is
  // left alone by toLowerCase, and only Σ lower-cases into one of them (ς, at the end of a word).
  const sources = [...FOLD_FIXUPS].filter(([, folded]) => wanted.includes(folded)).map(([source]) => source);
  if (sources.includes("\u03c2")) sources.push("\u03a3");
  if (sources.length === 0) {
    return (value) => {
      if (typeof value !== "string") return false;
      const lower = value.toLowerCase();
      return (lower.length === value.length ? lower : foldCase(value)).includes(wanted);
    };
  }
  const [only] = sources;
  const hasSource = sources.length === 1 ? (text: string) => text.includes(only!) : (text: string) => sources.some((source) => text.includes(source));
  return (value) => {
    if (typeof value !== "string") return false;
    const lower = value.toLowerCase();
    return (lower.length !== value.length || hasSource(value) ? foldCase(value) : lower).includes(wanted);
  };
}
