// The PostgreSQL store's files (docs/postgresql.md): the schema's $files table describes each file
// and $file_chunks holds its bytes as rows of at most CHUNK_BYTES, so every process on the database
// serves every file. An upload's chunks and its $files row are written in one transaction, chunk by
// chunk as the body arrives: a cut-off upload, or a process killed midway, is rolled back whole.
// Files have pools of their own, so that slow uploads never hold the records' connections.

import { Readable } from "node:stream";
import { beginSafely, connectionProblem, loadDriver, poolOpener, type Sql, type TransactionSql } from "./connection.ts";
import { StoreUnreachableError } from "../store.ts";
import { quoteIdent } from "./tables.ts";
import type { FileDraft, FileInfo, FilePage, FileStorage } from "../file-storage.ts";

/** The bytes of one $file_chunks row: a read of a range fetches only the rows it needs. */
export const CHUNK_BYTES = 1024 * 1024;
/** Uploads in progress at once, each holding a connection; the next waits, its body unread. */
const UPLOAD_CONNECTIONS = 4;
const READ_CONNECTIONS = 3;

const COLUMNS = "id, name, size, content_type, is_private, sha256, created_date";

type Step = { readonly kind: "chunk"; readonly data: Buffer } | { readonly kind: "commit"; readonly info: FileInfo } | { readonly kind: "discard" };

/** Thrown inside an upload's transaction to roll it back. */
class Discarded extends Error {}

export class PostgresFiles implements FileStorage {
  private constructor(
    private readonly uploads: Sql,
    private readonly reads: Sql,
    private readonly files: string,
    private readonly chunks: string,
    private readonly url: string,
  ) {}

  /** A database gone away is 503, as for the records (docs/postgresql.md), not a 500. */
  private async reaching<T>(work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (error) {
      const problem = connectionProblem(error, this.url);
      throw problem === null ? error : new StoreUnreachableError(problem.message);
    }
  }

  static async open(url: string, pgSchema: string): Promise<PostgresFiles> {
    const postgres = await loadDriver();
    const uploads = poolOpener(postgres, url, UPLOAD_CONNECTIONS)();
    const reads = poolOpener(postgres, url, READ_CONNECTIONS)();
    const schema = quoteIdent(pgSchema);
    const files = `${schema}.${quoteIdent("$files")}`;
    const chunks = `${schema}.${quoteIdent("$file_chunks")}`;
    try {
      // Processes starting together take turns: CREATE TABLE IF NOT EXISTS races on the type's name.
      await beginSafely(reads, "", async (tx) => {
        await tx.unsafe(`SELECT pg_advisory_xact_lock(hashtextextended('tabula files ' || $1, 0))`, [pgSchema]);
        await tx.unsafe(`CREATE TABLE IF NOT EXISTS ${files} (id text PRIMARY KEY, name text NOT NULL, size bigint NOT NULL, content_type text NOT NULL, is_private boolean NOT NULL, sha256 text NOT NULL, created_date text NOT NULL)`);
        await tx.unsafe(`CREATE TABLE IF NOT EXISTS ${chunks} (file_id text NOT NULL, n integer NOT NULL, data bytea NOT NULL, PRIMARY KEY (file_id, n))`);
      });
    } catch (error) {
      await Promise.all([uploads.end({ timeout: 1 }), reads.end({ timeout: 1 })]).catch(() => undefined);
      throw error;
    }
    return new PostgresFiles(uploads, reads, files, chunks, url);
  }

  async begin(id: string): Promise<FileDraft> {
    const steps: Step[] = [];
    let wake: (() => void) | null = null;
    /** Resolved each time the transaction has handled the steps given so far. */
    let handled: (() => void) | null = null;
    const next = async (): Promise<Step> => {
      while (steps.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      return steps.shift()!;
    };
    const transaction = beginSafely(this.uploads, "", async (tx) => {
      for (let n = 0; ; ) {
        const step = await next();
        if (step.kind === "discard") throw new Discarded();
        if (step.kind === "commit") return this.insert(tx, step.info);
        await tx.unsafe(`INSERT INTO ${this.chunks} (file_id, n, data) VALUES ($1, $2, $3)`, [id, n++, step.data]);
        handled?.();
      }
    });
    const outcome = transaction.then(() => null, (error: unknown) => error);
    let failure: unknown = null;
    void outcome.then((error) => {
      failure = error;
      handled?.();
    });
    /** Hands a step over and waits until the transaction has taken it (backpressure), or failed. */
    const send = async (step: Step): Promise<void> => {
      if (failure !== null) throw failure;
      const done = new Promise<void>((resolve) => (handled = resolve));
      steps.push(step);
      wake?.();
      if (step.kind === "chunk") await done;
      if (failure !== null) throw failure;
    };
    let chunk = Buffer.allocUnsafe(CHUNK_BYTES);
    let filled = 0;
    return {
      write: async (piece) => {
        for (let at = 0; at < piece.length; ) {
          const taken = piece.copy(chunk, filled, at);
          filled += taken;
          at += taken;
          if (filled === CHUNK_BYTES) {
            const full = chunk;
            chunk = Buffer.allocUnsafe(CHUNK_BYTES);
            filled = 0;
            await send({ kind: "chunk", data: full });
          }
        }
      },
      commit: async (info) => {
        if (filled > 0) await send({ kind: "chunk", data: chunk.subarray(0, filled) });
        await send({ kind: "commit", info });
        const error = await outcome;
        if (error !== null) await this.reaching(Promise.reject(error));
      },
      discard: async () => {
        steps.push({ kind: "discard" });
        wake?.();
        await outcome;
      },
    };
  }

  private async insert(tx: TransactionSql, info: FileInfo): Promise<void> {
    await tx.unsafe(`INSERT INTO ${this.files} (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [info.id, info.name, info.size, info.contentType, info.isPrivate, info.sha256, info.createdDate]);
  }

  async info(id: string): Promise<FileInfo | undefined> {
    const rows = await this.reaching(this.reads.unsafe(`SELECT ${COLUMNS} FROM ${this.files} WHERE id = $1`, [id]));
    return rows.length === 0 ? undefined : infoOf(rows[0]!);
  }

  read(info: FileInfo, start: number, end: number): Readable {
    return Readable.from(this.chunksOf(info.id, start, end), { objectMode: false });
  }

  /** Row by row, each fetched only when the last has been taken: memory holds one chunk a reader. */
  private async *chunksOf(id: string, start: number, end: number): AsyncGenerator<Buffer> {
    for (let n = Math.floor(start / CHUNK_BYTES); n * CHUNK_BYTES <= end; n++) {
      const from = Math.max(start - n * CHUNK_BYTES, 0);
      const length = Math.min(end + 1 - n * CHUNK_BYTES, CHUNK_BYTES) - from;
      // substring of bytea counts from 1.
      const rows = await this.reads.unsafe(`SELECT substring(data FROM $3 FOR $4) AS data FROM ${this.chunks} WHERE file_id = $1 AND n = $2`, [id, n, from + 1, length]);
      if (rows.length === 0) throw new Error(`The file ${id} lost its chunk ${n} while it was being read (deleted meanwhile).`);
      yield rows[0]!.data as Buffer;
    }
  }

  async usedBytes(): Promise<number> {
    const rows = await this.reaching(this.reads.unsafe(`SELECT COALESCE(sum(size), 0) AS bytes FROM ${this.files}`));
    return Number(rows[0]!.bytes);
  }

  async list(offset: number, limit: number): Promise<FilePage> {
    const rows = await this.reaching(this.reads.unsafe(`SELECT ${COLUMNS}, count(*) OVER () AS total FROM ${this.files} ORDER BY created_date, id LIMIT $1 OFFSET $2`, [limit, offset]));
    const total = rows.length > 0 ? Number(rows[0]!.total) : Number((await this.reaching(this.reads.unsafe(`SELECT count(*) AS total FROM ${this.files}`)))[0]!.total);
    return { files: rows.map(infoOf), total };
  }

  async delete(id: string): Promise<boolean> {
    return this.reaching(
      beginSafely(this.reads, "", async (tx) => {
        const gone = await tx.unsafe(`DELETE FROM ${this.files} WHERE id = $1 RETURNING id`, [id]);
        await tx.unsafe(`DELETE FROM ${this.chunks} WHERE file_id = $1`, [id]);
        return gone.length > 0;
      }),
    );
  }

  async close(): Promise<void> {
    await Promise.all([this.uploads.end({ timeout: 0.5 }), this.reads.end({ timeout: 0.5 })]);
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function infoOf(row: Record<string, any>): FileInfo {
  return { id: row.id, name: row.name, size: Number(row.size), contentType: row.content_type, isPrivate: row.is_private, sha256: row.sha256, createdDate: row.created_date };
}
