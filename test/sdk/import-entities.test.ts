// The real @base44/sdk's importEntities(file) against a real tabula (docs/base44-sdk.md, issue 43):
// a JSON, an NDJSON and a CSV file, as a user's code sends them (a File), then read back with
// list(); a bad row refused with its line, nothing of its file stored. On every store.

import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { createClient } from "@base44/sdk";
import { PUBLISHABLE, SECRET, startTestServer, type TestServer } from "../support/server.ts";
import { refusal } from "../support/sdk.ts";

// The SDK logs every error it throws to the console unless it runs in production.
process.env.NODE_ENV = "production";

let server: TestServer;
let Task: any;
let PublicTask: any;
before(async () => {
  server = await startTestServer({ appId: "app1" });
  Task = createClient({ serverUrl: server.url, appId: "app1", token: SECRET }).entities.Task;
  PublicTask = createClient({ serverUrl: server.url, appId: "app1", token: PUBLISHABLE }).entities.Task;
});
beforeEach(() => server.reset());
after(() => server.close());

/** The stored records' fields named, sorted by title. */
async function stored(...fields: string[]): Promise<unknown[]> {
  const records = await Task.list("title");
  return records.map((record: Record<string, unknown>) => Object.fromEntries(fields.filter((name) => name in record).map((name) => [name, record[name]])));
}

describe("importEntities(file)", () => {
  test("a CSV file: quotes, commas and line breaks in cells; values typed by the declaration", async () => {
    const csv =
      "\uFEFFtitle,status,priority,estimate,done,due_date,tags,meta\r\n" +
      '"Buy milk, eggs",todo,1,0.5,false,2026-03-01,"[""home""]",\r\n' +
      '"Say ""hello""\r\nto the team",doing,2,,true,,,"{""room"":""B""}"\r\n' +
      "Plain,done,,3,,,,\r\n";
    const result = await Task.importEntities(new File([csv], "tasks.csv", { type: "text/csv" }));
    assert.equal(result.status, "success");
    assert.equal(result.details, "Imported 3 Task records.");
    assert.equal(result.output.length, 3);
    assert.match(result.output[0].id, /^[0-9a-f]{24}$/);
    assert.deepEqual(await stored("title", "status", "priority", "estimate", "done", "due_date", "tags", "meta"), [
      { title: "Buy milk, eggs", status: "todo", priority: 1, estimate: 0.5, done: false, due_date: "2026-03-01", tags: ["home"] },
      { title: "Plain", status: "done", estimate: 3 },
      { title: 'Say "hello"\r\nto the team', status: "doing", priority: 2, done: true, meta: { room: "B" } },
    ]);
  });

  test("a JSON file (one array)", async () => {
    const json = JSON.stringify([{ title: "one", priority: 1, tags: ["a", "b"] }, { title: "two", done: true, meta: { n: [1, 2] } }], null, 2);
    const result = await Task.importEntities(new File([json], "tasks.json", { type: "application/json" }));
    assert.equal(result.status, "success");
    assert.deepEqual(result.output.map((record: { title: string }) => record.title), ["one", "two"]);
    assert.deepEqual(await stored("title", "priority", "done", "tags", "meta"), [
      { title: "one", priority: 1, tags: ["a", "b"] },
      { title: "two", done: true, meta: { n: [1, 2] } },
    ]);
  });

  test("an NDJSON file, told by its first character when its name and type say nothing", async () => {
    const ndjson = '{"title": "first", "estimate": 1.25}\n\n{"title": "second", "due_date": "2026-12-31"}\n';
    const result = await Task.importEntities(new File([ndjson], "export"));
    assert.equal(result.status, "success");
    assert.deepEqual(await stored("title", "estimate", "due_date"), [
      { title: "first", estimate: 1.25 },
      { title: "second", due_date: "2026-12-31" },
    ]);
  });

  test("a bad row is refused with its line number, and nothing of its file is stored", async () => {
    const csv = 'title,priority\n"spans\ntwo lines",1\nfine,2\nbroken,3.5\nlast,4\n';
    const refused = await refusal(Task.importEntities(new File([csv], "tasks.csv", { type: "text/csv" })));
    assert.deepEqual([refused.status, refused.code], [400, "invalid_field"]);
    assert.match(refused.message, /^Line 5 of the file: Field "priority" must be a whole number/);
    assert.equal((refused.data as any).error.details.line, 5);
    const ndjson = '{"title": "ok"}\n{"title": "ok too"}\n{"title": 7}\n';
    const again = await refusal(Task.importEntities(new File([ndjson], "tasks.ndjson")));
    assert.deepEqual([again.status, again.code, (again.data as any).error.details.line], [400, "invalid_field", 3]);
    assert.deepEqual(await Task.list(), []);
  });

  test("an unknown CSV column is refused, naming it and the declared fields", async () => {
    const refused = await refusal(Task.importEntities(new File(["title,colour\nx,red\n"], "tasks.csv")));
    assert.deepEqual([refused.status, refused.code], [400, "unknown_field"]);
    assert.match(refused.message, /"colour", which Task does not declare\. Its fields are: title, status/);
  });

  test("a publishable key gets 403 forbidden: importing is for secret keys", async () => {
    const refused = await refusal(PublicTask.importEntities(new File(['[{"title": "x"}]'], "tasks.json")));
    assert.deepEqual([refused.status, refused.code], [403, "forbidden"]);
    assert.deepEqual(await Task.list(), []);
  });
});
