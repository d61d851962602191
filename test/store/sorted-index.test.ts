// SortedIndex: entries ordered by (sort key, id) in chunks that split as they grow; every walk,
// from any position and in either direction, must equal the same walk over a plain sorted array.

import assert from "node:assert/strict";
import { test } from "node:test";
import { compareSortKeys, type SortKey } from "../../src/schema/fields.ts";
import { SortedIndex } from "../../src/store/memory/sorted-index.ts";
import type { SortPosition } from "../../src/query/filter-tree.ts";
import type { Row } from "../../src/store/store.ts";
import { seeded } from "../support/random.ts";

function row(id: number, key: SortKey, rev = 1): Row {
  return { id: String(id).padStart(8, "0"), rev, deleted: false, data: { key } };
}

const keyOf = (r: Row) => r.data.key as SortKey;
const newIndex = () => new SortedIndex(keyOf, compareSortKeys);

function order(a: SortPosition, b: SortPosition): number {
  return compareSortKeys(a.key, b.key) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** The reference: every row, sorted by (key, id). */
function expectedWalk(rows: Iterable<Row>, descending: boolean, after: SortPosition | null): Row[] {
  const sorted = [...rows].sort((a, b) => order({ key: keyOf(a), id: a.id }, { key: keyOf(b), id: b.id }));
  if (descending) sorted.reverse();
  const direction = descending ? -1 : 1;
  return after ? sorted.filter((r) => direction * order({ key: keyOf(r), id: r.id }, after) > 0) : sorted;
}

const ids = (rows: Iterable<Row>) => [...rows].map((r) => r.id);

function take<T>(iterable: Iterable<T>, n: number): T[] {
  const out: T[] = [];
  for (const item of iterable) {
    if (out.length === n) break;
    out.push(item);
  }
  return out;
}

test("an empty index walks nothing, from anywhere, in either direction", () => {
  const index = newIndex();
  assert.equal(index.size, 0);
  assert.deepEqual([...index.walk(false, null)], []);
  assert.deepEqual([...index.walk(true, null)], []);
  assert.deepEqual([...index.walk(false, { key: 1, id: "x" })], []);
  assert.deepEqual([...index.walk(true, { key: 1, id: "x" })], []);
  index.build([]);
  assert.deepEqual([...index.walk(true, null)], []);
});

test("a small index orders by key, then id, with null keys last ascending and first descending", () => {
  const index = newIndex();
  const rows = [row(5, 2), row(1, null), row(3, 2), row(4, 1), row(2, "b"), row(6, "a"), row(7, -3), row(8, null)];
  for (const r of rows) index.insert(r);
  assert.equal(index.size, rows.length);
  assert.deepEqual(ids(index.walk(false, null)), ["00000007", "00000004", "00000003", "00000005", "00000006", "00000002", "00000001", "00000008"]);
  assert.deepEqual(ids(index.walk(true, null)), ["00000008", "00000001", "00000002", "00000006", "00000005", "00000003", "00000004", "00000007"]);
});

test("walks resume strictly after a position, whether or not an entry sits there", () => {
  const index = newIndex();
  const rows = [row(1, 10), row(2, 10), row(3, 20), row(4, 30), row(5, null)];
  index.build(rows);
  const table: Array<[boolean, SortPosition, string[]]> = [
    [false, { key: 10, id: "00000001" }, ["00000002", "00000003", "00000004", "00000005"]],
    [false, { key: 10, id: "00000002" }, ["00000003", "00000004", "00000005"]],
    [false, { key: 10, id: "00000000" }, ["00000001", "00000002", "00000003", "00000004", "00000005"]],
    [false, { key: 15, id: "zzz" }, ["00000003", "00000004", "00000005"]],
    [false, { key: 5, id: "" }, ["00000001", "00000002", "00000003", "00000004", "00000005"]],
    [false, { key: 30, id: "00000004" }, ["00000005"]],
    [false, { key: null, id: "00000005" }, []],
    [false, { key: null, id: "00000000" }, ["00000005"]],
    [true, { key: 10, id: "00000002" }, ["00000001"]],
    [true, { key: 10, id: "00000001" }, []],
    [true, { key: 20, id: "00000003" }, ["00000002", "00000001"]],
    [true, { key: 25, id: "" }, ["00000003", "00000002", "00000001"]],
    [true, { key: null, id: "00000005" }, ["00000004", "00000003", "00000002", "00000001"]],
    [true, { key: null, id: "zzz" }, ["00000005", "00000004", "00000003", "00000002", "00000001"]],
    [true, { key: 1, id: "" }, []],
  ];
  for (const [descending, after, expected] of table) {
    assert.deepEqual(ids(index.walk(descending, after)), expected, `${descending ? "desc" : "asc"} after ${JSON.stringify(after)}`);
  }
});

test("build and one-by-one inserts give the same order across many chunks", () => {
  const next = seeded(1);
  const rows: Row[] = [];
  for (let i = 0; i < 9000; i++) rows.push(row(i, next() < 0.05 ? null : Math.floor(next() * 500)));
  const built = newIndex();
  built.build(rows);
  const inserted = newIndex();
  for (const r of rows) inserted.insert(r);
  const expected = ids(expectedWalk(rows, false, null));
  assert.equal(built.size, 9000);
  assert.equal(inserted.size, 9000);
  assert.deepEqual(ids(built.walk(false, null)), expected);
  assert.deepEqual(ids(inserted.walk(false, null)), expected);
  assert.deepEqual(ids(inserted.walk(true, null)), [...expected].reverse());
});

test("ascending inserts (the created_date case) split the last chunk and stay in order", () => {
  const index = newIndex();
  const rows: Row[] = [];
  for (let i = 0; i < 7000; i++) {
    const r = row(i, Math.floor(i / 3)); // runs of equal keys, ordered by id
    rows.push(r);
    index.insert(r);
  }
  assert.deepEqual(ids(index.walk(false, null)), ids(rows));
  assert.deepEqual(ids(index.walk(true, null)), ids(rows).reverse());
  // Seeks at every chunk boundary region.
  for (const at of [0, 1, 255, 256, 257, 511, 512, 513, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 6998, 6999]) {
    const after = { key: keyOf(rows[at]!), id: rows[at]!.id };
    assert.deepEqual(ids(take(index.walk(false, after), 3)), ids(rows.slice(at + 1, at + 4)), `asc after ${at}`);
    assert.deepEqual(ids(take(index.walk(true, after), 3)), ids(rows.slice(Math.max(0, at - 3), at)).reverse(), `desc after ${at}`);
  }
});

test("descending inserts split the first chunk and stay in order", () => {
  const index = newIndex();
  const rows: Row[] = [];
  for (let i = 5000; i > 0; i--) {
    const r = row(i, i);
    rows.unshift(r);
    index.insert(r);
  }
  assert.deepEqual(ids(index.walk(false, null)), ids(rows));
});

test("random inserts, removes and replaces keep every walk equal to the reference", () => {
  const next = seeded(42);
  const index = newIndex();
  const live = new Map<string, Row>();
  let nextId = 0;
  const randomKey = (): SortKey => (next() < 0.05 ? null : next() < 0.5 ? Math.floor(next() * 300) : `s${Math.floor(next() * 300)}`);
  const pick = (): Row | undefined => {
    if (live.size === 0) return undefined;
    const at = Math.floor(next() * live.size);
    let i = 0;
    for (const r of live.values()) if (i++ === at) return r;
    return undefined;
  };
  const check = (label: string) => {
    assert.equal(index.size, live.size, label);
    assert.deepEqual(ids(index.walk(false, null)), ids(expectedWalk(live.values(), false, null)), `${label}: ascending`);
    for (let i = 0; i < 20; i++) {
      const descending = next() < 0.5;
      const base = pick();
      const after: SortPosition =
        base && next() < 0.7 ? { key: keyOf(base), id: base.id } : { key: randomKey(), id: String(Math.floor(next() * nextId)).padStart(8, "0") };
      const expected = ids(expectedWalk(live.values(), descending, after).slice(0, 50));
      assert.deepEqual(ids(take(index.walk(descending, after), 50)), expected, `${label}: walk ${descending ? "desc" : "asc"} after ${JSON.stringify(after)}`);
    }
  };
  for (let round = 0; round < 6; round++) {
    for (let op = 0; op < 3000; op++) {
      const roll = next();
      if (roll < 0.55 || live.size === 0) {
        const r = row(nextId++, randomKey());
        live.set(r.id, r);
        index.insert(r);
      } else if (roll < 0.75) {
        const r = pick()!;
        live.delete(r.id);
        index.remove(r);
      } else {
        const old = pick()!;
        // Half the replacements keep the key (in place), half move the row.
        const r = row(Number(old.id), next() < 0.5 ? keyOf(old) : randomKey(), old.rev + 1);
        live.set(r.id, r);
        index.replace(old, r);
      }
    }
    check(`round ${round}`);
  }
});

test("replace with an unchanged key swaps the row version in place", () => {
  const index = newIndex();
  const rows = [row(1, 5), row(2, 5), row(3, 7)];
  index.build(rows);
  const newer = row(2, 5, 9);
  index.replace(rows[1]!, newer);
  const walked = [...index.walk(false, null)];
  assert.equal(walked[1], newer);
  assert.equal(index.size, 3);
});

test("replace with a new key moves the row", () => {
  const index = newIndex();
  const rows = [row(1, 5), row(2, 6), row(3, 7)];
  index.build(rows);
  index.replace(rows[0]!, row(1, 8, 2));
  assert.deepEqual(ids(index.walk(false, null)), ["00000002", "00000003", "00000001"]);
  index.replace(row(1, 8, 2), row(1, null, 3));
  assert.deepEqual(ids(index.walk(true, null)), ["00000001", "00000003", "00000002"]);
});

test("removing every entry empties the index, and it fills again", () => {
  const index = newIndex();
  const rows: Row[] = [];
  for (let i = 0; i < 5000; i++) rows.push(row(i, i % 17));
  for (const r of rows) index.insert(r);
  const next = seeded(7);
  const shuffled = [...rows].sort(() => next() - 0.5);
  for (const r of shuffled) index.remove(r);
  assert.equal(index.size, 0);
  assert.deepEqual([...index.walk(false, null)], []);
  assert.deepEqual([...index.walk(true, { key: 3, id: "x" })], []);
  index.insert(rows[3]!);
  assert.deepEqual(ids(index.walk(true, null)), ["00000003"]);
});

test("removing or replacing a row that is not indexed throws", () => {
  const index = newIndex();
  index.build([row(1, 1)]);
  assert.throws(() => index.remove(row(2, 1)));
  assert.throws(() => index.remove(row(1, 2)));
  assert.throws(() => index.replace(row(2, 1), row(2, 1)));
});

test("a seek into the middle of a large index returns the entries right after it", () => {
  const index = newIndex();
  const rows: Row[] = [];
  for (let i = 0; i < 3000; i++) rows.push(row(i, i));
  index.build(rows);
  assert.deepEqual(ids(take(index.walk(false, { key: 1500, id: rows[1500]!.id }), 10)), ids(rows.slice(1501, 1511)));
  assert.deepEqual(ids(take(index.walk(true, { key: 1500, id: rows[1500]!.id }), 3)), ids(rows.slice(1497, 1500)).reverse());
});

test("a walk's rest, copied at any point, is what the walk would still give, and writes after it change nothing of it", () => {
  const next = seeded(11);
  const index = newIndex();
  const rows: Row[] = [];
  for (let i = 0; i < 3000; i++) rows.push(row(i, Math.floor(next() * 400)));
  for (const r of rows) index.insert(r);
  for (const descending of [false, true]) {
    for (const taken of [0, 1, 511, 512, 1700, 2999, 3000]) {
      const after = taken === 1700 ? { key: keyOf(rows[5]!), id: rows[5]!.id } : null;
      const expected = ids(expectedWalk(rows, descending, after));
      const walk = index.walk(descending, after);
      const given: string[] = [];
      while (given.length < taken) {
        const step = walk.next();
        if (step.done) break;
        given.push(step.value.id);
      }
      const rest = walk.rest();
      // Writes after the copy: an insert into the middle and a removal move the index's entries.
      const added = row(10_000 + taken, 200);
      index.insert(added);
      index.remove(rows[taken % rows.length]!);
      assert.deepEqual([...given, ...ids(rest)], expected, `${descending ? "desc" : "asc"} after ${taken} rows`);
      assert.deepEqual(ids(walk), [], "the walk is at its end once its rest is copied");
      index.remove(added);
      index.insert(rows[taken % rows.length]!);
    }
  }
});
