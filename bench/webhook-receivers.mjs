// W11's receivers (bench/run.mjs): a child process with N webhook receivers, each answering 204 at
// once and noting, per event, the delay from its timestamp (the record's updated_date, taken as the
// write is made) to its arrival: the delivery lag. They stand for services on other machines, yet
// share the bench host's two cores with tabula: so they speak just enough HTTP/1.1 over node:net
// rather than run node:http's server, requests are scanned as latin1 text (no regular expression,
// no UTF-8 decoding: what is read of them is ASCII), bodies are not parsed, and signatures are not
// checked (the tests check them with the standardwebhooks package).
//
//   node bench/webhook-receivers.mjs <count>
// Prints "ready <port>,<port>,…"; on "cpu" (stdin) the CPU ms it has used; on "stop" one JSON
// line of what it measured, and
// exits. Lags are grouped: events of records titled "w11paced-…" (the paced writes) apart from the rest.

import { createServer } from "node:net";

const count = Number(process.argv[2]);
const TIMESTAMP = '"timestamp":"';
const groups = new Map();
let arrivals = 0;
const PACED = '"title":"w11paced-';

/** The lag of the event in `text` between `from` and `to` (latin1: the timestamp and title are ASCII). */
function receive(text, from, to, now) {
  arrivals++;
  const at = text.indexOf(TIMESTAMP, from);
  if (at < 0 || at >= to) return;
  const lag = now - Date.parse(text.slice(at + TIMESTAMP.length, at + TIMESTAMP.length + 24));
  const paced = text.indexOf(PACED, from);
  const group = paced >= 0 && paced < to ? "paced" : "load";
  let lags = groups.get(group);
  if (!lags) groups.set(group, (lags = []));
  lags.push(lag);
}

/** The value of the content-length header in `text` between `from` and `to`, or -1. */
function contentLength(text, from, to) {
  let at = text.indexOf("\r\n", from);
  while (at >= 0 && at < to) {
    // Header names are matched without regard to case: "content-length" is 14 characters.
    if (text.charCodeAt(at + 16) === 58 && text.slice(at + 2, at + 16).toLowerCase() === "content-length") return parseInt(text.slice(at + 17, text.indexOf("\r\n", at + 2)), 10);
    at = text.indexOf("\r\n", at + 2);
  }
  return -1;
}

/** Requests as tabula sends them (a Content-Length, no chunks), parsed no further than that. */
function serveConnection(socket) {
  socket.setNoDelay(true);
  let pending = "";
  socket.setEncoding("latin1");
  socket.on("data", (text) => {
    pending = pending === "" ? text : pending + text;
    const now = Date.now();
    let answers = "";
    let from = 0;
    for (;;) {
      const end = pending.indexOf("\r\n\r\n", from);
      if (end === -1) break;
      const length = contentLength(pending, from, end);
      if (length < 0) {
        socket.destroy();
        return;
      }
      const bodyEnd = end + 4 + length;
      if (pending.length < bodyEnd) break;
      receive(pending, end + 4, bodyEnd, now);
      from = bodyEnd;
      answers += "HTTP/1.1 204 No Content\r\n\r\n";
    }
    pending = from === pending.length ? "" : pending.slice(from);
    if (answers) socket.write(answers);
  });
  socket.on("error", () => {});
}

const ports = await Promise.all(
  Array.from({ length: count }, () => {
    const server = createServer(serveConnection);
    return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server.address().port)));
  }),
);
process.stdout.write(`ready ${ports.join(",")}\n`);

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (text) => {
  input += text;
  for (let end = input.indexOf("\n"); end >= 0; end = input.indexOf("\n")) {
    const line = input.slice(0, end);
    input = input.slice(end + 1);
    if (line === "count") process.stdout.write(`${arrivals}\n`);
    else if (line === "cpu") {
      const { user, system } = process.cpuUsage();
      process.stdout.write(`${(user + system) / 1000}\n`);
    }
    else if (line === "stop") {
      const report = {};
      for (const [name, lags] of groups) {
        lags.sort((a, b) => a - b);
        const at = (q) => lags[Math.min(lags.length - 1, Math.floor(q * lags.length))];
        report[name] = { deliveries: lags.length, p50: at(0.5), p99: at(0.99), max: lags.at(-1) };
      }
      process.stdout.write(`${JSON.stringify({ arrivals, groups: report })}\n`);
      process.exit(0);
    }
  }
});
