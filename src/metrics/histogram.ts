// A Prometheus histogram's state: counts per bucket, their sum and count. Observing is a short
// loop over a dozen bounds and two additions, cheap enough for every request.

export class Histogram {
  /** Per bound, the observations at most that bound and above the one before (not cumulative). */
  private readonly counts: Float64Array;
  sum = 0;
  count = 0;

  /** `bounds`: the buckets' upper bounds, increasing; +Inf is implied. */
  constructor(readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    this.sum += value;
    this.count++;
    const { bounds } = this;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]!) {
        this.counts[i]!++;
        return;
      }
    }
  }

  /** Cumulative counts per bound, as the exposition format has them; the +Inf bucket is `count`. */
  cumulative(): number[] {
    const out: number[] = [];
    let total = 0;
    for (const count of this.counts) out.push((total += count));
    return out;
  }
}

/** Request latencies, in seconds: from a cached read (well under a millisecond) to a slow export. */
export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Durable log writes (write + fdatasync), in seconds: a fast NVMe disk to a stalled network one. */
export const FSYNC_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
