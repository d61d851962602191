// W11's receivers (bench/run.mjs): a child process with N webhook receivers, each answering 204 at
// once and noting, per event, the delay from its timestamp (the record's updated_date, taken as the
// write is made) to its arrival: the delivery lag. They stand for services on other machines, yet
// share the bench host's two cores with tabula: so they speak just enough HTTP/1.1 over node:net
// rather than run node:http's server, bodies are scanned, not parsed, and signatures are not
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

function lagOf(body, now) {
  const at = body.indexOf(TIMESTAMP);
  if (at < 0) return null;
  return now - Date.parse(body.slice(at + TIMESTAMP.length, at + TIMESTAMP.length + 24));
}

/** One request, read: its lag noted, 204 answered. */
function receive(body) {
  const lag = lagOf(body, Date.now());
  arrivals++;
  if (lag === null) return;
  const group = body.includes(PACED) ? "paced" : "load";
  let lags = groups.get(group);
  if (!lags) groups.set(group, (lags = []));
  lags.push(lag);
}

/** Requests as tabula sends them (a Content-Length, no chunks), parsed no further than that. */
function serveConnection(socket) {
  socket.setNoDelay(true);
  let pending = "";
  socket.setEncoding("latin1");
  socket.on("data", (text) => {
    pending += text;
    let answers = "";
    for (;;) {
      const end = pending.indexOf("\r\n\r\n");
      if (end === -1) break;
      const length = /\r\ncontent-length: *(\d+)/i.exec(pending.slice(0, end));
      if (!length) {
        socket.destroy();
        return;
      }
      const bodyEnd = end + 4 + Number(length[1]);
      if (pending.length < bodyEnd) break;
      receive(Buffer.from(pending.slice(end + 4, bodyEnd), "latin1").toString("utf8"));
      pending = pending.slice(bodyEnd);
      answers += "HTTP/1.1 204 No Content\r\n\r\n";
    }
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
