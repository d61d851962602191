// The limits on what one request may cost (docs/query-language.md#limits, docs/aggregates.md#limits,
// docs/entities.md#sizes-of-arrays-and-objects), over HTTP on every store: a filter's nodes and
// listed values wherever a filter is parsed, an aggregate's groups (maxGroups), grouping by an array
// of 100,000 elements, the items and keys of a written record's arrays and objects on every
// write path, and the bytes of one record (maxRecordBytes). Each limit is tried one over (refused, with its numbers) and at it (answered).

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { q, SECRET, startTestServer, TASK, type Answer, type TestServer } from "../support/server.ts";

const ITEM = { name: "Item", type: "object", properties: { n: { type: "integer" }, tags: { type: "array", items: { type: "string" } } } };
const SCHEMA = { Task: TASK, Item: ITEM };
const ITEMS = "/api/entities/Item";
const TASKS = "/api/entities/Task";

/** The documented limits of a filter (docs/query-language.md#limits). */
const MAX_FILTER_NODES = 512;
const MAX_FILTER_LIST_ITEMS = 1000;

function assertError(answer: Answer, status: number, code: string, details: Record<string, unknown>, named: RegExp[] = []): void {
  assert.equal(answer.status, status, answer.text.slice(0, 500));
  assert.equal(answer.body?.error?.code, code, answer.text.slice(0, 500));
  for (const [name, value] of Object.entries(details)) assert.deepEqual(answer.body.error.details?.[name], value, `${answer.text.slice(0, 500)}: details.${name}`);
  for (const pattern of named) assert.match(answer.body.error.message, pattern);
}

function assertOk(answer: Answer, status = 200): void {
  assert.equal(answer.status, status, answer.text.slice(0, 500));
}

/** An $or of `branches` equalities on n, from `from` on: branches + 1 nodes. */
function orOf(branches: number, from = 0): Record<string, unknown> {
  return { $or: Array.from({ length: branches }, (_, i) => ({ n: from + i })) };
}

/** One $in of `count` values of n, from `from` on: one node, `count` listed values. */
function inOf(count: number, from = 0): Record<string, unknown> {
  return { n: { $in: Array.from({ length: count }, (_, i) => from + i) } };
}

describe("the size of a filter", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ schema: SCHEMA, webhooksAllowPrivate: true });
    for (const n of [5, 600]) assertOk(await server.call("POST", ITEMS, { body: { n } }), 201);
  });
  after(() => server.close());

  /** Every way a filter reaches the parser: [what, send the filter]. None matches a record with `from` 2000. */
  const paths: Array<[string, (server: TestServer, filter: Record<string, unknown>) => Promise<Answer>]> = [
    ["a list's q", (s, filter) => s.call("GET", `${ITEMS}?q=${q(filter)}`)],
    ["the SDK prefix's q", (s, filter) => s.call("GET", `/api/apps/app/entities/Item?q=${q(filter)}`)],
    ["a count's q", (s, filter) => s.call("GET", `${ITEMS}/count?q=${q(filter)}`)],
    ["an aggregate's query", (s, filter) => s.call("POST", `${ITEMS}/aggregate`, { body: { query: filter } })],
    ["a distinct's q", (s, filter) => s.call("GET", `${ITEMS}/distinct/n?q=${q(filter)}`)],
    ["an export's q", (s, filter) => s.call("GET", `${ITEMS}/export?q=${q(filter)}`)],
    ["the change feed's q", (s, filter) => s.call("GET", `${ITEMS}/changes?q=${q(filter)}`)],
    ["update-many's q", (s, filter) => s.call("PATCH", `${ITEMS}/update-many`, { body: { q: filter, set: { tags: ["x"] } } })],
    ["delete-many's q", (s, filter) => s.call("DELETE", `${ITEMS}?q=${q(filter)}`)],
    ["a webhook's q", (s, filter) => s.call("POST", "/api/webhooks", { body: { url: "http://127.0.0.1:9/hook", entities: ["Item"], q: filter } })],
  ];

  for (const [what, send] of paths) {
    test(`${what}: one node over the limit is 400 invalid_filter with the count, the limit and the mend; at the limit it is answered`, async () => {
      assertError(await send(server, orOf(MAX_FILTER_NODES, 2000)), 400, "invalid_filter", { nodes: MAX_FILTER_NODES + 1, maxNodes: MAX_FILTER_NODES }, [/513/, /512/, /\$in/]);
      assertOk(await send(server, orOf(MAX_FILTER_NODES - 1, 2000)), what === "a webhook's q" ? 201 : 200);
    });

    test(`${what}: one listed value over the limit is 400 invalid_filter; at the limit it is answered`, async () => {
      assertError(await send(server, inOf(MAX_FILTER_LIST_ITEMS + 1, 2000)), 400, "invalid_filter", { listItems: MAX_FILTER_LIST_ITEMS + 1, maxListItems: MAX_FILTER_LIST_ITEMS }, [/1001/, /1000/]);
      assertOk(await send(server, inOf(MAX_FILTER_LIST_ITEMS, 2000)), what === "a webhook's q" ? 201 : 200);
    });
  }

  test("a filter at the limits finds what it names", async () => {
    const count = await server.call("GET", `${ITEMS}/count?q=${q(orOf(MAX_FILTER_NODES - 1))}`);
    assertOk(count);
    assert.deepEqual(count.body, { count: 1 }); // n 5, not 600
    const listed = await server.call("GET", `${ITEMS}/count?q=${q(inOf(MAX_FILTER_LIST_ITEMS))}`);
    assert.deepEqual(listed.body, { count: 2 });
  });

  test("nodes are counted at every depth: an object of several conditions, $not, $nor and $elemMatch count too", async () => {
    // {"n": {"$gte": 0, "$lt": 9}} is and(≥, <): 3 nodes; {"$nor": [...]} is not(or(...)).
    const pair = { n: { $gte: 0, $lt: 9 } };
    const over = { $nor: Array.from({ length: 170 }, () => pair) }; // 2 + 170 × 3 = 512
    assertOk(await server.call("POST", `${ITEMS}/aggregate`, { body: { query: over } }));
    const beyond = { $nor: [...over.$nor, { tags: { $elemMatch: { $not: { $eq: "a" } } } }] }; // + elemMatch, not, compare
    assertError(await server.call("POST", `${ITEMS}/aggregate`, { body: { query: beyond } }), 400, "invalid_filter", { nodes: 515, maxNodes: MAX_FILTER_NODES });
  });

  test("$in, $nin and $all lists count together, and a plain array is a list", async () => {
    const nin = Array.from({ length: 500 }, (_, i) => 3000 + i);
    const all = Array.from({ length: 300 }, (_, i) => `t${i}`);
    const plain = Array.from({ length: 201 }, (_, i) => 4000 + i);
    const filter = { $and: [{ n: { $nin: nin } }, { tags: { $all: all } }, { n: plain }] };
    assertError(await server.call("POST", `${ITEMS}/aggregate`, { body: { query: filter } }), 400, "invalid_filter", { listItems: 1001 });
    filter.$and[2] = { n: plain.slice(1) };
    assertOk(await server.call("POST", `${ITEMS}/aggregate`, { body: { query: filter } }));
  });

  test("a refused update-many or delete-many changes nothing", async () => {
    const everything = { $or: [...(orOf(MAX_FILTER_NODES).$or as unknown[])] };
    assertError(await server.call("DELETE", `${ITEMS}?q=${q(everything)}`), 400, "invalid_filter", { nodes: 513 });
    assertError(await server.call("PATCH", `${ITEMS}/update-many`, { body: { q: everything, set: { n: 1 } } }), 400, "invalid_filter", { nodes: 513 });
    const rows = await server.call("GET", `${ITEMS}?sort_by=n&fields=n`);
    assert.deepEqual(rows.body.map((row: { n: number }) => row.n), [5, 600]);
  });
});

describe("grouping by an array field", () => {
  const ELEMENTS = 100_000;
  let server: TestServer;
  before(async () => {
    // The array's 99,999 distinct values and "other": 100,000 groups, the limit.
    server = await startTestServer({ schema: SCHEMA, maxArrayItems: ELEMENTS, maxGroups: ELEMENTS });
  });
  after(() => server.close());

  test("an array of 100,000 elements is grouped by each distinct element, once per record", async () => {
    // t0 … t99998, then t7 again.
    const tags = [...Array.from({ length: ELEMENTS - 1 }, (_, i) => `t${i}`), "t7"];
    assertOk(await server.call("POST", ITEMS, { body: { n: 1, tags } }), 201);
    assertOk(await server.call("POST", ITEMS, { body: { n: 2, tags: ["t7", "other", "t7"] } }), 201);
    // Removing duplicates with indexOf took O(n²): seconds for this one record (a Set now).
    const answer = await server.call("POST", `${ITEMS}/aggregate`, { body: { groupBy: "tags", having: { count: { $gt: 1 } } } });
    assertOk(answer);
    assert.deepEqual(answer.body, { rows: [{ tags: "t7", count: 2 }], truncated: false });
    const top = await server.call("POST", `${ITEMS}/aggregate`, { body: { groupBy: "tags", sum: "n", sort: "-count", limit: 3 } });
    assert.deepEqual(top.body, {
      rows: [
        { tags: "t7", count: 2, sum_n: 3 },
        { tags: "other", count: 1, sum_n: 2 },
        { tags: "t0", count: 1, sum_n: 1 },
      ],
      truncated: true,
    });
    const last = await server.call("POST", `${ITEMS}/aggregate`, { body: { groupBy: "tags", min: "n", sort: "-tags", limit: 2 } });
    assert.deepEqual(last.body.rows, [
      { tags: "t99998", count: 1, min_n: 1 },
      { tags: "t99997", count: 1, min_n: 1 },
    ]);
  });

  test("counting an array's distinct elements in each group of the same array is refused before it holds the square of its length", async () => {
    // 100,000 groups, each of which would hold the record's 99,999 distinct elements.
    const answer = await server.call("POST", `${ITEMS}/aggregate`, { body: { groupBy: "tags", countDistinct: "tags", limit: 2 } });
    assertError(answer, 400, "invalid_parameter", { parameter: "countDistinct", field: "tags", maxDistinctValues: 2_000_000 }, [/2000000/, /query/]);
    const narrowed = await server.call("POST", `${ITEMS}/aggregate`, { body: { query: { n: 2 }, groupBy: "tags", countDistinct: "tags" } });
    assert.deepEqual(narrowed.body.rows, [
      { tags: "other", count: 1, count_distinct_tags: 2 },
      { tags: "t7", count: 1, count_distinct_tags: 2 },
    ]);
  });
});

describe("the groups of an aggregate (maxGroups)", () => {
  const MAX_GROUPS = 3;
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ schema: SCHEMA, maxGroups: MAX_GROUPS });
    const records = [
      { title: "a", status: "todo", priority: 1 },
      { title: "b", status: "doing", priority: 2 },
      { title: "c", status: "done", priority: 3 },
      { title: "d", status: "done", priority: 4 },
    ];
    for (const body of records) assertOk(await server.call("POST", TASKS, { body }), 201);
  });
  after(() => server.close());

  const aggregate = (spec: unknown) => server.call("POST", `${TASKS}/aggregate`, { body: spec });

  test("an aggregate at the limit is answered", async () => {
    assert.deepEqual((await aggregate({ groupBy: "status" })).body.rows, [
      { status: "doing", count: 1 },
      { status: "done", count: 2 },
      { status: "todo", count: 1 },
    ]);
    assert.equal((await aggregate({ groupBy: "priority", query: { priority: { $lte: 3 } } })).body.rows.length, 3);
    assert.equal((await aggregate({ groupBy: ["status", "title"], query: { status: { $ne: "done" } } })).body.rows.length, 2);
  });

  test("one group over it is 400 invalid_parameter naming groupBy and the limit, whatever limit and having say", async () => {
    for (const spec of [{ groupBy: "priority" }, { groupBy: ["status", "priority"], sum: "priority", limit: 1 }, { groupBy: "title", having: { count: { $gt: 5 } } }]) {
      assertError(await aggregate(spec), 400, "invalid_parameter", { parameter: "groupBy", maxGroups: MAX_GROUPS }, [/more than 3 groups/, /query/]);
    }
  });

  test("groups counted from a value index are held to it too", async () => {
    // status is an enum: grouping by it alone, without a filter, counts from its index. A record without one is a fourth group.
    const created = await server.call("POST", TASKS, { body: { title: "e", status: "todo" } });
    assertOk(await server.call("PATCH", `${TASKS}/${created.body.id}`, { body: { status: null } }));
    try {
      assertError(await aggregate({ groupBy: "status" }), 400, "invalid_parameter", { parameter: "groupBy", maxGroups: MAX_GROUPS });
    } finally {
      assertOk(await server.call("DELETE", `${TASKS}/${created.body.id}`));
    }
    assert.equal((await aggregate({ groupBy: "status" })).status, 200);
  });
});

describe("the items of arrays and keys of objects in a written record", () => {
  const MAX_ARRAY_ITEMS = 5;
  const MAX_OBJECT_KEYS = 3;
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ schema: SCHEMA, maxArrayItems: MAX_ARRAY_ITEMS, maxObjectKeys: MAX_OBJECT_KEYS });
  });
  after(() => server.close());

  const tags = (count: number) => Array.from({ length: count }, (_, i) => `t${i}`);
  const keys = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, i]));

  // [what the body holds, the body, details]
  const refusals: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
    ["an array field one item over", { tags: tags(6) }, { field: "tags", path: "tags", items: 6, maxArrayItems: MAX_ARRAY_ITEMS }],
    ["an object field one key over", { meta: keys(4) }, { field: "meta", path: "meta", keys: 4, maxObjectKeys: MAX_OBJECT_KEYS }],
    ["an array deep in an object field", { meta: { a: { list: tags(6) } } }, { field: "meta", path: "meta.a.list", items: 6 }],
    ["an object in an array in an object field", { meta: { rows: [{ k: 1 }, keys(4)] } }, { field: "meta", path: "meta.rows.1", keys: 4 }],
  ];

  async function count(): Promise<number> {
    return (await server.call("GET", `${TASKS}/count`)).body.count;
  }

  for (const [what, body, details] of refusals) {
    test(`${what} is 400 invalid_field naming the field, the count and the limit, on create, update, bulk create, bulk update, upsert, update-many and import`, async () => {
      const existing = await server.call("POST", TASKS, { body: { title: "kept", priority: 1 } });
      assertOk(existing, 201);
      const id = existing.body.id;
      const before = await count();
      const isArray = "items" in details;
      const named = [new RegExp(`"${details.field}"`), new RegExp(`${isArray ? details.items : details.keys}`), new RegExp(`${isArray ? MAX_ARRAY_ITEMS : MAX_OBJECT_KEYS}`), /records of their own/];
      const writes: Array<[string, () => Promise<Answer>, Record<string, unknown>]> = [
        ["create", () => server.call("POST", TASKS, { body: { title: "t", ...body } }), {}],
        ["update (PUT)", () => server.call("PUT", `${TASKS}/${id}`, { body }), {}],
        ["update (PATCH)", () => server.call("PATCH", `${TASKS}/${id}`, { body }), {}],
        ["bulk create", () => server.call("POST", `${TASKS}/bulk`, { body: [{ title: "ok" }, { title: "t", ...body }] }), { index: 1 }],
        ["bulk update", () => server.call("PUT", `${TASKS}/bulk`, { body: [{ id, priority: 2 }, { id, ...body }] }), { index: 1 }],
        ["upsert", () => server.call("POST", `${TASKS}/upsert`, { body: { match: ["title"], records: [{ title: "kept", ...body }] } }), { index: 0 }],
        ["update-many", () => server.call("PATCH", `${TASKS}/update-many`, { body: { q: { title: "kept" }, set: body } }), {}],
        ["import", () => server.call("POST", `${TASKS}/import`, { body: [{ title: "t", ...body }] }), { index: 0 }],
      ];
      for (const [write, send, where] of writes) {
        const answer = await send();
        assert.equal(answer.status, 400, `${write}: ${answer.text.slice(0, 300)}`);
        assertError(answer, 400, "invalid_field", { ...details, ...where }, named);
      }
      assert.equal(await count(), before, "nothing was created");
      const kept = await server.call("GET", `${TASKS}/${id}`);
      assert.deepEqual([kept.body.priority, kept.body.tags, kept.body.meta], [1, undefined, undefined], "nothing was changed");
    });
  }

  test("an object of more than ten times maxObjectKeys keys, or an array of more than ten times maxArrayItems (or 5,000) items, is refused unread, 400 invalid_json naming the limit, on every write; at ten times it is refused as any over the limit", async () => {
    const existing = await server.call("POST", TASKS, { body: { title: "kept", priority: 1 } });
    assertOk(existing, 201);
    const id = existing.body.id;
    const before = await count();
    const wide = { meta: { nested: keys(10 * MAX_OBJECT_KEYS + 1) } };
    const writes: Array<[string, () => Promise<Answer>]> = [
      ["create", () => server.call("POST", TASKS, { body: { title: "t", ...wide } })],
      ["update (PATCH)", () => server.call("PATCH", `${TASKS}/${id}`, { body: wide })],
      ["bulk create", () => server.call("POST", `${TASKS}/bulk`, { body: [{ title: "ok" }, { title: "t", ...wide }] })],
      ["import", () => server.call("POST", `${TASKS}/import`, { body: [{ title: "t", ...wide }] })],
    ];
    for (const [write, send] of writes) {
      const answer = await send();
      assertError(answer, 400, "invalid_json", { maxObjectKeys: MAX_OBJECT_KEYS }, [new RegExp(`more than ${10 * MAX_OBJECT_KEYS} keys`), /--max-object-keys/]);
      const position = answer.body.error.details.position;
      assert.ok(Number.isInteger(position) && position > 0, `${write}: details.position is where the object opens (${position})`);
    }
    // Ten times the limit is parsed, and refused with its field named as any record over the limit.
    const atTen = await server.call("POST", TASKS, { body: { title: "t", meta: keys(10 * MAX_OBJECT_KEYS) } });
    assertError(atTen, 400, "invalid_field", { field: "meta", keys: 10 * MAX_OBJECT_KEYS, maxObjectKeys: MAX_OBJECT_KEYS });
    // Arrays alike, past ten times the larger of maxArrayItems and a batch's 5,000 records.
    const unreadItems = 10 * Math.max(MAX_ARRAY_ITEMS, 5000);
    const long = await server.call("POST", `${TASKS}/bulk`, { body: [{ title: "t", tags: Array.from({ length: unreadItems + 1 }, () => "t") }] });
    assertError(long, 400, "invalid_json", { maxArrayItems: MAX_ARRAY_ITEMS }, [new RegExp(`more than ${unreadItems} items`), /--max-array-items/]);
    const parsed = await server.call("POST", `${TASKS}/bulk`, { body: [{ title: "t", tags: Array.from({ length: unreadItems }, () => "t") }] });
    assertError(parsed, 400, "invalid_field", { field: "tags", items: unreadItems, maxArrayItems: MAX_ARRAY_ITEMS, index: 0 });
    // An uploaded file's records and cells alike: the import's file is read as it arrives.
    const upload = async (name: string, text: string) => {
      const form = new FormData();
      form.append("file", new File([text], name));
      const response = await fetch(`${server.url}${TASKS}/import`, { method: "POST", headers: { "X-Api-Key": SECRET }, body: form });
      return { status: response.status, body: (await response.json()) as any };
    };
    const ndjson = await upload("wide.ndjson", `{"title":"ok"}\n${JSON.stringify({ title: "t", ...wide })}\n`);
    assert.equal(ndjson.status, 400, JSON.stringify(ndjson.body));
    assert.equal(ndjson.body.error.code, "invalid_file");
    assert.equal(ndjson.body.error.details.line, 2);
    assert.match(ndjson.body.error.message, /refused unread/);
    const csv = await upload("wide.csv", `title,meta\nt,"${JSON.stringify(keys(10 * MAX_OBJECT_KEYS + 1)).replaceAll('"', '""')}"\n`);
    assert.equal(csv.status, 400, JSON.stringify(csv.body));
    assert.equal(csv.body.error.code, "invalid_field");
    assert.equal(csv.body.error.details.maxObjectKeys, MAX_OBJECT_KEYS);
    assert.match(csv.body.error.message, /refused unread/);
    // Keys are counted per object, by the colons outside strings.
    const manyColons = { title: ":".repeat(100), meta: { a: { b: 1, c: 2 }, "d:e:f": "g:h" } };
    assertOk(await server.call("POST", TASKS, { body: manyColons }), 201);
    assert.equal(await count(), before + 1);
  });

  test("at the limits every write is taken", async () => {
    const body = { tags: tags(MAX_ARRAY_ITEMS), meta: { ...keys(MAX_OBJECT_KEYS - 1), deep: { list: tags(MAX_ARRAY_ITEMS), more: keys(MAX_OBJECT_KEYS) } } };
    const created = await server.call("POST", TASKS, { body: { title: "full", ...body } });
    assertOk(created, 201);
    assert.deepEqual(created.body.tags, body.tags);
    assert.deepEqual(created.body.meta, body.meta);
    assertOk(await server.call("PATCH", `${TASKS}/${created.body.id}`, { body }));
    assertOk(await server.call("POST", `${TASKS}/bulk`, { body: [{ title: "b", ...body }] }), 201);
    assertOk(await server.call("PATCH", `${TASKS}/update-many`, { body: { q: { title: "full" }, set: body } }));
  });
});

test("a record stored before the limits were lowered is still read, and updated in its other fields", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tabula-limits-"));
  try {
    const wide = { title: "wide", tags: Array.from({ length: 8 }, (_, i) => `t${i}`), meta: { a: 1, b: 2, c: 3, d: 4 } };
    const first = await startTestServer({ schema: SCHEMA, memory: false, data: dir });
    let id: string;
    try {
      const created = await first.call("POST", TASKS, { body: wide });
      assertOk(created, 201);
      id = created.body.id;
    } finally {
      await first.close();
    }
    const lowered = await startTestServer({ schema: SCHEMA, memory: false, data: dir, maxArrayItems: 4, maxObjectKeys: 2 });
    try {
      const read = await lowered.call("GET", `${TASKS}/${id}`);
      assertOk(read);
      assert.deepEqual([read.body.tags, read.body.meta], [wide.tags, wide.meta]);
      const patched = await lowered.call("PATCH", `${TASKS}/${id}`, { body: { priority: 2 } });
      assertOk(patched);
      assert.deepEqual([patched.body.priority, patched.body.tags], [2, wide.tags]);
      assertError(await lowered.call("PATCH", `${TASKS}/${id}`, { body: { tags: wide.tags } }), 400, "invalid_field", { field: "tags", items: 8, maxArrayItems: 4 });
      const grouped = await lowered.call("POST", `${TASKS}/aggregate`, { body: { groupBy: "tags", count: true, limit: 1 } });
      assert.deepEqual(grouped.body, { rows: [{ tags: "t0", count: 1 }], truncated: true });
    } finally {
      await lowered.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("bad limits given to the embedding API stop the start-up, naming the option", async () => {
  for (const [option, value] of [["maxGroups", 0], ["maxArrayItems", 1.5], ["maxObjectKeys", -1]] as const) {
    await assert.rejects(startTestServer({ schema: SCHEMA, [option]: value }), new RegExp(`the ${option} option\\) must be a whole number, at least 1`));
  }
});

describe("the size of one record (maxRecordBytes)", () => {
  const MAX = 4096;
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ schema: SCHEMA, maxRecordBytes: MAX });
  });
  after(() => server.close());

  test("a create, an update, a bulk write and an upsert making a record over the limit are 413 payload_too_large, and store nothing", async () => {
    const big = "x".repeat(MAX);
    const refused = (answer: Answer) => {
      assertError(answer, 413, "payload_too_large", { maxRecordBytes: MAX }, [/4096/, /--max-record-size/]);
      assert.ok(answer.body.error.details.recordBytes > MAX, answer.text);
    };
    refused(await server.call("POST", TASKS, { body: { title: big } }));
    const created = await server.call("POST", TASKS, { body: { title: "small" } });
    assertOk(created, 201);
    refused(await server.call("PUT", `${TASKS}/${created.body.id}`, { body: { title: big } }));
    refused(await server.call("POST", `${TASKS}/bulk`, { body: [{ title: "fits" }, { title: big }] }));
    refused(await server.call("POST", `${TASKS}/upsert`, { body: { match: ["title"], records: [{ title: "small", meta: { notes: big } }] } }));
    // Multi-byte text counts in UTF-8 bytes: 1,400 × "é€" is 7,000 bytes in 2,800 units.
    refused(await server.call("POST", TASKS, { body: { title: "é€".repeat(1400) } }));
    const all = await server.call("GET", `${TASKS}?fields=title`);
    assert.deepEqual(all.body.map((record: { title: string }) => record.title), ["small"], "nothing refused was stored");
    const read = await server.call("GET", `${TASKS}/${created.body.id}`);
    assert.equal(read.body.title, "small");
  });

  test("a one-record write's body over twice the limit is 413 before it is read, naming --max-record-size", async () => {
    const created = await server.call("POST", TASKS, { body: { title: "target" } });
    for (const [method, path] of [["POST", TASKS], ["PUT", `${TASKS}/${created.body.id}`], ["PATCH", `${TASKS}/${created.body.id}`]] as const) {
      const answer = await server.call(method, path, { body: { title: "z".repeat(3 * MAX) } });
      assertError(answer, 413, "payload_too_large", { maxBytes: 2 * MAX }, [/--max-record-size/, /8192/]);
    }
    // A bulk body holds many records: only --max-body bounds it.
    const bulk = await server.call("POST", `${TASKS}/bulk`, { body: Array.from({ length: 10 }, (_, i) => ({ title: `${i} ${"w".repeat(MAX / 2)}` })) });
    assertOk(bulk, 201);
  });

  test("a record just under the limit is stored, and a delete and restore of it work", async () => {
    const created = await server.call("POST", TASKS, { body: { title: "y".repeat(MAX - 200) } });
    assertOk(created, 201);
    assertOk(await server.call("DELETE", `${TASKS}/${created.body.id}`));
    assertOk(await server.call("PUT", `${TASKS}/${created.body.id}/restore`));
  });
});

test("a list page whose records' JSON passes 32 MiB is 400 invalid_parameter naming limit, refused before it is built; fewer records, fewer fields and the export answer", async () => {
  const server = await startTestServer({ schema: SCHEMA });
  try {
    // 40 records of about 900 kB: 36 MB in all, ten to a bulk write (under its 10 MiB body).
    const title = (i: number) => `${i} ${"x".repeat(900_000)}`;
    for (let from = 0; from < 40; from += 10) {
      assertOk(await server.call("POST", `${TASKS}/bulk`, { body: Array.from({ length: 10 }, (_, i) => ({ title: title(from + i) })) }), 201);
    }
    const whole = await server.call("GET", `${TASKS}?limit=40`);
    assertError(whole, 400, "invalid_parameter", { parameter: "limit", maxPageBytes: 32 * 1024 * 1024 }, [/32 MiB/, /smaller limit/, /export/]);
    const half = await server.call("GET", `${TASKS}?limit=20`);
    assertOk(half);
    assert.equal(half.body.length, 20);
    const ids = await server.call("GET", `${TASKS}?limit=40&fields=id`);
    assertOk(ids);
    assert.equal(ids.body.length, 40);
    const exported = await fetch(`${server.url}${TASKS}/export?format=ndjson`, { headers: { "X-Api-Key": SECRET } });
    assert.equal((await exported.text()).trim().split("\n").length, 40);
  } finally {
    await server.close();
  }
});
