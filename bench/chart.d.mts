// The types of bench/chart.mjs, for the TypeScript that imports it (test/bench/chart.test.ts).

export interface ChartEntry {
  readonly workload: string;
  /** tabula's figure ÷ the floor's, in the same run. */
  readonly ratio: number;
  readonly target: number;
  readonly direction: "higher" | "lower";
  /** The floor's own figure, as a reader needs it: "bare node:http 51,900 req/s". */
  readonly floor: string;
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
export function writeChart(entries: readonly ChartEntry[], path: string, options?: ChartOptions): void;
export function describeChart(entries: readonly ChartEntry[]): string;
export function escapeXml(value: unknown): string;
