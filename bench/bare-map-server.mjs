// The floor of W1-cold in bench/startup.mjs: a bare node:http server that reads a JSON-lines file
// of records (argv[2]) into a Map by id at its start, then answers GET …/<id> with that record's
// line, with the headers tabula sends. Prints its port once the Map is full.

import { readFileSync } from "node:fs";
import { createServer } from "node:http";

const file = process.argv[2];
if (!file) throw new Error("usage: node bench/bare-map-server.mjs RECORDS.jsonl");
const bodies = new Map();
for (const line of readFileSync(file, "utf8").split("\n")) {
  if (line) bodies.set(JSON.parse(line).id, line);
}
const notFound = '{"error":"not_found"}';

const server = createServer((req, res) => {
  req.resume();
  const body = bodies.get(req.url.slice(req.url.lastIndexOf("/") + 1));
  res.writeHead(body === undefined ? 404 : 200, { "Content-Type": "application/json; charset=utf-8", ETag: '"2n9c"', "Content-Length": Buffer.byteLength(body ?? notFound) });
  res.end(body ?? notFound);
});
server.listen(0, "127.0.0.1", () => process.stdout.write(`listening on http://127.0.0.1:${server.address().port}\n`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
