// The PostgreSQL that test/run.mjs hands to tests (TABULA_TEST_PG_URL): what a test does without one
// (skip, or fail when TABULA_REQUIRE_POSTGRES=1, as .ci/run sets), and the schema each test server
// takes in it. Starting the cluster is test/support/pg-cluster.mjs's job.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";

/** TABULA_TEST_PG_URL, or null when there is no PostgreSQL to test on. */
export function pgTestUrl(): string | null {
  return process.env.TABULA_TEST_PG_URL || null;
}

/** Whether a missing PostgreSQL must fail the run rather than skip: .ci/run sets it. */
export function isPostgresRequired(): boolean {
  return process.env.TABULA_REQUIRE_POSTGRES === "1";
}

export const MISSING_PG_URL =
  "no TABULA_TEST_PG_URL: run the tests through node test/run.mjs (npm test), which starts a throwaway " +
  "PostgreSQL cluster when Debian's postgresql is installed (apt-get install -y postgresql; bash .ci/run does it).";

/**
 * `describe(name)` given the URL. Without one: one test that fails when PostgreSQL is required
 * (isPostgresRequired), else one skipped test saying how to get one.
 */
export function describeWithPostgres(name: string, body: (url: string) => void): void {
  const url = pgTestUrl();
  if (url !== null) {
    describe(name, () => body(url));
  } else if (isPostgresRequired()) {
    test(`${name}: needs PostgreSQL (required: TABULA_REQUIRE_POSTGRES=1)`, () => assert.fail(MISSING_PG_URL));
  } else {
    test(name, { skip: `${MISSING_PG_URL} Set TABULA_REQUIRE_POSTGRES=1 to fail instead of skipping.` }, () => {});
  }
}

/** A schema name no other test server uses: t_ and 12 hex digits, so it needs no quoting. */
export function freshPgSchema(): string {
  return `t_${randomBytes(6).toString("hex")}`;
}

/** Drops a test server's schema and all it holds, so that ~a thousand servers do not fill the cluster. */
export async function dropPgSchema(url: string, schema: string): Promise<void> {
  // Loaded here, not at the top: most test files never touch PostgreSQL.
  const { default: postgres } = await import("postgres");
  // CASCADE reports what it dropped as a NOTICE, which the driver would print.
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql`drop schema if exists ${sql(schema)} cascade`;
  } finally {
    await sql.end();
  }
}
