// Texts of any length up to the body limit, on every store (issue 39): created with a publishable
// key (once a PostgreSQL sort index refused a 2,800-character title and the server stopped), read
// back whole, and sorted by code point, with ties past the first 512 characters (what a PostgreSQL
// sort index holds) decided by the rest, in lists, both directions, and cursor walks.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { randomText } from "../support/random.ts";
import { PUBLISHABLE, q, startTestServer, type TestServer } from "../support/server.ts";

const PATH = "/api/entities/Task";
/** The SDK's prefix pages every sort by cursor. */
const SDK_PATH = "/api/apps/app1/entities/Task";

/** Code point order: that of UTF-8 bytes. */
function compareCodePoints(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

const SHARED = randomText(600, 1);
const TITLES = [
  randomText(2_800, 2),
  // The second case: a million characters, here four bytes each in UTF-8 past the first.
  "z" + "😀".repeat(499_999) + "!",
  // Equal for 600 characters, then apart: the order is decided past what an index prefix holds.
  SHARED + "b",
  SHARED + "a" + randomText(3_000, 3),
  SHARED,
  // U+FB01 sorts before U+1F600 by code point, after it by UTF-16 unit (0xFB01 > 0xD83D).
  SHARED + "\ufb01",
  SHARED + "😀",
  "short",
  "",
];

describe("texts of any length up to the body limit", () => {
  let server: TestServer;
  const created: Array<{ id: string; title: string }> = [];

  before(async () => {
    // A record may be as large as a body when --max-record-size says so (1 MiB by default).
    server = await startTestServer({ maxRecordBytes: 10 * 1024 * 1024 });
    for (const title of TITLES) {
      const answer = await server.call("POST", PATH, { body: { title }, apiKey: PUBLISHABLE });
      assert.equal(answer.status, 201, answer.text.slice(0, 500));
      created.push({ id: answer.body.id, title });
    }
  });

  after(() => server?.close());

  const expected = (descending: boolean) => {
    const sorted = [...created].sort((a, b) => compareCodePoints(a.title, b.title) || compareCodePoints(a.id, b.id)).map((record) => record.id);
    return descending ? sorted.reverse() : sorted;
  };

  test("are stored whole and read back whole", async () => {
    for (const { id, title } of created) {
      const answer = await server.call("GET", `${PATH}/${id}`);
      assert.equal(answer.status, 200);
      assert.equal(answer.body.title.length, title.length);
      assert.ok(answer.body.title === title, `the title of ${id} came back changed`);
    }
  });

  test("sort by code point in lists, both directions, ties past the first 512 characters included", async () => {
    for (const [sort, descending] of [["title", false], ["-title", true]] as const) {
      const answer = await server.call("GET", `${PATH}?sort_by=${sort}&fields=id`);
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(
        answer.body.map((record: { id: string }) => record.id),
        expected(descending),
        sort,
      );
    }
  });

  test("cursor walks two records a page equal one big page, both directions", async () => {
    for (const [sort, descending] of [["title", false], ["-title", true]] as const) {
      const ids: string[] = [];
      let path = `${SDK_PATH}?sort=${sort}&limit=2&fields=id`;
      for (let pages = 0; ; pages++) {
        assert.ok(pages <= TITLES.length, "the walk ends");
        const answer = await server.call("GET", path);
        assert.equal(answer.status, 200, answer.text);
        ids.push(...answer.body.map((record: { id: string }) => record.id));
        const cursor = answer.headers.get("x-next-cursor");
        if (cursor === null) break;
        path = `${SDK_PATH}?sort=${sort}&limit=2&fields=id&cursor=${encodeURIComponent(cursor)}`;
      }
      assert.deepEqual(ids, expected(descending), sort);
    }
  });

  test("range filters on a text past the first 512 characters find what the order says", async () => {
    const pivot = SHARED + "a";
    const answer = await server.call("GET", `${PATH}?sort_by=title&fields=id&q=${q({ title: { $gt: pivot } })}`);
    assert.equal(answer.status, 200, answer.text);
    const above = created.filter((record) => compareCodePoints(record.title, pivot) > 0).map((record) => record.id);
    assert.deepEqual(
      answer.body.map((record: { id: string }) => record.id),
      expected(false).filter((id) => above.includes(id)),
    );
  });
});
