// The types of bench/hostile.mjs, for the TypeScript that imports it (test/http/hostile-load.test.ts).

export declare const CATASTROPHIC_PATTERNS: readonly string[];

export interface HostileOptions {
  readonly store?: "memory" | "file" | "postgres";
  readonly pgUrl?: string;
  readonly pgSchema?: string;
  readonly records?: number;
  readonly durationMs?: number;
  readonly connections?: number;
  readonly goodConnections?: number;
  readonly heapMb?: number;
  /** The good client's time alone in all, in turns around the attack's. */
  readonly aloneMs?: number;
  /** Turns beside the attack, each followed by one alone (1: alone once, before). */
  readonly rounds?: number;
  readonly cli?: string;
  readonly say?: (line: string) => void;
}

export interface HostileResult {
  readonly store: string;
  readonly wasUp: boolean;
  readonly exitCode: number | null;
  /** From SIGTERM to the process's exit; null when it had not exited 30 s later. */
  readonly sigtermMs: number | null;
  readonly health: { readonly probes: number; readonly failures: number; readonly medianMs: number; readonly p99Ms: number; readonly maxMs: number };
  readonly goodAlone: number;
  readonly goodBeside: number;
  readonly goodRatio: number;
  /** The good client's rate in each turn, in order. */
  readonly goodTurns: { readonly alone: readonly number[]; readonly beside: readonly number[] };
  readonly goodStatuses: Readonly<Record<string, number>>;
  readonly maxResidentMiB: number;
  readonly attackStatuses: Readonly<Record<string, number>>;
  readonly acknowledged: number;
  /** Acknowledged writes missing after the restart; absent on the memory store. */
  readonly lost?: number;
  /** The server's last output. */
  readonly output: string;
}

export declare function runHostile(options?: HostileOptions): Promise<HostileResult>;
