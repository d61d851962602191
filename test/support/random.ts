// A deterministic PRNG (mulberry32) for property tests: the same seed replays the same run, so a
// failure found once can be found again.

export type Random = () => number;

/** Numbers in [0, 1) from `seed`. */
export function seeded(seed: number): Random {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const LETTERS_AND_DIGITS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/** `length` letters and digits from `seed`: a text that no index can compress away. */
export function randomText(length: number, seed: number): string {
  const next = seeded(seed);
  let text = "";
  for (let i = 0; i < length; i++) text += LETTERS_AND_DIGITS[Math.floor(next() * LETTERS_AND_DIGITS.length)];
  return text;
}
