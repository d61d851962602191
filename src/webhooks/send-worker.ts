// The sending thread's program (send-thread.ts starts it): batches of deliveries come in as
// messages, are sent by send.ts's client in order, and their attempts go back a few at a time.
// Names are resolved here by node:dns, or, when the server was handed a lookup of its own (tests),
// by asking the main thread, which holds it.

import { execFile } from "node:child_process";
import type { LookupAddress } from "node:dns";
import { readlinkSync } from "node:fs";
import type { LookupFunction } from "node:net";
import { setPriority } from "node:os";
import { parentPort, workerData } from "node:worker_threads";
import { createSender, MAX_KEPT_ATTEMPTS, type Batch } from "./send.ts";
import type { Attempt } from "../views.ts";
import type { FromSendThread, SendThreadData, ToSendThread } from "./send-thread.ts";

/** Attempts made are reported at least this often while a batch lasts (the delivery log, the lag, the position). */
const REPORT_MS = 20;

const port = parentPort!;
const data = workerData as SendThreadData;
const post = (message: FromSendThread) => port.postMessage(message);

if (data.yieldsToRequests) yieldToRequests();

/**
 * Niceness 19 at once, then the idle scheduling policy (SCHED_IDLE), which node cannot set itself:
 * util-linux's chrt sets it on this thread. Under it, a request waking the requests' thread
 * preempts this one at once (docs/benchmarks.md, W11: the requests' thread waited for a core 20–36%
 * of the time at niceness 19, 12% under the idle policy). Where chrt is missing or refused (a minimal
 * image), the niceness stays.
 */
function yieldToRequests(): void {
  try {
    setPriority(19);
  } catch {
    // Not permitted (some containers): the thread runs at the process's priority.
  }
  let thread: string;
  try {
    // "<pid>/task/<tid>": this thread's id, which Linux's scheduling calls take as a process's.
    thread = readlinkSync("/proc/thread-self").split("/").pop()!;
  } catch {
    return;
  }
  execFile("chrt", ["--idle", "--pid", "0", thread], () => {});
}

const lookups = new Map<number, (error: Error | null, addresses: LookupAddress[]) => void>();
let lastLookup = 0;
const askedLookup: LookupFunction = (hostname, options, callback) => {
  const n = ++lastLookup;
  lookups.set(n, callback as unknown as (error: Error | null, addresses: LookupAddress[]) => void);
  post({ type: "lookup", n, hostname, family: typeof options.family === "number" ? options.family : 0 });
};
const sender = createSender({ allowPrivate: data.allowPrivate, lookup: data.asksLookup ? askedLookup : undefined }, data.timeoutMs);
const batches = new Map<number, Batch>();

port.on("message", (message: ToSendThread) => {
  switch (message.type) {
    case "send": {
      const { n } = message;
      let delivered = 0;
      let made: Attempt[] = [];
      let timer: NodeJS.Timeout | null = null;
      const report = (hasEnded: boolean) => {
        if (timer) clearTimeout(timer);
        timer = null;
        post({ type: "report", n, delivered, attempts: made.length > MAX_KEPT_ATTEMPTS ? made.slice(-MAX_KEPT_ATTEMPTS) : made, hasEnded });
        [delivered, made] = [0, []];
      };
      const batch = sender.sendInOrder(message.url, message.secret, message.deliveries, (done) => {
        delivered += done.delivered;
        made.push(...done.attempts);
        // Only what the delivery log keeps crosses to the main thread.
        if (made.length > 2 * MAX_KEPT_ATTEMPTS) made = made.slice(-MAX_KEPT_ATTEMPTS);
        timer ??= setTimeout(() => report(false), REPORT_MS);
      });
      batches.set(n, batch);
      void batch.ended.then(() => {
        batches.delete(n);
        report(true);
      });
      break;
    }
    case "cancel":
      batches.get(message.n)?.cancel();
      break;
    case "looked-up": {
      const callback = lookups.get(message.n);
      lookups.delete(message.n);
      callback?.(message.error ? Object.assign(new Error(message.error.message), { code: message.error.code }) : null, message.addresses);
      break;
    }
  }
});
