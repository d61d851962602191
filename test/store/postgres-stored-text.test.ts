// Text the PostgreSQL store keeps escaped (stored-text.ts, docs/postgresql.md): the encoding's
// properties as a table of cases, and a database written before U+0001 escaped U+0000 (its
// U+0001 stored as itself) read as it was written once a server has started on it, once; and half
// of a surrogate pair alone, which jsonb cannot hold either, refused 400 before the store.

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import postgres from "postgres";
import { startServer } from "../../src/api.ts";
import { decodeJsonText, decodeText, encodeJsonText, encodeText } from "../../src/store/postgres/stored-text.ts";
import { STORED_TEXT_META_KEY } from "../../src/store/postgres/text-upgrade.ts";
import { describeWithPostgres, dropPgSchema, freshPgSchema } from "../support/postgres.ts";
import { SECRET, TASK } from "../support/server.ts";

/** Whether a string of `value`, or a member name, holds U+0000. */
function holdsNul(value: unknown): boolean {
  if (typeof value === "string") return value.includes("\u0000");
  if (Array.isArray(value)) return value.some(holdsNul);
  if (typeof value === "object" && value !== null) return Object.entries(value).some(([name, member]) => name.includes("\u0000") || holdsNul(member));
  return false;
}

describe("stored text's encoding", () => {
  const cases: Array<[string, string]> = [
    ["", ""],
    ["plain é 😀", "plain é 😀"],
    ["\u0000", "\u0001\u0001"],
    ["\u0001", "\u0001\u0002"],
    ["\u0002", "\u0002"],
    ["a\u0000\u0001b\u0000", "a\u0001\u0001\u0001\u0002b\u0001\u0001"],
    ["\u0001\u0001", "\u0001\u0002\u0001\u0002"],
    ["\\u0000", "\\u0000"],
  ];
  test("encodes U+0000 and U+0001 with U+0001, and decodes back", () => {
    for (const [text, stored] of cases) {
      assert.equal(encodeText(text), stored, JSON.stringify(text));
      assert.equal(decodeText(stored), text, JSON.stringify(stored));
    }
  });

  test("keeps code point order and prefixes", () => {
    const texts = ["", "\u0000", "\u0000\u0000", "\u0000\u0001", "\u0001", "\u0001\u0000", "\u0001\u0002", "\u0002", "a", "a\u0000", "a\u0000b", "a\u0001", "ab", "\uffff"];
    for (const a of texts) {
      for (const b of texts) {
        const [x, y] = [encodeText(a), encodeText(b)];
        assert.equal(Math.sign(x < y ? -1 : x > y ? 1 : 0), Math.sign(a < b ? -1 : a > b ? 1 : 0), `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
        assert.equal(x.startsWith(y), a.startsWith(b), `${JSON.stringify(a)} starts with ${JSON.stringify(b)}`);
      }
    }
  });

  test("JSON text: strings and member names are encoded as values are, an escaped backslash is left alone", () => {
    const values: unknown[] = [{ "k\u0000": ["\u0001", "x\u0000y", { "\u0001": null }] }, "\\u0000\u0000", { "\\": "\\\u0001" }, [1, true, "plain"]];
    for (const value of values) {
      const json = JSON.stringify(value);
      const stored = encodeJsonText(json);
      assert.ok(!holdsNul(JSON.parse(stored)), stored);
      assert.deepEqual(JSON.parse(decodeJsonText(stored)), value);
    }
    assert.equal(encodeJsonText(JSON.stringify("\\u0000")), JSON.stringify("\\u0000"));
    assert.equal(encodeJsonText(JSON.stringify({ "\u0000": "\u0001" })), JSON.stringify({ "\u0001\u0001": "\u0001\u0002" }));
  });
});

describeWithPostgres("a PostgreSQL schema written before U+0001 escaped U+0000", (url) => {
  const pgSchema = freshPgSchema();
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  after(async () => {
    await sql.end();
    await dropPgSchema(url, pgSchema);
  });
  const start = () => startServer({ schema: { Task: TASK }, store: url, pgSchema, secretKey: SECRET, warn: () => {} });
  const call = async (server: { url: string }, path: string): Promise<any> => {
    const answer = await fetch(`${server.url}${path}`, { headers: { "X-Api-Key": SECRET } });
    assert.equal(answer.status, 200, path);
    return answer.json();
  };

  test("is read as it was written, once a server has started on it, and only once", async () => {
    const first = await start();
    const made = await fetch(`${first.url}/api/entities/Task`, { method: "POST", headers: { "X-Api-Key": SECRET, "Content-Type": "application/json" }, body: JSON.stringify({ title: "placeholder" }) });
    const { id } = (await made.json()) as { id: string };
    await first.close();
    // What an older tabula stored: U+0001 as itself, in a value, a member name, a kept event, metadata.
    const legacy = { title: "old \u0001 text", meta: { "\u0001": "\u0001\u0001" } };
    await sql.unsafe(`UPDATE "${pgSchema}"."Task" SET data = data || $2::text::jsonb WHERE id = $1`, [id, JSON.stringify(legacy)]);
    await sql.unsafe(`UPDATE "${pgSchema}"."$changes" SET data = data || $2::text::jsonb WHERE id = $1`, [id, JSON.stringify(legacy)]);
    await sql.unsafe(`INSERT INTO "${pgSchema}"."$meta" (key, value) VALUES ('legacy', $1::text::jsonb)`, [JSON.stringify({ note: "\u0001" })]);
    await sql.unsafe(`DELETE FROM "${pgSchema}"."$meta" WHERE key = $1`, [STORED_TEXT_META_KEY]);

    for (let run = 0; run < 2; run++) {
      const server = await start();
      try {
        const record = await call(server, `/api/entities/Task/${id}`);
        assert.equal(record.title, legacy.title, `run ${run}`);
        assert.deepEqual(record.meta, legacy.meta, `run ${run}`);
        const found = await call(server, `/api/entities/Task?q=${encodeURIComponent(JSON.stringify({ title: legacy.title }))}`);
        assert.deepEqual(found.map((task: { id: string }) => task.id), [id], `run ${run}`);
        const { changes } = await call(server, `/api/entities/Task/changes?since=0`);
        assert.equal(changes[0].data.title, legacy.title, `run ${run}`);
      } finally {
        await server.close();
      }
    }
    const [stored] = await sql.unsafe(`SELECT data ->> 'title' AS title FROM "${pgSchema}"."Task" WHERE id = $1`, [id]);
    assert.equal(stored!.title, "old \u0001\u0002 text", "encoded once, not again at the second start");
    const [meta] = await sql.unsafe(`SELECT value ->> 'note' AS note FROM "${pgSchema}"."$meta" WHERE key = 'legacy'`);
    assert.equal(meta!.note, "\u0001\u0002", "metadata too");
  });
});

describeWithPostgres("half of a surrogate pair alone on PostgreSQL", (url) => {
  const pgSchema = freshPgSchema();
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  after(async () => {
    await sql.end();
    await dropPgSchema(url, pgSchema);
  });

  test("is refused 400 invalid_field before the store (never the 500 of jsonb's refusal), while whole pairs are kept as themselves", async () => {
    const server = await startServer({ schema: { Task: TASK }, store: url, pgSchema, secretKey: SECRET, warn: () => {} });
    try {
      const post = (path: string, body: string) => fetch(`${server.url}/api/entities/Task${path}`, { method: "POST", headers: { "X-Api-Key": SECRET, "Content-Type": "application/json" }, body });
      // The body as a client sends it: JSON's escape, since raw bytes of a surrogate are not UTF-8.
      for (const [path, body] of [["", '{"title":"\\ud800"}'], ["", '{"title":"t","meta":{"\\udc00":1}}'], ["/bulk", '[{"title":"a\\ud800b"}]']]) {
        const answer = await post(path!, body!);
        const text = await answer.text();
        assert.equal(answer.status, 400, `${body}: ${text}`);
        assert.equal((JSON.parse(text) as { error: { code: string } }).error.code, "invalid_field", body);
      }
      const kept = await post("", '{"title":"\\ud83d\\ude00 \\u0000"}');
      assert.equal(kept.status, 201, await kept.clone().text());
      const { id } = (await kept.json()) as { id: string };
      const rows = await sql.unsafe(`SELECT id, data ->> 'title' AS title FROM "${pgSchema}"."Task"`);
      assert.deepEqual(rows.map((row) => [row.id, row.title]), [[id, "\u{1f600} \u0001\u0001"]], "only the whole pair's record, its U+0000 escaped");
    } finally {
      await server.close();
    }
  });
});
