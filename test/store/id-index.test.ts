// IdIndex: rows by id through a 30-bit hash. Whatever the sequence of sets and deletes, and
// whichever ids share a hash, it must answer exactly what a Map<string, Row> answers.

import assert from "node:assert/strict";
import { test } from "node:test";
import { hashId, IdIndex } from "../../src/store/memory/id-index.ts";
import type { Row } from "../../src/store/store.ts";
import { seeded } from "../support/random.ts";

const row = (id: string, rev = 1): Row => ({ id, rev, deleted: false, data: {} });

/** Groups of distinct ids with one hash per group, found by search (30 bits: a pair in ~40,000 ids). */
function collidingIds(groups: number): string[][] {
  const byHash = new Map<number, string[]>();
  const found: string[][] = [];
  for (let n = 0; found.length < groups; n++) {
    const id = n.toString(16).padStart(24, "0");
    const hash = hashId(id);
    const same = byHash.get(hash);
    if (!same) byHash.set(hash, [id]);
    else if (same.push(id) === 2) found.push(same);
  }
  return found;
}

test("hashId: a Smi-sized integer, the same for equal ids, and spread over ids that differ in one digit", () => {
  const hashes = new Set<number>();
  for (let n = 0; n < 10_000; n++) {
    const hash = hashId(`01a2142275520000000${n.toString(16).padStart(5, "0")}`);
    assert.ok(Number.isInteger(hash) && hash >= 0 && hash < 2 ** 30, `hash ${hash}`);
    hashes.add(hash);
  }
  assert.equal(hashes.size, 10_000);
  assert.equal(hashId("abc"), hashId("ab" + "c"));
  assert.equal(hashId("ünïcødé-id"), hashId("ünïcødé-id"));
});

test("ids that share a hash are told apart: set, replace, get and delete each one alone", () => {
  const [[a, b]] = collidingIds(1) as [[string, string]];
  assert.notEqual(a, b);
  assert.equal(hashId(a), hashId(b));
  const index = new IdIndex();
  index.set(row(a));
  assert.equal(index.get(b), undefined, "a lone row under b's hash is not b");
  index.set(row(b));
  assert.equal(index.get(a)?.id, a);
  assert.equal(index.get(b)?.id, b);
  index.set(row(b, 2));
  assert.equal(index.get(b)?.rev, 2, "replaced in its shared slot");
  assert.equal(index.get(a)?.rev, 1);
  index.delete(a);
  assert.equal(index.get(a), undefined);
  assert.equal(index.get(b)?.rev, 2);
  index.delete(b);
  assert.equal(index.get(b), undefined);
  index.delete(b);
  index.set(row(a, 3));
  assert.equal(index.get(a)?.rev, 3);
});

test("any sequence of sets and deletes answers as a Map does (random, with colliding ids)", () => {
  const random = seeded(11);
  const ids = [...collidingIds(40).flat(), ...Array.from({ length: 200 }, (_, n) => `id-${n}`), "", "x".repeat(128)];
  const index = new IdIndex();
  const model = new Map<string, Row>();
  for (let step = 0; step < 20_000; step++) {
    const id = ids[Math.floor(random() * ids.length)]!;
    if (random() < 0.6) {
      const version = row(id, step);
      index.set(version);
      model.set(id, version);
    } else {
      index.delete(id);
      model.delete(id);
    }
    if (step % 500 === 0) for (const each of ids) assert.equal(index.get(each), model.get(each), `step ${step}, id ${JSON.stringify(each)}`);
  }
  index.clear();
  for (const each of ids) assert.equal(index.get(each), undefined);
});
