// bench/chart.mjs, the picture at the top of docs/benchmarks.md: one bar per ratio, its target
// drawn where the scale puts it, met and not met told apart by colour and by ✓/✗, text escaped.

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { ChartEntry } from "../../bench/chart.mjs";

// bench/ is not compiled into .test-build/ with the tests: import it from where it lies.
const chart: typeof import("../../bench/chart.mjs") = await import(new URL("../../bench/chart.mjs", import.meta.url).href);
const { LAYOUT, describeChart, renderChart, writeChart, isMet, scaleMax } = chart;

const DATE = new Date("2026-11-28T08:30:00Z");
const HOST = "2 × test CPU";

function entry(workload: string, ratio: number, target: number, direction: "higher" | "lower" = "higher"): ChartEntry {
  return { workload, ratio, target, direction, floor: `floor of ${workload}` };
}

/** The rows of a rendered chart: each row's attributes and the texts inside it. */
function rows(svg: string) {
  return [...svg.matchAll(/<g class="row" data-met="(true|false)">([\s\S]*?)<\/g>/g)].map(([, met, body]) => ({
    isMet: met === "true",
    bars: [...body!.matchAll(/<rect class="bar" [^>]*width="([\d.]+)"[^>]*fill="(#[0-9a-f]+)"/g)].map(([, width, fill]) => ({ width: Number(width), fill })),
    targets: [...body!.matchAll(/<line class="target" x1="([\d.]+)"/g)].map(([, x]) => Number(x)),
    value: /<text class="value"[^>]*>([^<]*)<\/text>/.exec(body!)?.[1],
    body: body!,
  }));
}

test("the chart has one bar per entry, in order, each as long as its ratio on the scale", () => {
  const entries = [entry("W1 read by id ÷ bare node:http", 0.93, 0.8), entry("W9 creates/s ÷ bare broadcaster", 1.15, 0.7), entry("start-up ÷ naive floor", 1.9, 0.5, "lower")];
  const drawn = rows(renderChart(entries, { date: DATE, host: HOST, max: 2 }));
  assert.equal(drawn.length, entries.length);
  assert.deepEqual(drawn.map((row) => row.bars.length), [1, 1, 1]);
  assert.deepEqual(drawn.map((row) => row.bars[0]!.width), [186, 230, 380]);
  for (const [index, row] of drawn.entries()) assert.match(row.body, new RegExp(`>${entries[index]!.workload}<`));
});

test("an empty run draws no bar and says so", () => {
  const svg = renderChart([], { date: DATE, host: HOST });
  assert.equal(rows(svg).length, 0);
  assert.match(svg, /No ratio was measured in this run\./);
});

test("each target's marker is drawn at its place on a known scale", () => {
  const cases: [target: number, max: number, x: number][] = [
    [0.7, 2, LAYOUT.BAR_LEFT + 0.35 * LAYOUT.BAR_WIDTH],
    [0.5, 1, LAYOUT.BAR_LEFT + 0.5 * LAYOUT.BAR_WIDTH],
    [0.8, 4, LAYOUT.BAR_LEFT + 0.2 * LAYOUT.BAR_WIDTH],
    [0, 2, LAYOUT.BAR_LEFT],
  ];
  for (const [target, max, x] of cases) {
    const [row] = rows(renderChart([entry("W", 0.9, target)], { date: DATE, host: HOST, max }));
    assert.deepEqual(row!.targets, [x], `target ${target} on a scale to ${max}`);
  }
  assert.equal(LAYOUT.BAR_LEFT + 0.35 * LAYOUT.BAR_WIDTH, 500, "the layout these cases were written for");
});

test("the scale reaches past every ratio and target, and at least to the floor (1)", () => {
  const cases: [entries: ChartEntry[], max: number][] = [
    [[entry("a", 0.93, 0.8)], 1.25],
    [[entry("a", 1.9, 0.5, "lower")], 2],
    [[entry("a", 0.2, 0.5, "lower"), entry("b", 2.4, 0.7)], 2.75],
    [[entry("a", Number.NaN, 0.7)], 1.25],
  ];
  for (const [entries, max] of cases) assert.equal(scaleMax(entries), max, JSON.stringify(entries));
});

test("met and not met differ in colour and in a text mark, by the entry's direction", () => {
  const cases: [ratio: number, target: number, direction: "higher" | "lower", met: boolean, value: string][] = [
    [0.93, 0.8, "higher", true, "✓ 0.93"],
    [0.8, 0.8, "higher", true, "✓ 0.80"],
    [0.79, 0.8, "higher", false, "✗ 0.79"],
    [0.5, 0.5, "lower", true, "✓ 0.50"],
    [0.31, 0.5, "lower", true, "✓ 0.31"],
    [1.9, 0.5, "lower", false, "✗ 1.90"],
    [Number.NaN, 0.7, "higher", false, "✗ n/a"],
  ];
  const drawn = rows(renderChart(cases.map(([ratio, target, direction], i) => entry(`W${i}`, ratio, target, direction)), { date: DATE, host: HOST }));
  for (const [index, [ratio, target, direction, met, value]] of cases.entries()) {
    assert.equal(isMet({ ratio, target, direction }), met, `${ratio} against ${direction} ${target}`);
    assert.equal(drawn[index]!.isMet, met);
    assert.equal(drawn[index]!.value, value);
  }
  const colours = (isMetRow: boolean) => new Set(drawn.filter((row) => row.isMet === isMetRow).map((row) => row.bars[0]!.fill));
  assert.equal(colours(true).size, 1);
  assert.equal(colours(false).size, 1);
  assert.notDeepEqual(colours(true), colours(false));
  // The direction is printed with the target: ≥ for higher-is-better, ≤ for lower-is-better.
  assert.match(drawn[0]!.body, />≥ 0\.80</);
  assert.match(drawn[3]!.body, />≤ 0\.50</);
});

test("text from the entries and the host is escaped for XML", () => {
  const svg = renderChart([{ workload: `W<1> & "x" 'y'`, ratio: 1, target: 0.8, direction: "higher", floor: "bare <node:http> & co" }], { date: DATE, host: "host <&>" });
  assert.match(svg, />W&lt;1&gt; &amp; &quot;x&quot; &apos;y&apos;</);
  assert.match(svg, /floor: bare &lt;node:http&gt; &amp; co/);
  assert.match(svg, />host &lt;&amp;&gt;</);
  assert.doesNotMatch(svg, /W<1>|<node:http>|host <&>/);
  // Every & starts an entity, and no < opens anything but a tag.
  assert.doesNotMatch(svg, /&(?!(amp|lt|gt|quot|apos);)/);
  assert.doesNotMatch(svg, /<(?![a-z/])/);
});

test("the title gives the date and the host", () => {
  const svg = renderChart([entry("W1", 1, 0.8)], { date: DATE, host: HOST });
  assert.match(svg, /<title id="chart-title">[^<]*2026-11-28 08:30 UTC<\/title>/);
  assert.match(svg, />2 × test CPU</);
});

test("the chart's words (its <desc>, and the Markdown's text alternative) give every figure and whether it is met", () => {
  const entries = [entry("W1 read by id ÷ bare node:http", 0.87, 0.8), entry("start-up ÷ naive floor", 0.62, 0.5, "lower")];
  const words = describeChart(entries);
  assert.equal(words,
    "W1 read by id ÷ bare node:http: 0.87, target ≥ 0.80, met (floor: floor of W1 read by id ÷ bare node:http). " +
    "start-up ÷ naive floor: 0.62, target ≤ 0.50, not met (floor: floor of start-up ÷ naive floor).");
  assert.match(renderChart(entries, { date: DATE, host: HOST }), /<desc id="chart-desc">W1 read by id ÷ bare node:http: 0\.87, target ≥ 0\.80, met /);
  assert.equal(describeChart([]), "No ratio was measured in this run.");
});

test("an entry without a direction, target or floor is refused, not drawn", () => {
  const good = entry("W1", 0.9, 0.8);
  for (const bad of [{ ...good, direction: "up" }, { ...good, target: Number.NaN }, { ...good, floor: "" }, { ...good, workload: "" }]) {
    assert.throws(() => renderChart([bad as ChartEntry], { date: DATE, host: HOST }), TypeError, JSON.stringify(bad));
  }
});

test("writeChart writes what renderChart renders", () => {
  const dir = mkdtempSync(join(tmpdir(), "tabula-chart-"));
  try {
    const entries = [entry("W1", 0.9, 0.8)];
    writeChart(entries, join(dir, "chart.svg"), { date: DATE, host: HOST });
    const written = readFileSync(join(dir, "chart.svg"), "utf8");
    assert.equal(written, renderChart(entries, { date: DATE, host: HOST }));
    assert.match(written, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
