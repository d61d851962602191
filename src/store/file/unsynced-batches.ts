// The batches the file store has applied to memory but the log has not yet written, each with what
// it replaced, so that when the disk is full they can be taken back out (newest first) and memory
// is again exactly what the log holds (buntdb's rollback of a failed commit). The log owns seqs.

import type { IdempotentAnswer, Row, WriteBatch } from "../store.ts";
import type { Table } from "../memory/table.ts";
import type { IdempotentAnswers } from "../memory/idempotent-answers.ts";

type Undo =
  | {
      /** The tables of the entities the batch drops, as they were (undefined: it had none). */
      readonly drops: ReadonlyArray<{ readonly entity: string; readonly previous: Table | undefined }> | undefined;
      /** Each row's version before the batch, in batch order; undefined for a new record (or one of a dropped entity). */
      readonly puts: ReadonlyArray<{ readonly entity: string; readonly id: string; readonly previous: Row | undefined }>;
      /** Each metadata value before the batch, in batch order; undefined where there was none. */
      readonly meta: ReadonlyArray<{ readonly key: string; readonly previous: unknown }> | undefined;
      readonly answer: { readonly scope: string; readonly previous: IdempotentAnswer | undefined } | undefined;
    }
  | {
      /** A reset: the tables and answers (oldest first) it cleared away. */
      readonly tables: ReadonlyMap<string, Table>;
      readonly answers: readonly IdempotentAnswer[];
    };

export class UnsyncedBatches {
  /** In seq order; never more than the entries waiting for one or two log writes. */
  private readonly entries: Array<{ readonly seq: number; readonly undo: Undo }> = [];

  constructor(
    private readonly tables: Map<string, Table>,
    private readonly answers: IdempotentAnswers,
    private readonly metaValues: Map<string, unknown>,
  ) {}

  /** What `batch` will replace; called before it is applied. */
  undoOf(batch: WriteBatch): Undo {
    const dropped = new Set(batch.drops);
    return {
      drops: dropped.size === 0 ? undefined : [...dropped].map((entity) => ({ entity, previous: this.tables.get(entity) })),
      puts: batch.puts.map(({ entity, row }) => ({ entity, id: row.id, previous: dropped.has(entity) ? undefined : this.tables.get(entity)?.rows.get(row.id) })),
      meta: batch.meta?.length ? batch.meta.map(({ key }) => ({ key, previous: this.metaValues.get(key) })) : undefined,
      answer: batch.answer ? { scope: batch.answer.scope, previous: this.answers.get(batch.answer.scope) } : undefined,
    };
  }

  /** What a reset will clear: the reset must then drop the tables rather than empty them. */
  undoOfReset(): Undo {
    return { tables: new Map(this.tables), answers: [...this.answers.values()] };
  }

  /** The entry `seq` of the log was applied to memory, replacing what `undo` holds. */
  add(seq: number, undo: Undo): void {
    this.entries.push({ seq, undo });
  }

  /** Entries before `seq` are on disk and will never be taken back. */
  forgetBefore(seq: number): void {
    const written = this.entries.findIndex((entry) => entry.seq >= seq);
    this.entries.splice(0, written < 0 ? this.entries.length : written);
  }

  /**
   * Live and deleted records per entity as of the entries before `seq`: memory's counts with the
   * entries from `seq` on taken out on paper, newest first (memory is left as it is). What a backup
   * cut at `seq` holds (see FileStore.backup).
   */
  recordCountsBefore(seq: number): Map<string, { live: number; deleted: number }> {
    const pending = this.entries.filter((entry) => entry.seq >= seq);
    const resetAt = pending.findIndex((entry) => "tables" in entry.undo);
    // Before a pending reset, the tables are the ones it cleared away; only earlier entries matter then.
    const tables = resetAt < 0 ? this.tables : (pending[resetAt]!.undo as { tables: ReadonlyMap<string, Table> }).tables;
    const countsOf = (table: Table): { live: number; deleted: number } => ({ live: table.liveCount, deleted: table.rows.size - table.liveCount });
    const counts = new Map([...tables].map(([entity, table]) => [entity, countsOf(table)]));
    // The table each entity had as of the entry being taken out: before a drop, the one it dropped.
    const tablesThen = new Map(tables);
    const versions = new Map<string, Row | undefined>();
    for (const { undo } of pending.slice(0, resetAt < 0 ? pending.length : resetAt).reverse()) {
      if ("tables" in undo) continue;
      for (let i = undo.puts.length - 1; i >= 0; i--) {
        const { entity, id, previous } = undo.puts[i]!;
        const key = `${entity}\n${id}`;
        const current = versions.has(key) ? versions.get(key) : tablesThen.get(entity)?.rows.get(id);
        versions.set(key, previous);
        let count = counts.get(entity);
        if (!count) counts.set(entity, (count = { live: 0, deleted: 0 }));
        if (current) count[current.deleted ? "deleted" : "live"]--;
        if (previous) count[previous.deleted ? "deleted" : "live"]++;
      }
      for (const { entity, previous } of undo.drops ?? []) {
        if (previous) tablesThen.set(entity, previous);
        else tablesThen.delete(entity);
        counts.set(entity, previous ? countsOf(previous) : { live: 0, deleted: 0 });
        for (const key of versions.keys()) if (key.startsWith(`${entity}\n`)) versions.delete(key);
      }
    }
    return counts;
  }

  /** Takes the entries from `seq` on back out of memory, newest first. */
  rollBack(seq: number): void {
    for (let entry = this.entries.at(-1); entry && entry.seq >= seq; entry = this.entries.at(-1)) {
      this.entries.pop();
      this.undo(entry.undo);
    }
  }

  private undo(undo: Undo): void {
    if ("tables" in undo) {
      this.tables.clear();
      for (const [entity, table] of undo.tables) this.tables.set(entity, table);
      this.answers.clear();
      for (const answer of undo.answers) this.answers.keep(answer);
      return;
    }
    // Answers dropped to make room for the batch's stay dropped: their keys are new keys, as after any drop.
    if (undo.answer) {
      this.answers.delete(undo.answer.scope);
      if (undo.answer.previous) this.answers.keep(undo.answer.previous);
    }
    // Newest first, as the batch applied its writes: metadata, then rows, then drops.
    for (let i = (undo.meta?.length ?? 0) - 1; i >= 0; i--) {
      const { key, previous } = undo.meta![i]!;
      if (previous === undefined) this.metaValues.delete(key);
      else this.metaValues.set(key, previous);
    }
    // Newer entries are undone already, so each table is as this batch left it.
    for (let i = undo.puts.length - 1; i >= 0; i--) {
      const { entity, id, previous } = undo.puts[i]!;
      const table = this.tables.get(entity)!;
      if (previous) table.apply(previous);
      else table.remove(id);
    }
    // A dropped entity's table comes back whole, whatever the batch put into its new one.
    for (const { entity, previous } of undo.drops ?? []) {
      if (previous) this.tables.set(entity, previous);
      else this.tables.delete(entity);
    }
  }
}
