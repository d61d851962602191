// The PostgreSQL store's idempotent answers (docs/api.md): the schema's answers table, a row per
// Idempotency-Key scope, stored by the commit of its write (insertAnswer, in the commit's
// transaction), found by findAnswer until it expires, and swept once expired by any process.

import { ConflictError, type AnswerStore, type IdempotentAnswer } from "../store.ts";
import type { Sql, TransactionSql } from "./connection.ts";
import type { Guard } from "./health.ts";
import type { Names } from "./tables.ts";
import { storedJson } from "./stored-text.ts";

/** How often expired idempotent answers are deleted (they are never found once expired). */
const ANSWER_SWEEP_MS = 10 * 60 * 1000;

/** A PostgresStore's stored answers: found here, stored by its commit (insertAnswer). */
export class PostgresAnswers implements AnswerStore {
  private readonly answerSweep: NodeJS.Timeout;

  constructor(
    /** The store's pool as it is now (PostgresStore replaces it after an outage). */
    private readonly pool: () => Sql,
    private readonly guard: Guard,
    private readonly names: Names,
  ) {
    // Any process may sweep: the statement is the same whoever runs it, and a lost one is harmless.
    this.answerSweep = setInterval(() => {
      this.sql.unsafe(`DELETE FROM ${this.names.answers} WHERE expires_at <= $1`, [Date.now()]).catch(() => {});
    }, ANSWER_SWEEP_MS).unref();
  }

  private get sql(): Sql {
    return this.pool();
  }

  findAnswer(scope: string, now: number): Promise<IdempotentAnswer | undefined> {
    return this.guard(async () => {
      const rows = await this.sql.unsafe(
        `SELECT scope, fingerprint, status, headers, body, expires_at FROM ${this.names.answers} WHERE scope = $1 AND expires_at > $2`,
        [scope, now],
        { prepare: true },
      );
      if (rows.length === 0) return undefined;
      const { fingerprint, status, headers, body, expires_at } = rows[0]!;
      return { scope, fingerprint, status, headers, body, expiresAt: Number(expires_at) };
    });
  }

  /** Stops the sweep (PostgresStore.close). */
  close(): void {
    clearInterval(this.answerSweep);
  }
}

export async function insertAnswer(tx: TransactionSql, names: Names, answer: IdempotentAnswer): Promise<void> {
  const stored = await tx.unsafe(
    `INSERT INTO ${names.answers} (scope, fingerprint, status, headers, body, expires_at) VALUES ($1, $2, $3, $4::text::jsonb, $5, $6)
     ON CONFLICT (scope) DO UPDATE SET fingerprint = excluded.fingerprint, status = excluded.status, headers = excluded.headers,
       body = excluded.body, expires_at = excluded.expires_at
     WHERE ${names.answers}.expires_at <= $7 RETURNING scope`,
    [answer.scope, answer.fingerprint, answer.status, storedJson(answer.headers), answer.body, answer.expiresAt, Date.now()],
  );
  if (stored.length === 0) throw new ConflictError("answer", "This Idempotency-Key was answered meanwhile.");
}
