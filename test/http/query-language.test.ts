// The filter language's additions of issue 17 (docs/query-language.md), through the real HTTP interface: $regex (run in
// time linear in the text), $not, $nor, $all, $size, $elemMatch and the plain-array
// shorthand, on lists, counts and update-many.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { q, startTestServer, TASK, type TestServer } from "../support/server.ts";

const PATH = "/api/entities/Task";
const SCHEMA = {
  Task: {
    ...TASK,
    properties: {
      ...TASK.properties,
      scores: { type: "array", items: { type: "number" } },
      lines: { type: "array", items: { type: "object" } },
    },
  },
};

const RECORDS: Record<string, Record<string, unknown>> = {
  alpha: { title: "Alpha report", status: "todo", priority: 1, tags: ["red", "blue"], scores: [70, 82, 90], lines: [{ sku: "a", qty: 1 }, { sku: "b", qty: 5 }] },
  beta: { title: "beta\nnotes", status: "doing", priority: 3, tags: ["blue"], scores: [79, 90], lines: [{ sku: "a", qty: 4 }] },
  gamma: { title: "Gamma", status: "done", priority: 5, tags: [], scores: [], lines: [], meta: { items: [{ k: 1 }, { k: 2 }] } },
  delta: { title: "δέλτα", tags: ["red", "green", "blue"], meta: { items: [{ k: 3 }], owner: "ann" } },
  bare: { title: "bare" },
};

let server: TestServer;
let ids: Record<string, string>;
let longId: string;

before(async () => {
  server = await startTestServer({ schema: SCHEMA });
  ids = {};
  for (const [name, record] of Object.entries(RECORDS)) {
    const answer = await server.call("POST", PATH, { body: record });
    assert.equal(answer.status, 201, answer.text);
    ids[name] = answer.body.id;
  }
  // The input of the classic catastrophic backtracking: a long run that almost matches.
  const long = await server.call("POST", PATH, { body: { title: "a".repeat(50_000) + "!", tags: ["a".repeat(50_000) + "!"] } });
  assert.equal(long.status, 201, long.text);
  longId = long.body.id;
});
after(() => server.close());

/** The names of the records the filter finds among the named ones, by list and by count. */
async function find(filter: Record<string, unknown>): Promise<string[]> {
  const only = { id: { $in: Object.values(ids) } };
  const query = q({ $and: [only, filter] });
  const answer = await server.call("GET", `${PATH}?q=${query}&limit=100`);
  assert.equal(answer.status, 200, `${JSON.stringify(filter)}: ${answer.text}`);
  const names = answer.body.map((record: { id: string }) => Object.keys(ids).find((name) => ids[name] === record.id)!).sort();
  const count = await server.call("GET", `${PATH}/count?q=${query}`);
  assert.deepEqual(count.body, { count: names.length }, `${JSON.stringify(filter)}: count`);
  return names;
}

async function checkFinds(table: Array<[Record<string, unknown>, string[]]>): Promise<void> {
  for (const [filter, expected] of table) assert.deepEqual(await find(filter), [...expected].sort(), JSON.stringify(filter));
}

describe("each new operator finds exactly the right records", () => {
  test("$regex and $options", () =>
    checkFinds([
      [{ title: { $regex: "^Al" } }, ["alpha"]],
      [{ title: { $regex: "^al" } }, []],
      [{ title: { $regex: "^al", $options: "i" } }, ["alpha"]],
      [{ title: { $regex: "report$" } }, ["alpha"]],
      [{ title: { $regex: "beta$" } }, []],
      [{ title: { $regex: "beta$", $options: "m" } }, ["beta"]],
      [{ title: { $regex: "beta.notes" } }, []],
      [{ title: { $regex: "beta.notes", $options: "s" } }, ["beta"]],
      [{ title: { $regex: "^\\p{Script=Greek}+$" } }, ["delta"]],
      [{ title: { $regex: "^.{5}$" } }, ["gamma", "delta"]], // δέλτα is five code points
      [{ tags: { $regex: "^gr" } }, ["delta"]],
      [{ "meta.owner": { $regex: "^AN", $options: "i" } }, ["delta"]],
      [{ status: { $regex: "^do" } }, ["beta", "gamma"]],
    ]));

  test("$not, with records lacking the field", () =>
    checkFinds([
      [{ priority: { $not: { $gt: 2 } } }, ["alpha", "delta", "bare"]],
      [{ priority: { $not: { $gte: 2, $lte: 4 } } }, ["alpha", "gamma", "delta", "bare"]],
      [{ title: { $not: { $regex: "a" } } }, ["delta"]],
      [{ tags: { $not: { $in: ["red"] } } }, ["beta", "gamma", "bare"]],
      [{ status: { $not: { $eq: "todo" } } }, ["beta", "gamma"]], // status defaults to todo
    ]));

  test("$nor at the top and inside $and and $or", () =>
    checkFinds([
      [{ $nor: [{ status: "todo" }, { priority: { $gt: 4 } }] }, ["beta"]],
      [{ $and: [{ $nor: [{ tags: "red" }] }, { priority: { $exists: true } }] }, ["beta", "gamma"]],
      [{ $or: [{ $nor: [{ title: { $exists: true } }] }, { status: "done" }] }, ["gamma"]],
    ]));

  test("$all and $size", () =>
    checkFinds([
      [{ tags: { $all: ["red", "blue"] } }, ["alpha", "delta"]],
      [{ tags: { $all: ["blue"] } }, ["alpha", "beta", "delta"]],
      [{ tags: { $size: 0 } }, ["gamma"]],
      [{ tags: { $size: 3 } }, ["delta"]],
      [{ scores: { $size: 2 } }, ["beta"]],
      [{ "meta.items": { $size: 2 } }, ["gamma"]],
      [{ "meta.items": { $all: [{ k: 2 }, { k: 1 }] } }, ["gamma"]],
    ]));

  test("$elemMatch: one element meets every condition", () =>
    checkFinds([
      [{ scores: { $elemMatch: { $gte: 80, $lt: 85 } } }, ["alpha"]],
      [{ scores: { $gte: 80, $lt: 85 } }, ["alpha", "beta"]], // without $elemMatch, different elements may meet each bound
      [{ lines: { $elemMatch: { sku: "a", qty: { $gt: 2 } } } }, ["beta"]],
      [{ lines: { $elemMatch: { $or: [{ qty: 5 }, { sku: "c" }] } } }, ["alpha"]],
      [{ tags: { $elemMatch: { $regex: "^g" } } }, ["delta"]],
      [{ "meta.items": { $elemMatch: { k: { $gte: 2 } } } }, ["gamma", "delta"]],
      [{ scores: { $not: { $elemMatch: { $gt: 85 } } } }, ["gamma", "delta", "bare"]],
    ]));

  test("a plain array means any of its values, on plain and array fields", () =>
    checkFinds([
      [{ status: ["doing", "done"] }, ["beta", "gamma"]],
      [{ priority: [1, 5, 7] }, ["alpha", "gamma"]],
      [{ tags: ["green", "nothing"] }, ["delta"]],
      [{ tags: ["red", "blue"] }, ["alpha", "beta", "delta"]],
      [{ tags: { $eq: ["red", "blue"] } }, ["alpha"]], // the whole array, in order
      [{ tags: [] }, []],
      [{ priority: [null, 1] }, ["alpha", "delta", "bare"]],
      [{ "meta.owner": ["ann", "bob"] }, ["delta"]],
    ]));
});

test("update-many takes the new operators in its body", async () => {
  const answer = await server.call("PATCH", `${PATH}/update-many`, {
    body: { q: { id: { $in: Object.values(ids) }, lines: { $elemMatch: { sku: "b" } }, tags: { $not: { $size: 0 } } }, set: { estimate: 2 } },
  });
  assert.equal(answer.status, 200, answer.text);
  assert.deepEqual(answer.body.ids, [ids.alpha]);
  assert.deepEqual(await find({ estimate: 2 }), ["alpha"]);
});

test("$not X finds exactly the records X does not, records lacking the field included", async () => {
  const all = Object.keys(ids).sort();
  const conditions: Array<[string, Record<string, unknown>]> = [
    ["priority", { $gt: 2 }],
    ["priority", { $in: [1, 5] }],
    ["priority", { $exists: true }],
    ["priority", { $ne: 3 }],
    ["title", { $regex: "^[a-z]" }],
    ["title", { $contains: "A" }],
    ["meta", { $eq: null }],
    ["status", { $nin: ["todo"] }],
    ["tags", { $all: ["blue"] }],
    ["tags", { $size: 1 }],
    ["tags", { $eq: "red" }],
    ["scores", { $elemMatch: { $lt: 75 } }],
    ["lines", { $elemMatch: { qty: { $gte: 4 } } }],
    ["meta.items.k", { $lte: 1 }],
    ["meta.owner", { $regex: "n" }],
  ];
  for (const [field, operators] of conditions) {
    const found = await find({ [field]: operators });
    const complement = await find({ [field]: { $not: operators } });
    const label = `${field} ${JSON.stringify(operators)}`;
    assert.deepEqual(complement, all.filter((name) => !found.includes(name)), label);
    assert.ok(found.length > 0 && complement.length > 0, `${label}: both sides hold records, so the check can fail`);
  }
});

describe("each kind of bad operand is 400 invalid_filter, saying what is wrong", () => {
  const table: Array<[filter: Record<string, unknown>, details: Record<string, unknown>, message: RegExp]> = [
    [{ title: { $regex: 3 } }, { field: "title", operator: "$regex" }, /\$regex on "title" takes a pattern as a string/],
    [{ priority: { $regex: "1" } }, { field: "priority", operator: "$regex" }, /\$regex works on text fields only/],
    [{ title: { $regex: "a", $options: "g" } }, { field: "title", operator: "$options" }, /takes some of the letters i, m and s/],
    [{ title: { $options: "i" } }, { field: "title", operator: "$options" }, /goes with \$regex/],
    [{ title: { $regex: "[" } }, { field: "title", operator: "$regex" }, /is not a valid regular expression/],
    [{ title: { $regex: "x".repeat(257) } }, { field: "title", operator: "$regex" }, /is 257 characters long; at most 256/],
    [{ priority: { $not: 3 } }, { field: "priority", operator: "$not" }, /\$not on "priority" takes an operator object/],
    [{ priority: { $not: { $gt: "3" } } }, { field: "priority", operator: "$gt" }, /\$gt on "priority" takes a number/],
    [{ $not: { priority: 3 } }, { operator: "$not" }, /\$not goes inside a field's condition/],
    [{ $nor: [] }, { operator: "$nor" }, /\$nor takes a non-empty array of filter objects/],
    [{ title: { $all: ["a"] } }, { field: "title", operator: "$all" }, /works on array fields only, and "title" is a string field/],
    [{ tags: { $all: [] } }, { field: "tags", operator: "$all" }, /takes a non-empty array of values that elements must all equal, each a string/],
    [{ tags: { $all: [1] } }, { field: "tags", operator: "$all" }, /takes a string/],
    [{ priority: { $size: 1 } }, { field: "priority", operator: "$size" }, /"priority" is an integer field/],
    [{ tags: { $size: -1 } }, { field: "tags", operator: "$size" }, /takes a whole number of elements/],
    [{ scores: { $elemMatch: 80 } }, { field: "scores", operator: "$elemMatch" }, /takes a non-empty object/],
    [{ scores: { $elemMatch: { k: 1 } } }, { field: "scores", operator: "$elemMatch" }, /"scores" holds numbers, which have no members/],
    [{ scores: { $elemMatch: { $gte: "80" } } }, { field: "scores", operator: "$gte" }, /takes a number/],
    [{ due_date: { $elemMatch: { $gte: "2026-01-01" } } }, { field: "due_date", operator: "$elemMatch" }, /"due_date" is a date field/],
    [{ priority: [1, "2"] }, { field: "priority", operator: "$in" }, /A plain array on "priority" means any of its values, and takes a number/],
    [{ status: ["todo", "later"] }, { field: "status", operator: "$in", allowed: ["todo", "doing", "done"] }, /"later" is outside the enum/],
  ];
  for (const [filter, details, message] of table) {
    test(JSON.stringify(filter).slice(0, 100), async () => {
      const answer = await server.call("GET", `${PATH}?q=${q(filter)}`);
      assert.equal(answer.status, 400, answer.text);
      assert.equal(answer.body.error.code, "invalid_filter", answer.text);
      assert.deepEqual(answer.body.error.details, details);
      assert.match(answer.body.error.message, message);
    });
  }
  test("an unknown field inside $not is unknown_field", async () => {
    const answer = await server.call("GET", `${PATH}?q=${q({ nope: { $not: { $gt: 1 } } })}`);
    assert.equal(answer.status, 400, answer.text);
    assert.equal(answer.body.error.code, "unknown_field");
  });
});

describe("patterns that backtrack catastrophically elsewhere run in time linear in the text", () => {
  // The long record's title and tag are 50,000 a's and a "!": the near miss of the classic cases.
  const TABLE: Array<[pattern: string, matchesLong: boolean]> = [
    ["(a+)+$", false],
    ["(a*)*$", true], // the empty match at the end
    ["(a|aa)*$", true], // the empty match at the end
    ["(a|a)+$", false],
    ["(.*a){20}$", false],
    ["([a-z]+)*$", true], // the empty match at the end
    ["(?:a+)+$", false],
    ["^(a+)+b", false],
    ["(\\w+\\s?)*$", true], // the empty match at the end
    ["a*a*a*a*b", false],
    ["\\w*\\w*\\w*x", false],
    ["(a+)+!", true],
    ["(a|aa)*!$", true],
    ["(.*a){20}!", true],
  ];
  for (const [pattern, matchesLong] of TABLE) {
    test(`${pattern} answers ${matchesLong ? "1" : "0"} on the long record, on lists and counts, for a text field and an array of texts`, async () => {
      for (const field of ["title", "tags"]) {
        const count = await server.call("GET", `${PATH}/count?q=${q({ id: longId, [field]: { $regex: pattern } })}`);
        assert.equal(count.status, 200, count.text);
        assert.deepEqual(count.body, { count: matchesLong ? 1 : 0 }, `${field} ${pattern}`);
        const list = await server.call("GET", `${PATH}?q=${q({ id: longId, [field]: { $regex: pattern } })}&fields=id`);
        assert.equal(list.status, 200, list.text);
        assert.deepEqual(list.body.map((record: { id: string }) => record.id), matchesLong ? [longId] : [], `${field} ${pattern}`);
      }
    });
  }

  test("back-references and lookaround, which no automaton runs, are 400 invalid_filter saying so", async () => {
    for (const pattern of ["(a)\\1*$", "(?<x>a)\\k<x>", "a(?=b)", "a(?!b)", "(?<=a)b", "(?<!a)b"]) {
      const answer = await server.call("GET", `${PATH}?q=${q({ title: { $regex: pattern } })}`);
      assert.equal(answer.status, 400, `${pattern}: ${answer.text}`);
      assert.equal(answer.body.error.code, "invalid_filter");
      assert.match(answer.body.error.message, /\$regex/);
    }
  });

  test("an aggregate over the long record with a slow-elsewhere pattern answers, and reads go on", async () => {
    const aggregate = await server.call("POST", `${PATH}/aggregate`, { body: { query: { title: { $regex: "a*a*a*a*@" } }, count: true } });
    assert.equal(aggregate.status, 200, aggregate.text);
    assert.deepEqual(aggregate.body.rows, [{ count: 0 }], aggregate.text);
    const read = await server.call("GET", `${PATH}/${longId}`);
    assert.equal(read.status, 200);
  });

  test("anchored and flagged patterns find the long record and nothing else, quickly", async () => {
    const table: Array<[Record<string, unknown>, boolean]> = [
      [{ $regex: "^ab" }, false],
      [{ $regex: "^a{3}" }, true],
      [{ $regex: "^A{3}", $options: "i" }, true],
      [{ $regex: "!$" }, true],
      [{ $regex: "foo$", $options: "m" }, false],
      [{ $regex: "^a.!$", $options: "s" }, false],
      [{ $regex: "a!" }, true],
    ];
    for (const [operators, matches] of table) {
      const started = performance.now();
      const answer = await server.call("GET", `${PATH}/count?q=${q({ id: longId, title: operators })}`);
      const ms = performance.now() - started;
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.body, { count: matches ? 1 : 0 }, JSON.stringify(operators));
      assert.ok(ms < 5000, `${JSON.stringify(operators)}: answered in ${Math.round(ms)} ms`);
    }
  });
});
