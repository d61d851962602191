// POST …/import with a file as multipart/form-data (docs/base44-sdk.md, importEntities; docs/operating.md):
// raw bodies cut at awkward places, bodies over --max-body or cut short, CSV typed by the
// declaration, and every refusal storing nothing. On every store.

import assert from "node:assert/strict";
import { request } from "node:http";
import { after, before, beforeEach, describe, test } from "node:test";
import { PUBLISHABLE, SECRET, startTestServer, type TestServer } from "../support/server.ts";

const SDK = "/api/apps/app1/entities/Task";
const NATIVE = "/api/entities/Task";

interface Answer {
  status: number;
  body: any;
}

/** POSTs `form` as fetch sends FormData (one body, Content-Length). */
async function postForm(server: TestServer, path: string, form: FormData, apiKey = SECRET, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(server.url + path, { method: "POST", headers: { Authorization: `Bearer ${apiKey}`, ...headers }, body: form });
  return { status: response.status, body: await response.json() };
}

function formOf(name: string, text: string, type = ""): FormData {
  const form = new FormData();
  form.append("file", new File([text], name, { type }));
  return form;
}

/** A multipart body by hand, for boundaries and framing no client would choose. */
function multipart(boundary: string, filename: string, content: string, contentType = "text/csv"): Buffer {
  return Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="comment"\r\n\r\nignored\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: ${contentType}\r\n\r\n` +
      `${content}\r\n--${boundary}--\r\n`,
  );
}

/** Sends `pieces` as the chunks of a chunked body, each written after the last has gone out. */
function postChunked(server: TestServer, path: string, contentType: string, pieces: Buffer[], headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(server.url + path, { method: "POST", headers: { Authorization: `Bearer ${SECRET}`, "Content-Type": contentType, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) }));
    });
    req.on("error", reject);
    let at = 0;
    const next = () => {
      if (at === pieces.length) return void req.end();
      req.write(pieces[at++]);
      setTimeout(next, 2);
    };
    next();
  });
}

async function titles(server: TestServer): Promise<string[]> {
  return (await server.call("GET", `${NATIVE}?sort_by=title&limit=1000`)).body.map((record: { title: string }) => record.title);
}

let server: TestServer;
before(async () => {
  server = await startTestServer({ appId: "app1" });
});
after(() => server.close());
beforeEach(() => server.reset());

describe("a CSV file", () => {
  test("is typed by the declaration: every field type, an empty cell is no value", async () => {
    const csv =
      "title,status,priority,estimate,done,due_date,start_at,email,tags,meta\r\n" +
      'all set,doing,3,2.5,true,2026-01-02,2026-01-02T03:04:05.000Z,a@b.co,"[""x"",""y""]","{""deep"":{""n"":1}}"\r\n' +
      "bare,,,,false,,,,,\r\n";
    const answer = await postForm(server, `${SDK}/import`, formOf("tasks.csv", csv, "text/csv"));
    assert.equal(answer.status, 201, JSON.stringify(answer.body));
    assert.equal(answer.body.status, "success");
    assert.equal(answer.body.details, "Imported 2 Task records.");
    const [full, bare] = answer.body.output;
    assert.deepEqual(
      { ...full, id: undefined, created_date: undefined, updated_date: undefined, created_by_id: undefined },
      { id: undefined, title: "all set", status: "doing", priority: 3, estimate: 2.5, done: true, due_date: "2026-01-02", start_at: "2026-01-02T03:04:05.000Z", email: "a@b.co", tags: ["x", "y"], meta: { deep: { n: 1 } }, created_date: undefined, updated_date: undefined, created_by_id: undefined },
    );
    // The empty status cell left the field to its default; the other empty cells are no value.
    assert.deepEqual(Object.keys(bare).sort(), ["created_by_id", "created_date", "done", "id", "status", "title", "updated_date"]);
    assert.deepEqual([bare.status, bare.done], ["todo", false]);
    const stored = await server.call("GET", `${NATIVE}/${full.id}`);
    assert.equal(stored.body.priority, 3);
    assert.deepEqual(stored.body.tags, ["x", "y"]);
  });

  test("what a CSV export wrote, uploaded to another server, exports the same bytes", async () => {
    await server.call("POST", `${NATIVE}/bulk`, { body: [{ title: 'a "quoted", line\nbreak', tags: ["t"], meta: { m: [1] }, estimate: 0.1 }, { title: "plain", done: false }] });
    const exported = (await server.call("GET", `${NATIVE}/export?format=csv`)).text;
    const target = await startTestServer();
    try {
      const answer = await postForm(target, `${NATIVE}/import`, formOf("export.csv", exported, "text/csv"));
      assert.equal(answer.status, 201, JSON.stringify(answer.body));
      assert.equal(answer.body.length, 2);
      assert.equal((await target.call("GET", `${NATIVE}/export?format=csv`)).text, exported);
    } finally {
      await target.close();
    }
  });

  test("an unknown column is 400 unknown_field naming it and the declared fields; nothing is stored", async () => {
    const answer = await postForm(server, `${SDK}/import`, formOf("t.csv", "title,colour\nx,red\n"));
    assert.equal(answer.status, 400);
    assert.equal(answer.body.error.code, "unknown_field");
    assert.equal(answer.body.error.details.field, "colour");
    assert.equal(answer.body.error.details.line, 1);
    assert.ok(answer.body.error.details.fields.includes("title"));
    assert.match(answer.body.error.message, /"colour", which Task does not declare\. Its fields are: title, status, priority/);
    assert.deepEqual(await titles(server), []);
  });

  test("a cell its field cannot take refuses the file, naming the line the record starts on", async () => {
    const cases: Array<[string, string, string, number, RegExp]> = [
      ['title,priority\n"one\nline two",1\nx,3.5\n', "invalid_field", "priority", 4, /^Line 4 of the file: Field "priority" must be a whole number/],
      ["title,done\nx,true\ny,yes\n", "invalid_field", "done", 3, /^Line 3 of the file: Field "done" must be true or false \(got "yes"\)/],
      ["title,estimate\nx,lots\n", "invalid_field", "estimate", 2, /must be a number \(got "lots"\)/],
      ["title,tags\nx,a;b\n", "invalid_field", "tags", 2, /holds JSON text such as \["a", "b"\]/],
      ["title,status\nx,someday\n", "invalid_field", "status", 2, /^Line 2 of the file: Field "status"/],
      ["title,priority\nx,1\n,2\n", "invalid_field", "title", 3, /^Line 3 of the file: Field "title" is required/],
      ["title,priority\nx,1,extra\n", "invalid_file", "", 2, /Line 2 of the file has 3 cells; the header names 2 columns/],
      ['title\n"never closed\n', "invalid_file", "", 2, /t\.csv: Line 2: a quoted cell opens here and never closes/],
    ];
    for (const [csv, code, field, line, message] of cases) {
      const answer = await postForm(server, `${SDK}/import`, formOf("t.csv", csv));
      assert.equal(answer.status, 400, csv);
      assert.equal(answer.body.error.code, code, csv);
      assert.equal(answer.body.error.details.line, line, csv);
      if (field) assert.equal(answer.body.error.details.field, field, csv);
      assert.match(answer.body.error.message, message);
    }
    assert.deepEqual(await titles(server), [], "nothing of a refused file is stored");
  });
});

describe("the multipart body", () => {
  const CSV = 'title,priority\r\n"a, with comma",1\r\n"b\r\nsecond line",2\r\nc,3';

  test("cut into chunks at awkward places, inside the boundary too, gives the same records", async () => {
    const boundary = "----bndry-7d3a9f";
    const body = multipart(boundary, "t.csv", CSV);
    const inBoundary = body.indexOf(`\r\n--${boundary}--`) + 5;
    const inHeaders = body.indexOf("filename=") + 4;
    const cuts = [1, 3, inHeaders, inBoundary, inBoundary + 2, body.length - 3];
    const pieces = [0, ...cuts].map((from, i) => body.subarray(from, cuts[i] ?? body.length));
    const answer = await postChunked(server, `${SDK}/import`, `multipart/form-data; boundary=${boundary}`, pieces);
    assert.equal(answer.status, 201, JSON.stringify(answer.body));
    assert.deepEqual(await titles(server), ["a, with comma", "b\r\nsecond line", "c"]);
    // A byte at a time.
    await server.reset();
    const bytes = Array.from(body.subarray(0, 200), (byte) => Buffer.from([byte]));
    const slow = await postChunked(server, `${NATIVE}/import`, `multipart/form-data; boundary="${boundary}"`, [...bytes, body.subarray(200)]);
    assert.equal(slow.status, 201, JSON.stringify(slow.body));
    assert.deepEqual(slow.body.map((record: { priority: number }) => record.priority), [1, 2, 3]);
  });

  test("over --max-body is 413 payload_too_large, declared or streamed; nothing is stored", async () => {
    const small = await startTestServer({ maxBodyBytes: 2048 });
    try {
      const lines = Array.from({ length: 400 }, (_, i) => `t${i},${i}`).join("\n");
      const declared = await postForm(small, `${NATIVE}/import`, formOf("t.csv", `title,priority\n${lines}`));
      assert.equal(declared.status, 413);
      assert.equal(declared.body.error.code, "payload_too_large");
      const body = multipart("b0undary", "t.csv", `title,priority\n${lines}`);
      const pieces = [body.subarray(0, 1500), body.subarray(1500, 3000), body.subarray(3000)];
      const streamed = await postChunked(small, `${NATIVE}/import`, "multipart/form-data; boundary=b0undary", pieces);
      assert.equal(streamed.status, 413);
      assert.equal(streamed.body.error.code, "payload_too_large");
      assert.equal((await small.call("GET", `${NATIVE}/count`)).body.count, 0);
    } finally {
      await small.close();
    }
  });

  test("cut short before its closing boundary is 400 invalid_multipart; nothing is stored", async () => {
    const body = multipart("cutboundary", "t.csv", CSV);
    const answer = await postChunked(server, `${SDK}/import`, "multipart/form-data; boundary=cutboundary", [body.subarray(0, body.length - 8)]);
    assert.equal(answer.status, 400);
    assert.equal(answer.body.error.code, "invalid_multipart");
    assert.match(answer.body.error.message, /without its closing delimiter "--cutboundary--": it was cut short/);
    assert.deepEqual(await titles(server), []);
  });

  test("bodies that are not a file upload are refused, saying how to send one", async () => {
    const raw = (contentType: string, body: string) => postChunked(server, `${SDK}/import`, contentType, [Buffer.from(body)]);
    const cases: Array<[Promise<Answer>, number, string, RegExp]> = [
      [raw("multipart/form-data", "--x\r\n\r\nfile\r\n--x--"), 400, "invalid_multipart", /names no boundary/],
      [raw("text/csv", "title\nx\n"), 415, "unsupported_media_type", /Content-Type: application\/json, or multipart\/form-data with the file in a part named "file"/],
      [raw("multipart/form-data; boundary=x", '--x\r\nContent-Disposition: form-data; name="upload"; filename="t.csv"\r\n\r\ntitle\nx\r\n--x--'), 400, "invalid_multipart", /parts "upload" but none named "file"/],
      [postForm(server, `${SDK}/import`, formOf("empty.csv", "")), 400, "invalid_file", /The file empty\.csv is empty/],
      [postForm(server, `${SDK}/import`, formOf("header.csv", "title,priority\r\n")), 400, "invalid_file", /holds no records/],
      [postForm(server, `${SDK}/import`, formOf("book.xlsx", "PK\u0003\u0004", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")), 400, "invalid_file", /is not JSON, NDJSON or CSV/],
      [postForm(server, `${SDK}/import`, formOf("tasks.json", "title\nx\n")), 400, "invalid_file", /named or typed as JSON but starts with "t"/],
    ];
    for (const [answer, status, code, message] of cases) {
      const { status: got, body } = await answer;
      assert.deepEqual([got, body.error.code], [status, code], JSON.stringify(body));
      assert.match(body.error.message, message);
    }
    const twoFiles = new FormData();
    twoFiles.append("file", new File(["title\nx"], "a.csv"));
    twoFiles.append("file", new File(["title\ny"], "b.csv"));
    const refused = await postForm(server, `${SDK}/import`, twoFiles);
    assert.deepEqual([refused.status, refused.body.error.code], [400, "invalid_multipart"]);
    assert.deepEqual(await titles(server), []);
  });
});

describe("JSON and NDJSON files", () => {
  test("a file over 5,000 records is one write: a bad record near its end stores nothing, its line named", async () => {
    const lines = Array.from({ length: 6000 }, (_, i) => JSON.stringify({ title: `t${i}`, priority: i }));
    lines[5500] = JSON.stringify({ title: "bad", priority: "high" });
    const refused = await postForm(server, `${NATIVE}/import`, formOf("big.ndjson", lines.join("\n")));
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.details.line, 5501);
    assert.equal((await server.call("GET", `${NATIVE}/count`)).body.count, 0);
    lines[5500] = JSON.stringify({ title: "fixed", priority: 1 });
    const stored = await postForm(server, `${SDK}/import`, formOf("big.ndjson", lines.join("\n")));
    assert.equal(stored.status, 201);
    assert.equal(stored.body.output.length, 6000);
    assert.equal((await server.call("GET", `${NATIVE}/count`)).body.count, 6000);
  });

  test("a JSON array keeps ids; an id taken is 409 naming its line", async () => {
    const json = '[\n  {"id": "kept-1", "title": "one"},\n  {"title": "two"}\n]';
    const answer = await postForm(server, `${SDK}/import`, formOf("t.json", json, "application/json"));
    assert.equal(answer.status, 201);
    assert.equal(answer.body.output[0].id, "kept-1");
    const again = await postForm(server, `${SDK}/import`, formOf("t.json", '[{"title": "fine"},\n{"id": "kept-1", "title": "taken"}]'));
    assert.deepEqual([again.status, again.body.error.code, again.body.error.details.line], [409, "unique_violation", 2]);
    assert.deepEqual(await titles(server), ["one", "two"]);
  });

  test("an Idempotency-Key replays the answer instead of importing twice", async () => {
    const headers = { "Idempotency-Key": "upload-1" };
    const first = await postForm(server, `${SDK}/import`, formOf("t.ndjson", '{"title": "once"}\n'), SECRET, headers);
    const second = await postForm(server, `${SDK}/import`, formOf("t.ndjson", '{"title": "once"}\n'), SECRET, headers);
    assert.equal(first.status, 201);
    assert.deepEqual(second.body, first.body);
    assert.deepEqual(await titles(server), ["once"]);
  });

  test("a publishable key may not import: 403 forbidden, as for a JSON body", async () => {
    const answer = await postForm(server, `${SDK}/import`, formOf("t.ndjson", '{"title": "x"}\n'), PUBLISHABLE);
    assert.equal(answer.status, 403);
    assert.equal(answer.body.error.code, "forbidden");
    assert.match(answer.body.error.message, /A publishable key cannot import records/);
    assert.deepEqual(await titles(server), []);
  });
});
