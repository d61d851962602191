// parseDateValue computes the start of a day by arithmetic, not Date.UTC: it must agree with
// Date.parse on every real day, from year 0 to 9999, and refuse the days Date.parse rolls over.

import assert from "node:assert/strict";
import { test } from "node:test";
import { parseDateValue } from "../../src/schema/fields.ts";

test("dates and timestamps parse to Date.parse's milliseconds on every real day, years 0 to 9999", () => {
  let checked = 0;
  for (let year = 0; year <= 9999; year += year < 2200 ? 1 : 13) {
    for (let month = 1; month <= 12; month++) {
      for (const day of [1, 2, 15, 28, 29, 30, 31]) {
        const text = `${String(year).padStart(4, "0")}-${String(month).padStart(2, "0")}-${String(day).padStart(2, "0")}`;
        const expected = Date.parse(`${text}T00:00:00Z`);
        const isReal = new Date(expected).toISOString().slice(0, 10) === text;
        if (!isReal) {
          assert.ok(Number.isNaN(parseDateValue(text)), text);
          continue;
        }
        assert.equal(parseDateValue(text), expected, text);
        assert.equal(parseDateValue(`${text}T13:45:07.123Z`), expected + 49_507_123, text);
        checked++;
      }
    }
  }
  assert.ok(checked > 180_000, `checked ${checked}`);
});
