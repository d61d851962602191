// A table's rows by id with a snapshot's rows kept as bytes until read (store/memory/row-map.ts,
// loaded-rows.ts): the same answers as a Map holding every row, whatever is asked first.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { RowMap } from "../../src/store/memory/row-map.ts";
import { StoredRow } from "../../src/rows/stored-row.ts";

/** Row lines as a snapshot holds them, in one buffer: `rev seq.index {"id":…}\n`. */
function loadLines(map: RowMap, records: Array<{ id: string; rev: number; deleted?: boolean; seq?: number; index?: number; [field: string]: unknown }>): Buffer {
  const lines = records.map(({ rev, deleted, seq, index, ...data }) => ({ prefix: `${rev} ${seq ?? 1}.${index ?? 0} `, json: JSON.stringify(data), rev, deleted: deleted === true, seq: seq ?? 1, index: index ?? 0 }));
  const bytes = Buffer.from(lines.map(({ prefix, json }) => `${prefix}${json}\n`).join(""));
  let at = 0;
  for (const line of lines) {
    const from = at + Buffer.byteLength(line.prefix);
    const idTo = bytes.indexOf('"', from + '{"id":"'.length);
    map.addLoaded(bytes, idTo, from, line.rev, line.deleted, line.seq, line.index);
    at = from + Buffer.byteLength(line.json) + 1;
  }
  return bytes;
}

describe("rows loaded as bytes", () => {
  test("a read makes the row once, unparsed, and every later read gets the same one", () => {
    const map = new RowMap();
    loadLines(map, [
      { id: "a1", rev: 3, seq: 7, index: 2, title: "first" },
      { id: "b2", rev: 4, deleted: true, seq: 8, index: 70000, title: "second" },
    ]);
    assert.equal(map.size, 2);
    const row = map.get("a1") as StoredRow;
    assert.equal(row.isUnparsed, true);
    assert.deepEqual([row.id, row.rev, row.deleted, row.seq, row.index], ["a1", 3, false, 7, 2]);
    assert.equal(row.unparsedJson, '{"id":"a1","title":"first"}');
    assert.equal(map.get("a1"), row);
    assert.deepEqual(row.data, { id: "a1", title: "first" });
    assert.equal(row.isUnparsed, false);
    const deleted = map.get("b2")!;
    assert.deepEqual([deleted.deleted, deleted.index, deleted.data.title], [true, 70000, "second"]);
    assert.equal(map.get("c3"), undefined);
    assert.equal(map.get("a"), undefined, "a prefix of an id is not the id");
    assert.equal(map.get("a12"), undefined, "nor is an id it prefixes");
  });

  test("a write replaces a loaded row, a delete removes it, and a new id is added", () => {
    const map = new RowMap();
    loadLines(map, [{ id: "a", rev: 1 }, { id: "b", rev: 2 }, { id: "c", rev: 3 }]);
    const replacement = new StoredRow("a", 10, false, { id: "a", title: "new" });
    map.set("a", replacement);
    map.delete("b");
    map.set("d", new StoredRow("d", 11, false, { id: "d" }));
    assert.equal(map.size, 3);
    assert.equal(map.get("a"), replacement);
    assert.equal(map.get("b"), undefined);
    assert.deepEqual([...map.values()].map((row) => `${row.id}@${row.rev}`).sort(), ["a@10", "c@3", "d@11"]);
    assert.equal(map.size, 3);
    assert.equal(map.get("c")!.rev, 3);
  });

  test("ids beyond ASCII, and thousands of rows (the table grows)", () => {
    const map = new RowMap();
    const records = Array.from({ length: 5000 }, (_, i) => ({ id: i % 2 ? `ñ-${i}-✓` : `id-${i}`, rev: i + 1, n: i }));
    loadLines(map, records);
    assert.equal(map.size, 5000);
    for (const i of [0, 1, 2, 999, 4096, 4999]) {
      const row = map.get(records[i]!.id)!;
      assert.deepEqual([row.id, row.rev, row.data.n], [records[i]!.id, i + 1, i]);
    }
    assert.equal(map.greatestLoadedId(), "ñ-999-✓", "byte order, which is code point order");
    assert.equal([...map.values()].length, 5000);
    assert.equal(map.greatestLoadedId(), "ñ-999-✓", "still known once every row is made");
  });

  test("a second row with the same id replaces the first", () => {
    const map = new RowMap();
    loadLines(map, [{ id: "x", rev: 1, v: 1 }, { id: "y", rev: 2 }, { id: "x", rev: 3, v: 2 }]);
    assert.equal(map.size, 2);
    assert.deepEqual([map.get("x")!.rev, map.get("x")!.data.v], [3, 2]);
  });

  test("the sizes given before loading are room, not rows", () => {
    const map = new RowMap();
    map.expect(100_000);
    loadLines(map, [{ id: "only", rev: 1 }]);
    assert.equal(map.size, 1);
    assert.equal(map.get("only")!.rev, 1);
  });

  test("revisions and feed positions past 32 bits keep their values", () => {
    const map = new RowMap();
    loadLines(map, [{ id: "small", rev: 5, seq: 6 }, { id: "big", rev: 2 ** 40, seq: 2 ** 35, index: 3 }]);
    assert.deepEqual([map.get("small")!.rev, map.get("small")!.seq], [5, 6]);
    assert.deepEqual([map.get("big")!.rev, map.get("big")!.seq, map.get("big")!.index], [2 ** 40, 2 ** 35, 3]);
  });
});

describe("a snapshot's picture of rows loaded as bytes", () => {
  test("capture takes this instant's rows; writes after it change nothing in it, and it keeps no row it makes", () => {
    const map = new RowMap();
    loadLines(map, [{ id: "a", rev: 1 }, { id: "b", rev: 2 }, { id: "c", rev: 3 }]);
    const read = map.get("c");
    map.set("a", new StoredRow("a", 10, false, { id: "a" }));
    const { rows, loaded } = map.capture();
    assert.deepEqual(rows.map((row) => `${row.id}@${row.rev}`), ["a@10"]);
    assert.equal(loaded!.count, 2);
    map.set("b", new StoredRow("b", 11, false, { id: "b" }));
    map.delete("c");
    const written = [...loaded!.rows()];
    assert.deepEqual(written.map((row) => `${row.id}@${row.rev}`), ["b@2", "c@3"]);
    assert.deepEqual(written[1]!.data, read!.data, "the version read before the delete");
    assert.deepEqual(written[0]!.data, { id: "b" });
    assert.equal(map.get("b")!.rev, 11);
    assert.equal(map.size, 2);
  });
});
