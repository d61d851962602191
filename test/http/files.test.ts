// Files (docs/api.md, "Files"; docs/base44-sdk.md): uploads through the real @base44/sdk's
// integrations.Core and natively, public and private reads, signed URLs, --max-file-size, ranges,
// ETags, active types served as downloads, the list and deletes. On every store; on PostgreSQL, a
// second process serves what the first stored.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { createClient } from "@base44/sdk";
import { createServer } from "../../src/server.ts";
import { PUBLISHABLE, SECRET, startTestServer, TASK, TEST_STORE, type TestServer } from "../support/server.ts";
import { dropPgSchema, freshPgSchema, pgTestUrl } from "../support/postgres.ts";
import { refusal } from "../support/sdk.ts";

// The SDK logs every error it throws to the console unless it runs in production.
process.env.NODE_ENV = "production";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
/** Bytes that are not text, so that nothing on the way could change them unseen. */
const jsonOf = (response: Response): Promise<any> => response.json();
const bytesOf = (length: number, seed = 7) => Uint8Array.from({ length }, (_, i) => (i * 31 + seed) & 0xff);

let server: TestServer;
let sdk: any;
before(async () => {
  server = await startTestServer({ appId: "app1", maxFileBytes: 64 * 1024 });
  sdk = createClient({ serverUrl: server.url, appId: "app1", token: PUBLISHABLE });
});
after(() => server.close());

async function uploadNative(bytes: Uint8Array, name: string, type: string, options: { apiKey?: string | null; isPrivate?: boolean } = {}): Promise<Response> {
  const form = new FormData();
  form.append("file", new File([bytes], name, { type }));
  const headers: Record<string, string> = {};
  const apiKey = options.apiKey === undefined ? PUBLISHABLE : options.apiKey;
  if (apiKey !== null) headers["X-Api-Key"] = apiKey;
  return fetch(`${server.url}/api/files${options.isPrivate ? "?private=true" : ""}`, { method: "POST", headers, body: form });
}

async function uploaded(bytes: Uint8Array, name: string, type: string, isPrivate = false): Promise<any> {
  const response = await uploadNative(bytes, name, type, { isPrivate });
  assert.equal(response.status, 201, await response.clone().text());
  return response.json();
}

describe("the SDK's integrations.Core", () => {
  test("UploadFile answers an absolute file_url that serves the bytes without a key", async () => {
    const bytes = bytesOf(5000);
    const { file_url } = await sdk.integrations.Core.UploadFile({ file: new File([bytes], "photo.png", { type: "image/png" }) });
    assert.match(file_url, new RegExp(`^${server.url}/api/files/[0-9a-f]{32}/photo\\.png$`));
    const read = await fetch(file_url);
    assert.equal(read.status, 200);
    assert.equal(read.headers.get("content-type"), "image/png");
    assert.equal(read.headers.get("content-length"), "5000");
    assert.match(read.headers.get("content-disposition")!, /^inline;/);
    assert.deepEqual(new Uint8Array(await read.arrayBuffer()), bytes);
  });

  test("UploadPrivateFile answers a file_uri; CreateFileSignedUrl signs it; nothing else reads it", async () => {
    const bytes = bytesOf(3000, 11);
    const { file_uri } = await sdk.integrations.Core.UploadPrivateFile({ file: new File([bytes], "secret.pdf", { type: "application/pdf" }) });
    assert.match(file_uri, /^[0-9a-f]{32}$/);
    const { signed_url } = await sdk.integrations.Core.CreateFileSignedUrl({ file_uri, expires_in: 600 });
    const read = await fetch(signed_url);
    assert.equal(read.status, 200);
    assert.equal(read.headers.get("cache-control"), "private, no-store");
    assert.deepEqual(new Uint8Array(await read.arrayBuffer()), bytes);

    const url = new URL(signed_url);
    const plain = `${url.origin}${url.pathname}`;
    const changed = new URL(signed_url);
    changed.searchParams.set("signature", changed.searchParams.get("signature")!.replace(/^./, (c) => (c === "A" ? "B" : "A")));
    const later = new URL(signed_url);
    later.searchParams.set("expires", String(Number(later.searchParams.get("expires")) + 1000));
    for (const [what, refused, words] of [
      ["no signature", plain, /private/],
      ["a changed signature", changed.href, /does not match/],
      ["a changed expiry", later.href, /does not match/],
      ["with the secret key but no signature", plain, /private/],
    ] as const) {
      const answer = await fetch(refused, { headers: what.includes("secret") ? { "X-Api-Key": SECRET } : {} });
      assert.equal(answer.status, 403, what);
      const body = await jsonOf(answer);
      assert.equal(body.error.code, "forbidden", what);
      assert.match(body.error.message, words, what);
    }
  });

  test("a signed URL is refused once it has expired", async () => {
    const { file_uri } = await sdk.integrations.Core.UploadPrivateFile({ file: new File(["soon gone"], "a.txt", { type: "text/plain" }) });
    const { signed_url } = await sdk.integrations.Core.CreateFileSignedUrl({ file_uri, expires_in: 1 });
    const expires = Number(new URL(signed_url).searchParams.get("expires"));
    // Wait for the second named to pass, then the same URL is refused.
    while (Date.now() / 1000 <= expires) await new Promise((resolve) => setTimeout(resolve, 50));
    const answer = await fetch(signed_url);
    assert.equal(answer.status, 403);
    assert.match((await jsonOf(answer)).error.message, /expired/);
  });

  test("CreateFileSignedUrl of an unknown file is 404 file_not_found; a bad expires_in is 400", async () => {
    const missing = await refusal(sdk.integrations.Core.CreateFileSignedUrl({ file_uri: "0".repeat(32) }));
    assert.equal(missing.status, 404);
    assert.equal(missing.code, "file_not_found");
    const { file_uri } = await sdk.integrations.Core.UploadPrivateFile({ file: new File(["x"], "x.txt") });
    const bad = await refusal(sdk.integrations.Core.CreateFileSignedUrl({ file_uri, expires_in: -5 }));
    assert.equal(bad.status, 400);
  });

  test("an upload over --max-file-size is 413, and nothing of it is kept", async () => {
    const before = (await server.call("GET", "/api/files")).headers.get("x-total-count");
    const tooBig = await refusal(sdk.integrations.Core.UploadFile({ file: new File([bytesOf(64 * 1024 + 1)], "big.bin") }));
    assert.equal(tooBig.status, 413);
    assert.equal(tooBig.code, "payload_too_large");
    const raw = await fetch(`${server.url}/api/files?name=big.bin`, { method: "POST", headers: { "X-Api-Key": PUBLISHABLE, "Content-Type": "application/octet-stream" }, body: bytesOf(200 * 1024) });
    assert.equal(raw.status, 413);
    assert.equal((await server.call("GET", "/api/files")).headers.get("x-total-count"), before);
    // Exactly the limit is kept.
    const { file_url } = await sdk.integrations.Core.UploadFile({ file: new File([bytesOf(64 * 1024)], "just.bin") });
    assert.equal((await fetch(file_url)).headers.get("content-length"), String(64 * 1024));
  });
});

test("in memory, files take at most four times --max-file-size in all: past it 507, nothing kept; a delete makes room", async () => {
  const own = await startTestServer({ memory: true, maxFileBytes: 64 * 1024 });
  try {
    const send = (seed: number) => fetch(`${own.url}/api/files?name=f${seed}.bin`, { method: "POST", headers: { "X-Api-Key": PUBLISHABLE, "Content-Type": "application/octet-stream" }, body: bytesOf(60 * 1024, seed) });
    const kept: any[] = [];
    for (let seed = 0; seed < 4; seed++) {
      const answer = await send(seed);
      assert.equal(answer.status, 201);
      kept.push(await answer.json());
    }
    const full = await send(9);
    assert.equal(full.status, 507);
    const { error } = (await full.json()) as any;
    assert.equal(error.code, "insufficient_storage");
    assert.equal(error.details.maxBytes, 256 * 1024);
    assert.match(error.message, /at most 262144 bytes of files .*DELETE \/api\/files/);
    assert.equal((await own.call("GET", "/api/files")).headers.get("x-total-count"), "4");
    assert.equal((await own.call("DELETE", `/api/files/${kept[0].id}`)).status, 200);
    assert.equal((await send(10)).status, 201, "the deleted file's room is free again");
    assert.deepEqual(new Uint8Array(await (await fetch(kept[3].url)).arrayBuffer()), bytesOf(60 * 1024, 3), "the files kept are whole");
  } finally {
    await own.close();
  }
});

test("files take at most --max-files-total in all, on every store: past it 507 and nothing kept, a full store refuses before reading, a delete makes room", async () => {
  const own = await startTestServer({ maxFileBytes: 64 * 1024, maxFilesTotalBytes: 150 * 1024 });
  try {
    const send = (seed: number, length = 60 * 1024) => fetch(`${own.url}/api/files?name=f${seed}.bin`, { method: "POST", headers: { "X-Api-Key": PUBLISHABLE, "Content-Type": "application/octet-stream" }, body: bytesOf(length, seed) });
    const first = await jsonOf(await send(1));
    assert.equal((await send(2)).status, 201);
    // 120 KiB kept: a third of 60 KiB would make 180.
    const over = await send(3);
    assert.equal(over.status, 507);
    const { error } = (await over.json()) as any;
    assert.equal(error.code, "insufficient_storage");
    assert.equal(error.details.maxBytes, 150 * 1024);
    assert.match(error.message, /at most 153600 bytes in all \(--max-files-total\).*DELETE \/api\/files/);
    assert.equal((await own.call("GET", "/api/files")).headers.get("x-total-count"), "2", "nothing of the refused upload is kept");
    // What still fits is taken: 30 KiB makes 150.
    assert.equal((await send(4, 30 * 1024)).status, 201);
    const full = await send(5, 1);
    assert.equal(full.status, 507, "a full store refuses even a byte");
    assert.equal((await own.call("DELETE", `/api/files/${first.id}`)).status, 200);
    assert.equal((await send(6)).status, 201, "the deleted file's room is free again");
    assert.equal((await own.call("GET", "/api/files")).headers.get("x-total-count"), "3");
  } finally {
    await own.close();
  }
});

describe("native uploads and reads", () => {
  test("POST /api/files answers 201 with the description; a raw body takes ?name= and its Content-Type", async () => {
    const bytes = bytesOf(1234);
    const described = await uploaded(bytes, "notes.txt", "text/plain");
    assert.deepEqual(Object.keys(described), ["id", "name", "size", "content_type", "private", "sha256", "created_date", "url"]);
    assert.equal(described.name, "notes.txt");
    assert.equal(described.size, 1234);
    assert.equal(described.content_type, "text/plain");
    assert.equal(described.private, false);
    assert.equal(described.sha256, sha256(bytes));
    assert.equal(described.url, `${server.url}/api/files/${described.id}/notes.txt`);

    const raw = await fetch(`${server.url}/api/files?name=${encodeURIComponent("été 1.csv")}&private=true`, { method: "POST", headers: { "X-Api-Key": SECRET, "Content-Type": "text/csv" }, body: "a,b\n1,2\n" });
    assert.equal(raw.status, 201);
    const rawFile = await jsonOf(raw);
    assert.equal(raw.headers.get("location"), `/api/files/${rawFile.id}`);
    assert.equal(rawFile.name, "été 1.csv");
    assert.equal(rawFile.private, true);
    assert.equal(rawFile.url, null);
    const signed = await server.call("POST", "/api/files/signed-url", { body: { id: rawFile.id, expires_in: 60 }, apiKey: PUBLISHABLE });
    assert.equal(signed.status, 200);
    const read = await fetch(signed.body.signed_url);
    assert.equal(await read.text(), "a,b\n1,2\n");
    assert.match(read.headers.get("content-disposition")!, /filename\*=UTF-8''%C3%A9t%C3%A9%201\.csv/);
  });

  test("an upload needs a key or a user: none is 401; the SDK's routes take a form only (415)", async () => {
    const answer = await uploadNative(bytesOf(10), "a.bin", "application/octet-stream", { apiKey: null });
    assert.equal(answer.status, 401);
    const raw = await fetch(`${server.url}/api/apps/app1/integration-endpoints/Core/UploadFile`, { method: "POST", headers: { "X-Api-Key": PUBLISHABLE, "Content-Type": "image/png" }, body: bytesOf(10) });
    assert.equal(raw.status, 415);
    assert.equal((await jsonOf(raw)).error.code, "unsupported_media_type");
  });

  test("a signed-in user, with no key, may upload and sign", async () => {
    const printed: string[] = [];
    const own = await startTestServer({ printCode: (line) => void printed.push(line) });
    try {
      const email = "ada@example.com";
      assert.equal((await own.call("POST", "/api/auth/register", { apiKey: null, body: { email, password: "correct horse battery" } })).status, 200);
      const code = /code (\d{6})/.exec(printed.find((line) => line.includes(email))!)![1];
      const verified = await own.call("POST", "/api/auth/verify-otp", { apiKey: null, body: { email, otp_code: code } });
      const headers = { Authorization: `Bearer ${verified.body.access_token}` };
      const form = new FormData();
      form.append("file", new File(["mine"], "mine.txt", { type: "text/plain" }));
      const answer = await fetch(`${own.url}/api/apps/app1/integration-endpoints/Core/UploadPrivateFile`, { method: "POST", headers, body: form });
      assert.equal(answer.status, 200);
      const { file_uri } = await jsonOf(answer);
      const signed = await own.call("POST", "/api/files/signed-url", { apiKey: null, headers, body: { file_uri } });
      assert.equal(signed.status, 200, signed.text);
      assert.equal(await (await fetch(signed.body.signed_url)).text(), "mine");
    } finally {
      await own.close();
    }
  });

  test("a form without a part named file is 400 invalid_multipart", async () => {
    const form = new FormData();
    form.append("document", new File(["x"], "x.txt"));
    const answer = await fetch(`${server.url}/api/files`, { method: "POST", headers: { "X-Api-Key": PUBLISHABLE }, body: form });
    assert.equal(answer.status, 400);
    assert.equal((await jsonOf(answer)).error.code, "invalid_multipart");
  });

  test("active types (HTML, SVG, XML, unknown) are downloads, never pages; every file answer forbids sniffing and scripts", async () => {
    for (const [name, type, disposition] of [
      ["page.html", "text/html", "attachment"],
      ["logo.svg", "image/svg+xml", "attachment"],
      ["feed.xml", "application/xml", "attachment"],
      ["thing.bin", "application/x-made-up", "attachment"],
      ["none", "", "attachment"],
      ["pic.jpg", "image/jpeg", "inline"],
    ] as const) {
      const { url, content_type } = await uploaded(new TextEncoder().encode("<html><script>alert(1)</script></html>"), name, type);
      const read = await fetch(url);
      assert.equal(read.status, 200, name);
      assert.equal(read.headers.get("content-type"), content_type, name);
      assert.match(read.headers.get("content-disposition")!, new RegExp(`^${disposition};`), name);
      assert.equal(read.headers.get("x-content-type-options"), "nosniff", name);
      assert.match(read.headers.get("content-security-policy")!, /default-src 'none'.*sandbox/, name);
    }
  });

  const RANGES: ReadonlyArray<readonly [string, number, string | null, [number, number] | null]> = [
    // [Range, status, Content-Range, the bytes answered (start, end inclusive)]
    ["bytes=2-5", 206, "bytes 2-5/100", [2, 5]],
    ["bytes=90-", 206, "bytes 90-99/100", [90, 99]],
    ["bytes=-4", 206, "bytes 96-99/100", [96, 99]],
    ["bytes=95-500", 206, "bytes 95-99/100", [95, 99]],
    ["bytes=-500", 206, "bytes 0-99/100", [0, 99]],
    ["bytes=0-1,5-6", 200, null, [0, 99]],
    ["items=0-5", 200, null, [0, 99]],
    ["bytes=100-", 416, "bytes */100", null],
    ["bytes=-0", 416, "bytes */100", null],
  ];
  test("ranges: one range is 206 with Content-Range; past the end 416; several or malformed, the whole file", async () => {
    const bytes = bytesOf(100, 3);
    const { url } = await uploaded(bytes, "r.bin", "application/octet-stream");
    for (const [range, status, contentRange, part] of RANGES) {
      const read = await fetch(url, { headers: { Range: range } });
      assert.equal(read.status, status, range);
      assert.equal(read.headers.get("content-range"), contentRange, range);
      if (part === null) {
        assert.equal((await jsonOf(read)).error.code, "range_not_satisfiable", range);
        continue;
      }
      assert.equal(read.headers.get("accept-ranges"), "bytes", range);
      assert.deepEqual(new Uint8Array(await read.arrayBuffer()), bytes.subarray(part[0], part[1] + 1), range);
    }
  });

  test("the ETag is the content's SHA-256: If-None-Match is 304, If-Range with another is the whole file; public files are immutable", async () => {
    const bytes = bytesOf(64);
    const { url, sha256: hash } = await uploaded(bytes, "e.bin", "application/octet-stream");
    const read = await fetch(url);
    assert.equal(read.headers.get("etag"), `"${hash}"`);
    assert.equal(read.headers.get("cache-control"), "public, max-age=31536000, immutable");
    await read.arrayBuffer();
    const again = await fetch(url, { headers: { "If-None-Match": `"${hash}"` } });
    assert.equal(again.status, 304);
    assert.equal(await again.text(), "");
    const other = await fetch(url, { headers: { "If-None-Match": `"${"0".repeat(64)}"` } });
    assert.equal(other.status, 200);
    await other.arrayBuffer();
    const stale = await fetch(url, { headers: { Range: "bytes=0-1", "If-Range": `"${"0".repeat(64)}"` } });
    assert.equal(stale.status, 200);
    assert.equal((await stale.arrayBuffer()).byteLength, 64);
    const head = await fetch(url, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get("content-length"), "64");
  });

  test("an empty file is served as an empty body", async () => {
    const { url, size } = await uploaded(new Uint8Array(0), "empty.txt", "text/plain");
    assert.equal(size, 0);
    const read = await fetch(url);
    assert.equal(read.status, 200);
    assert.equal(await read.text(), "");
  });

  test("file URLs name the Host the client used; X-Forwarded-Host counts only behind --trust-proxy", async () => {
    const form = () => {
      const body = new FormData();
      body.append("file", new File(["x"], "h.txt"));
      return body;
    };
    const answer = await fetch(`${server.url}/api/files`, { method: "POST", headers: { "X-Api-Key": PUBLISHABLE, "X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https" }, body: form() });
    assert.match((await jsonOf(answer)).url, new RegExp(`^${server.url}/`));
    const proxied = await startTestServer({ trustProxy: true });
    try {
      const behind = await fetch(`${proxied.url}/api/files`, { method: "POST", headers: { "X-Api-Key": PUBLISHABLE, "X-Forwarded-Host": "files.example.com", "X-Forwarded-Proto": "https" }, body: form() });
      assert.match((await jsonOf(behind)).url, /^https:\/\/files\.example\.com\/api\/files\/[0-9a-f]{32}\/h\.txt$/);
    } finally {
      await proxied.close();
    }
  });
});

describe("the list and deletes, for a secret key", () => {
  test("GET /api/files lists in upload order, paged by limit and skip; a publishable key is refused 403", async () => {
    const own = await startTestServer();
    try {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const form = new FormData();
        form.append("file", new File([`file ${i}`], `f${i}.txt`, { type: "text/plain" }));
        const answer = await fetch(`${own.url}/api/files`, { method: "POST", headers: { "X-Api-Key": PUBLISHABLE }, body: form });
        ids.push((await jsonOf(answer)).id);
      }
      const first = await own.call("GET", "/api/files?limit=2");
      assert.equal(first.status, 200);
      assert.equal(first.headers.get("x-total-count"), "3");
      assert.deepEqual(first.body.map((file: any) => file.id), ids.slice(0, 2));
      assert.equal(first.headers.get("link"), '</api/files?limit=2&skip=2>; rel="next"');
      const second = await own.call("GET", "/api/files?limit=2&skip=2");
      assert.deepEqual(second.body.map((file: any) => file.id), ids.slice(2));
      assert.equal(second.headers.get("link"), null);
      assert.equal((await own.call("GET", "/api/files?sort=name")).status, 400);

      for (const [method, path] of [["GET", "/api/files"], ["GET", `/api/files/${ids[0]}`], ["DELETE", `/api/files/${ids[0]}`]] as const) {
        const refused = await own.call(method, path, { apiKey: PUBLISHABLE });
        assert.equal(refused.status, 403, `${method} ${path}`);
        assert.equal(refused.body.error.code, "forbidden");
      }

      const one = await own.call("GET", `/api/files/${ids[1]}`);
      assert.equal(one.body.name, "f1.txt");
      const deleted = await own.call("DELETE", `/api/files/${ids[1]}`);
      assert.deepEqual([deleted.status, deleted.body], [200, { id: ids[1], deleted: true }]);
      assert.equal((await own.call("DELETE", `/api/files/${ids[1]}`)).status, 404);
      const gone = await fetch(`${own.url}/api/files/${ids[1]}/f1.txt`);
      assert.equal(gone.status, 404);
      assert.equal((await jsonOf(gone)).error.code, "file_not_found");
      assert.deepEqual((await own.call("GET", "/api/files")).body.map((file: any) => file.id), [ids[0], ids[2]]);
    } finally {
      await own.close();
    }
  });
});

describe("two processes on one PostgreSQL store", { skip: TEST_STORE !== "postgres" && "PostgreSQL only (TABULA_TEST_STORE=postgres)" }, () => {
  test("a file uploaded through one is served, signed and deleted through the other", async () => {
    const url = pgTestUrl()!;
    const pgSchema = freshPgSchema();
    const options = { schema: { Task: TASK }, store: url, pgSchema, port: 0, secretKey: SECRET, publishableKey: PUBLISHABLE };
    const first = await createServer(options);
    const second = await createServer(options);
    try {
      // Over several chunks of $file_chunks (1 MiB each), with a range across two of them.
      const bytes = bytesOf(2.5 * 1024 * 1024, 5);
      const form = new FormData();
      form.append("file", new File([bytes], "big.bin"));
      const uploadedThere = await jsonOf(await fetch(`${first.url}/api/apps/a/integration-endpoints/Core/UploadPrivateFile`, { method: "POST", headers: { "X-Api-Key": PUBLISHABLE }, body: form }));
      const signed = await jsonOf(await fetch(`${second.url}/api/files/signed-url`, { method: "POST", headers: { "X-Api-Key": PUBLISHABLE, "Content-Type": "application/json" }, body: JSON.stringify({ file_uri: uploadedThere.file_uri }) }));
      assert.ok(signed.signed_url.startsWith(second.url));
      const whole = await fetch(signed.signed_url.replace(second.url, first.url));
      assert.equal(sha256(new Uint8Array(await whole.arrayBuffer())), sha256(bytes));
      const part = await fetch(signed.signed_url, { headers: { Range: "bytes=1048570-1048585" } });
      assert.equal(part.status, 206);
      assert.deepEqual(new Uint8Array(await part.arrayBuffer()), bytes.subarray(1048570, 1048586));
      assert.equal((await fetch(`${second.url}/api/files/${uploadedThere.file_uri}`, { method: "DELETE", headers: { "X-Api-Key": SECRET } })).status, 200);
      assert.equal((await fetch(signed.signed_url.replace(second.url, first.url))).status, 404);
    } finally {
      await second.close();
      await first.close();
      await dropPgSchema(url, pgSchema);
    }
  });
});
