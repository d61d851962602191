// A request asking for a protocol tabula does not switch to (Upgrade: h2c, which curl --http2 sends
// over http://; a WebSocket anywhere but the realtime socket's path) is served as HTTP/1.1 on its
// connection, as RFC 9110 §7.8 lets a server ignore Upgrade. node:http 20 hands every request with
// Upgrade to its `upgrade` event once anything listens there, and lets go of the connection (its
// shouldUpgradeCallback comes in later versions): so the request's head is written again without
// the upgrade, put back before the bytes that followed it, and the connection given to node:http
// again, as a new one.

import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";

/** Header fields that only ask for the upgrade, and the Connection options naming them. */
const UPGRADE_FIELDS = new Set(["upgrade", "http2-settings"]);

/** node:http keeps the response it is writing on the socket (as client-error.ts reads it). */
type HttpSocket = Socket & { _httpMessage?: ServerResponse | null };

/** server.on("upgrade"), for every upgrade but the realtime socket's. */
export function serveWithoutUpgrade(http: Server, req: IncomingMessage, socket: Socket, head: Buffer): void {
  // node:http no longer listens for the socket's errors; an unheard one would end the process.
  const onError = () => socket.destroy();
  socket.on("error", onError);
  waitForOwedAnswers(socket, () => {
    socket.off("error", onError);
    if (socket.destroyed) return;
    // The keep-alive timeout an earlier answer set would cut this request, which the next parser
    // would never clear.
    socket.setTimeout(0);
    socket.unshift(Buffer.concat([Buffer.from(headWithoutUpgrade(req), "latin1"), head]));
    // As node's documentation says a connection may be given to the server. net counts the sockets
    // it accepts, so this one is not counted twice against --max-connections.
    http.emit("connection", socket);
  });
}

/** Pipelined requests before this one are answered first: their answers hold the socket. */
function waitForOwedAnswers(socket: HttpSocket, then: () => void): void {
  const owed = socket._httpMessage;
  if (owed && !owed.closed) {
    owed.once("close", () => waitForOwedAnswers(socket, then));
    return;
  }
  then();
}

/** The request line and header fields as received (latin1, as node:http reads them), less the upgrade. */
function headWithoutUpgrade(req: IncomingMessage): string {
  let head = `${req.method} ${req.url} HTTP/${req.httpVersion}\r\n`;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const lowerName = name.toLowerCase();
    if (UPGRADE_FIELDS.has(lowerName)) continue;
    let value = raw[i + 1]!;
    if (lowerName === "connection") {
      value = value
        .split(",")
        .map((option) => option.trim())
        .filter((option) => option !== "" && !UPGRADE_FIELDS.has(option.toLowerCase()))
        .join(", ");
      if (value === "") continue;
    }
    head += `${name}: ${value}\r\n`;
  }
  return `${head}\r\n`;
}
