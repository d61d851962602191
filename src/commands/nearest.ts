// "Did you mean …?" for a mistyped command or option: the known name fewest edits away, when it is
// close enough to be the one meant (a third of the name's length, at least one edit).

export function nearestName(given: string, known: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const name of known) {
    const distance = editDistance(given, name);
    if (distance < bestDistance) [best, bestDistance] = [name, distance];
  }
  return bestDistance <= Math.max(1, Math.floor(given.length / 3)) ? best : null;
}

/** " Did you mean --schema?", or nothing: for the end of a message. */
export function didYouMean(given: string, known: readonly string[], prefix = ""): string {
  const nearest = nearestName(given, known);
  return nearest === null ? "" : ` Did you mean ${prefix}${nearest}?`;
}

/** Levenshtein distance, with a swap of two neighbours counting as one edit ("exprot"). */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let distance = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) distance = Math.min(distance, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = distance;
    }
  }
  return rows[a.length]![b.length]!;
}
