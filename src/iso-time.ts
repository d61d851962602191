// The ISO form of a time (toISOString), made once for each run of equal times: the rows of one
// batch share their time (records.ts), and so do the request log's lines of one millisecond
// (metrics/access-log.ts). A Date and its formatting per use cost more than the string kept.

export class IsoTimes {
  private lastMs = NaN;
  private last = "";

  /** `ms`'s ISO form: the one made last when `ms` is the same time. */
  of(ms: number): string {
    if (ms !== this.lastMs) {
      this.lastMs = ms;
      this.last = new Date(ms).toISOString();
    }
    return this.last;
  }
}
