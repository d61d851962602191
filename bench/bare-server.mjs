// The baseline of bench/run.mjs: a bare node:http server answering one precomputed JSON body of
// BYTES bytes (argv[2]) to every request, with the headers tabula sends. Prints its port.

import { createServer } from "node:http";

const bytes = Number(process.argv[2]);
if (!(bytes >= 16)) throw new Error("usage: node bench/bare-server.mjs BYTES (at least 16)");
// {"pad":"xxx…"} padded to exactly BYTES bytes.
const body = `{"pad":"${"x".repeat(bytes - 10)}"}`;
// The same header fields as tabula's answer to a read (an ETag of a typical length included).
const headers = { "Content-Type": "application/json; charset=utf-8", ETag: '"2n9c"', "Content-Length": Buffer.byteLength(body) };

const server = createServer((req, res) => {
  req.resume();
  res.writeHead(200, headers);
  res.end(body);
});
server.listen(0, "127.0.0.1", () => process.stdout.write(`listening on http://127.0.0.1:${server.address().port}\n`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
