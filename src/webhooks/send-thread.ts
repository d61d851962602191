// Webhook deliveries are sent from a thread of their own (docs/webhooks.md, "Lag"): the requests'
// thread hands each endpoint's next events over as one message and hears back, every few
// milliseconds, how many were delivered and the attempts made, so that a delivery costs it a share
// of a message, not a connection's writes and reads; and the sending thread runs only on what the
// requests leave of the cores. The thread's program is send-worker.ts: in the bundle, the thread
// runs the bundle's own file, whose entry point (build.mjs) runs send-worker.ts when isSendThread();
// from source it is built on first use by build-send-worker.ts.

import type { LookupAddress } from "node:dns";
import { isMainThread, Worker, workerData } from "node:worker_threads";
import type { Batch, BatchReport, Delivery, Sender } from "./send.ts";
import type { Attempt } from "../views.ts";
import type { TargetPolicy } from "./target.ts";

/**
 * Deliveries yield the cores to requests. On Linux the sending thread takes the idle scheduling
 * policy (send-worker.ts): a request waking the requests' thread takes a core from it at once,
 * where at the lowest niceness alone it would still wait out the sending thread's time slice.
 * Only Linux gives a thread a priority of its own; elsewhere setting one would lower the whole
 * process's, so the thread keeps the process's.
 */
const YIELDS_TO_REQUESTS = process.platform === "linux";

/** In workerData: the bundle's file, started as a thread, is the sending thread (isSendThread). */
const SEND_THREAD = "tabula:webhook-sending-thread";

export interface SendThreadData {
  readonly allowPrivate: boolean;
  readonly timeoutMs: number;
  /** Names are resolved by the main thread's lookup (the server was handed one). */
  readonly asksLookup: boolean;
  /** The thread lowers its own priority (YIELDS_TO_REQUESTS). */
  readonly yieldsToRequests: boolean;
  readonly thread: typeof SEND_THREAD;
}

export type ToSendThread =
  | { type: "send"; n: number; url: string; secret: string; deliveries: readonly Delivery[] }
  | { type: "cancel"; n: number }
  | { type: "looked-up"; n: number; error: { message: string; code: string | undefined } | null; addresses: LookupAddress[] };

export type FromSendThread =
  | { type: "report"; n: number; delivered: number; attempts: Attempt[]; hasEnded: boolean }
  | { type: "lookup"; n: number; hostname: string; family: number };

/** Defined by build.mjs: this code is in the bundle, one file that is also the thread's program. */
declare const __TABULA_IS_BUNDLED__: boolean | undefined;

/** The builder, by a specifier esbuild does not follow: the bundle never loads it (nor esbuild). */
const BUILDER = "./build-send-worker.ts";
let builtSource: Promise<string> | undefined;

/** Whether this thread was started by threadSender: the bundle's entry point then runs send-worker.ts. */
export function isSendThread(): boolean {
  return !isMainThread && (workerData as Partial<SendThreadData> | null)?.thread === SEND_THREAD;
}

async function startWorker(data: SendThreadData): Promise<Worker> {
  if (typeof __TABULA_IS_BUNDLED__ !== "undefined") return new Worker(new URL(import.meta.url), { workerData: data });
  builtSource ??= (import(BUILDER) as Promise<typeof import("./build-send-worker.ts")>).then(({ buildSendWorker }) => buildSendWorker());
  return new Worker(await builtSource, { eval: true, workerData: data });
}

interface Pending {
  readonly onReport: (report: BatchReport) => void;
  readonly end: () => void;
}

/** A Sender whose deliveries are made on the sending thread, started at the first one. */
export function threadSender(policy: TargetPolicy, timeoutMs: number, warn: (message: string) => void): Sender {
  let worker: Promise<Worker> | null = null;
  let isClosed = false;
  let lastBatch = 0;
  const pending = new Map<number, Pending>();

  const start = async (): Promise<Worker> => {
    const data: SendThreadData = { allowPrivate: policy.allowPrivate, timeoutMs, asksLookup: policy.lookup !== undefined, yieldsToRequests: YIELDS_TO_REQUESTS, thread: SEND_THREAD };
    const started = await startWorker(data);
    // Held open only while a batch is in flight: an idle sender never keeps the process running.
    started.unref();
    started.on("message", (message: FromSendThread) => {
      if (message.type === "lookup") return lookUp(started, message);
      const batch = pending.get(message.n);
      if (!batch) return;
      if (message.attempts.length > 0) batch.onReport(message);
      if (message.hasEnded) end(message.n);
    });
    started.on("error", (error) => warn(`The webhook sending thread failed: ${error.stack ?? error.message}`));
    started.on("exit", () => {
      // Whatever was in flight ends without its attempts: each deliverer sends it again.
      if (worker !== null && !isClosed) warn("The webhook sending thread stopped; it is started again for the next delivery.");
      worker = null;
      for (const n of [...pending.keys()]) end(n);
    });
    return started;
  };
  const lookUp = (to: Worker, { n, hostname, family }: { n: number; hostname: string; family: number }) => {
    policy.lookup!(hostname, { all: true, family }, (error, addresses) =>
      to.postMessage({ type: "looked-up", n, error: error ? { message: error.message, code: error.code } : null, addresses: error ? [] : (addresses as unknown as LookupAddress[]) } satisfies ToSendThread),
    );
  };
  const post = (message: ToSendThread) => {
    worker ??= start();
    worker.then(
      (started) => started.postMessage(message),
      (error: Error) => {
        warn(`The webhook sending thread could not be started: ${error.message}`);
        worker = null;
        for (const n of [...pending.keys()]) end(n);
      },
    );
  };
  const end = (n: number) => {
    const batch = pending.get(n);
    if (!batch) return;
    pending.delete(n);
    batch.end();
    if (pending.size === 0) void worker?.then((started) => started.unref(), () => {});
  };

  const sendInOrder = (url: string, secret: string, deliveries: readonly Delivery[], onReport: (report: BatchReport) => void): Batch => {
    const n = ++lastBatch;
    const ended = new Promise<void>((resolve) => pending.set(n, { onReport, end: resolve }));
    if (isClosed) {
      end(n);
      return { ended, cancel: () => {} };
    }
    if (pending.size === 1) void (worker ??= start()).then((started) => started.ref(), () => {});
    post({ type: "send", n, url, secret, deliveries });
    return { ended, cancel: () => pending.has(n) && post({ type: "cancel", n }) };
  };
  return {
    sendInOrder,
    async send(url, secret, id, body) {
      let made: Attempt | undefined;
      await sendInOrder(url, secret, [{ id, body }], ({ attempts }) => (made = attempts[0])).ended;
      return made ?? { event_id: id, at: new Date().toISOString(), status: null, latency_ms: 0, error: "the webhook sending thread stopped before the attempt was made" };
    },
    close() {
      isClosed = true;
      const closing = worker;
      worker = null;
      // The deliverers have stopped: nothing is in flight, and the thread's connections close with it.
      void closing?.then((started) => started.terminate(), () => {});
      for (const n of [...pending.keys()]) end(n);
    },
  };
}
