// The router's path matching (issue 16): segments are found by hand and compared in place in the
// path (not split into strings), so empty segments, a trailing slash, escapes and literals that
// differ only in length must match as String.prototype.split would have them.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { nativeMount, sdkMount } from "../../src/http/mounts.ts";
import { Router } from "../../src/http/router.ts";
import { buildRouter } from "../../src/http/routes.ts";

const router = buildRouter([nativeMount, sdkMount(null)]);

/** What a GET of the path matches: its params, { allowed } for a 405, or null for a 404. */
function matchOf(path: string, method = "GET"): unknown {
  const match = router.match(method, path);
  if (match === null) return null;
  return "allowed" in match ? { allowed: match.allowed } : match.params;
}

describe("router", () => {
  const cases: Array<[string, unknown]> = [
    ["/api/entities", {}],
    ["/api/entities/", {}],
    ["/api/entities/Task", { entity: "Task" }],
    ["/api/entities/Task/", { entity: "Task" }],
    ["/api/entities/Task/01a2b3c4d5e6000000000001", { entity: "Task", id: "01a2b3c4d5e6000000000001" }],
    ["/api/entities/Task/01a2b3c4d5e6000000000001/", { entity: "Task", id: "01a2b3c4d5e6000000000001" }],
    ["/api/entities/Task/count", { entity: "Task" }],
    ["/api/entities/Ta%20sk/a%2Fb", { entity: "Ta sk", id: "a/b" }],
    ["/api/entities/Task/%E0%A4%A", null],
    ["/api/entities//x", null],
    ["/api/entities/Task//", null],
    ["/api//entities/Task", null],
    ["/", null],
    ["", null],
    ["/api/entities/Task/x/y/z", null],
    ["/api/entitie/Task", null],
    ["/api/entitiess/Task", null],
    ["/api/entities/Task/coun", { entity: "Task", id: "coun" }],
    ["/api/entities/Task/counts", { entity: "Task", id: "counts" }],
    ["/api/entities/Task/bulk/", { allowed: ["POST", "PUT"] }],
    // More segments than any route has: no route, however many.
    [`/api${"/entities".repeat(40)}`, null],
    [`/api/entities/Task/${"x/".repeat(14)}x`, null],
    // The SDK's prefix (docs/base44-sdk.md) serves the same routes, and /v2/list only there.
    ["/api/apps/app1/entities/Task", { appId: "app1", entity: "Task" }],
    ["/api/apps/app1/entities/Task/01a2b3c4d5e6000000000001", { appId: "app1", entity: "Task", id: "01a2b3c4d5e6000000000001" }],
    ["/api/apps/app1/entities/Task/v2/list", { appId: "app1", entity: "Task" }],
    ["/api/entities/Task/v2/list", null],
    ["/api/apps//entities/Task", null],
  ];
  for (const [path, expected] of cases) {
    test(`GET ${JSON.stringify(path)} matches ${JSON.stringify(expected)}`, () => {
      assert.deepEqual(matchOf(path), expected);
    });
  }

  test("the most specific route wins, whichever of them ends in a literal", () => {
    const routes = new Router<string>().add("GET", "/a/:b/c", "a-param-c").add("GET", "/a/b/:c", "a-b-param").add("GET", "/a/:b/:c", "a-params").add("GET", "/a/b/cc", "a-b-cc");
    const handlerOf = (path: string) => {
      const match = routes.match("GET", path);
      return match && "handler" in match ? match.handler : null;
    };
    assert.equal(handlerOf("/a/b/c"), "a-b-param", "a literal second segment outweighs a literal last one");
    assert.equal(handlerOf("/a/x/c"), "a-param-c");
    assert.equal(handlerOf("/a/x/cc"), "a-params", "a literal route of the same last length that does not match gives way to one ending in a parameter");
    assert.equal(handlerOf("/a/x/ccc"), "a-params", "a last segment as long as no literal route's goes to the routes ending in a parameter");
    assert.equal(handlerOf("/a/b/cc"), "a-b-cc");
    assert.equal(handlerOf("/a/x/y"), "a-params");
    assert.equal(handlerOf("/a/x"), null);
  });

  test("a path without a route for its method answers the methods it has", () => {
    assert.deepEqual(matchOf("/api/entities/Task/bulk", "GET"), { allowed: ["POST", "PUT"] });
  });
});
