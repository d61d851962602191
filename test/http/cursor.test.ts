// Cursor paging over HTTP (docs/query-language.md): X-Next-Cursor and Link
// exactly when another page exists, walks in every cursor sort, cursors bound to their walk, the
// refusals, and a walk over thousands of records while others insert, update and delete.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { encodeCursor } from "../../src/query/cursor.ts";
import { PUBLISHABLE, q, startTestServer, TASK, type Answer, type TestServer } from "../support/server.ts";

const PATH = "/api/entities/Task";
const CURSOR_SORTS = ["-created_date", "created_date", "-updated_date", "updated_date", "id", "-id"];
const NOTE = { name: "Note", type: "object", properties: { text: { type: "string" } } };

type Record_ = { id: string; [field: string]: unknown };

function idsOf(answer: Answer): string[] {
  assert.equal(answer.status, 200, answer.text);
  return answer.body.map((record: Record_) => record.id);
}

function assertError(answer: Answer, status: number, code: string, details: Record<string, unknown> = {}): void {
  assert.equal(answer.status, status, answer.text);
  assert.equal(answer.body?.error?.code, code, answer.text);
  for (const [name, value] of Object.entries(details)) assert.deepEqual(answer.body.error.details?.[name], value, answer.text);
}

/** The next-page path of a Link header, checked to carry rel="next". */
function linkPath(answer: Answer): string | null {
  const link = answer.headers.get("link");
  if (link === null) return null;
  const match = /^<([^>]+)>; rel="next"$/.exec(link);
  assert.ok(match, `Link: ${link}`);
  const url = new URL(match[1]!);
  return url.pathname + url.search;
}

/** Follows X-Next-Cursor from `first`, sending only cursor and limit; returns every page's ids. */
async function walk(server: TestServer, first: string, limit: number, between?: () => Promise<void>): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let answer = await server.call("GET", first);
  let pages = 1;
  for (;;) {
    ids.push(...idsOf(answer));
    const cursor = answer.headers.get("x-next-cursor");
    const link = linkPath(answer);
    assert.equal(cursor === null, link === null, "X-Next-Cursor and Link come together");
    if (cursor === null) break;
    assert.equal(answer.body.length, limit, "a page before the last is full");
    assert.equal(new URLSearchParams(link!.split("?")[1]).get("cursor"), cursor, "Link carries the same cursor");
    if (between) await between();
    answer = await server.call("GET", `${PATH}?cursor=${encodeURIComponent(cursor)}&limit=${limit}`);
    pages++;
  }
  return { ids, pages };
}

describe("cursor headers and walks", () => {
  let server: TestServer;
  let all: Record_[] = [];

  before(async () => {
    server = await startTestServer({ schema: { Task: TASK, Note: NOTE } });
    // Two bulks (shared created_date within each, so ties break on id) and single creates between.
    const statuses = ["todo", "doing", "done"];
    const first = await server.call("POST", `${PATH}/bulk`, { body: Array.from({ length: 12 }, (_, i) => ({ title: `bulk a${i}`, status: statuses[i % 3], priority: i % 4 })) });
    assert.equal(first.status, 201, first.text);
    for (let i = 0; i < 5; i++) assert.equal((await server.call("POST", PATH, { body: { title: `single ${i}`, priority: i } })).status, 201);
    const second = await server.call("POST", `${PATH}/bulk`, { body: Array.from({ length: 8 }, (_, i) => ({ title: `bulk b${i}`, status: statuses[i % 3] })) });
    assert.equal(second.status, 201, second.text);
    // Updates give updated_date an order of its own.
    for (const record of first.body.slice(0, 4)) {
      assert.equal((await server.call("PATCH", `${PATH}/${record.id}`, { body: { estimate: 1 } })).status, 200);
    }
    all = (await server.call("GET", `${PATH}?limit=1000&sort_by=id`)).body;
    assert.equal(all.length, 25);
  });
  after(() => server.close());

  test("X-Next-Cursor and Link appear exactly when another page exists", async () => {
    const table: Array<[number, number[]]> = [
      [5, [5, 5, 5, 5, 5]],
      [7, [7, 7, 7, 4]],
      [25, [25]],
      [24, [24, 1]],
      [26, [25]],
      [1, Array(25).fill(1)],
    ];
    for (const [limit, sizes] of table) {
      const seen: number[] = [];
      let path: string | null = `${PATH}?limit=${limit}`;
      while (path) {
        const answer = await server.call("GET", path);
        seen.push(answer.body.length);
        const cursor = answer.headers.get("x-next-cursor");
        path = linkPath(answer);
        assert.equal(cursor === null, path === null, `limit ${limit}`);
        if (path) assert.equal(new URLSearchParams(path.split("?")[1]).get("limit"), String(limit));
      }
      assert.deepEqual(seen, sizes, `limit ${limit}`);
    }
    const empty = await server.call("GET", `${PATH}?q=${q({ title: "none" })}&limit=5`);
    assert.deepEqual(empty.body, []);
    assert.equal(empty.headers.get("x-next-cursor"), null);
    assert.equal(empty.headers.get("link"), null);
  });

  test("Link names the Host the client reached; X-Forwarded-Proto and -Host count only behind --trust-proxy", async () => {
    const linkOf = async (url: string, headers: Record<string, string>) => (await fetch(`${url}${PATH}?limit=5`, { headers: { "X-Api-Key": PUBLISHABLE, ...headers } })).headers.get("link")!;
    const forwarded = { "X-Forwarded-Proto": "https", "X-Forwarded-Host": "api.example.com" };
    const port = new URL(server.url).port;
    assert.match(await linkOf(server.url, {}), new RegExp(`^<http://127\\.0\\.0\\.1:${port}${PATH}\\?`));
    assert.match(await linkOf(server.url, forwarded), new RegExp(`^<http://127\\.0\\.0\\.1:${port}${PATH}\\?`), "anyone may send these headers: ignored");
    const proxied = await startTestServer({ schema: { Task: TASK, Note: NOTE }, trustProxy: true });
    try {
      await proxied.call("POST", `${PATH}/bulk`, { body: Array.from({ length: 6 }, (_, i) => ({ title: `p${i}` })) });
      assert.match(await linkOf(proxied.url, forwarded), new RegExp(`^<https://api\\.example\\.com${PATH}\\?`));
    } finally {
      await proxied.close();
    }
  });

  test("following the Link header walks the whole list", async () => {
    const ids: string[] = [];
    let path: string | null = `${PATH}?limit=4&sort_by=id&count=true`;
    while (path) {
      const answer = await server.call("GET", path);
      ids.push(...idsOf(answer));
      path = linkPath(answer);
    }
    assert.deepEqual(ids, all.map((record) => record.id));
  });

  test("walks in every cursor sort, both directions, equal one big page", async () => {
    for (const sort of [...CURSOR_SORTS, ""]) {
      const sortParam = sort ? `sort_by=${sort}&` : "";
      const whole = idsOf(await server.call("GET", `${PATH}?${sortParam}limit=1000`));
      assert.equal(whole.length, 25);
      for (const limit of [1, 3, 10]) {
        const walked = await walk(server, `${PATH}?${sortParam}limit=${limit}`, limit);
        assert.deepEqual(walked.ids, whole, `sort ${sort || "(default)"} limit ${limit}`);
        assert.equal(walked.pages, Math.ceil(25 / limit));
      }
    }
  });

  test("the default sort is -created_date, and id order is creation order", async () => {
    const byDefault = idsOf(await server.call("GET", `${PATH}?limit=1000`));
    assert.deepEqual(byDefault, all.map((record) => record.id).reverse());
    assert.deepEqual(idsOf(await server.call("GET", `${PATH}?limit=1000&sort_by=created_date`)), all.map((record) => record.id));
  });

  test("a later page may send only cursor and limit: the walk keeps its filter, search and fields", async () => {
    const filter = q({ priority: { $gte: 1 } });
    const first = `${PATH}?q=${filter}&search=BULK&fields=title,priority&sort_by=id&limit=2`;
    const whole = await server.call("GET", `${PATH}?q=${filter}&search=BULK&fields=title,priority&sort_by=id&limit=1000`);
    const walked: Record_[] = [];
    let answer = await server.call("GET", first);
    for (;;) {
      assert.equal(answer.status, 200, answer.text);
      walked.push(...answer.body);
      const cursor = answer.headers.get("x-next-cursor");
      if (!cursor) break;
      answer = await server.call("GET", `${PATH}?cursor=${encodeURIComponent(cursor)}&limit=2`);
    }
    assert.deepEqual(walked, whole.body);
    assert.ok(walked.length >= 4);
    for (const record of walked) {
      assert.deepEqual(Object.keys(record).sort(), ["id", "priority", "title"]);
      assert.match(record.title as string, /^bulk/);
    }
  });

  test("a later page may repeat the walk's own parameters, and change its limit", async () => {
    const sorted = idsOf(await server.call("GET", `${PATH}?sort_by=-id&q=${q({ status: "todo" })}&limit=1000`));
    const first = await server.call("GET", `${PATH}?sort_by=-id&q=${q({ status: "todo" })}&limit=2`);
    const cursor = encodeURIComponent(first.headers.get("x-next-cursor")!);
    const same = await server.call("GET", `${PATH}?sort_by=-id&q=${q({ status: "todo" })}&cursor=${cursor}&limit=3`);
    assert.deepEqual(idsOf(same), sorted.slice(2, 5));
    const alone = await server.call("GET", `${PATH}?cursor=${cursor}`);
    assert.deepEqual(idsOf(alone), sorted.slice(2));
  });

  test("count=true on a cursor page counts every matching record", async () => {
    const first = await server.call("GET", `${PATH}?limit=5`);
    const next = await server.call("GET", `${PATH}?cursor=${encodeURIComponent(first.headers.get("x-next-cursor")!)}&limit=5&count=true`);
    assert.equal(next.headers.get("x-total-count"), "25");
  });

  test("a cursor with a different sort, filter, search or fields is invalid_cursor", async () => {
    const first = await server.call("GET", `${PATH}?sort_by=created_date&q=${q({ status: "todo" })}&search=bulk&fields=title&limit=2`);
    const cursor = encodeURIComponent(first.headers.get("x-next-cursor")!);
    const mismatches = [
      "sort_by=-created_date",
      "sort_by=id",
      "sort_by=priority",
      `q=${q({ status: "done" })}`,
      `q=${q({})}`,
      "search=single",
      "fields=title,status",
    ];
    for (const mismatch of mismatches) {
      assertError(await server.call("GET", `${PATH}?cursor=${cursor}&${mismatch}`), 400, "invalid_cursor");
    }
    const plain = encodeURIComponent((await server.call("GET", `${PATH}?limit=2`)).headers.get("x-next-cursor")!);
    for (const mismatch of [`q=${q({ status: "todo" })}`, "search=bulk", "sort_by=id", "sort_by=created_date", "fields=title"]) {
      assertError(await server.call("GET", `${PATH}?cursor=${plain}&${mismatch}`), 400, "invalid_cursor");
    }
    // The default sort may be named explicitly.
    assert.equal((await server.call("GET", `${PATH}?cursor=${plain}&sort_by=-created_date`)).status, 200);
  });

  test("a cursor with a sort that allows none is invalid_cursor", async () => {
    const plain = encodeURIComponent((await server.call("GET", `${PATH}?limit=2`)).headers.get("x-next-cursor")!);
    assertError(await server.call("GET", `${PATH}?cursor=${plain}&sort_by=priority`), 400, "invalid_cursor");
    // A cursor that itself claims such a sort (a client cannot get one from the server).
    for (const sort of ["priority", "-title", "status"]) {
      const forged = encodeCursor({
        walk: { entity: "Task", sort, q: null, search: null, fields: null, deleted: null },
        after: { key: 1, id: all[3]!.id },
      });
      assertError(await server.call("GET", `${PATH}?cursor=${forged}`), 400, "invalid_cursor");
      assertError(await server.call("GET", `${PATH}?cursor=${forged}&sort_by=${sort}`), 400, "invalid_cursor");
    }
    // A sort that allows no cursor answers no X-Next-Cursor; its Link carries skip.
    const bySort = await server.call("GET", `${PATH}?sort_by=priority&limit=5`);
    assert.equal(bySort.headers.get("x-next-cursor"), null);
    assert.equal(new URLSearchParams(linkPath(bySort)!.split("?")[1]).get("skip"), "5");
  });

  test("a malformed cursor is invalid_cursor", async () => {
    const real = (await server.call("GET", `${PATH}?limit=2`)).headers.get("x-next-cursor")!;
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
    const malformed = [
      "",
      "abc",
      "!!!",
      "%00",
      real.slice(0, real.length - 6),
      real.slice(3),
      b64([1, 2]),
      b64({ sort: "id" }),
      b64(null),
      b64(["Task", "id", null, null, null, null, { a: 1 }, "x"]),
      b64(["Task", 3, null, null, null, null, 1, "x"]),
      b64(["Task", "id", null, null, null, null, 1, 5]),
      Buffer.from("not json").toString("base64url"),
    ];
    for (const cursor of malformed) {
      assertError(await server.call("GET", `${PATH}?cursor=${encodeURIComponent(cursor)}`), 400, "invalid_cursor");
    }
  });

  test("a cursor from another entity is invalid_cursor", async () => {
    assert.equal((await server.call("POST", "/api/entities/Note/bulk", { body: [{ text: "a" }, { text: "b" }, { text: "c" }] })).status, 201);
    const note = (await server.call("GET", "/api/entities/Note?limit=1")).headers.get("x-next-cursor")!;
    assertError(await server.call("GET", `${PATH}?cursor=${encodeURIComponent(note)}`), 400, "invalid_cursor");
    const task = (await server.call("GET", `${PATH}?limit=1`)).headers.get("x-next-cursor")!;
    assertError(await server.call("GET", `/api/entities/Note?cursor=${encodeURIComponent(task)}`), 400, "invalid_cursor");
  });

  test("skip with cursor is invalid_parameter", async () => {
    const cursor = encodeURIComponent((await server.call("GET", `${PATH}?limit=2`)).headers.get("x-next-cursor")!);
    for (const skip of ["0", "2"]) {
      assertError(await server.call("GET", `${PATH}?cursor=${cursor}&skip=${skip}`), 400, "invalid_parameter", { parameter: "skip" });
    }
  });

  test("a publishable key walks with cursors under its own limits and rights", async () => {
    const first = await server.call("GET", `${PATH}?limit=10`, { apiKey: PUBLISHABLE });
    const cursor = encodeURIComponent(first.headers.get("x-next-cursor")!);
    const next = await server.call("GET", `${PATH}?cursor=${cursor}&limit=10`, { apiKey: PUBLISHABLE });
    assert.equal(next.status, 200);
    assert.doesNotMatch(next.text, /created_by_id/);
    assertError(await server.call("GET", `${PATH}?cursor=${cursor}&limit=501`, { apiKey: PUBLISHABLE }), 400, "invalid_parameter", { parameter: "limit" });
    // A secret key's walk over created_by_id or deleted records stays closed to a publishable key.
    const keyId = all[0]!.created_by_id;
    const bySecret = await server.call("GET", `${PATH}?q=${q({ created_by_id: keyId })}&limit=2`);
    const secretCursor = encodeURIComponent(bySecret.headers.get("x-next-cursor")!);
    assertError(await server.call("GET", `${PATH}?cursor=${secretCursor}`, { apiKey: PUBLISHABLE }), 403, "forbidden");
    const deleted = await server.call("GET", `${PATH}?deleted=include&limit=2`);
    const deletedCursor = encodeURIComponent(deleted.headers.get("x-next-cursor")!);
    assertError(await server.call("GET", `${PATH}?cursor=${deletedCursor}`, { apiKey: PUBLISHABLE }), 403, "forbidden");
    assert.equal((await server.call("GET", `${PATH}?cursor=${deletedCursor}`)).status, 200);
  });

  test("a cursor resumes after its position even when that record was since deleted or changed", async () => {
    const local = await startTestServer();
    try {
      const made = await local.call("POST", `${PATH}/bulk`, { body: Array.from({ length: 10 }, (_, i) => ({ title: `r${i}` })) });
      const ids = made.body.map((record: Record_) => record.id);
      for (const sort of ["id", "-id", "created_date", "-created_date"]) {
        const order = sort.startsWith("-") ? [...ids].reverse() : ids;
        const first = await local.call("GET", `${PATH}?sort_by=${sort}&limit=3&deleted=include`);
        const cursor = encodeURIComponent(first.headers.get("x-next-cursor")!);
        const last = first.body[2].id;
        // Delete the page's last record, restore it, then change it: nothing moves in these sorts.
        assert.equal((await local.call("DELETE", `${PATH}/${last}`)).status, 200);
        const afterDelete = await local.call("GET", `${PATH}?cursor=${cursor}&limit=3`);
        assert.deepEqual(idsOf(afterDelete), order.slice(3, 6), `${sort} after delete`);
        assert.equal((await local.call("PUT", `${PATH}/${last}/restore`)).status, 200);
        assert.equal((await local.call("PATCH", `${PATH}/${last}`, { body: { title: "changed" } })).status, 200);
        assert.deepEqual(idsOf(await local.call("GET", `${PATH}?cursor=${cursor}&limit=3`)), order.slice(3, 6), `${sort} after update`);
      }
    } finally {
      await local.close();
    }
  });
});

describe("a walk over thousands of records while others write", () => {
  const INITIAL = 3000;
  let server: TestServer;
  /** Every record ever created, with what happened to it. */
  const created = new Map<string, { status: string; done: boolean }>();
  const deleted = new Set<string>();
  let serial = 0;

  before(async () => {
    server = await startTestServer();
    const statuses = ["todo", "doing", "done"];
    for (let batch = 0; batch < INITIAL / 1000; batch++) {
      // done is rare (1 in 16), so the planner answers a filter on it from the value index.
      const body = Array.from({ length: 1000 }, () => ({ title: `seed ${serial}`, status: statuses[serial % 3], done: serial++ % 16 === 0, priority: serial % 10 }));
      const answer = await server.call("POST", `${PATH}/bulk`, { body });
      assert.equal(answer.status, 201, answer.text);
      for (const record of answer.body) created.set(record.id, { status: record.status, done: record.done });
    }
  });
  after(() => server.close());

  function liveIds(): string[] {
    return [...created.keys()].filter((id) => !deleted.has(id));
  }

  /** Inserts a few records (one by one and in a bulk), deletes a few, and updates a few. */
  function writer(step: number, updates: boolean): () => Promise<void> {
    return async () => {
      const live = liveIds();
      const pickLive = (n: number) => live[Math.floor(((n * 7919 + step * 104729) % live.length + live.length) % live.length)]!;
      const one = await server.call("POST", PATH, { body: { title: `new ${serial++}`, status: "todo", done: true } });
      assert.equal(one.status, 201, one.text);
      created.set(one.body.id, { status: "todo", done: true });
      const bulk = await server.call("POST", `${PATH}/bulk`, { body: Array.from({ length: 15 }, (_, i) => ({ title: `new ${serial++}`, status: i % 2 ? "todo" : "done", done: false })) });
      assert.equal(bulk.status, 201, bulk.text);
      for (const record of bulk.body) created.set(record.id, { status: record.status, done: record.done });
      for (let i = 0; i < 8; i++) {
        const id = pickLive(step * 13 + i * 31);
        if (deleted.has(id)) continue;
        const answer = await server.call("DELETE", `${PATH}/${id}`);
        assert.equal(answer.status, 200, answer.text);
        deleted.add(id);
      }
      if (updates) {
        for (let i = 0; i < 5; i++) {
          const id = pickLive(step * 17 + i * 53 + 1);
          if (deleted.has(id)) continue;
          // status and done stay as they were, so filters on them keep meaning "existed throughout".
          const answer = await server.call("PATCH", `${PATH}/${id}`, { body: { priority: step % 10, title: `touched ${step}` } });
          assert.equal(answer.status, 200, answer.text);
        }
      }
    };
  }

  async function checkWalk(sort: string, filter: { status?: string; done?: boolean } | null, limit: number, updates: boolean, minPages = 8): Promise<void> {
    const matches = (id: string) => {
      const record = created.get(id)!;
      return filter === null || Object.entries(filter).every(([name, value]) => record[name as "status" | "done"] === value);
    };
    const before = new Set(liveIds().filter(matches));
    const deletedBefore = deleted.size;
    let step = 0;
    const first = `${PATH}?sort_by=${sort}&limit=${limit}${filter ? `&q=${q(filter)}` : ""}`;
    const walked = await walk(server, first, limit, async () => {
      step++;
      await writer(step + sort.length * 100, updates)();
    });
    const label = `sort ${sort}${filter ? ` q ${JSON.stringify(filter)}` : ""}`;
    assert.ok(walked.pages >= minPages, `${label}: ${walked.pages} pages`);
    assert.ok(deleted.size >= deletedBefore + 5 * (minPages - 1), `${label}: deletes happened during the walk`);
    // Never a repeat.
    assert.equal(new Set(walked.ids).size, walked.ids.length, `${label}: a record was repeated`);
    // Never a skip of a record that existed throughout.
    const seen = new Set(walked.ids);
    const throughout = [...before].filter((id) => !deleted.has(id));
    const skipped = throughout.filter((id) => !seen.has(id));
    assert.deepEqual(skipped, [], `${label}: ${skipped.length} records that existed throughout were skipped`);
    // Nothing outside the filter, and in sort order where the sort is by id (ids are time-ordered).
    for (const id of walked.ids) assert.ok(matches(id), `${label}: ${id} does not match`);
    if (sort === "id" || sort === "created_date") assert.deepEqual(walked.ids, [...walked.ids].sort(), label);
    if (sort === "-id" || sort === "-created_date") assert.deepEqual(walked.ids, [...walked.ids].sort().reverse(), label);
  }

  test("default sort (-created_date): no repeats, no skips", () => checkWalk("-created_date", null, 300, true));
  test("created_date ascending, where new records land ahead of the cursor", () => checkWalk("created_date", null, 400, true));
  test("id both ways", async () => {
    await checkWalk("id", null, 350, true);
    await checkWalk("-id", null, 350, true);
  });
  test("updated_date both ways, under inserts and deletes", async () => {
    await checkWalk("updated_date", null, 400, false);
    await checkWalk("-updated_date", null, 400, false);
  });
  test("value-indexed filters walk without repeats or skips, by index walk or by sorted candidates", async () => {
    // A common value: the planner walks the sort index and tests each row.
    await checkWalk("-created_date", { status: "todo" }, 100, true);
    await checkWalk("id", { status: "done" }, 120, true);
    // A rare value (about 200 of 3,000): the planner sorts the value index's rows and resumes
    // after the cursor among them.
    await checkWalk("-created_date", { done: true }, 20, true);
    await checkWalk("created_date", { done: true, status: "doing" }, 20, true, 3);
  });

  test("after all that writing, one page of limit=5000 and /count agree with what was written", async () => {
    const live = liveIds();
    assert.ok(live.length > 3000);
    const answer = await server.call("GET", `${PATH}?limit=5000&sort_by=id&count=true`);
    assert.deepEqual(idsOf(answer), [...live].sort());
    assert.equal(answer.headers.get("x-total-count"), String(live.length));
    assert.equal(answer.headers.get("link"), null);
    assert.equal(answer.headers.get("x-next-cursor"), null);
    assert.deepEqual((await server.call("GET", `${PATH}/count`)).body, { count: live.length });
    const done = live.filter((id) => created.get(id)!.done);
    assert.deepEqual((await server.call("GET", `${PATH}/count?q=${q({ done: true })}`)).body, { count: done.length });
  });
});
