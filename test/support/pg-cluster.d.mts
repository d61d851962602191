// Types of pg-cluster.mjs, for the TypeScript tests that start a cluster of their own.

export interface Cluster {
  readonly url: string;
  readonly dir: string;
  stop(): void;
  halt(): Promise<void>;
  resume(): Promise<void>;
}

export const MISSING_POSTGRES: string;
export function findPostgresBin(): string | null;
export function startCluster(options?: { durable?: boolean }): Promise<Cluster>;
