// Reading the member names of stored data JSON without parsing it: a data folder's rows kept as
// text (stored-row.ts) are scanned so for the names of fields no longer declared, and a snapshot's
// entity line is written from them (docs/architecture.md, "Rows parsed on first use").

/**
 * Calls `visit` with where each member name of a JSON object's text lies (between its quotes), as
 * JSON.stringify writes it (no white space), without parsing the values: strings are skipped with
 * indexOf. Answers false, having visited some names perhaps, for text it does not read so (a name
 * with an escape in it), which the caller then parses.
 */
export function forEachMemberName(json: string, visit: (json: string, nameFrom: number, nameTo: number) => void): boolean {
  const end = json.length - 1;
  if (json.charCodeAt(0) !== 0x7b || json.charCodeAt(end) !== 0x7d) return false;
  let at = 1;
  while (at < end) {
    if (json.charCodeAt(at) !== 0x22) return false;
    const nameEnd = closingQuoteOf(json, at);
    if (nameEnd < 0 || json.charCodeAt(nameEnd + 1) !== 0x3a) return false;
    const nameFrom = at + 1;
    // Between the quotes only: a search back from the name would read the values before it again.
    for (let i = nameFrom; i < nameEnd; i++) if (json.charCodeAt(i) === 0x5c) return false;
    at = nameEnd + 2;
    visit(json, nameFrom, nameEnd);
    // Past the value: to the comma or closing brace at this object's own depth.
    for (let depth = 0; ; ) {
      const code = json.charCodeAt(at);
      if (code === 0x22) {
        const close = closingQuoteOf(json, at);
        if (close < 0) return false;
        at = close + 1;
      } else if (code === 0x7b || code === 0x5b) {
        depth++;
        at++;
      } else if (code === 0x7d || code === 0x5d) {
        if (depth === 0) break;
        depth--;
        at++;
      } else if (code === 0x2c && depth === 0) {
        break;
      } else if (Number.isNaN(code)) {
        return false;
      } else {
        at++;
      }
    }
    if (at === end) return true;
    if (json.charCodeAt(at) !== 0x2c) return false;
    at++;
  }
  return at === end;
}

/** Where the string opening at `quote` closes: the next quote not escaped by a backslash. */
function closingQuoteOf(json: string, quote: number): number {
  for (let at = json.indexOf('"', quote + 1); at >= 0; at = json.indexOf('"', at + 1)) {
    let backslashes = 0;
    while (json.charCodeAt(at - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
  return -1;
}

/**
 * Gathers the member names of many rows' data JSON, slicing a name out only when it is new: rows
 * of one entity mostly share theirs, in the same order, so each is first compared with the name
 * that followed the one before.
 */
export class MemberNames {
  readonly names: string[] = [];
  private last = -1;

  /** False when `json` must be parsed instead (see forEachMemberName). */
  add(json: string): boolean {
    this.last = -1;
    return forEachMemberName(json, this.visit);
  }

  private readonly visit = (json: string, from: number, to: number): void => {
    const { names } = this;
    const length = to - from;
    for (let tried = 0, at = this.last + 1; tried < names.length; tried++, at++) {
      if (at === names.length) at = 0;
      const name = names[at]!;
      if (name.length === length && json.startsWith(name, from)) {
        this.last = at;
        return;
      }
    }
    this.last = names.push(json.slice(from, to)) - 1;
  };
}
