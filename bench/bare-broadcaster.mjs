// W9's floor (bench/run.mjs): a bare node:http server that holds every GET .../changes as an open
// SSE response and, for each POST of a record, answers 201 with the record and writes the event
// frame tabula's change feed would send for it (the same bytes: id, event and data lines, the change
// JSON with the record as a secret key sees it) to every open response. Nothing is stored, parsed
// beyond JSON.parse, or checked: what is left is the cost of copying each frame into every socket.
// "per-turn" (the default) gathers the frames of one turn of the event loop and writes them to each
// socket as one chunk, as any broadcaster under load would (one write call per socket per turn);
// "per-create" writes each create's frame to each socket as it comes (a write call per socket per
// create). Prints its port.
//
//   node bench/bare-broadcaster.mjs [per-turn|per-create]

import { randomBytes } from "node:crypto";
import { createServer } from "node:http";

const KEY_ID = "key_03e48908d73a";
const CREATED_HEADERS = { "Content-Type": "application/json; charset=utf-8" };
const STREAM_HEADERS = { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-store", "X-Accel-Buffering": "no" };

const isPerCreate = process.argv[2] === "per-create";
const streams = new Set();
/** Frames of this turn not yet written (per-turn). */
let frames = [];
let seq = 0;
const idPrefix = randomBytes(6).toString("hex");

function create(req, res, text) {
  seq++;
  const now = new Date().toISOString();
  const id = idPrefix + seq.toString(16).padStart(12, "0");
  const record = { id, ...JSON.parse(text), created_date: now, updated_date: now, created_by_id: KEY_ID };
  const json = JSON.stringify(record);
  res.writeHead(201, { ...CREATED_HEADERS, ETag: `"${seq}"`, Location: `/api/entities/Task/${id}`, "Content-Length": Buffer.byteLength(json) });
  res.end(json);
  const frame = Buffer.from(
    `id: ${seq}.0\nevent: create\ndata: {"type":"create","entity":"Task","id":"${id}","data":${json},"timestamp":"${now}","seq":${seq},"event_id":"${seq}.0"}\n\n`,
  );
  if (isPerCreate) return broadcast(frame);
  if (frames.length === 0) setImmediate(flush);
  frames.push(frame);
}

function flush() {
  const chunk = frames.length === 1 ? frames[0] : Buffer.concat(frames);
  frames = [];
  broadcast(chunk);
}

function broadcast(chunk) {
  for (const stream of streams) stream.write(chunk);
}

const server = createServer((req, res) => {
  if (req.method === "GET") {
    res.writeHead(200, STREAM_HEADERS);
    res.write(": tabula change feed\n\n");
    streams.add(res);
    res.on("close", () => streams.delete(res));
    return;
  }
  let text = "";
  req.setEncoding("utf8");
  req.on("data", (chunk) => (text += chunk));
  req.on("end", () => create(req, res, text));
});
server.listen(0, "127.0.0.1", () => process.stdout.write(`listening on http://127.0.0.1:${server.address().port}\n`));
process.on("SIGTERM", () => {
  for (const stream of streams) stream.destroy();
  server.close(() => process.exit(0));
});
