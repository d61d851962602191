// ExactSum: the sum of doubles as if added exactly and rounded once, in any order. The reference is
// independent of it: each double's exact decimal expansion, added as an integer, and the decimal
// text read back by Number(), which rounds correctly.

import assert from "node:assert/strict";
import { test } from "node:test";
import { ExactSum } from "../../src/records/exact-sum.ts";

function exactReference(values: readonly number[]): number {
  // Every double is a whole number of 2^-1074; written in decimal with 1,074 places, exactly.
  let total = 0n;
  for (const value of values) {
    const [whole, fraction] = splitExact(value);
    total += (value < 0 ? -1n : 1n) * BigInt(whole + fraction.padEnd(1074, "0"));
  }
  const digits = (total < 0n ? -total : total).toString().padStart(1075, "0");
  return (total < 0n ? -1 : 1) * Number(`${digits.slice(0, -1074)}.${digits.slice(-1074)}`);
}

/** A double's exact decimal expansion: its binary digits carried into base 10 by BigInt. */
function splitExact(value: number): [string, string] {
  const binary = Math.abs(value).toString(2); // exact: a double's binary expansion is finite
  const [whole, fraction = ""] = binary.split(".");
  // fraction bits b1 b2 … bk = F / 2^k = F × 5^k / 10^k
  const k = fraction.length;
  const decimals = k === 0 ? "" : (BigInt(`0b${fraction}`) * 5n ** BigInt(k)).toString().padStart(k, "0");
  return [BigInt(`0b${whole}`).toString(), decimals];
}

function sumOf(values: readonly number[]): number {
  const sum = new ExactSum();
  for (const value of values) sum.add(value);
  return sum.value();
}

const CASES: Array<[values: number[], expected: number]> = [
  [[], 0],
  [[0.1, 0.2], 0.30000000000000004],
  [[1e308, 1e308, -1e308], 1e308],
  [[1e308, -1e308, 1e308], 1e308],
  [[-1e308, -1e308, 1e308], -1e308],
  [[1e308, 1e308], Infinity],
  [[1, 1e100, 1, -1e100], 2],
  [[5e-324, 5e-324], 1e-323],
  [[1, 2 ** -53], 1], // a tie, to even
  [[1, 2 ** -53, 2 ** -105], 1 + 2 ** -52], // the tie broken by what lies below it
  [[1 + 2 ** -52, 2 ** -53], 1 + 2 ** -51], // a tie, to even (upwards)
  [[0.1, 12.3456789, 0.2, 1e-7, 333.33, 0.7], 346.675679],
];

test("each sum is the exact sum rounded once (a table)", () => {
  for (const [values, expected] of CASES) {
    assert.equal(sumOf(values), expected, JSON.stringify(values));
    if (Number.isFinite(expected)) assert.equal(exactReference(values), expected, `the reference agrees on ${JSON.stringify(values)}`);
  }
});

test("any order of the same numbers gives the same sum, the reference's, over seeded random sets", () => {
  let seed = 39;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (let round = 0; round < 200; round++) {
    const values = Array.from({ length: 2 + Math.floor(random() * 30) }, () => {
      const magnitude = [1e-300, 1e-5, 1, 1e3, 1e16, 1e200, 1e307][Math.floor(random() * 7)]!;
      return (random() - 0.5) * magnitude * (1 + random());
    });
    const expected = exactReference(values);
    for (let shuffle = 0; shuffle < 4; shuffle++) {
      const order = [...values].sort(() => random() - 0.5);
      assert.equal(sumOf(order), expected, JSON.stringify(order));
    }
  }
});

test("a sum past the doubles on the way back is exact, and a mean is taken from the exact sum", () => {
  const back = new ExactSum();
  for (const value of [1e308, 1e308, 0.5, -1e308, -1e308]) back.add(value);
  assert.equal(back.value(), 0.5);
  const over = new ExactSum();
  over.add(1e308);
  over.add(1e308);
  assert.equal(over.value(), Infinity);
  assert.equal(over.mean(2), 1e308);
});
