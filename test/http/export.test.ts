// GET /api/entities/<E>/export (docs/operating.md, issue 21): NDJSON, JSON and CSV, consistent as of the
// request while writes go on, shaped for the key, narrowed by q and search. Runs on every store.

import assert from "node:assert/strict";
import { request, type IncomingMessage } from "node:http";
import { after, before, describe, test } from "node:test";
import { PUBLISHABLE, q, SECRET, startTestServer, TEST_STORE, type TestServer } from "../support/server.ts";

/** RFC 4180 read back: rows of fields, quotes undone. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (field += '"'), i++;
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") row.push(field), (field = "");
    else if (c === "\r" && text[i + 1] === "\n") {
      row.push(field), rows.push(row), (row = []), (field = ""), i++;
    } else field += c;
  }
  assert.equal(field, "", "the CSV ends with CRLF");
  return rows;
}

function ndjson(text: string): any[] {
  assert.ok(text.endsWith("\n"), "every NDJSON line ends with \\n");
  return text.slice(0, -1).split("\n").map((line) => JSON.parse(line));
}

describe("GET /api/entities/<E>/export", () => {
  let server: TestServer;
  let records: any[];
  before(async () => {
    server = await startTestServer();
    const created = await server.call("POST", "/api/entities/Task/bulk", {
      body: [
        { title: 'comma, "quotes"\nand a line', priority: 2, tags: ["a", "b,c"], meta: { k: [1, { x: "y" }] }, done: true },
        { title: "plain", status: "done", estimate: 1.5, due_date: "2026-01-02" },
        { title: "third", priority: 7, start_at: "2026-03-04T05:06:07.000Z" },
      ],
    });
    assert.equal(created.status, 201);
    records = [...created.body].sort((a, b) => (a.id < b.id ? -1 : 1));
  });
  after(() => server.close());

  test("NDJSON is the default: every live record as a read shows it, oldest id first", async () => {
    const doomed = await server.call("POST", "/api/entities/Task", { body: { title: "deleted" } });
    assert.equal((await server.call("DELETE", `/api/entities/Task/${doomed.body.id}`)).status, 200);
    const answer = await server.call("GET", "/api/entities/Task/export");
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get("content-type"), "application/x-ndjson; charset=utf-8");
    assert.equal(answer.headers.get("content-disposition"), 'attachment; filename="Task.ndjson"');
    assert.deepEqual(ndjson(answer.text), records);
  });

  test("format=json is one array of the same records", async () => {
    const answer = await server.call("GET", "/api/entities/Task/export?format=json");
    assert.equal(answer.status, 200);
    assert.match(answer.headers.get("content-type")!, /^application\/json/);
    assert.deepEqual(answer.body, records);
  });

  test("format=csv: a header of the record's fields, RFC 4180 quoting, arrays and objects as JSON", async () => {
    const answer = await server.call("GET", "/api/entities/Task/export?format=csv");
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get("content-type"), "text/csv; charset=utf-8; header=present");
    const [header, ...rows] = parseCsv(answer.text);
    assert.deepEqual(header, ["id", "title", "status", "priority", "estimate", "done", "due_date", "start_at", "email", "tags", "meta", "created_date", "updated_date", "created_by_id"]);
    assert.equal(rows.length, 3);
    const first = Object.fromEntries(header!.map((name, i) => [name, rows[0]![i]]));
    assert.equal(first.id, records[0].id);
    assert.equal(first.title, 'comma, "quotes"\nand a line');
    assert.equal(first.priority, "2");
    assert.equal(first.done, "true");
    assert.equal(first.estimate, "", "a field without a value is empty");
    assert.deepEqual(JSON.parse(first.tags!), ["a", "b,c"]);
    assert.deepEqual(JSON.parse(first.meta!), { k: [1, { x: "y" }] });
    assert.equal(first.created_by_id, records[0].created_by_id);
    assert.ok(answer.text.includes(`"comma, ""quotes""\nand a line"`), "the quotes are doubled inside a quoted field");
  });

  test("a publishable key gets neither created_by_id nor its column", async () => {
    const lines = ndjson((await server.call("GET", "/api/entities/Task/export", { apiKey: PUBLISHABLE })).text);
    assert.equal(lines.length, 3);
    assert.ok(lines.every((line) => !("created_by_id" in line)));
    const csv = await server.call("GET", "/api/entities/Task/export?format=csv", { apiKey: PUBLISHABLE });
    assert.equal(parseCsv(csv.text)[0]!.at(-1), "updated_date");
  });

  test("q and search narrow it, as they narrow a list", async () => {
    const byQ = ndjson((await server.call("GET", `/api/entities/Task/export?q=${q({ priority: { $gte: 2 } })}`)).text);
    assert.deepEqual(byQ.map((record) => record.title).sort(), ['comma, "quotes"\nand a line', "third"]);
    const bySearch = ndjson((await server.call("GET", "/api/entities/Task/export?search=PLAIN")).text);
    assert.deepEqual(bySearch.map((record) => record.id), [records[1].id]);
    const none = await server.call("GET", `/api/entities/Task/export?format=json&q=${q({ title: "nobody" })}`);
    assert.deepEqual(none.body, []);
    const noneNdjson = await server.call("GET", `/api/entities/Task/export?q=${q({ title: "nobody" })}`);
    assert.equal(noneNdjson.text, "");
  });

  test("the SDK's prefix serves it too", async () => {
    const answer = await server.call("GET", "/api/apps/some-app/entities/Task/export?format=json");
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body, records);
  });

  test("bad requests are refused before anything is streamed", async () => {
    const format = await server.call("GET", "/api/entities/Task/export?format=xml");
    assert.equal(format.status, 400);
    assert.equal(format.body.error.code, "invalid_parameter");
    assert.equal(format.body.error.details.parameter, "format");
    assert.match(format.body.error.message, /ndjson, json, csv/);
    const unknown = await server.call("GET", "/api/entities/Task/export?limit=5");
    assert.equal(unknown.status, 400);
    assert.equal(unknown.body.error.details.parameter, "limit");
    const filter = await server.call("GET", `/api/entities/Task/export?q=${q({ nope: 1 })}`);
    assert.equal(filter.status, 400);
    assert.equal(filter.body.error.code, "unknown_field");
    assert.equal((await server.call("GET", "/api/entities/Nope/export")).status, 404);
    assert.equal((await server.call("GET", "/api/entities/Task/export", { apiKey: null })).status, 401);
    assert.equal((await server.call("POST", "/api/entities/Task/export", { body: {} })).status, 405);
  });

  test("HEAD answers the head alone", async () => {
    const answer = await fetch(`${server.url}/api/entities/Task/export?format=csv`, { method: "HEAD", headers: { "X-Api-Key": SECRET } });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get("content-type"), "text/csv; charset=utf-8; header=present");
    assert.equal(await answer.text(), "");
  });
});

describe("an export is consistent as of its start while writes go on", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  test("records written, changed or deleted after it began are not in it; it was never paused", async () => {
    // 5,000 records of 2 KB: 10 MB, far more than the socket buffers hold while the reader waits.
    const pad = "x".repeat(2000);
    for (let batch = 0; batch < 2; batch++) {
      const body = Array.from({ length: 2500 }, (_, i) => ({ title: `t${batch * 2500 + i} ${pad}`, priority: batch * 2500 + i }));
      assert.equal((await server.call("POST", "/api/entities/Task/bulk", { body })).status, 201);
    }
    const before = await server.call("GET", "/api/entities/Task?sort_by=priority&limit=5000&fields=id,priority");
    const ids = before.body.map((record: { id: string }) => record.id);

    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      request(`${server.url}/api/entities/Task/export`, { headers: { "X-Api-Key": SECRET } }, resolve).on("error", reject).end();
    });
    assert.equal(response.statusCode, 200);
    response.pause();
    const chunks: Buffer[] = [];
    // The reader holds back while the records change; the writes are answered meanwhile.
    const last = ids.at(-1);
    const changed = await server.call("PUT", `/api/entities/Task/${last}`, { body: { title: "changed after the export began" } });
    assert.equal(changed.status, 200);
    assert.equal((await server.call("DELETE", `/api/entities/Task/${ids.at(-2)}`)).status, 200);
    assert.equal((await server.call("POST", "/api/entities/Task", { body: { title: "created after the export began", priority: -1 } })).status, 201);
    const body = await new Promise<string>((resolve, reject) => {
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
      response.on("error", reject);
      response.resume();
    });
    const exported = ndjson(body);
    assert.equal(exported.length, 5000);
    assert.deepEqual(exported.map((record) => record.id).sort(), [...ids].sort());
    const byId = new Map(exported.map((record) => [record.id, record]));
    assert.equal(byId.get(last).title, `t4999 ${pad}`);
    assert.ok(byId.has(ids.at(-2)), "a record deleted after the export began is in it");
    assert.ok(!exported.some((record) => record.priority === -1), "a record created after it began is not");
  });

  test("an export whose reader has stopped reading holds back no other request, costly ones included", async () => {
    const held = await new Promise<IncomingMessage>((resolve, reject) => {
      request(`${server.url}/api/entities/Task/export`, { headers: { "X-Api-Key": SECRET } }, resolve).on("error", reject).end();
    });
    held.pause();
    assert.equal(held.statusCode, 200);
    try {
      // Writes come (on PostgreSQL, costly statements then take turns one at a time), and costly
      // requests with them: an aggregate's walk, a filter no index answers.
      const written = await server.call("POST", "/api/entities/Task", { body: { title: "while an export is held", priority: -2 } });
      assert.equal(written.status, 201);
      const inTime = <T>(answer: Promise<T>, what: string) =>
        Promise.race([answer, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} waited 10 s behind the held export`)), 10_000).unref())]);
      const grouped = await inTime(server.call("POST", "/api/entities/Task/aggregate", { body: { groupBy: "status", count: true } }), "an aggregate");
      assert.equal(grouped.status, 200, grouped.text);
      assert.ok(grouped.body.rows.length >= 1);
      const found = await inTime(server.call("GET", `/api/entities/Task?q=${q({ title: { $regex: "^while an export" } })}`), "a $regex list");
      assert.equal(found.status, 200, found.text);
      assert.deepEqual(found.body.map((record: { priority: number }) => record.priority), [-2]);
    } finally {
      held.destroy();
    }
  });

  test("on PostgreSQL at most 5 exports are read at once (each holds a connection of 10); elsewhere any number", async () => {
    // Readers that never read: each export stays open, behind its socket's buffers. 10 MB is more
    // than this host's buffers take (4 MB a connection) but not every kernel's: on PostgreSQL, where
    // the count matters, 50 MB.
    if (TEST_STORE === "postgres") {
      const pad = "y".repeat(8000); // in meta, which no index reads: the inserts stay quick
      for (let batch = 0; batch < 5; batch++) {
        const body = Array.from({ length: 1000 }, (_, i) => ({ title: `more${batch * 1000 + i}`, priority: 100_000 + batch * 1000 + i, meta: { pad } }));
        assert.equal((await server.call("POST", "/api/entities/Task/bulk", { body })).status, 201);
      }
    }
    const open = (): Promise<IncomingMessage> =>
      new Promise((resolve, reject) => request(`${server.url}/api/entities/Task/export`, { headers: { "X-Api-Key": SECRET } }, resolve).on("error", () => {}).on("error", reject).end());
    // The export of the test before gives its slot back once its transaction has ended, which on a
    // loaded host may be a moment after its last byte arrived: five are opened together again then.
    let held = await Promise.all(Array.from({ length: 5 }, open));
    for (let tries = 0; held.some((response) => response.statusCode === 503) && tries < 100; tries++) {
      for (const response of held) response.destroy();
      await new Promise((resolve) => setTimeout(resolve, 50));
      held = await Promise.all(Array.from({ length: 5 }, open));
    }
    for (const response of held) response.pause();
    assert.deepEqual(held.map((response) => response.statusCode), [200, 200, 200, 200, 200]);
    const sixth = await server.call("GET", "/api/entities/Task/export?format=csv");
    if (TEST_STORE === "postgres") {
      assert.equal(sixth.status, 503, sixth.text.slice(0, 200));
      assert.equal(sixth.body.error.code, "too_many_exports");
      assert.equal(sixth.headers.get("retry-after"), "5");
      // A reader that goes away gives its slot back.
      held.pop()!.destroy();
      let again = await server.call("GET", `/api/entities/Task/export?q=${q({ priority: 1 })}`);
      for (let tries = 0; again.status === 503 && tries < 50; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        again = await server.call("GET", `/api/entities/Task/export?q=${q({ priority: 1 })}`);
      }
      assert.equal(again.status, 200, again.text.slice(0, 200));
      assert.equal(ndjson(again.text).length, 1);
    } else {
      assert.equal(sixth.status, 200);
    }
    for (const response of held) response.destroy();
    // Every slot comes back: another round of exports is served.
    let after = await server.call("GET", `/api/entities/Task/export?q=${q({ priority: 2 })}`);
    for (let tries = 0; after.status === 503 && tries < 50; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      after = await server.call("GET", `/api/entities/Task/export?q=${q({ priority: 2 })}`);
    }
    assert.equal(after.status, 200);
  });
});
