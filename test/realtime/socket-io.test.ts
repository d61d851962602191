// Engine.IO 4 and Socket.IO 5 as tabula speaks them (docs/base44-sdk.md, "Realtime"), packet by
// packet from a hand-written client: the open packet and the heartbeat, the namespace connect and
// its refusals, join/leave and their refusals, update_model's shape per key kind, what the protocol
// allows and the SDK never sends, --max-streams, Origin, revoked keys and a client too slow to read.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import WebSocket from "ws";
import { PUBLISHABLE, SECRET, startTestServer, TASK, type TestServer } from "../support/server.ts";
import { RawSocket, socketUrl } from "../support/socket-io.ts";

const ROOM = "entities:app1:Task";
const SECRET_ENTITY = { name: "Payroll", type: "object", properties: { amount: { type: "number" } }, access: { publishable: ["create"] } };

/** The status and JSON of a refused upgrade. */
async function refusedUpgrade(url: string, options: WebSocket.ClientOptions = {}): Promise<{ status: number; body: any }> {
  const ws = new WebSocket(url, options);
  ws.on("error", () => {});
  return new Promise((resolve, reject) => {
    ws.once("open", () => reject(new Error("the upgrade was accepted")));
    ws.once("unexpected-response", (_, res) => {
      let text = "";
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
  });
}

describe("Socket.IO over the socket", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ schema: { Task: TASK, Payroll: SECRET_ENTITY }, appId: "app1", heartbeatMs: 200 });
  });
  after(() => server.close());

  test("the open packet names the session, no upgrade, the heartbeat and the largest message", async () => {
    const { socket, open } = await RawSocket.open(server.url, { token: SECRET });
    assert.match(open.sid, /^[\w-]{20}$/);
    assert.deepEqual([open.upgrades, open.pingInterval, open.pingTimeout, open.maxPayload], [[], 200, 200, 1 << 20]);
    await socket.close();
  });

  test("the server pings; a client that answers stays, one that does not is closed", async () => {
    const { socket: answering } = await RawSocket.open(server.url, { token: SECRET });
    const { socket: silent } = await RawSocket.open(server.url, { token: SECRET }, {}, false);
    for (let i = 0; i < 3; i++) assert.equal(await answering.next(true), "2");
    assert.equal(answering.ws.readyState, WebSocket.OPEN);
    assert.equal(await silent.next(true), "2");
    assert.equal((await silent.closed).code, 1008);
    await answering.close();
  });

  test("the namespace connect answers its sid; an unknown, missing or other app's key gets CONNECT_ERROR and the socket closes", async () => {
    const ok = await RawSocket.connect(server.url, SECRET);
    await ok.close();
    const refusals: Array<[Record<string, string>, string]> = [
      [{ token: "sk_nobody" }, "unauthorized"],
      [{}, "unauthorized"],
      [{ token: SECRET, app_id: "another-app" }, "app_not_found"],
    ];
    for (const [query, code] of refusals) {
      const { socket } = await RawSocket.open(server.url, query);
      socket.send("40");
      const answer = await socket.next();
      assert.ok(answer.startsWith("44{"), answer);
      const { message, data } = JSON.parse(answer.slice(2));
      assert.equal(data.code, code);
      assert.ok(message.length > 20, message);
      assert.equal((await socket.closed).code, 1008);
    }
    // The key may come as X-Api-Key too.
    const { socket } = await RawSocket.open(server.url, {}, { headers: { "X-Api-Key": PUBLISHABLE } });
    socket.send("40");
    assert.match(await socket.next(), /^40\{"sid"/);
    await socket.close();
  });

  test("join and leave: a room is the entity's change feed from now; a leave stops it", async () => {
    const socket = await RawSocket.connect(server.url, SECRET);
    assert.deepEqual(await socket.join(ROOM), { ok: true });
    assert.deepEqual(await socket.join(ROOM, 2), { ok: true }, "a second join of one room is one room");
    const created = await server.call("POST", "/api/entities/Task", { body: { title: "one" } });
    const { room, event } = await socket.nextUpdate();
    assert.equal(room, ROOM);
    assert.deepEqual(Object.keys(event), ["type", "id", "data", "timestamp"]);
    assert.deepEqual([event.type, event.id, event.data.title, event.timestamp], ["create", created.body.id, "one", created.body.updated_date]);
    assert.equal(event.data.created_by_id, created.body.created_by_id, "a secret key sees created_by_id");
    socket.send(`423${JSON.stringify(["leave", ROOM])}`);
    assert.equal(await socket.next(), '433[{"ok":true}]');
    await server.call("POST", "/api/entities/Task", { body: { title: "two" } });
    socket.send("2probe");
    assert.equal(await socket.next(), "3probe", "nothing came before the answer to a later ping");
    await socket.close();
  });

  test("types: update, soft delete, restore; a publishable key never sees created_by_id", async () => {
    const socket = await RawSocket.connect(server.url, PUBLISHABLE);
    assert.deepEqual(await socket.join(ROOM), { ok: true });
    const { body: task } = await server.call("POST", "/api/entities/Task", { body: { title: "a" } });
    await server.call("PATCH", `/api/entities/Task/${task.id}`, { body: { status: "done" } });
    await server.call("DELETE", `/api/entities/Task/${task.id}`);
    assert.equal((await server.call("PUT", `/api/entities/Task/${task.id}/restore`)).status, 200);
    const events = [];
    for (let i = 0; i < 4; i++) events.push((await socket.nextUpdate()).event);
    assert.deepEqual(events.map((event) => event.type), ["create", "update", "delete", "update"]);
    assert.deepEqual(events.map((event) => event.data.status), ["todo", "done", "done", "done"]);
    for (const event of events) {
      assert.equal(event.id, task.id);
      assert.equal("created_by_id" in event.data, false, "no created_by_id for a publishable key");
    }
    await socket.close();
  });

  test("join refusals: an entity whose access denies read, an undeclared entity, another app, a bad room", async () => {
    const publishable = await RawSocket.connect(server.url, PUBLISHABLE);
    const cases: Array<[string, string]> = [
      ["entities:app1:Payroll", "forbidden"],
      ["entities:app1:Nope", "entity_not_found"],
      ["entities:other:Task", "app_not_found"],
      ["Task", "invalid_room"],
    ];
    for (const [room, code] of cases) {
      const answer = await publishable.join(room);
      assert.equal(answer.ok, false, room);
      assert.equal(answer.error!.code, code, room);
    }
    // Without an ack id (as @base44/sdk emits join), the refusal is an `error` event.
    publishable.send(`42${JSON.stringify(["join", "entities:app1:Payroll"])}`);
    const [name, error] = JSON.parse((await publishable.next()).slice(2));
    assert.deepEqual([name, error.code, error.room], ["error", "forbidden", "entities:app1:Payroll"]);
    await server.call("POST", "/api/entities/Payroll", { body: { amount: 1 } });
    publishable.send("2probe");
    assert.equal(await publishable.next(), "3probe", "no Payroll event reached the publishable key");
    // A secret key may follow it.
    const secret = await RawSocket.connect(server.url, SECRET);
    assert.deepEqual(await secret.join("entities:app1:Payroll"), { ok: true });
    await publishable.close();
    await secret.close();
  });

  test("what the protocol allows and the SDK never sends is answered with its error packet", async () => {
    const { socket } = await RawSocket.open(server.url, { token: SECRET });
    socket.send(`42${JSON.stringify(["join", ROOM])}`);
    assert.match(await socket.next(), /^44\{"message":"Connect to the namespace/, "an event before the connect");
    socket.send("40/admin,");
    assert.equal(await socket.next(), '44/admin,{"message":"Invalid namespace"}');
    socket.send("40");
    assert.match(await socket.next(), /^40\{"sid"/);
    socket.send(`427${JSON.stringify(["chat", "hello"])}`);
    assert.deepEqual(JSON.parse((await socket.next()).slice(3)), [{ ok: false, error: { code: "unknown_event", message: 'This server takes the events join and leave, not "chat".' } }]);
    socket.send(`451-${JSON.stringify(["join", { _placeholder: true, num: 0 }])}`);
    assert.match(await socket.next(), /^42\["error",\{"code":"unsupported"/);
    socket.send("6");
    socket.send("3");
    socket.send("2probe");
    assert.equal(await socket.next(), "3probe", "noop and an unasked pong are taken silently");
    // Data wider than any event's is refused unread, whatever it is: parsing a megabyte of keys held the loop.
    const { socket: wide } = await RawSocket.open(server.url, { token: SECRET });
    wide.send("40");
    assert.match(await wide.next(), /^40\{"sid"/);
    wide.send(`42${JSON.stringify(["join", Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i]))])}`);
    assert.equal((await wide.closed).code, 1002, "an object of 101 keys in an event");
    socket.send("42not json");
    assert.equal((await socket.closed).code, 1002, "a malformed packet is a protocol error");
    const { socket: other } = await RawSocket.open(server.url, { token: SECRET });
    other.send("9");
    assert.equal((await other.closed).code, 1002, "not an Engine.IO packet");
  });

  test("a revoked key's connection gets an error, DISCONNECT, and is closed", async () => {
    const made = (await server.call("POST", "/api/keys", { body: { kind: "publishable", name: "revoked soon" } })).body;
    const socket = await RawSocket.connect(server.url, made.key);
    assert.deepEqual(await socket.join(ROOM), { ok: true });
    const idle = await RawSocket.connect(server.url, made.key);
    assert.equal((await server.call("DELETE", `/api/keys/${made.id}`)).status, 200);
    for (const revoked of [socket, idle]) {
      assert.match(await revoked.next(), /^42\["error",\{"code":"unauthorized"/);
      assert.equal(await revoked.next(), "41");
      assert.equal((await revoked.closed).code, 1008);
    }
    const { socket: again } = await RawSocket.open(server.url, { token: made.key });
    again.send("40");
    assert.match(await again.next(), /^44\{.*"code":"unauthorized"/);
  });
});

describe("limits of the socket", () => {
  test("--max-streams counts sockets with the feed's streams: over it the upgrade is 503 too_many_streams", async () => {
    const server = await startTestServer({ maxStreams: 2 });
    try {
      const sse = await fetch(`${server.url}/api/changes`, { headers: { "X-Api-Key": SECRET, Accept: "text/event-stream" } });
      assert.equal(sse.status, 200);
      const { socket } = await RawSocket.open(server.url, { token: SECRET });
      const refused = await refusedUpgrade(socketUrl(server.url, { token: SECRET }));
      assert.equal(refused.status, 503);
      assert.equal(refused.body.error.code, "too_many_streams");
      const stream = await fetch(`${server.url}/api/changes`, { headers: { "X-Api-Key": SECRET, Accept: "text/event-stream" } });
      assert.equal(stream.status, 503, "a socket holds one of the streams");
      await socket.close();
      await new Promise((resolve) => setTimeout(resolve, 50));
      const { socket: next } = await RawSocket.open(server.url, { token: SECRET });
      await next.close();
      await sse.body!.cancel();
    } finally {
      await server.close();
    }
  });

  test("origins follow --cors: another browser origin is 403; the allowed one, the server's own and none are served", async () => {
    const server = await startTestServer({ cors: "http://app.example" });
    try {
      const refused = await refusedUpgrade(socketUrl(server.url, { token: PUBLISHABLE }), { origin: "http://evil.example" });
      assert.equal(refused.status, 403);
      assert.equal(refused.body.error.code, "forbidden");
      for (const origin of ["http://app.example", server.url, undefined]) {
        const { socket } = await RawSocket.open(server.url, { token: PUBLISHABLE }, origin === undefined ? {} : { origin });
        await socket.close();
      }
    } finally {
      await server.close();
    }
  });

  test("a client too slow to read is closed, and its room let go, like a feed stream that overflows", async () => {
    const server = await startTestServer({ streamBufferBytes: 64 * 1024, appId: "app1" });
    try {
      const socket = await RawSocket.connect(server.url, SECRET);
      assert.deepEqual(await socket.join(ROOM), { ok: true });
      (socket.ws as unknown as { _socket: { pause(): void } })._socket.pause();
      const metrics = async () => (await server.call("GET", "/metrics")).text;
      const title = "x".repeat(10_000);
      for (let round = 0; round < 200 && /tabula_realtime_sockets 1/.test(await metrics()); round++) {
        await server.call("POST", "/api/entities/Task/bulk", { body: Array.from({ length: 100 }, () => ({ title })) });
      }
      assert.match(await metrics(), /tabula_realtime_sockets 0\n/);
      assert.match(await metrics(), /tabula_realtime_rooms 0\n/);
    } finally {
      await server.close();
    }
  });
});
