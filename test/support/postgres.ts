// The PostgreSQL that tests may use: test/run.mjs starts a throwaway cluster and passes its URL
// as TABULA_TEST_PG_URL. Without one, tests that need it skip, unless TABULA_REQUIRE_POSTGRES=1
// (CI), where a missing database is a failure rather than a silent skip.

import { randomBytes } from "node:crypto";

/** The test cluster's URL, or null when there is none. */
export function pgTestUrl(): string | null {
  const url = process.env.TABULA_TEST_PG_URL || null;
  if (!url && process.env.TABULA_REQUIRE_POSTGRES === "1") {
    throw new Error("TABULA_REQUIRE_POSTGRES=1 but TABULA_TEST_PG_URL is not set: run the tests through test/run.mjs, which starts PostgreSQL.");
  }
  return url;
}

/** A schema name no other test uses, so that each store starts empty. */
export function pgTestSchema(): string {
  return `t_${randomBytes(6).toString("hex")}`;
}
