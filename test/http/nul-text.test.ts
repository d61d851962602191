// Text holding U+0000 (and U+0001, which the PostgreSQL store escapes it with: docs/postgresql.md,
// "Text PostgreSQL cannot hold") is kept and answered exactly on every store, by every write path
// and every read: by id, filters ($eq, $in, $ne, ranges, $contains, $regex, paths through member
// names), search, sorts and cursors, count, distinct, exports, the change feed, idempotent replays,
// unique violations and API keys' names. Filters answer as the memory store does. Half of a
// surrogate pair alone, which no store could keep in order (docs/entities.md), is refused 400 by
// every write. Runs on every store.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { PUBLISHABLE, q, startTestServer, type TestServer } from "../support/server.ts";
import { feedNow } from "../support/feed-now.ts";

const NOTE = {
  name: "Note",
  properties: {
    title: { type: "string" },
    code: { type: "string" },
    tags: { type: "array", items: { type: "string" } },
    meta: { type: "object" },
  },
  unique: [["code"]],
};
const PATH = "/api/entities/Note";
const SDK_PATH = "/api/apps/app1/entities/Note";

const NUL_TITLE = "nul \u0000 byte";
/** Titles that sort by code point around U+0000 and U+0001, each once. */
const TITLES = ["", "a", "a\u0000", "a\u0000\u0000", "a\u0000b", "a\u0001", "a\u0001\u0002", "a\u0002", "ab", "\u0000", "\u0001", "\u0001\u0001", "\u0001\u0002"];

function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

describe("text holding U+0000 on every store", () => {
  let server: TestServer;
  /** Title → id of every record. */
  const ids = new Map<string, string>();

  before(async () => {
    server = await startTestServer({ schema: { Note: NOTE } });
  });
  after(() => server.close());

  const titlesOf = (records: Array<{ title: string }>) => records.map((record) => record.title);
  async function list(query: string): Promise<string[]> {
    const answer = await server.call("GET", `${PATH}?${query}`);
    assert.equal(answer.status, 200, `${query}: ${answer.text}`);
    return titlesOf(answer.body);
  }

  test("create, bulk create and PATCH store the value exactly, and a read by id answers it", async () => {
    const created = await server.call("POST", PATH, { body: { title: NUL_TITLE, code: "c\u0000", tags: ["x\u0000y", "\u0001"], meta: { "k\u0000": "v\u0000", k: { "\u0001": "\u0000" } } } });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.title, NUL_TITLE);
    ids.set(NUL_TITLE, created.body.id);
    // The raw body holds the escape exactly as JSON writes it.
    assert.ok(created.text.includes('"nul \\u0000 byte"'), created.text);

    const bulk = await server.call("POST", `${PATH}/bulk`, { body: TITLES.map((title) => ({ title: `${title}!` })) });
    assert.equal(bulk.status, 201, bulk.text);
    assert.deepEqual(titlesOf(bulk.body), TITLES.map((title) => `${title}!`));
    // PATCH each to its title: an update of a value holding U+0000 into another.
    for (const [index, record] of (bulk.body as Array<{ id: string }>).entries()) {
      const patched = await server.call("PATCH", `${PATH}/${record.id}`, { body: { title: TITLES[index] } });
      assert.equal(patched.status, 200, patched.text);
      assert.equal(patched.body.title, TITLES[index]);
      ids.set(TITLES[index]!, record.id);
    }

    for (const apiKey of [undefined, PUBLISHABLE]) {
      const read = await server.call("GET", `${PATH}/${ids.get(NUL_TITLE)}`, { apiKey });
      assert.equal(read.status, 200, read.text);
      assert.equal(read.body.title, NUL_TITLE);
      assert.equal(read.body.code, "c\u0000");
      assert.deepEqual(read.body.tags, ["x\u0000y", "\u0001"]);
      assert.deepEqual(read.body.meta, { "k\u0000": "v\u0000", k: { "\u0001": "\u0000" } });
    }
    for (const title of TITLES) assert.equal((await server.call("GET", `${PATH}/${ids.get(title)}`)).body.title, title);
  });

  test("$eq, $in and $ne find the records holding the value, and only them", async () => {
    assert.deepEqual(await list(`q=${q({ title: NUL_TITLE })}`), [NUL_TITLE]);
    for (const title of TITLES) assert.deepEqual(await list(`q=${q({ title })}`), [title], JSON.stringify(title));
    assert.deepEqual((await list(`q=${q({ title: { $in: ["a\u0000", "\u0001", "a\u0001"] } })}&sort_by=title`)), ["\u0001", "a\u0000", "a\u0001"]);
    const others = await list(`q=${q({ title: { $ne: "a\u0000" } })}&limit=100`);
    assert.equal(others.length, TITLES.length, "all but one");
    assert.ok(!others.includes("a\u0000"));
    // Arrays, and member names holding U+0000 and U+0001 on a path.
    assert.deepEqual(await list(`q=${q({ tags: "x\u0000y" })}`), [NUL_TITLE]);
    assert.deepEqual(await list(`q=${q({ tags: "\u0001" })}`), [NUL_TITLE]);
    assert.deepEqual(await list(`q=${q({ "meta.k\u0000": "v\u0000" })}`), [NUL_TITLE]);
    assert.deepEqual(await list(`q=${q({ "meta.k.\u0001": "\u0000" })}`), [NUL_TITLE]);
    assert.deepEqual(await list(`q=${q({ meta: { "k\u0000": "v\u0000", k: { "\u0001": "\u0000" } } })}`), [NUL_TITLE]);
    assert.deepEqual(await list(`q=${q({ "meta.k\u0001": "v\u0000" })}`), []);
    assert.deepEqual(await list(`q=${q({ title: "nul \u0001 byte" })}`), []);
    assert.equal((await server.call("GET", `${PATH}/count?q=${q({ title: { $in: [NUL_TITLE, "a\u0000b"] } })}`)).body.count, 2);
  });

  test("sorts, ranges and cursor walks follow code point order, U+0000 first", async () => {
    const expected = [...TITLES, NUL_TITLE].sort(byCodePoint);
    assert.deepEqual(await list("sort_by=title&limit=100"), expected);
    assert.deepEqual(await list("sort_by=-title&limit=100"), [...expected].reverse());
    // The SDK's prefix pages every sort by cursor: positions are titles holding U+0000 and U+0001.
    for (const sort of ["title", "-title"]) {
      const walked: string[] = [];
      let answer = await server.call("GET", `${SDK_PATH}?sort_by=${sort}&limit=2`);
      for (;;) {
        assert.equal(answer.status, 200, answer.text);
        walked.push(...titlesOf(answer.body));
        const cursor = answer.headers.get("x-next-cursor");
        if (cursor === null) break;
        answer = await server.call("GET", `${SDK_PATH}?cursor=${encodeURIComponent(cursor)}&limit=2`);
      }
      assert.deepEqual(walked, sort === "title" ? expected : [...expected].reverse(), sort);
    }
    for (const [low, high] of [["a\u0000", "a\u0001"], ["a", "a\u0000b"], ["\u0000", "a"], ["a\u0001", "ab"]]) {
      const inRange = expected.filter((title) => title > low! && title <= high!);
      assert.deepEqual(await list(`q=${q({ title: { $gt: low, $lte: high } })}&sort_by=title&limit=100`), inRange, `(${JSON.stringify(low)}, ${JSON.stringify(high)}]`);
    }
  });

  test("$contains, $regex and search match text around U+0000", async () => {
    assert.deepEqual(await list(`q=${q({ title: { $contains: "L \u0000 B" } })}`), [NUL_TITLE]);
    assert.deepEqual(await list(`q=${q({ title: { $contains: "\u0000" } })}&sort_by=title`), ["\u0000", "a\u0000", "a\u0000\u0000", "a\u0000b", NUL_TITLE]);
    assert.deepEqual(await list(`q=${q({ title: { $contains: "\u0001" } })}&sort_by=title`), ["\u0001", "\u0001\u0001", "\u0001\u0002", "a\u0001", "a\u0001\u0002"]);
    assert.deepEqual(await list(`q=${q({ title: { $contains: "\u0002" } })}&sort_by=title`), ["\u0001\u0002", "a\u0001\u0002", "a\u0002"]);
    assert.deepEqual(await list(`q=${q({ title: { $regex: "^nul \u0000 byte$" } })}`), [NUL_TITLE]);
    assert.deepEqual(await list(`q=${q({ title: { $regex: "ul . by" } })}`), [NUL_TITLE]);
    assert.deepEqual(await list(`q=${q({ title: { $regex: "^a\\x00b$" } })}`), ["a\u0000b"]);
    assert.deepEqual(await list("search=BYTE"), [NUL_TITLE]);
    assert.deepEqual(await list(`search=${encodeURIComponent("l \u0000 b")}`), [NUL_TITLE]);
    assert.deepEqual(await list(`search=${encodeURIComponent("a\u0000b")}`), ["a\u0000b"]);
  });

  test("distinct, exports and the change feed answer the value exactly", async () => {
    const distinct = await server.call("GET", `${PATH}/distinct/title`);
    assert.equal(distinct.status, 200, distinct.text);
    assert.deepEqual([...distinct.body].sort(byCodePoint), [...TITLES, NUL_TITLE].sort(byCodePoint));

    const ndjson = await server.call("GET", `${PATH}/export?q=${q({ title: NUL_TITLE })}`);
    assert.equal(ndjson.status, 200, ndjson.text);
    const exported = ndjson.text.trim().split("\n").map((line) => JSON.parse(line));
    assert.deepEqual(exported.map((record) => [record.title, record.tags, record.meta]), [[NUL_TITLE, ["x\u0000y", "\u0001"], { "k\u0000": "v\u0000", k: { "\u0001": "\u0000" } }]]);
    const json = await server.call("GET", `${PATH}/export?format=json&q=${q({ title: { $contains: "\u0000" } })}`);
    assert.deepEqual(titlesOf(json.body).sort(byCodePoint), ["\u0000", "a\u0000", "a\u0000\u0000", "a\u0000b", NUL_TITLE].sort(byCodePoint));
    const csv = await server.call("GET", `${PATH}/export?format=csv&q=${q({ title: "a\u0000b" })}`);
    assert.ok(csv.text.includes("a\u0000b"), JSON.stringify(csv.text));

    const since = await feedNow((path) => server.call("GET", path), `${PATH}/changes`);
    const made = await server.call("POST", PATH, { body: { title: "fed \u0000", meta: { "\u0000": "\u0001" } } });
    assert.equal(made.status, 201, made.text);
    assert.equal((await server.call("PATCH", `${PATH}/${made.body.id}`, { body: { title: "fed \u0001\u0000" } })).status, 200);
    const changes = (await server.call("GET", `${PATH}/changes?since=${since}`)).body.changes as Array<{ type: string; data: { title: string; meta: unknown } }>;
    assert.deepEqual(changes.map((change) => [change.type, change.data.title, change.data.meta]), [
      ["create", "fed \u0000", { "\u0000": "\u0001" }],
      ["update", "fed \u0001\u0000", { "\u0000": "\u0001" }],
    ]);
  });

  test("an Idempotency-Key's replay answers the value exactly", async () => {
    const headers = { "Idempotency-Key": "nul-text-1" };
    const body = { title: "once \u0000 only", meta: { "\u0001": ["\u0000"] } };
    const first = await server.call("POST", PATH, { body, headers });
    assert.equal(first.status, 201, first.text);
    const again = await server.call("POST", PATH, { body, headers });
    assert.equal(again.status, 201, again.text);
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    assert.equal(again.text, first.text);
    assert.equal(again.body.title, "once \u0000 only");
    assert.deepEqual(again.body.meta, { "\u0001": ["\u0000"] });
  });

  test("an API key's name holding U+0000 is kept exactly too", async () => {
    const name = "ci \u0000 \u0001 deploys";
    const made = await server.call("POST", "/api/keys", { body: { kind: "publishable", name } });
    assert.equal(made.status, 201, made.text);
    assert.equal(made.body.name, name);
    const listed = (await server.call("GET", "/api/keys")).body.find((key: { id: string }) => key.id === made.body.id);
    assert.equal(listed.name, name);
    assert.equal((await server.call("GET", PATH, { apiKey: made.body.key })).status, 200, "the key works");
  });

  test("a unique value holding U+0000 clashes with itself only, and the refusal names it exactly", async () => {
    const clash = await server.call("POST", PATH, { body: { title: "clash", code: "c\u0000" } });
    assert.equal(clash.status, 409, clash.text);
    assert.deepEqual(clash.body.error.details.values, ["c\u0000"]);
    assert.equal(clash.body.error.details.existing_id, ids.get(NUL_TITLE));
    for (const code of ["c", "c\u0001", "c\u0000\u0000", "c\u0001\u0001"]) {
      const stored = await server.call("POST", PATH, { body: { title: "no clash", code } });
      assert.equal(stored.status, 201, `${JSON.stringify(code)}: ${stored.text}`);
      assert.equal(stored.body.code, code);
    }
    assert.equal((await server.call("POST", PATH, { body: { title: "clash", code: "c\u0001\u0001" } })).status, 409);
  });
});

describe("half of a surrogate pair alone on every store", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ schema: { Note: NOTE } });
  });
  after(() => server.close());

  test("is refused 400 invalid_field, never a 5xx, by create, bulk create, upsert and PATCH, in values and member names at any depth, and nothing is stored", async () => {
    const made = await server.call("POST", PATH, { body: { title: "kept" } });
    assert.equal(made.status, 201, made.text);
    const cases: Array<[string, string, unknown, string | undefined]> = [
      ["POST", PATH, { title: "\ud800" }, undefined],
      ["POST", PATH, { title: "lone low \udc00 half" }, undefined],
      ["POST", PATH, { title: "reversed \ude00\ud83d pair" }, undefined],
      ["POST", PATH, { title: "t", tags: ["fine", "x\udbff"] }, "tags.1"],
      ["POST", PATH, { title: "t", meta: { "k\ud800": 1 } }, "meta.k\ud800"],
      ["POST", PATH, { title: "t", meta: { k: [{ deep: "\udfff" }] } }, "meta.k.0.deep"],
      ["POST", `${PATH}/bulk`, [{ title: "fine" }, { title: "\ud800" }], undefined],
      ["POST", `${PATH}/upsert`, { match: ["code"], records: [{ code: "u1", title: "\ud800" }] }, undefined],
      ["PATCH", `${PATH}/${made.body.id}`, { title: "\ud800" }, undefined],
    ];
    for (const [method, path, body, where] of cases) {
      const what = `${method} ${path} ${JSON.stringify(body)}`;
      const answer = await server.call(method, path, { body });
      assert.equal(answer.status, 400, `${what}: ${answer.text}`);
      assert.equal(answer.body.error.code, "invalid_field", what);
      assert.match(answer.body.error.message, /half of a surrogate pair alone \(\\ud[89a-f][0-9a-f]{2}\)/, what);
      if (where !== undefined) assert.equal(answer.body.error.details.path, where, what);
    }
    const stored = await server.call("GET", `${PATH}?limit=100`);
    assert.deepEqual(stored.body.map((note: { title: string }) => note.title), ["kept"], "nothing refused was stored, nor changed");
  });

  test("a whole pair, and its halves in their order, are kept exactly", async () => {
    const title = "pair \ud83d\ude00 and \u{10ffff}";
    const made = await server.call("POST", PATH, { body: { title, meta: { "\ud83d\ude00": ["\ud800\udc00"] } } });
    assert.equal(made.status, 201, made.text);
    const read = await server.call("GET", `${PATH}/${made.body.id}`);
    assert.equal(read.body.title, title);
    assert.deepEqual(read.body.meta, { "\ud83d\ude00": ["\ud800\udc00"] });
  });
});
