// The Prometheus text exposition format (version 0.0.4): a HELP and a TYPE line per family, then
// its samples. Label values are escaped as the format says (backslash, double quote, newline).

import type { Histogram } from "./histogram.ts";

export const EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

export type Labels = Readonly<Record<string, string>>;

export class Exposition {
  private text = "";

  family(name: string, type: "counter" | "gauge" | "histogram", help: string): this {
    this.text += `# HELP ${name} ${help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}\n# TYPE ${name} ${type}\n`;
    return this;
  }

  sample(name: string, labels: Labels | null, value: number): this {
    this.text += `${name}${labelText(labels)} ${formatValue(value)}\n`;
    return this;
  }

  /** A histogram's buckets (cumulative, then +Inf), sum and count, under the family `name`. */
  histogram(name: string, labels: Labels | null, histogram: Histogram): this {
    const cumulative = histogram.cumulative();
    histogram.bounds.forEach((bound, i) => this.sample(`${name}_bucket`, { ...labels, le: String(bound) }, cumulative[i]!));
    this.sample(`${name}_bucket`, { ...labels, le: "+Inf" }, histogram.count);
    this.sample(`${name}_sum`, labels, histogram.sum);
    return this.sample(`${name}_count`, labels, histogram.count);
  }

  toString(): string {
    return this.text;
  }
}

function labelText(labels: Labels | null): string {
  if (labels === null) return "";
  const pairs = Object.entries(labels).map(([name, value]) => `${name}="${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`);
  return pairs.length === 0 ? "" : `{${pairs.join(",")}}`;
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}
