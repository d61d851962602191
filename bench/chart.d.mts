// The types of bench/chart.mjs, for the TypeScript that imports it (test/bench/chart.test.ts).

export interface ChartEntry {
  readonly workload: string;
  /** tabula's figure ÷ the floor's, in the same run. */
  readonly ratio: number;
  readonly target: number;
  readonly direction: "higher" | "lower";
  /** The floor's own figure, as a reader needs it: "bare node:http 51,900 req/s". */
  readonly floor: string;
  /** When a kept entry was measured (an ISO date and time): see recordRatios. */
  readonly date?: string;
}

/** An entry as docs/benchmarks-ratios.json keeps it: with the date and host of its run. */
export interface KeptEntry extends ChartEntry {
  readonly date: string;
  readonly host: string;
}

export interface RecordOptions {
  /** The SVG's path. */
  readonly chart: string;
  /** The kept ratios' path; by default storeBeside(chart). */
  readonly store?: string;
  readonly date?: Date;
  readonly host?: string;
  readonly warn?: (message: string) => void;
}

export interface ChartOptions {
  readonly date?: Date;
  readonly host?: string;
  readonly max?: number;
}

export const LAYOUT: {
  readonly WIDTH: number;
  readonly LABEL_LEFT: number;
  readonly BAR_LEFT: number;
  readonly BAR_WIDTH: number;
  readonly TOP: number;
  readonly ROW_HEIGHT: number;
  readonly LINE_HEIGHT: number;
  readonly BAR_HEIGHT: number;
  readonly BOTTOM: number;
};
export function isMet(entry: Pick<ChartEntry, "ratio" | "target" | "direction">): boolean;
export function scaleMax(entries: readonly ChartEntry[]): number;
export function xOf(value: number, max: number): number;
export function renderChart(entries: readonly ChartEntry[], options?: ChartOptions): string;
export function describeChart(entries: readonly ChartEntry[], date?: Date): string;
export function storeBeside(chart: string): string;
export function recordRatios(ratios: readonly ChartEntry[], options: RecordOptions): { entries: KeptEntry[]; markdown: string };
export function readRatios(store: string, warn?: (message: string) => void): KeptEntry[];
export function escapeXml(value: unknown): string;
