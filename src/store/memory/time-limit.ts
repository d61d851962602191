// A time limit for scans whose filter holds a $regex. The guard (regex-guard.ts) refuses the
// patterns that backtrack exponentially, but a plain pattern can still take polynomial time on a
// long text (`a*a*b` on 50,000 characters runs for hours), and V8's linear-time engine takes
// neither the u nor the i flag. So the scan runs under node:vm's timeout, whose watchdog stops any
// JavaScript, a RegExp match included. It costs a thread start (about 0.1 ms), so only scans with
// a $regex pay it. Scans only read: stopping one leaves nothing half-done (indexes are stored
// once built).

import { Script, createContext } from "node:vm";
import { invalidFilter } from "../../errors.ts";
import type { FilterNode } from "../../query/filter-tree.ts";

export const REGEX_SCAN_LIMIT_MS = 2000;

const context = createContext({ work: undefined as (() => unknown) | undefined });
const runWork = new Script("work()");

/**
 * Runs `work`, stopped with invalid_filter after `limitMs` (REGEX_SCAN_LIMIT_MS unless a scan in
 * parts has spent some of it) when `filter` holds a $regex.
 */
export function limitRegexScan<T>(filter: FilterNode | null, work: () => T, limitMs = REGEX_SCAN_LIMIT_MS): T {
  if (filter === null || !hasRegex(filter)) return work();
  context.work = work;
  try {
    return runWork.runInContext(context, { timeout: Math.max(1, Math.ceil(limitMs)) }) as T;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ERR_SCRIPT_EXECUTION_TIMEOUT") throw error;
    throw invalidFilter(
      `The $regex took more than ${REGEX_SCAN_LIMIT_MS / 1000} s over the records it had to test, so the request was stopped. Anchor the pattern (^...), make it more specific, or narrow the filter with other fields.`,
      { timeLimitMs: REGEX_SCAN_LIMIT_MS },
    );
  } finally {
    context.work = undefined;
  }
}

const regexInTree = new WeakMap<FilterNode, boolean>();

function hasRegex(node: FilterNode): boolean {
  let found = regexInTree.get(node);
  if (found === undefined) {
    switch (node.type) {
      case "compare":
        found = node.op === "$regex";
        break;
      case "and":
      case "or":
        found = node.nodes.some(hasRegex);
        break;
      case "not":
      case "elemMatch":
        found = hasRegex(node.node);
        break;
      default:
        found = false;
    }
    regexInTree.set(node, found);
  }
  return found;
}
