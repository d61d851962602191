// Raw HTTP over a net socket, for requests no HTTP client would send (malformed, pipelined): the
// bytes go out as given, and the answers are read back until the server closes the connection.

import { connect } from "node:net";

export interface RawResponse {
  readonly status: number;
  /** Header names in lower case. */
  readonly headers: Record<string, string>;
  readonly text: string;
  readonly body: any;
}

export interface RawExchange {
  readonly responses: RawResponse[];
  /** Bytes after the last whole response (nothing, when every answer was well formed). */
  readonly rest: string;
}

/**
 * Sends `bytes` on one connection and reads until the server closes it; fails after `timeoutMs`
 * (a server that never closes, or never answers, is a failure too).
 */
export function exchangeRaw(url: string, bytes: string | Buffer, timeoutMs = 5_000): Promise<RawExchange> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close within ${timeoutMs} ms; received: ${JSON.stringify(Buffer.concat(chunks).toString("latin1").slice(0, 500))}`));
    }, timeoutMs);
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on("end", () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(parseResponses(Buffer.concat(chunks)));
    });
    socket.write(bytes);
  });
}

/** Splits a stream of HTTP/1.1 responses framed by Content-Length. */
export function parseResponses(data: Buffer): RawExchange {
  const responses: RawResponse[] = [];
  let at = 0;
  for (;;) {
    const headEnd = data.indexOf("\r\n\r\n", at);
    if (headEnd === -1) break;
    const [statusLine, ...lines] = data.subarray(at, headEnd).toString("latin1").split("\r\n");
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine!)?.[1]);
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers["content-length"] ?? 0);
    const bodyAt = headEnd + 4;
    if (!Number.isFinite(status) || bodyAt + length > data.length) break;
    const text = data.subarray(bodyAt, bodyAt + length).toString("utf8");
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined; // the test asserts on the text
    }
    responses.push({ status, headers, text, body });
    at = bodyAt + length;
  }
  return { responses, rest: data.subarray(at).toString("latin1") };
}
