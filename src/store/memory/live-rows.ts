// A walk over every row of a table that answers as of its start without copying the table when it
// pauses (turns/time-slices.ts). Rows are immutable versions in a Map, and a Map keeps a key's
// place when its value is replaced, so a walk can read the live Map after a pause if it learns what
// each write replaced: the table tells every paused walk the version a write replaces (the first
// time that record is written after the pause). Meeting such a record later, the walk reads the
// version it replaced, or nothing when the record is newer than the walk; a record met before the
// write was read as it was then. Copying the rest of 100,000 rows took milliseconds at every pause.

import type { Row } from "../store.ts";

export class LiveRows {
  /** Record id → the version current when the walk paused (undefined: no such record then). */
  private replaced: Map<string, Row | undefined> | null = null;
  /** The rest, copied, once the table could no longer tell (Table.clear). */
  private rest: Row[] | null = null;
  private at = 0;
  private isPaused = false;

  constructor(
    private readonly live: Iterator<Row>,
    private readonly pause: (rows: LiveRows) => void,
    private readonly close: (rows: LiveRows) => void,
  ) {}

  next(): Row | undefined {
    if (this.rest !== null) return this.at < this.rest.length ? this.rest[this.at++] : this.end();
    for (;;) {
      const step = this.live.next();
      if (step.done) return this.end();
      const row = step.value;
      if (this.replaced === null || !this.replaced.has(row.id)) return row;
      const then = this.replaced.get(row.id);
      this.replaced.delete(row.id);
      if (then !== undefined) return then;
    }
  }

  /** Call before yielding: from now on the table tells this walk what each write replaces. */
  freeze(): void {
    if (this.isPaused || this.rest !== null) return;
    this.isPaused = true;
    this.pause(this);
  }

  /** The table is writing `id`, whose current version is `old`. */
  replacing(id: string, old: Row | undefined): void {
    this.replaced ??= new Map();
    if (!this.replaced.has(id)) this.replaced.set(id, old);
  }

  /** The table is about to be emptied: the rest is read now, as of the walk's start. */
  copyRest(): void {
    const rest: Row[] = [];
    for (let row = this.next(); row !== undefined; row = this.next()) rest.push(row);
    this.rest = rest;
    this.at = 0;
  }

  /** The walk stops early (refused, or its request failed): the table stops telling it. */
  stop(): void {
    this.end();
  }

  private end(): undefined {
    if (this.isPaused) {
      this.isPaused = false;
      this.close(this);
    }
    this.replaced = null;
    return undefined;
  }
}
