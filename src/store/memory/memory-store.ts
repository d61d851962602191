// The memory store: every entity's rows in a Table, answered through plan.ts. It is also
// the in-memory half of the file store, which adds the log by overriding persist() and friends.

import type { FilterNode, SortPosition, SortSpec } from "../../query/filter-tree.ts";
import { limitRegexScan } from "./time-limit.ts";
import { planCount, planEach, planList } from "./plan.ts";
import type { DeletedFilter, IdempotentAnswer, ListQuery, ListResult, Row, Store, WriteBatch } from "../store.ts";
import { Table } from "./table.ts";

/** Entity name → the fields that get a value index (enum and boolean fields). */
export type ValueIndexedFields = ReadonlyMap<string, readonly string[]>;

export class MemoryStore implements Store {
  protected readonly tables = new Map<string, Table>();
  /** Insertion order is expiry order (the TTL is fixed), so expired answers sit at the front. */
  protected readonly answers = new Map<string, IdempotentAnswer>();
  /** The largest revision handed out; protected so the file store can carry it across restarts and resets. */
  protected rev = 0;
  private largestId: string | undefined;

  constructor(private readonly valueIndexed: ValueIndexedFields) {}

  get(entity: string, id: string): Row | undefined {
    return this.tables.get(entity)?.rows.get(id);
  }

  list(entity: string, query: ListQuery): ListResult {
    return limitRegexScan(query.filter, () => planList(this.table(entity), query));
  }

  count(entity: string, filter: FilterNode | null, deleted: DeletedFilter): number {
    return limitRegexScan(filter, () => planCount(this.table(entity), filter, deleted));
  }

  valueCounts(entity: string, field: string): ReadonlyMap<unknown, number> | null {
    return this.table(entity).liveCountsOf(field) ?? null;
  }

  forEachLive(entity: string, filter: FilterNode | null, visit: (row: Row) => void): void {
    limitRegexScan(filter, () => planEach(this.table(entity), filter, visit));
  }

  positionOf(entity: string, row: Row, sort: SortSpec): SortPosition {
    return { key: this.table(entity).sortIndex(sort).keyOf(row), id: row.id };
  }

  storedFieldNames(): Map<string, Set<string>> {
    const names = new Map<string, Set<string>>();
    for (const [entity, table] of this.tables) {
      if (table.rows.size === 0) continue;
      const fields = new Set<string>();
      for (const row of table.rows.values()) for (const name in row.data) fields.add(name);
      names.set(entity, fields);
    }
    return names;
  }

  nextRev(): number {
    return ++this.rev;
  }

  maxId(): string | undefined {
    return this.largestId;
  }

  write(batch: WriteBatch): Promise<void> {
    this.apply(batch);
    const durable = this.persist(batch);
    // The answer and the log line (framed by persist) are built: a new version's data JSON has
    // served both, and rows must not keep it (reads cache theirs, bounded; see serialize.ts).
    for (const { row } of batch.puts) if (row.memo?.dataJson !== undefined) row.memo.dataJson = undefined;
    return durable ?? Promise.resolve();
  }

  whenDurable(): Promise<void> | null {
    return null;
  }

  findAnswer(scope: string, now: number): IdempotentAnswer | undefined {
    const answer = this.answers.get(scope);
    return answer && answer.expiresAt > now ? answer : undefined;
  }

  async reset(): Promise<void> {
    this.clear();
  }

  async close(): Promise<void> {}

  /** Makes the batch visible to every later read. Revisions keep growing so old ETags never match again. */
  protected apply(batch: WriteBatch): void {
    for (const { entity, row } of batch.puts) this.applyRow(entity, row);
    if (batch.answer) {
      this.answers.delete(batch.answer.scope);
      this.answers.set(batch.answer.scope, batch.answer);
    }
    this.dropExpiredAnswers(Date.now());
  }

  /** One row of a batch; alone, for rows loaded from a snapshot, which come without a batch. */
  protected applyRow(entity: string, row: Row): void {
    this.table(entity).apply(row);
    if (row.rev > this.rev) this.rev = row.rev;
    if (this.largestId === undefined || row.id > this.largestId) this.largestId = row.id;
  }

  /** Starts making the batch durable; null when there is nothing to wait for. */
  protected persist(_batch: WriteBatch): Promise<void> | null {
    return null;
  }

  protected clear(): void {
    for (const table of this.tables.values()) table.clear();
    this.answers.clear();
  }

  protected dropExpiredAnswers(now: number): void {
    for (const [scope, answer] of this.answers) {
      if (answer.expiresAt > now) break;
      this.answers.delete(scope);
    }
  }

  protected table(entity: string): Table {
    let table = this.tables.get(entity);
    if (!table) {
      table = new Table(entity, this.valueIndexed.get(entity) ?? []);
      this.tables.set(entity, table);
    }
    return table;
  }
}
