// What the Node tests of the real @base44/sdk share.

import assert from "node:assert/strict";
import { Base44Error } from "@base44/sdk";

/** The Base44Error a call rejects with; fails the test if it succeeds or rejects with anything else. */
export async function refusal(call: Promise<unknown>): Promise<Base44Error> {
  try {
    await call;
  } catch (error) {
    assert.ok(error instanceof Base44Error, String(error));
    return error;
  }
  assert.fail("the call succeeded");
}
