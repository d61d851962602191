// The multipart/form-data parser (src/http/multipart.ts) on its own: the same parts however the
// body is cut, including inside a boundary, and each broken body refused with a code.

import assert from "node:assert/strict";
import { test } from "node:test";
import { boundaryOf, MultipartParser, parameterOf, type PartHeaders } from "../../src/http/multipart.ts";
import { ApiError } from "../../src/errors.ts";

interface Part extends PartHeaders {
  content: string;
}

function parse(body: Buffer, boundary: string, cuts: number[]): Part[] {
  const parts: Part[] = [];
  const pieces: Buffer[] = [];
  const parser = new MultipartParser(boundary, {
    part: (headers) => void parts.push({ ...headers, content: "" }),
    data: (piece) => void pieces.push(Buffer.from(piece)),
    partEnd: () => {
      parts[parts.length - 1]!.content = Buffer.concat(pieces.splice(0)).toString("utf8");
    },
  });
  let from = 0;
  for (const cut of [...cuts, body.length]) {
    parser.push(body.subarray(from, cut));
    from = cut;
  }
  parser.end();
  return parts;
}

const BOUNDARY = "----formdata-undici-0123456789";
const BODY = Buffer.from(
  "preamble to skip\r\n" +
    `--${BOUNDARY}\r\n` +
    'Content-Disposition: form-data; name="note"\r\n\r\n' +
    "not the file\r\n" +
    `--${BOUNDARY}\r\n` +
    'Content-Disposition: form-data; name="file"; filename="tasks.csv"\r\n' +
    "Content-Type: text/csv\r\n\r\n" +
    'title\r\n"has\r\n--' + "----formdata-undici-01 (almost the boundary)\"\r\né\r\n" +
    `--${BOUNDARY}--\r\n` +
    "epilogue to skip",
);
const PARTS: Part[] = [
  { name: "note", filename: null, contentType: null, content: "not the file" },
  { name: "file", filename: "tasks.csv", contentType: "text/csv", content: 'title\r\n"has\r\n------formdata-undici-01 (almost the boundary)"\r\né' },
];

test("the parts are the same for every place the body is cut in two", () => {
  for (let cut = 0; cut <= BODY.length; cut++) assert.deepEqual(parse(BODY, BOUNDARY, [cut]), PARTS, `cut at ${cut}`);
});

test("the parts are the same for every two places the body is cut at, a delimiter's length apart or less", () => {
  // A piece whose head may end a delimiter begun in the bytes held back from the piece before.
  const delimiterLength = BOUNDARY.length + 4;
  for (let first = 0; first <= BODY.length; first++) {
    for (let second = first; second <= Math.min(first + delimiterLength, BODY.length); second++) assert.deepEqual(parse(BODY, BOUNDARY, [first, second]), PARTS, `cuts at ${first} and ${second}`);
  }
});

test("the parts are the same when the body arrives a byte at a time", () => {
  assert.deepEqual(parse(BODY, BOUNDARY, Array.from({ length: BODY.length }, (_, i) => i)), PARTS);
});

test("the first boundary may open the body, and a part may have no headers", () => {
  const body = Buffer.from(`--b\r\n\r\nbare\r\n--b\r\nContent-Disposition: form-data; name="file"; filename*=UTF-8''t%C3%A2ches.csv\r\n\r\nx\r\n--b--`);
  assert.deepEqual(parse(body, "b", []), [
    { name: null, filename: null, contentType: null, content: "bare" },
    { name: "file", filename: "tâches.csv", contentType: null, content: "x" },
  ]);
});

test("transport padding after a boundary is allowed", () => {
  assert.deepEqual(parse(Buffer.from(`--b  \r\nContent-Disposition: form-data; name="file"\r\n\r\n[]\r\n--b--`), "b", []), [
    { name: "file", filename: null, contentType: null, content: "[]" },
  ]);
});

const BROKEN: Array<[name: string, body: string, message: RegExp]> = [
  ["a body cut inside a part", `--b\r\nContent-Disposition: form-data; name="file"\r\n\r\nhalf`, /ends inside part 1, without its closing delimiter "--b--"/],
  ["a body cut inside the headers", `--b\r\nContent-Disposition: form-da`, /ends inside part 1/],
  ["a body with no boundary at all", `just text`, /ends before its first boundary/],
  ["an empty body", ``, /ends before its first boundary/],
  ["a boundary followed by text", `--b\r\nContent-Disposition: form-data; name="file"\r\n\r\nx\r\n--bogus\r\n`, /followed by neither a line break nor "--"/],
  ["a header line without a colon", `--b\r\nnonsense\r\n\r\nx\r\n--b--`, /header line without a name/],
];

for (const [name, body, message] of BROKEN) {
  test(`${name} is refused 400 invalid_multipart`, () => {
    assert.throws(
      () => parse(Buffer.from(body), "b", []),
      (error) => error instanceof ApiError && error.status === 400 && error.code === "invalid_multipart" && message.test(error.message),
    );
  });
}

test("headers that never end are refused before they grow past their limit", () => {
  const parser = new MultipartParser("b", { part: () => {}, data: () => {}, partEnd: () => {} });
  parser.push(Buffer.from("--b\r\nX-Long: "));
  assert.throws(() => parser.push(Buffer.alloc(17 * 1024, "a")), /headers run over 16384 bytes/);
});

test("the boundary comes from the Content-Type, quoted or not", () => {
  const cases: Array<[string, string | RegExp]> = [
    ["multipart/form-data; boundary=abc", "abc"],
    ['multipart/form-data; charset=utf-8; boundary="a b:c"', "a b:c"],
    ["multipart/form-data;boundary=----WebKitFormBoundaryXyZ", "----WebKitFormBoundaryXyZ"],
    ["multipart/form-data", /names no boundary/],
    ["multipart/form-data; boundary=", /names no boundary/],
    [`multipart/form-data; boundary=${"x".repeat(71)}`, /at most 70/],
  ];
  for (const [header, expected] of cases) {
    if (typeof expected === "string") assert.equal(boundaryOf(header), expected);
    else assert.throws(() => boundaryOf(header), expected);
  }
});

test("Content-Disposition parameters: quoted, escaped, bare and absent", () => {
  const disposition = 'form-data; name="file"; filename="a \\"b\\".csv"; size=12';
  assert.equal(parameterOf(disposition, "name"), "file");
  assert.equal(parameterOf(disposition, "filename"), 'a "b".csv');
  assert.equal(parameterOf(disposition, "size"), "12");
  assert.equal(parameterOf(disposition, "missing"), null);
});
