// Compressed answers (issue 40 item 8): gzip or brotli as Accept-Encoding allows, for bodies of
// 1 KiB or more, with Vary: Accept-Encoding; never for small answers or the change feed's stream.

import assert from "node:assert/strict";
import { request } from "node:http";
import { after, before, test } from "node:test";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { SECRET, startTestServer, type TestServer } from "../support/server.ts";
import { compressLater } from "../../src/http/compression.ts";

const T = "/api/entities/Task";
let server: TestServer;
before(async () => {
  server = await startTestServer();
  const records = Array.from({ length: 60 }, (_, i) => ({ title: `Task number ${i}, with some words to fill it`, priority: i % 5, tags: ["a", "b"] }));
  assert.equal((await server.call("POST", `${T}/bulk`, { body: records })).status, 201);
});
after(() => server.close());

interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  bytes: Buffer;
}

/** A GET with the headers given, its body as the bytes on the wire (fetch would decompress them). */
function get(path: string, headers: Record<string, string>, { untilBytes = Infinity } = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(server.url + path, { headers: { "X-Api-Key": SECRET, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const done = () => resolve({ status: res.statusCode!, headers: res.headers, bytes: Buffer.concat(chunks) });
      res.on("data", (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        if (size >= untilBytes) {
          req.destroy();
          done();
        }
      });
      res.on("end", done);
    });
    req.on("error", (error) => (req.destroyed ? undefined : reject(error)));
    req.end();
  });
}

test("a page over 1 KiB is gzip when gzip is accepted, brotli when br is, and says so in Vary", async () => {
  const plain = await get(`${T}?limit=60`, {});
  assert.equal(plain.status, 200);
  assert.equal(plain.headers["content-encoding"], undefined);
  assert.match(String(plain.headers.vary), /Accept-Encoding/);
  const expected = JSON.parse(plain.bytes.toString("utf8"));
  assert.equal(expected.length, 60);
  const cases: Array<[acceptEncoding: string, coding: string, decode: (bytes: Buffer) => Buffer]> = [
    ["gzip", "gzip", gunzipSync],
    ["gzip, deflate, br", "br", brotliDecompressSync],
    ["br;q=0, gzip", "gzip", gunzipSync],
    ["*", "br", brotliDecompressSync],
    ["br;q=0, *;q=0.5", "gzip", gunzipSync],
  ];
  for (const [acceptEncoding, coding, decode] of cases) {
    const packed = await get(`${T}?limit=60`, { "Accept-Encoding": acceptEncoding });
    assert.equal(packed.status, 200, acceptEncoding);
    assert.equal(packed.headers["content-encoding"], coding, acceptEncoding);
    assert.equal(Number(packed.headers["content-length"]), packed.bytes.length, `${acceptEncoding}: Content-Length counts the compressed bytes`);
    assert.ok(packed.bytes.length < plain.bytes.length / 3, `${acceptEncoding}: ${packed.bytes.length} bytes against ${plain.bytes.length}`);
    assert.deepEqual(JSON.parse(decode(packed.bytes).toString("utf8")), expected, acceptEncoding);
  }
  for (const refused of ["gzip;q=0", "identity", "deflate"]) {
    const answer = await get(`${T}?limit=60`, { "Accept-Encoding": refused });
    assert.equal(answer.headers["content-encoding"], undefined, refused);
    assert.deepEqual(JSON.parse(answer.bytes.toString("utf8")), expected, refused);
  }
});

test("an answer under 1 KiB is sent as it is", async () => {
  const small = await get(`${T}?limit=1`, { "Accept-Encoding": "gzip, br" });
  assert.equal(small.status, 200);
  assert.equal(small.headers["content-encoding"], undefined);
  assert.equal(JSON.parse(small.bytes.toString("utf8")).length, 1);
});

test("a record over 1 KiB read by id is compressed too, with its ETag", async () => {
  const created = await server.call("POST", T, { body: { title: "long ".repeat(400) } });
  const path = `${T}/${created.body.id}`;
  await get(path, {}); // cached: the next read could take the short path
  const packed = await get(path, { "Accept-Encoding": "gzip" });
  assert.equal(packed.headers["content-encoding"], "gzip");
  assert.equal(packed.headers.etag, created.headers.get("etag"));
  assert.equal(JSON.parse(gunzipSync(packed.bytes).toString("utf8")).title, "long ".repeat(400));
});

test("a CORS answer keeps Vary: Origin beside Accept-Encoding", async () => {
  const answer = await get(`${T}?limit=60`, { "Accept-Encoding": "gzip", Origin: "https://app.example" });
  assert.equal(answer.headers["content-encoding"], "gzip");
  const vary = String(answer.headers.vary);
  assert.ok(vary.includes("Accept-Encoding"), vary);
});

test("the change feed's stream is never compressed", async () => {
  const stream = await get("/api/changes?since=0.0", { "Accept-Encoding": "gzip, br", Accept: "text/event-stream" }, { untilBytes: 1 });
  assert.equal(stream.status, 200);
  assert.equal(stream.headers["content-encoding"], undefined);
  assert.match(String(stream.headers["content-type"]), /text\/event-stream/);
});

test("big answers are compressed two at a time, eight waiting; one more is refused at once, to be sent as it is", async () => {
  const body = JSON.stringify(Array.from({ length: 4000 }, (_, i) => ({ id: `r${i}`, title: `record number ${i}`, status: "todo" })));
  const packing = Array.from({ length: 11 }, () => compressLater(body, "gzip"));
  const outcomes = await Promise.allSettled(packing);
  assert.deepEqual(outcomes.map((outcome) => outcome.status), [...Array(10).fill("fulfilled"), "rejected"]);
  for (const outcome of outcomes.slice(0, 10)) assert.equal(gunzipSync((outcome as PromiseFulfilledResult<Buffer>).value).toString(), body);
  assert.equal((await compressLater(body, "br")).length > 0, true, "the lane is free again");
});
