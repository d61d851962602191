// Seeded property test of store/postgres/sql-*.ts on a real PostgreSQL (TABULA_TEST_PG_URL): the same
// random records in a table of the PostgreSQL store's layout and in a MemoryStore; random filters,
// sorts and cursor walks select and order the same ids (SQL, then compileFilter where not exact).

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import postgres from "postgres";
import type { FilterNode, SortPosition, SortSpec } from "../../src/query/filter-tree.ts";
import { parseSort } from "../../src/query/sort.ts";
import { parseDateValue } from "../../src/schema/fields.ts";
import { foldCase } from "../../src/query/case-fold.ts";
import { MemoryStore } from "../../src/store/memory/memory-store.ts";
import { compileFilter } from "../../src/query/predicate.ts";
import { whereOf } from "../../src/store/postgres/sql-filter.ts";
import { afterOf, indexesOf, orderByOf } from "../../src/store/postgres/sql-sort.ts";
import { millisecondsOf, SqlParams } from "../../src/store/postgres/sql-values.ts";
import { encodeJsonText, STORED_JSONB_TYPE } from "../../src/store/postgres/stored-text.ts";
import { columnNameOf, NO_COLUMNS, SEARCH_COLUMN, typedColumnsOf, type TypedColumns } from "../../src/store/postgres/typed-columns.ts";
import type { DeletedFilter, Row } from "../../src/store/store.ts";
import { describeWithPostgres, freshPgSchema } from "../support/postgres.ts";
import { seeded } from "../support/random.ts";
import { ACCESS, entity, ENTITY, pick, randomCase, randomRows, SORT_FIELDS, treeOf, VALUE_INDEXED, type Case } from "./postgres-sql-cases.ts";

const SEED = 20260218;
// Few enough that a few thousand filters run in seconds; each value domain still shows up dozens of times.
const ROWS = 400;
const SCHEMA = freshPgSchema();
const TABLE = `"${SCHEMA}"."item"`;

let sql: postgres.Sql;
let store: MemoryStore;
let rows: Row[];
let hasTrigram = false;
/** The typed columns the table holds (typed-columns.ts): each case runs with them, and with `data` alone. */
const COLUMNS = typedColumnsOf(entity);

async function setUp(url: string): Promise<void> {
  // As the store reads jsonb: decoded (stored-text.ts).
  sql = postgres(url, { onnotice: () => {}, max: 1, types: { jsonb: STORED_JSONB_TYPE } }) as unknown as postgres.Sql;
  await sql.unsafe(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE; CREATE SCHEMA "${SCHEMA}"`);
  await sql.unsafe(`CREATE TABLE ${TABLE} (id text COLLATE "C" PRIMARY KEY, rev bigint NOT NULL, deleted boolean NOT NULL, data jsonb NOT NULL)`);
  await sql.unsafe(`ALTER TABLE ${TABLE} ${[...COLUMNS.values()].map((column) => `ADD COLUMN ${column.sql} ${column.definition}`).join(", ")}`);
  try {
    await sql.unsafe("CREATE EXTENSION IF NOT EXISTS pg_trgm");
    hasTrigram = true;
  } catch {
    // Without pg_trgm the search index is left out, as the store leaves it out; nothing else needs it.
  }
  for (const index of indexesOf(entity)) {
    if (index.needsTrigram && !hasTrigram) continue;
    await sql.unsafe(`CREATE INDEX "item_${index.name}" ON ${TABLE} ${index.definition}`);
  }
  rows = randomRows(seeded(SEED), ROWS);
  store = new MemoryStore(new Map([[ENTITY, VALUE_INDEXED]]));
  for (const row of rows) void store.commit({ puts: [{ entity: ENTITY, row }] });
  await sql.unsafe(
    `INSERT INTO ${TABLE} SELECT r ->> 'id', (r ->> 'rev')::bigint, (r ->> 'deleted')::boolean, r -> 'data' FROM jsonb_array_elements($1::text::jsonb) AS r`,
    // As the store writes them: text encoded (stored-text.ts).
    [encodeJsonText(JSON.stringify(rows))],
  );
  await sql.unsafe(`ANALYZE ${TABLE}`);
}

async function tearDown(): Promise<void> {
  await sql.unsafe(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE`);
  await sql.end();
}

// ---------------------------------------------------------------- running a list both ways

const DELETED_SQL: Record<DeletedFilter, string> = { exclude: "NOT deleted", only: "deleted", include: "TRUE" };

interface Listing {
  readonly filter: FilterNode | null;
  readonly sort: SortSpec;
  readonly deleted: DeletedFilter;
}

function listingOf(c: Case): Listing {
  return { filter: treeOf(c.q, c.search), sort: parseSort(entity, c.sort, ACCESS), deleted: c.deleted };
}

async function memoryIds(listing: Listing, position: SortPosition | null = null): Promise<string[]> {
  return (await store.list(ENTITY, { ...listing, after: position, skip: 0, limit: 1_000_000 })).rows.map((row) => row.id);
}

/** The ids SQL selects in SQL's order, after `position` when given, at most `limit`; then compileFilter when inexact. */
async function sqlIds(listing: Listing, position: SortPosition | null = null, limit?: number, columns: TypedColumns = COLUMNS): Promise<{ ids: string[]; exact: boolean; text: string }> {
  const params = new SqlParams();
  const where = whereOf(listing.filter, params, columns);
  const resume = position ? afterOf(listing.sort, position, params, columns) : "TRUE";
  const page = where.exact && limit !== undefined ? ` LIMIT ${limit}` : "";
  const selected = where.exact ? "id" : "id, rev, deleted, data";
  const text = `SELECT ${selected} FROM ${TABLE} WHERE ${DELETED_SQL[listing.deleted]} AND ${where.sql} AND ${resume} ORDER BY ${orderByOf(listing.sort, columns)}${page}`;
  let found = (await sql.unsafe(text, params.values as string[])) as unknown as Row[];
  if (!where.exact) found = found.filter(compileFilter(listing.filter!));
  const ids = found.map((row) => row.id);
  return { ids: limit === undefined ? ids : ids.slice(0, limit), exact: where.exact, text };
}

/** Whether SQL can be exact for a case: no $regex, and $contains and search on needles that fold to ASCII. */
function isTyped(c: Case): boolean {
  const isAsciiFold = (text: string) => [...foldCase(text)].every((char) => char.charCodeAt(0) < 0x80);
  if (c.search !== null && (!isAsciiFold(c.search) || /[\u0000-\u0002]/.test(c.search))) return false;
  let isExact = true;
  JSON.stringify(c.q, (name, value) => {
    if (name === "$regex") isExact = false;
    // A needle starting with U+0000, U+0001 or U+0002 may be found inside an escape (sql-filter.ts).
    if (name === "$contains" && (!isAsciiFold(value) || /^[\u0000-\u0002]/.test(value))) isExact = false;
    if (["$gt", "$gte", "$lt", "$lte"].includes(name) && typeof value === "string" && /[\ud800-\udfff]/.test(value)) isExact = false;
    return value;
  });
  return isExact;
}

// ---------------------------------------------------------------- the properties

describeWithPostgres("SQL of filters, sorts and cursors on PostgreSQL", (url) => {
  before(() => setUp(url));
  after(() => tearDown());

  test("random filters, searches and sorts select and order what the memory store does", async (t) => {
    const next = seeded(SEED + 1);
    let exact = 0;
    let matchedSome = 0;
    const CASES = 1600;
    for (let n = 0; n < CASES; n++) {
      const c = randomCase(next, rows);
      const listing = listingOf(c);
      const label = `case ${n}: ${JSON.stringify(c)}`;
      const expected = await memoryIds(listing);
      const answer = await sqlIds(listing);
      assert.deepEqual(answer.ids, expected, label);
      // The same over `data` alone, as a table of an entity no longer declared is read.
      assert.deepEqual((await sqlIds(listing, null, undefined, NO_COLUMNS)).ids, expected, `${label}, without typed columns`);
      if (isTyped(c)) assert.ok(answer.exact, `${label}: typed, so exact in SQL`);
      if (answer.exact) exact++;
      if (expected.length > 0) matchedSome++;
    }
    t.diagnostic(`${exact} of ${CASES} cases exact in SQL; ${matchedSome} matched some record`);
    assert.ok(matchedSome > CASES / 2, `filters should match something most of the time (${matchedSome}/${CASES})`);
    assert.ok(exact > CASES * 0.6, `most cases are exact in SQL (${exact}/${CASES})`);
  });

  test("a cursor walk with afterOf over any sort equals one big page", async () => {
    const next = seeded(SEED + 2);
    for (let n = 0; n < 60; n++) {
      const c = randomCase(next, rows);
      const listing = listingOf(c);
      const expected = await memoryIds(listing);
      const limit = pick(next, [9, 40, 150]);
      const walked: string[] = [];
      let position: SortPosition | null = null;
      for (let pages = 0; pages <= expected.length; pages++) {
        const page = (await sqlIds(listing, position, limit + 1, n % 4 === 3 ? NO_COLUMNS : COLUMNS)).ids;
        walked.push(...page.slice(0, limit));
        if (page.length <= limit) break;
        position = store.positionOf(ENTITY, store.get(ENTITY, page[limit - 1]!)!, listing.sort);
      }
      assert.deepEqual(walked, expected, `case ${n}: ${JSON.stringify(c)} walked by ${limit}`);
    }
  });

  test("positions no row made (keys of another type, text PostgreSQL cannot hold) resume where the memory store resumes", async () => {
    const next = seeded(SEED + 3);
    const keys = [null, 0, 1, -3, 2.5, 1e21, Date.UTC(2026, 0, 2), "", "a", "alpha", "Beta", "é", "a\u0000", "b\u0000z", "\ud83d", "\ud83dz", "\ude00", "\u{1f600}", "\ue000", "ann@x.io", rows[5]!.id];
    const ids = ["", "0", rows[100]!.id, "zzzz", "0000\u0000", "\ud800", "\udc00x", "\uffff"];
    for (const field of SORT_FIELDS) {
      for (const direction of ["", "-"]) {
        const listing = listingOf({ q: null, search: null, sort: direction + field, deleted: "include" });
        for (let n = 0; n < 6; n++) {
          const position = { key: next() < 0.3 ? store.positionOf(ENTITY, pick(next, rows), listing.sort).key : pick(next, keys), id: pick(next, ids) };
          const label = `${direction}${field} after ${JSON.stringify(position)}`;
          const expected = await memoryIds(listing, position);
          assert.deepEqual((await sqlIds(listing, position)).ids, expected, label);
          assert.deepEqual((await sqlIds(listing, position, undefined, NO_COLUMNS)).ids, expected, `${label}, without typed columns`);
        }
      }
    }
  });

  test("millisecondsOf reads every text as parseDateValue does", async () => {
    const next = seeded(SEED + 4);
    const part = (values: string[]) => pick(next, values);
    const texts = Array.from({ length: 4000 }, () => {
      let text = `${part(["0000", "0001", "1969", "1970", "2024", "2100", "2000", "9999", "20a6", "202"])}-${part(["00", "01", "02", "03", "12", "13", "1"])}-${part(["00", "01", "28", "29", "30", "31", "32"])}`;
      if (next() < 0.7) {
        text += part(["T", "t", " ", "T"]) + part(["00", "23", "24", "9", "12"]) + ":" + part(["00", "59", "60", "5"]);
        if (next() < 0.7) text += ":" + part(["00", "59", "60", "5"]) + part(["", "", ".", ".1", ".12", ".123", ".1239", ".123456789", ".1234567890"]);
        text += part(["Z", "z", "Z", "+00:00", "-00:30", "+23:59", "+24:00", "-12:60", "", "+0100", "+05:30"]);
      }
      return next() < 0.05 ? part([" ", "x", ""]) + text + part(["", " ", "Z"]) : text;
    });
    const found = await sql.unsafe(`SELECT t, ${millisecondsOf("t")} AS ms FROM jsonb_array_elements_text($1::text::jsonb) AS x(t)`, [JSON.stringify(texts)]);
    for (const { t, ms } of found) {
      const expected = parseDateValue(t);
      assert.equal(ms === null ? NaN : Number(ms), expected, JSON.stringify(t));
    }
  });

  test("no value, name or key of a request is written into the SQL text", async () => {
    const next = seeded(SEED + 5);
    const MARKERS = ["x'); DROP TABLE item; --", "$1", "\\'", '"quoted"', "' OR '1'='1", "${q}", "Ro'bert\\", "%_\\%"];
    for (let n = 0; n < 120; n++) {
      const marker = () => pick(next, MARKERS) + n;
    // Names (of members, of $elemMatch's members) that would read as operators are another test's.
    const name = () => `k${marker()}`;
      const condition = (): Record<string, unknown> => {
        switch (Math.floor(next() * 7)) {
          case 0:
            return { title: { [pick(next, ["$eq", "$ne", "$gt", "$lte", "$contains"])]: marker() } };
          case 1:
            return { email: { [pick(next, ["$in", "$nin"])]: [marker(), marker(), null] } };
          case 2:
            return { tags: { [pick(next, ["$all", "$in"])]: [marker()] } };
          case 3:
            return { [`meta.${marker()}.${marker()}`]: pick(next, [marker(), 1, { [name()]: marker() }]) };
          case 4:
            return { meta: { $eq: { [marker()]: [marker()] } } };
          case 5:
            return { tags: { $elemMatch: { $gt: marker() } } };
          default:
            return { $nor: [{ [`meta.${name()}`]: { $exists: true } }, { "meta.items": { $elemMatch: { [name()]: marker() } } }] };
        }
      };
      const c: Case = { q: { ...condition(), ...condition() }, search: next() < 0.3 ? marker() : null, sort: pick(next, SORT_FIELDS), deleted: "exclude" };
      const listing = listingOf(c);
      const answer = await sqlIds(listing);
      assert.deepEqual(answer.ids, await memoryIds(listing), JSON.stringify(c));
      for (const leaf of leavesOf(c)) assert.ok(!answer.text.includes(leaf), `${JSON.stringify(c)}: ${JSON.stringify(leaf)} is in the SQL text`);
    }
  });

  test("with the indexes of indexesOf, a keyset page of any sort reads the index in order, without sorting", async () => {
    const ROLLBACK = "rolled back on purpose";
    // A table this small tempts the planner to scan, or to sort the few rows a text key's prefix
    // range finds: it may not (on a large table it reads the index). And the GIN index is asked about
    // alone, with the sort indexes dropped for the transaction, which is rolled back.
    const explain = async (text: string, values: unknown[], isGinAlone = false) => {
      let plan = "";
      await sql
        .begin(async (tx) => {
          await tx.unsafe("SET LOCAL enable_seqscan = off");
          await tx.unsafe("SET LOCAL enable_sort = off");
          if (isGinAlone) for (const index of indexesOf(entity)) if (/^f_/.test(index.name) && !index.needsTrigram) await tx.unsafe(`DROP INDEX "${SCHEMA}"."item_${index.name}"`);
          const lines = (await tx.unsafe(`EXPLAIN ${text}`, values as string[])) as unknown as Array<Record<string, string>>;
          plan = lines.map((line) => line["QUERY PLAN"]).join("\n");
          throw new Error(ROLLBACK);
        })
        .catch((error: Error) => {
          if (error.message !== ROLLBACK) throw error;
        });
      return plan;
    };
    for (const field of SORT_FIELDS) {
      for (const direction of ["", "-"]) {
        const sort = parseSort(entity, direction + field, ACCESS);
        const params = new SqlParams();
        const resume = afterOf(sort, store.positionOf(ENTITY, rows[ROWS / 2]!, sort), params, COLUMNS);
        const plan = await explain(`SELECT id FROM ${TABLE} WHERE NOT deleted AND ${resume} ORDER BY ${orderByOf(sort, COLUMNS)} LIMIT 20`, params.values);
        assert.match(plan, /Index (Only )?Scan/, `${direction}${field}:\n${plan}`);
        // A text key's index holds its prefix: rows whose prefixes tie are sorted in memory (Incremental Sort), no other sort.
        assert.doesNotMatch(plan, /(^|->)\s*Sort\s+\(/m, `${direction}${field}:\n${plan}`);
      }
    }
    for (const [q, search, index] of [
      [{ title: "\u017ftop" }, null, `item_${columnNameOf("title", "string")}`],
      [{ title: { $gt: "x".repeat(600) } }, null, `item_${columnNameOf("title", "string")}`],
      [{ tags: { $all: ["a", "b", "c"] } }, null, "item_equality"],
      [{ priority: { $gte: 3 } }, null, `item_${columnNameOf("priority", "number")}`],
      [{ due_date: "2026-01-02" }, null, `item_${columnNameOf("due_date", "date")}`],
      ...(hasTrigram ? [[null, "alp", `item_${COLUMNS.get(SEARCH_COLUMN)!.name}`]] : []),
    ] as Array<[Record<string, unknown> | null, string | null, string]>) {
      const params = new SqlParams();
      const where = whereOf(treeOf(q, search), params, COLUMNS);
      const plan = await explain(`SELECT id FROM ${TABLE} WHERE NOT deleted AND ${where.sql}`, params.values, !/^item_f_.*[0-9a-f]$/.test(index) || index.includes("search"));
      assert.ok(plan.includes(index), `${JSON.stringify(q)} ${search}: ${index}\n${plan}`);
    }
  });
});

/** Every string a case holds (values, names and dotted parts), short ones aside: they could be SQL words. */
function leavesOf(c: Case): string[] {
  const leaves = c.search === null ? [] : [c.search];
  JSON.stringify(c.q, (name, value) => {
    if (name !== "" && !name.startsWith("$")) leaves.push(name, ...name.split("."));
    if (typeof value === "string") leaves.push(value);
    return value;
  });
  return leaves.filter((leaf) => leaf.length >= 4 && !["meta", "tags", "title", "email"].includes(leaf));
}

const EXACTNESS: Array<[Record<string, unknown>, string | null, boolean]> = [
  [{ title: "alpha" }, null, true],
  [{ status: { $in: ["todo", "done"] }, priority: { $gt: 2 } }, null, true],
  [{ due_date: { $lte: "2026-01-02" }, start_at: { $gt: "2026-01-01T12:00:00+01:00" } }, null, true],
  [{ tags: "a", "meta.items": { $elemMatch: { k: { $gt: 1 } } } }, null, true],
  [{ tags: { $all: ["a", "b"] }, "meta.owner": { $in: ["ann", null] } }, null, true],
  [{ $nor: [{ done: true }, { tags: { $size: 2 } }], "meta.items.0.k": 1 }, null, true],
  [{ title: { $contains: "ALP" }, email: { $not: { $contains: "İST" } } }, "stop", true],
  [{ title: { $regex: "^a" } }, null, false],
  [{ title: { $contains: "é" } }, null, false],
  [{ $nor: [{ title: { $regex: "a" } }] }, null, false],
  [{ title: "alpha" }, "Straße", false],
];

test("whereOf is exact for typed conditions and says when it is not", () => {
  for (const [q, search, isExact] of EXACTNESS) {
    assert.equal(whereOf(treeOf(q, search), new SqlParams()).exact, isExact, `${JSON.stringify(q)} search=${search}`);
  }
});
