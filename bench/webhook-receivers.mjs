// W11's receivers (bench/run.mjs): a child process with N webhook receivers on node:http, each
// answering 204 at once and noting, per event, the delay from its timestamp (the record's
// updated_date, taken as the write is made) to its arrival: the delivery lag. Bodies are scanned,
// not parsed, and signatures not checked (the tests check them), so that the receivers take as little
// CPU from the server as they can.
//
//   node bench/webhook-receivers.mjs <count>
// Prints "ready <port>,<port>,…"; on "stop" (stdin) prints one JSON line of what it measured, and
// exits. Lags are grouped: events of records titled "w11paced-…" (the paced writes) apart from the rest.

import { createServer } from "node:http";

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

const ports = await Promise.all(
  Array.from({ length: count }, () => {
    const server = createServer((req, res) => {
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (chunk) => (body += chunk));
      req.on("end", () => {
        const lag = lagOf(body, Date.now());
        arrivals++;
        if (lag !== null) {
          const group = body.includes(PACED) ? "paced" : "load";
          let lags = groups.get(group);
          if (!lags) groups.set(group, (lags = []));
          lags.push(lag);
        }
        res.writeHead(204).end();
      });
    });
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
