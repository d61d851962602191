// The memory store's own bookkeeping under writes in any id order: a row whose id is above every
// stored id skips the look-up of an old version (memory-store.ts), so ids that arrive out of order,
// and updates of the largest id, must still keep rows, counts and value indexes right.

import assert from "node:assert/strict";
import { test } from "node:test";
import { parseFilter } from "../../src/query/filter.ts";
import { loadSchemaObject } from "../../src/schema/load.ts";
import { MemoryStore } from "../../src/store/memory-store.ts";
import type { Row } from "../../src/store/store.ts";
import { TASK } from "../support/server.ts";

const entity = loadSchemaObject({ Task: TASK }).entities.get("Task")!;
const ACCESS = { mayUseCreatedBy: true };

test("ids written out of order, then updated and deleted, keep rows, counts and value indexes right", async () => {
  const store = new MemoryStore(new Map([["Task", ["status", "done"]]]));
  let rev = 0;
  const put = (id: string, status: string, deleted = false) => {
    const row: Row = { id, rev: ++rev, deleted, data: { id, title: id, status } };
    return store.write({ puts: [{ entity: "Task", row }] });
  };
  await put("m", "todo");
  await put("z", "todo"); // the largest id
  await put("a", "todo"); // below the largest: new all the same
  await put("z", "done"); // an update of the largest id
  await put("a", "done", true); // a delete of a smaller one
  await put("n", "doing");
  const ids = (status: string) => store.list("Task", { filter: parseFilter(entity, { status }, ACCESS), sort: { field: "id", kind: "string", descending: false }, after: null, skip: 0, limit: 10, deleted: "exclude" }).rows.map((row) => row.id);
  assert.deepEqual(ids("todo"), ["m"]);
  assert.deepEqual(ids("done"), ["z"]);
  assert.deepEqual(ids("doing"), ["n"]);
  assert.equal(store.count("Task", null, "exclude"), 3);
  assert.equal(store.count("Task", null, "only"), 1);
  assert.equal(store.count("Task", parseFilter(entity, { status: "todo" }, ACCESS), "exclude"), 1);
  assert.equal(store.get("Task", "z")?.data.status, "done");
  assert.equal(store.get("Task", "a")?.deleted, true);
  assert.equal(store.maxId(), "z");
});
