// Requests by route template (never the raw path, whose ids would make a series per record),
// method and status, with a latency histogram per route and method (GET /metrics).

import type { Exposition } from "./exposition.ts";
import { Histogram, LATENCY_BUCKETS } from "./histogram.ts";

interface RouteStats {
  readonly method: string;
  readonly route: string;
  readonly statuses: Map<number, { count: number }>;
  readonly latency: Histogram;
}

/** One route, method and status's series, held by a caller that counts many such requests. */
export class SeriesHandle {
  constructor(
    private readonly answered: { count: number },
    private readonly latency: Histogram,
  ) {}

  observe(seconds: number): void {
    this.answered.count++;
    this.latency.observe(seconds);
  }
}

export class RequestMetrics {
  /** By route, then method: two lookups and no string built per request. */
  private readonly routes = new Map<string, Map<string, RouteStats>>();

  observe(method: string, route: string, status: number, seconds: number): void {
    const stats = this.statsOf(method, route);
    answeredOf(stats, status).count++;
    stats.latency.observe(seconds);
  }

  /** The series of one route, method and status, for a hot path to count without a look-up. */
  series(method: string, route: string, status: number): SeriesHandle {
    const stats = this.statsOf(method, route);
    return new SeriesHandle(answeredOf(stats, status), stats.latency);
  }

  private statsOf(method: string, route: string): RouteStats {
    let methods = this.routes.get(route);
    if (!methods) this.routes.set(route, (methods = new Map()));
    let stats = methods.get(method);
    if (!stats) methods.set(method, (stats = { method, route, statuses: new Map(), latency: new Histogram(LATENCY_BUCKETS) }));
    return stats;
  }

  writeTo(out: Exposition): void {
    const routes = [...this.routes.values()].flatMap((methods) => [...methods.values()]).sort((a, b) => a.route.localeCompare(b.route) || a.method.localeCompare(b.method));
    out.family("tabula_http_requests_total", "counter", "Requests answered, by route template, method and status (499: the client closed the connection first).");
    for (const { method, route, statuses } of routes) {
      for (const [status, { count }] of [...statuses].sort((a, b) => a[0] - b[0])) out.sample("tabula_http_requests_total", { route, method, status: String(status) }, count);
    }
    out.family("tabula_http_request_duration_seconds", "histogram", "From a request's arrival to its answer (for streams, to the answer's head), by route template and method.");
    for (const { method, route, latency } of routes) out.histogram("tabula_http_request_duration_seconds", { route, method }, latency);
  }
}

function answeredOf(stats: RouteStats, status: number): { count: number } {
  let answered = stats.statuses.get(status);
  if (!answered) stats.statuses.set(status, (answered = { count: 0 }));
  return answered;
}
