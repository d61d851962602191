// GET /metrics (docs/operating.md): what an operator watches, in Prometheus text. Requests and their
// latency are counted as they are answered; the rest is read when scraped.

import type { StoreMetrics } from "../store/store.ts";
import { Exposition } from "../metrics/exposition.ts";
import type { RequestMetrics } from "../metrics/request-metrics.ts";
import type { EndpointMetrics } from "../webhooks/webhooks.ts";

export interface MetricSources {
  readonly version: string;
  /** "memory", "file" or "postgres". */
  readonly storeKind: string;
  readonly requests: RequestMetrics;
  readonly entities: readonly string[];
  readonly store: StoreMetrics;
  readonly feed: { readonly streams: number; readonly longPolls: number };
  /** Per webhook endpoint: attempts counted by this process, and its lag where this process delivers. */
  readonly webhooks?: readonly EndpointMetrics[];
  /** Socket.IO connections of @base44/sdk's subscribe() (docs/base44-sdk.md) and the rooms they joined. */
  readonly realtime: { readonly sockets: number; readonly rooms: number };
  /** Request log lines dropped because stdout did not keep up; null without --log. */
  readonly droppedLogLines: number | null;
}

const STARTED_SECONDS = Date.now() / 1000 - process.uptime();

export function renderMetrics(sources: MetricSources): string {
  const out = new Exposition();
  out.family("tabula_info", "gauge", "Always 1; the labels say which build serves on which store.").sample("tabula_info", { version: sources.version, store: sources.storeKind }, 1);
  sources.requests.writeTo(out);

  const counts = new Map(sources.store.records.map((count) => [count.entity, count]));
  out.family("tabula_records", "gauge", "Records stored per entity: live, and soft-deleted.");
  for (const entity of sources.entities) {
    const count = counts.get(entity);
    out.sample("tabula_records", { entity, state: "live" }, count?.live ?? 0);
    out.sample("tabula_records", { entity, state: "deleted" }, count?.deleted ?? 0);
  }

  const { files } = sources.store;
  if (files) {
    out.family("tabula_log_bytes", "gauge", "Bytes of write-ahead log not yet covered by a snapshot.").sample("tabula_log_bytes", null, files.logBytes);
    out.family("tabula_snapshot_bytes", "gauge", "Bytes of the newest snapshot.").sample("tabula_snapshot_bytes", null, files.snapshotBytes);
    out.family("tabula_fsync_duration_seconds", "histogram", "Each durable write of the log (write and fdatasync), shared by the requests waiting on it.").histogram("tabula_fsync_duration_seconds", null, files.fsyncSeconds);
    out.family("tabula_compactions_total", "counter", "Compactions of the log into a snapshot since start-up, by result.");
    out.sample("tabula_compactions_total", { result: "done" }, files.compactions);
    out.sample("tabula_compactions_total", { result: "failed" }, files.failedCompactions);
  }

  out.family("tabula_feed_streams", "gauge", "Change feed SSE streams open.").sample("tabula_feed_streams", null, sources.feed.streams);
  out.family("tabula_feed_long_polls", "gauge", "Change feed long polls waiting.").sample("tabula_feed_long_polls", null, sources.feed.longPolls);
  const webhooks = sources.webhooks ?? [];
  if (webhooks.length > 0) {
    out.family("tabula_webhook_deliveries_total", "counter", "Webhook attempts made by this process, by endpoint and result (delivered: a 2xx).");
    for (const { id, delivered, failed } of webhooks) {
      out.sample("tabula_webhook_deliveries_total", { endpoint: id, result: "delivered" }, delivered);
      out.sample("tabula_webhook_deliveries_total", { endpoint: id, result: "failed" }, failed);
    }
    out.family("tabula_webhook_lag_seconds", "gauge", "Per endpoint this process delivers for, the age of the oldest event not yet delivered (0 when caught up).");
    for (const { id, lagSeconds } of webhooks) if (lagSeconds !== null) out.sample("tabula_webhook_lag_seconds", { endpoint: id }, lagSeconds);
  }
  out.family("tabula_realtime_sockets", "gauge", "Socket.IO connections open (WebSockets at /ws-user-apps/socket.io/).").sample("tabula_realtime_sockets", null, sources.realtime.sockets);
  out.family("tabula_realtime_rooms", "gauge", "Rooms those connections joined: one change feed stream each.").sample("tabula_realtime_rooms", null, sources.realtime.rooms);
  if (sources.droppedLogLines !== null) {
    out.family("tabula_log_lines_dropped_total", "counter", "Request log lines dropped because stdout did not keep up.").sample("tabula_log_lines_dropped_total", null, sources.droppedLogLines);
  }

  const memory = process.memoryUsage();
  out.family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.").sample("process_resident_memory_bytes", null, memory.rss);
  out.family("nodejs_heap_used_bytes", "gauge", "V8 heap in use, in bytes.").sample("nodejs_heap_used_bytes", null, memory.heapUsed);
  out.family("process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch, in seconds.").sample("process_start_time_seconds", null, Math.round(STARTED_SECONDS));
  return out.toString();
}
