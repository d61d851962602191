// PostgreSQL stopped as a crash would stop it, and started again, twice, under eight writers
// (issue 39): every request is answered within 2 s of being sent, those sent while the database is
// down 503 store_unavailable; a write succeeds within 1 s of the database accepting connections
// again; no acknowledged write is lost, and none answered "nothing of this request was stored" is
// there. A cluster of the test's own: the one test/run.mjs shares is never stopped.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startServer, type TabulaServer } from "../../src/api.ts";
import { startCluster, type Cluster } from "../support/pg-cluster.mjs";
import { describeWithPostgres } from "../support/postgres.ts";
import { SECRET, TASK } from "../support/server.ts";

/** The bounds. */
const MAX_ANSWER_MS = 2000;
const MAX_FIRST_SUCCESS_MS = 1000;
const WRITERS = 8;
const OUTAGES = 2;
const UP_MS = 800;
const DOWN_MS = 1500;
/** A writer's pause after a 503, as a client's retry would wait. */
const RETRY_PAUSE_MS = 50;

interface Sent {
  title: string;
  sentAt: number;
  answeredAt: number;
  status: number;
  code?: string;
  message?: string;
}

interface Outage {
  haltedAt: number;
  resumingAt: number;
  resumedAt: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describeWithPostgres("PostgreSQL stopped and started under writers", () => {
  let cluster: Cluster;
  let server: TabulaServer;

  before(async () => {
    // Durable: an immediate stop is a crash, and without synchronous commits a crash loses acknowledged ones.
    cluster = await startCluster({ durable: true });
    server = await startServer({ schema: { Task: TASK }, store: cluster.url, secretKey: SECRET });
  });

  after(async () => {
    await server?.close();
    cluster?.stop();
  });

  const post = (title: string) =>
    fetch(`${server.url}/api/entities/Task`, { method: "POST", headers: { "X-Api-Key": SECRET, "Content-Type": "application/json" }, body: JSON.stringify({ title }) });

  test("answers 503 within 2 s while it is down, a write within 1 s once it is back, and loses nothing acknowledged", async () => {
    const sent: Sent[] = [];
    let isWriting = true;
    const writer = async (writerIndex: number) => {
      for (let n = 0; isWriting; n++) {
        const title = `writer ${writerIndex} write ${n}`;
        const sentAt = Date.now();
        const response = await post(title);
        const body = (await response.json()) as { error?: { code: string; message: string } };
        sent.push({ title, sentAt, answeredAt: Date.now(), status: response.status, code: body.error?.code, message: body.error?.message });
        if (response.status !== 201) await sleep(RETRY_PAUSE_MS);
      }
    };
    const writers = Array.from({ length: WRITERS }, (_, i) => writer(i));
    const outages: Outage[] = [];
    try {
      for (let i = 0; i < OUTAGES; i++) {
        await sleep(UP_MS);
        await cluster.halt();
        const haltedAt = Date.now();
        await sleep(DOWN_MS);
        const resumingAt = Date.now();
        await cluster.resume();
        outages.push({ haltedAt, resumingAt, resumedAt: Date.now() });
      }
      await sleep(UP_MS);
    } finally {
      isWriting = false;
      await Promise.all(writers);
    }

    const slowest = sent.reduce((worst, write) => (write.answeredAt - write.sentAt > worst.answeredAt - worst.sentAt ? write : worst));
    const timeline = JSON.stringify(outages.map((outage) => Object.fromEntries(Object.entries(outage).map(([name, at]) => [name, at - slowest.sentAt]))));
    assert.ok(slowest.answeredAt - slowest.sentAt < MAX_ANSWER_MS, `answered ${slowest.answeredAt - slowest.sentAt} ms after it was sent: ${JSON.stringify(slowest)}; the outages, in ms from its sending: ${timeline}`);
    for (const write of sent) {
      assert.ok(write.status === 201 || (write.status === 503 && write.code === "store_unavailable"), JSON.stringify(write));
    }
    for (const { haltedAt, resumingAt, resumedAt } of outages) {
      const whileDown = sent.filter((write) => write.sentAt >= haltedAt && write.sentAt < resumingAt);
      assert.ok(whileDown.length >= WRITERS, `${whileDown.length} writes sent while the database was down`);
      for (const write of whileDown) assert.equal(write.status, 503, JSON.stringify(write));
      const firstSuccess = sent.filter((write) => write.status === 201 && write.sentAt >= resumingAt).sort((a, b) => a.answeredAt - b.answeredAt)[0];
      assert.ok(firstSuccess, "a write succeeded after the database came back");
      assert.ok(firstSuccess.answeredAt - resumedAt < MAX_FIRST_SUCCESS_MS, `the first write after the restart succeeded ${firstSuccess.answeredAt - resumedAt} ms after it`);
    }

    const stored = new Set<string>();
    for (let path = "/api/entities/Task?limit=1000&fields=title"; ; ) {
      const page = await fetch(server.url + path, { headers: { "X-Api-Key": SECRET } });
      assert.equal(page.status, 200);
      for (const record of (await page.json()) as Array<{ title: string }>) stored.add(record.title);
      const cursor = page.headers.get("x-next-cursor");
      if (cursor === null) break;
      path = `/api/entities/Task?limit=1000&cursor=${encodeURIComponent(cursor)}`;
    }
    for (const write of sent) {
      if (write.status === 201) assert.ok(stored.has(write.title), `acknowledged, then lost: ${write.title}`);
      if (write.status === 503 && /nothing of this request was stored/.test(write.message!)) assert.ok(!stored.has(write.title), `answered "not stored", yet stored: ${write.title}`);
    }
    console.log(
      `# ${sent.length} writes, ${sent.filter((write) => write.status === 503).length} answered 503; slowest answer ${slowest.answeredAt - slowest.sentAt} ms; ` +
        `first success after each restart: ${outages.map(({ resumingAt, resumedAt }) => `${sent.filter((w) => w.status === 201 && w.sentAt >= resumingAt).sort((a, b) => a.answeredAt - b.answeredAt)[0]!.answeredAt - resumedAt} ms`).join(", ")}`,
    );
  });
});
