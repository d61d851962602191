// The one refusal of the regex engine (src/query/regex/): a pattern it will not run. Its message
// continues a sentence about the pattern ("… uses a lookahead …") and says how to mend it;
// regex-guard.ts turns it into invalid_filter.

export class RegexProblem extends Error {
  override readonly name = "RegexProblem";
}
