// @base44/sdk's entities.<E>.subscribe() against a real tabula, on every store (docs/base44-sdk.md,
// "Realtime"): the SDK's own socket.io-client connects to /ws-user-apps/socket.io/, joins the
// entity's room, and its callback gets another client's writes in order; unsubscribe stops them.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createClient } from "@base44/sdk";
import { PUBLISHABLE, SECRET, startTestServer, TASK, type TestServer } from "../support/server.ts";

// The SDK logs every error it throws to the console unless it runs in production.
process.env.NODE_ENV = "production";

const PAYROLL = { name: "Payroll", type: "object", properties: { amount: { type: "number" } }, access: { publishable: ["create"] } };
const WAIT_MS = 10_000;

let server: TestServer;
let writer: ReturnType<typeof createClient>;
const clients: Array<ReturnType<typeof createClient>> = [];

before(async () => {
  server = await startTestServer({ schema: { Task: TASK, Payroll: PAYROLL }, appId: "app1" });
  writer = createClient({ serverUrl: server.url, appId: "app1", token: SECRET });
});
after(async () => {
  for (const client of clients) client.cleanup();
  writer.cleanup();
  await server.close();
});

/** A client of its own, as another browser tab or user would have. */
function clientWith(token: string): ReturnType<typeof createClient> {
  const client = createClient({ serverUrl: server.url, appId: "app1", token });
  clients.push(client);
  return client;
}

/** The rooms joined on the server (GET /metrics): the SDK says nothing when its join has landed. */
async function roomsBecome(expected: number): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const { text } = await server.call("GET", "/metrics");
    const rooms = Number(/^tabula_realtime_rooms (\d+)$/m.exec(text)?.[1]);
    if (rooms === expected) return;
    if (Date.now() > deadline) assert.fail(`tabula_realtime_rooms is ${rooms}, not ${expected}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function eventsBecome(events: unknown[], count: number): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (events.length < count) {
    if (Date.now() > deadline) assert.fail(`${events.length} events, not ${count}: ${JSON.stringify(events)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

test("subscribe() receives another client's create, update and delete in order; unsubscribe stops them", async () => {
  const events: any[] = [];
  const unsubscribe = clientWith(SECRET).entities.Task.subscribe((event: unknown) => events.push(event));
  await roomsBecome(1);
  const Task = writer.entities.Task;
  const created = await Task.create({ title: "Ship it", priority: 1 });
  const bulk = await Task.bulkCreate([{ title: "b1" }, { title: "b2" }]);
  await Task.update(created.id, { status: "done" });
  await Task.delete(created.id);
  await eventsBecome(events, 5);
  assert.deepEqual(
    events.map((event) => [event.type, event.id]),
    [["create", created.id], ["create", bulk[0].id], ["create", bulk[1].id], ["update", created.id], ["delete", created.id]],
  );
  assert.deepEqual(events.map((event) => event.data.status), ["todo", "todo", "todo", "done", "done"]);
  assert.equal(events[0].data.title, "Ship it");
  assert.equal(events[0].data.created_by_id, created.created_by_id, "a secret key's events carry created_by_id");
  assert.equal(events[3].timestamp, events[3].data.updated_date);
  unsubscribe();
  await roomsBecome(0);
  await Task.create({ title: "after unsubscribe" });
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(events.length, 5, "nothing after unsubscribe");
});

test("a publishable key's events carry no created_by_id", async () => {
  const events: any[] = [];
  const unsubscribe = clientWith(PUBLISHABLE).entities.Task.subscribe((event: unknown) => events.push(event));
  await roomsBecome(1);
  const created = await writer.entities.Task.create({ title: "seen by the public" });
  await writer.entities.Task.update(created.id, { priority: 3 });
  await eventsBecome(events, 2);
  assert.deepEqual(events.map((event) => [event.type, event.id]), [["create", created.id], ["update", created.id]]);
  for (const event of events) {
    assert.equal("created_by_id" in event.data, false, JSON.stringify(event.data));
    assert.equal(event.data.title, "seen by the public");
  }
  unsubscribe();
  await roomsBecome(0);
});

test("an entity whose access denies read to a publishable key refuses the room: an error the SDK logs, and no events", async () => {
  const logged: unknown[][] = [];
  const consoleError = console.error;
  console.error = (...args: unknown[]) => void logged.push(args);
  try {
    const events: unknown[] = [];
    const unsubscribe = clientWith(PUBLISHABLE).entities.Payroll.subscribe((event: unknown) => events.push(event));
    const deadline = Date.now() + WAIT_MS;
    while (!logged.some(([first, error]) => first === "error" && (error as { code?: string })?.code === "forbidden")) {
      if (Date.now() > deadline) assert.fail(`no forbidden error logged: ${JSON.stringify(logged)}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await writer.entities.Payroll.create({ amount: 100 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(events, []);
    await roomsBecome(0);
    unsubscribe();
  } finally {
    console.error = consoleError;
  }
});
