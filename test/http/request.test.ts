// Request bodies at the edge (issue 16): a client that hangs up, bytes that are not UTF-8, and
// bodies over --max-body, which are answered 413 while the client is still sending.

import assert from "node:assert/strict";
import { once } from "node:events";
import { connect } from "node:net";
import { test } from "node:test";
import { SECRET, startTestServer } from "../support/server.ts";

const T = "/api/entities/Task";

/** Everything written to stderr while `run` runs (console.error included). */
async function captureStderr(run: () => Promise<void>): Promise<string> {
  const printed: string[] = [];
  const write = process.stderr.write;
  process.stderr.write = ((chunk: string | Uint8Array) => {
    printed.push(String(chunk));
    return true;
  }) as typeof process.stderr.write;
  try {
    await run();
  } finally {
    process.stderr.write = write;
  }
  return printed.join("");
}

test("a client that hangs up in the middle of its body is not a server error: nothing is printed", async () => {
  const server = await startTestServer();
  const printed = await captureStderr(async () => {
    const { hostname, port } = new URL(server.url);
    const socket = connect(Number(port), hostname);
    // Expect: 100-continue makes the server say when it has taken up the request.
    socket.write(`POST ${T} HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${SECRET}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n`);
    const [interim] = (await once(socket, "data")) as [Buffer];
    assert.match(interim.toString("latin1"), /^HTTP\/1\.1 100 Continue/);
    socket.write(`{"title":"half`);
    socket.destroy();
    // close() resolves once the server has destroyed the connection; the socket's 'close' (which
    // aborts the request) follows in the same loop iteration's close phase, and the handler's
    // reaction is a few ticks and promise hops after it: all done before a second setImmediate.
    await server.close();
    for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
  });
  assert.equal(printed, "");
});
