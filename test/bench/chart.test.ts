// bench/chart.mjs, the picture at the top of docs/benchmarks.md: one bar per ratio, its target
// drawn where the scale puts it, met and not met told apart by colour and by ✓/✗, text escaped;
// and the ratios kept across runs beside it, merged run by run.

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { ChartEntry } from "../../bench/chart.mjs";

// bench/ is not compiled into .test-build/ with the tests: import it from where it lies.
const chart: typeof import("../../bench/chart.mjs") = await import(new URL("../../bench/chart.mjs", import.meta.url).href);
const { LAYOUT, describeChart, renderChart, recordRatios, readRatios, storeBeside, isMet, scaleMax } = chart;

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

/** A folder with a chart's path and its store's, removed after `body`. */
function inFolder(body: (paths: { chart: string; store: string }) => void) {
  const dir = mkdtempSync(join(tmpdir(), "tabula-chart-"));
  try {
    body({ chart: join(dir, "chart.svg"), store: join(dir, "chart-ratios.json") });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const EARLIER = new Date("2026-11-27T10:00:00Z");
const quiet = { warn: (message: string) => assert.fail(`unexpected warning: ${message}`) };

test("the ratios are kept beside the chart", () => {
  assert.equal(storeBeside("docs/benchmarks.svg"), "docs/benchmarks-ratios.json");
  assert.equal(storeBeside("/tmp/x"), "/tmp/x-ratios.json");
});

test("a second run's ratios replace the same workloads' and keep the others, each labelled with its day if from an earlier run", () => {
  inFolder(({ chart, store }) => {
    const warnings: string[] = [];
    recordRatios([entry("W1", 0.9, 0.8), entry("start-up", 0.6, 0.5, "lower")], { chart, date: EARLIER, host: "host one", warn: (message) => warnings.push(message) });
    assert.equal(warnings.length, 1, "the first run finds no store");
    const { entries, markdown } = recordRatios([entry("start-up", 0.45, 0.5, "lower"), entry("W1-cold", 0.75, 0.7)], { chart, date: DATE, host: HOST, ...quiet });

    const kept = JSON.parse(readFileSync(store, "utf8")).entries;
    assert.deepEqual(kept, entries);
    assert.deepEqual(kept.map((e: { workload: string; ratio: number; date: string; host: string }) => [e.workload, e.ratio, e.date, e.host]), [
      ["W1", 0.9, EARLIER.toISOString(), "host one"],
      ["start-up", 0.45, DATE.toISOString(), HOST],
      ["W1-cold", 0.75, DATE.toISOString(), HOST],
    ]);

    const svg = readFileSync(chart, "utf8");
    const drawn = rows(svg);
    assert.deepEqual(drawn.map((row) => row.value), ["✓ 0.90", "✓ 0.45", "✓ 0.75"]);
    assert.match(drawn[0]!.body, />W1 \(measured 2026-11-27\)</);
    assert.match(drawn[1]!.body, />start-up</);
    assert.doesNotMatch(drawn[1]!.body + drawn[2]!.body, /measured/);
    // Drawn as the newest run: its date and host on top.
    assert.match(svg, /<title id="chart-title">tabula ÷ its floor: the run of 2026-11-28 08:30 UTC, and earlier runs where dated<\/title>/);
    assert.match(svg, />2 × test CPU</);
    assert.match(markdown, /^!\[tabula ÷ its floor, the run of 2026-11-28 and earlier runs where dated: W1 \(measured 2026-11-27\): 0\.90, target ≥ 0\.80, met /);
    assert.match(markdown, /\]\(chart\.svg\)$/);
  });
});

test("recording no ratio redraws the kept ones as their newest run drew them", () => {
  inFolder(({ chart, store }) => {
    recordRatios([entry("W1", 0.9, 0.8), entry("W9", 1.1, 0.7)], { chart, date: DATE, host: HOST, warn: () => {} });
    const first = readFileSync(chart, "utf8");
    const { entries } = recordRatios([], { chart, store, date: new Date("2027-01-01T00:00:00Z"), host: "another host", ...quiet });
    assert.equal(entries.length, 2);
    assert.equal(readFileSync(chart, "utf8"), first);
    assert.match(first, /measured in one run, 2026-11-28 08:30 UTC/);
  });
});

test("a ratio that could not be measured is kept as null and drawn as n/a", () => {
  inFolder(({ chart, store }) => {
    recordRatios([entry("W1", Number.NaN, 0.8)], { chart, date: DATE, host: HOST, warn: () => {} });
    assert.equal(JSON.parse(readFileSync(store, "utf8")).entries[0].ratio, null);
    assert.ok(Number.isNaN(readRatios(store, quiet.warn)[0]!.ratio));
    recordRatios([], { chart, ...quiet });
    assert.equal(rows(readFileSync(chart, "utf8"))[0]!.value, "✗ n/a");
  });
});

test("a missing or damaged store starts afresh with a warning, and the run's ratios are still written", () => {
  const damaged = ["{ not json", "[]", JSON.stringify({ entries: [{ workload: "W1", ratio: 1, target: 0.8, direction: "higher", floor: "f" }] }), JSON.stringify({ entries: [{ workload: "W1", ratio: 1, target: 0.8, direction: "up", floor: "f", date: DATE.toISOString(), host: HOST }] })];
  for (const contents of [null, ...damaged]) {
    inFolder(({ chart, store }) => {
      if (contents !== null) writeFileSync(store, contents);
      const warnings: string[] = [];
      const { entries } = recordRatios([entry("W9", 1.1, 0.7)], { chart, date: DATE, host: HOST, warn: (message) => warnings.push(message) });
      assert.equal(warnings.length, 1, String(contents));
      assert.match(warnings[0]!, contents === null ? /no ratios kept at .*chart-ratios\.json.*starting afresh/ : /chart-ratios\.json are damaged .*starting afresh/);
      assert.deepEqual(entries.map((e) => e.workload), ["W9"]);
      assert.deepEqual(JSON.parse(readFileSync(store, "utf8")).entries.map((e: { workload: string }) => e.workload), ["W9"]);
      assert.deepEqual(rows(readFileSync(chart, "utf8")).map((row) => row.value), ["✓ 1.10"]);
    });
  }
});

test("a bad ratio from a run is refused before anything is written", () => {
  inFolder(({ chart, store }) => {
    assert.throws(() => recordRatios([{ ...entry("W1", 0.9, 0.8), direction: "up" } as unknown as ChartEntry], { chart, ...quiet }), TypeError);
    assert.throws(() => readFileSync(store), /ENOENT/);
    assert.throws(() => readFileSync(chart), /ENOENT/);
  });
});
