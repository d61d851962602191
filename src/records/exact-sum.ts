// The exact sum of doubles, rounded once at the end: the same answer for the same numbers in any
// order, on every store (they read rows in different orders), to the last digit. Shewchuk's
// partials (as Python's math.fsum keeps them) while no partial overflows; past ±1.8e308 on the way
// (1e308 + 1e308 − 1e308), an integer count of 2^-1074, the smallest step a double has.

/** A double's value in units of 2^-1074 is an integer of at most 2,098 bits. */
const UNIT_EXPONENT = 1074;

export class ExactSum {
  /** Non-overlapping partials, smallest magnitude first, in [0, count); their exact sum is the sum. */
  private partials = new Float64Array(4);
  private count = 0;
  /** The sum in units of 2^-1074, once a partial overflowed; then partials is unused. */
  private units: bigint | null = null;

  add(value: number): void {
    if (this.units !== null) {
      this.units += unitsOf(value);
      return;
    }
    const partials = this.partials;
    let x = value;
    let kept = 0;
    for (let i = 0; i < this.count; i++) {
      let y = partials[i]!;
      if (Math.abs(x) < Math.abs(y)) {
        const larger = y;
        y = x;
        x = larger;
      }
      const hi = x + y;
      if (!Number.isFinite(hi)) {
        let units = unitsOf(value);
        for (let j = 0; j < this.count; j++) units += unitsOf(partials[j]!);
        this.units = units;
        return;
      }
      const lo = y - (hi - x);
      if (lo !== 0) partials[kept++] = lo;
      x = hi;
    }
    // At most one partial more than before: 40 are enough for any doubles (2,098 bits over 53).
    if (kept === partials.length) (this.partials = new Float64Array(partials.length * 2)).set(partials);
    this.partials[kept] = x;
    this.count = kept + 1;
  }

  /** The sum rounded to the nearest double (ties to even); ±Infinity when no double holds it. */
  value(): number {
    return this.units !== null ? doubleOf(this.units) : roundPartials(this.partials.subarray(0, this.count));
  }

  /** The sum divided by `count`, rounded once from the sum as value() gives it when that is finite. */
  mean(count: number): number {
    const sum = this.value();
    if (Number.isFinite(sum) || this.units === null) return sum / count;
    // The sum is past the doubles but its mean may not be (1e308 + 1e308 over 2).
    return doubleOf(this.units / BigInt(count));
  }
}

/** math.fsum's last step: the partials' exact sum rounded once, half to even. */
function roundPartials(partials: Float64Array): number {
  let n = partials.length;
  if (n === 0) return 0;
  let hi = partials[--n]!;
  let lo = 0;
  while (n > 0) {
    const x = hi;
    const y = partials[--n]!;
    hi = x + y;
    lo = y - (hi - x);
    if (lo !== 0) break;
  }
  // A tie between two doubles that the rest of the partials breaks: round away from hi.
  if (n > 0 && ((lo < 0 && partials[n - 1]! < 0) || (lo > 0 && partials[n - 1]! > 0))) {
    const y = lo * 2;
    const x = hi + y;
    if (y === x - hi) hi = x;
  }
  return hi;
}

const bits = new DataView(new ArrayBuffer(8));

/** A finite double as an integer count of 2^-1074. */
function unitsOf(value: number): bigint {
  bits.setFloat64(0, value);
  const high = bits.getUint32(0);
  const exponent = (high >>> 20) & 0x7ff;
  const mantissa = (BigInt(high & 0xfffff) << 32n) | BigInt(bits.getUint32(4));
  // A subnormal is mantissa × 2^-1074; a normal (mantissa + 2^52) × 2^(exponent − 1075).
  const magnitude = exponent === 0 ? mantissa : (mantissa | (1n << 52n)) << BigInt(exponent - 1);
  return high >>> 31 ? -magnitude : magnitude;
}

/** An integer count of 2^-1074 rounded to the nearest double (ties to even), or ±Infinity. */
function doubleOf(units: bigint): number {
  const magnitude = units < 0n ? -units : units;
  const length = magnitude.toString(2).length;
  // Keep 64 bits, and a sticky bit for whatever is shifted out, so that Number() (which rounds
  // half to even) rounds as the whole integer would; the scaling after it is exact.
  const shift = Math.max(0, length - 64);
  let kept = magnitude >> BigInt(shift);
  if (shift > 0 && (magnitude & ((1n << BigInt(shift)) - 1n)) !== 0n) kept |= 1n;
  const value = Number(kept) * 2 ** (shift - UNIT_EXPONENT);
  return units < 0n ? -value : value;
}
