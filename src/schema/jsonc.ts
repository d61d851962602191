// JSONC (docs/entities.md): JSON with `//` and `/* */` comments and trailing commas, as Base44
// projects and editors write it. This file only blanks them out and says where a syntax error is;
// JSON.parse does the parsing, and the callers name the file.

const BYTE_ORDER_MARK = 0xfeff;

/**
 * `text` as plain JSON of the same length: each comment and trailing comma becomes spaces (a block
 * comment keeps its line breaks), so every position JSON.parse reports, and the line:column made
 * from it, is still the file's. An unclosed string or block comment is left as it is, for JSON.parse
 * to refuse at its place.
 */
export function jsoncToJson(text: string): string {
  // One entry per UTF-16 code unit, as JSON.parse counts positions.
  const out = text.split("");
  const blank = (from: number, to: number) => {
    for (let i = from; i < to; i++) if (out[i] !== "\n" && out[i] !== "\r") out[i] = " ";
  };
  // The last character that is neither whitespace nor comment, and a comma that may turn out trailing.
  let previous = "";
  let comma = -1;
  let i = text.charCodeAt(0) === BYTE_ORDER_MARK ? (blank(0, 1), 1) : 0;
  while (i < text.length) {
    const char = text[i]!;
    if (char === "/" && text[i + 1] === "/") {
      const end = text.indexOf("\n", i);
      blank(i, end === -1 ? text.length : end);
      i = end === -1 ? text.length : end;
      continue;
    }
    if (char === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2);
      if (end === -1) break;
      blank(i, end + 2);
      i = end + 2;
      continue;
    }
    if (isWhitespace(char)) {
      i++;
      continue;
    }
    // Only a comma after a value can be trailing: `[,]` and `{"a":,}` stay errors.
    if ((char === "}" || char === "]") && comma !== -1) blank(comma, comma + 1);
    comma = char === "," && !"[{,:".includes(previous) ? i : -1;
    previous = char;
    i = char === '"' ? endOfString(text, i) : i + 1;
  }
  return out.join("");
}

/** The value of a JSONC text; a syntax error is JSON.parse's, at a position that is the text's own. */
export function parseJsonc(text: string): unknown {
  return JSON.parse(jsoncToJson(text));
}

/** ":line:column" of the place a parse error names ("at position N", or the end of the text), or "" when it names none. */
export function placeOf(text: string, error: Error): string {
  const found = /at position (\d+)/.exec(error.message);
  const position = found ? Number(found[1]) : /end of JSON input/.test(error.message) ? text.length : null;
  if (position === null) return "";
  const before = text.slice(0, position);
  const line = before.split("\n").length;
  const column = position - before.lastIndexOf("\n");
  return `:${line}:${column}`;
}

/** The index after the string opening at `start`: past its closing quote, skipping escaped characters. */
function endOfString(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    if (text[i] === "\\") i++;
    else if (text[i] === '"') return i + 1;
  }
  return text.length;
}

function isWhitespace(char: string): boolean {
  return char === " " || char === "\t" || char === "\n" || char === "\r";
}
