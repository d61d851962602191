// The picture of docs/benchmarks.md: every ratio a bench run measured (tabula ÷ its floor, one
// horizontal bar per workload) with each workload's target as a marker on its row, drawn as an SVG
// string with no dependency. What is measured, and against what, is bench/run.mjs's business.
// Whether a bar meets its target is told by colour and by a ✓ or ✗ beside it: colour alone is not
// read by everyone.
//
// Each bench script measures only some of the ratios (bench/run.mjs its workloads, bench/startup.mjs
// start-up and W1-cold, bench/postgres.mjs the PostgreSQL store against direct SQL), so the ratios
// are kept in a JSON file beside the chart (docs/benchmarks-ratios.json), each with the date and
// host of the run that measured it, and every run merges its own into it and draws them all:
//
//   import { recordRatios } from "./chart.mjs";
//   const { markdown } = recordRatios([{ workload: "W1 read by id ÷ bare node:http", ratio: 0.93, target: 0.8,
//     direction: "higher", floor: "bare node:http 51,900 req/s" }], { chart: "docs/benchmarks.svg" });

import { readFileSync, writeFileSync } from "node:fs";
import { basename } from "node:path";
import { describeHost } from "./machine.mjs";

/** Where things go, in SVG user units; the bars' scale runs from 0 at BAR_LEFT to `max` at BAR_LEFT + BAR_WIDTH. */
export const LAYOUT = Object.freeze({
  WIDTH: 880,
  LABEL_LEFT: 16,
  BAR_LEFT: 360,
  BAR_WIDTH: 400,
  TOP: 74,
  /** At least; a row whose label wraps onto more lines is taller. */
  ROW_HEIGHT: 52,
  LINE_HEIGHT: 15,
  BAR_HEIGHT: 20,
  BOTTOM: 56,
});
/** Met and not met: GitHub's green and red, both readable on white and told apart also by ✓/✗. */
const MET_COLOUR = "#1a7f37";
const NOT_MET_COLOUR = "#cf222e";
const INK = "#1f2328";
const MUTED = "#59636e";
/** The scale's end is the next step above every ratio and target (and 1, the floor itself). */
const SCALE_STEP = 0.25;
/** Characters a label line holds left of the bars: the workload in bold 13 px, the floor in 11 px. */
const WORKLOAD_LINE_CHARS = 42;
const FLOOR_LINE_CHARS = 58;
const FONT = "font-family=\"system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif\"";

/** Whether a ratio meets its target: ≥ for higher-is-better, ≤ for lower-is-better (start-up). */
export function isMet({ ratio, target, direction }) {
  if (!Number.isFinite(ratio)) return false;
  return direction === "lower" ? ratio <= target : ratio >= target;
}

/** The ratio at the right end of the bars. */
export function scaleMax(entries) {
  const largest = Math.max(1, ...entries.flatMap((entry) => [entry.target, Number.isFinite(entry.ratio) ? entry.ratio : 0]));
  return Math.ceil((largest * 1.05) / SCALE_STEP) * SCALE_STEP;
}

/** The x of a ratio on a scale whose right end is `max`; past it, the end. */
export function xOf(value, max) {
  return LAYOUT.BAR_LEFT + (Math.min(Math.max(value, 0), max) / max) * LAYOUT.BAR_WIDTH;
}

/**
 * entries: [{ workload, ratio, target, direction: "higher" | "lower", floor, date? }], date being
 * when a kept entry was measured (an ISO string; see recordRatios); options: date (a Date, the
 * run drawn: an entry of another date is labelled with its day), host (text), max (the scale's
 * end; by default scaleMax(entries)). Answers the SVG's text.
 */
export function renderChart(entries, options = {}) {
  for (const entry of entries) checkEntry(entry);
  const max = options.max ?? scaleMax(entries);
  const date = options.date ?? new Date();
  const host = options.host ?? describeHost();
  const { WIDTH, TOP, ROW_HEIGHT, BOTTOM } = LAYOUT;
  const rows = [];
  let rowTop = TOP;
  for (const entry of entries) {
    const labels = [...wrap(labelOf(entry, date), WORKLOAD_LINE_CHARS).map((line) => ({ line, isFloor: false })), ...wrap(`floor: ${entry.floor}`, FLOOR_LINE_CHARS).map((line) => ({ line, isFloor: true }))];
    const height = Math.max(ROW_HEIGHT, labels.length * LAYOUT.LINE_HEIGHT + 16);
    rows.push(drawRow(entry, labels, rowTop, height, max));
    rowTop += height;
  }
  const axisY = entries.length === 0 ? TOP + ROW_HEIGHT : rowTop;
  const height = axisY + BOTTOM;
  const stamp = `${date.toISOString().slice(0, 16).replace("T", " ")} UTC`;
  const title = entries.some((entry) => isFromAnotherRun(entry, date)) ? `tabula ÷ its floor: the run of ${stamp}, and earlier runs where dated` : `tabula ÷ its floor, measured in one run, ${stamp}`;
  const summary = describeChart(entries, date);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-labelledby="chart-title chart-desc" ${FONT}>`,
    `<title id="chart-title">${escapeXml(title)}</title>`,
    `<desc id="chart-desc">${escapeXml(summary)}</desc>`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    text(LAYOUT.LABEL_LEFT, 28, title, { size: 17, weight: "600" }),
    text(LAYOUT.LABEL_LEFT, 50, host, { size: 12, fill: MUTED }),
    ...axis(max, axisY),
    ...(entries.length === 0 ? [text(LAYOUT.BAR_LEFT, TOP + ROW_HEIGHT / 2, "No ratio was measured in this run.", { size: 13, fill: MUTED })] : []),
    ...rows.flat(),
    text(LAYOUT.LABEL_LEFT, height - 16, "Each bar: tabula's figure ÷ the floor's, same run. The dark line: the target. ✓ meets it, ✗ does not. ≤: lower is better.", { size: 12, fill: MUTED }),
    "</svg>",
  ];
  return `${parts.join("\n")}\n`;
}

/**
 * The chart in words: its <desc>, and the text alternative of the Markdown that shows it (an
 * image's own <desc> is not read out when a page shows it with <img>). date: the run drawn, as
 * renderChart's.
 */
export function describeChart(entries, date) {
  if (entries.length === 0) return "No ratio was measured in this run.";
  return entries.map((entry) => `${labelOf(entry, date)}: ${formatRatio(entry.ratio)}, target ${targetText(entry)}, ${isMet(entry) ? "met" : "not met"} (floor: ${entry.floor}).`).join(" ");
}

/** Where a chart's ratios are kept: beside it, docs/benchmarks.svg → docs/benchmarks-ratios.json. */
export function storeBeside(chart) {
  return chart.replace(/(\.svg)?$/, "-ratios.json");
}

/**
 * Merges a run's ratios (entries as renderChart's) into the ratios kept in `store`, each stamped
 * with `date` and `host`: an entry of the same workload is replaced where it stands, the others are
 * kept, a new workload goes last. Then writes the store and draws every kept ratio to `chart`, as
 * the run of the newest entry (so re-rendering with no ratios redraws the chart as it was). A
 * missing or damaged store starts afresh with a warning: a bench's figures are worth more than
 * the kept ones (git has those). Answers the entries drawn and the Markdown that shows the chart.
 */
export function recordRatios(ratios, { chart, store = storeBeside(chart), date = new Date(), host = describeHost(), warn = (message) => console.warn(message) }) {
  for (const entry of ratios) checkEntry(entry);
  const measured = new Map(ratios.map((entry) => [entry.workload, { ...entry, date: date.toISOString(), host }]));
  const kept = readRatios(store, warn);
  const entries = [...kept.map((entry) => measured.get(entry.workload) ?? entry), ...[...measured.values()].filter((entry) => !kept.some((old) => old.workload === entry.workload))];
  // JSON has no NaN: a ratio that could not be measured is kept as null.
  writeFileSync(store, `${JSON.stringify({ entries }, null, 2)}\n`);
  const latest = entries.reduce((newest, entry) => (newest === undefined || Date.parse(entry.date) > Date.parse(newest.date) ? entry : newest), undefined);
  const runDate = latest ? new Date(latest.date) : date;
  writeFileSync(chart, renderChart(entries, { date: runDate, host: latest?.host ?? host }));
  const heading = entries.some((entry) => isFromAnotherRun(entry, runDate)) ? `the run of ${day(runDate)} and earlier runs where dated` : `one run, ${day(runDate)}`;
  return { entries, markdown: `![tabula ÷ its floor, ${heading}: ${describeChart(entries, runDate)}](${basename(chart)})` };
}

/** The entries kept in `store`, or none (with a warning) when it is missing or damaged. */
export function readRatios(store, warn = (message) => console.warn(message)) {
  let text;
  try {
    text = readFileSync(store, "utf8");
  } catch (error) {
    warn(`bench/chart.mjs: no ratios kept at ${store} (${error.code ?? error.message}); starting afresh`);
    return [];
  }
  try {
    const { entries } = JSON.parse(text);
    if (!Array.isArray(entries)) throw new TypeError("it holds no list of entries");
    return entries.map((stored) => {
      const entry = { ...stored, ratio: stored.ratio ?? Number.NaN };
      checkEntry(entry);
      if (Number.isNaN(Date.parse(entry.date)) || typeof entry.host !== "string") throw new TypeError(`the entry of ${entry.workload} needs the date and host of its run`);
      return entry;
    });
  } catch (error) {
    warn(`bench/chart.mjs: the ratios kept at ${store} are damaged (${error.message}); starting afresh`);
    return [];
  }
}

export function escapeXml(value) {
  return String(value).replace(/[&<>"']/g, (char) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" })[char]);
}

/** labels: the row's lines left of the bars, the workload's first, then the floor's. */
function drawRow(entry, labels, top, height, max) {
  const { LABEL_LEFT, BAR_LEFT, BAR_HEIGHT, LINE_HEIGHT } = LAYOUT;
  const met = isMet(entry);
  const colour = met ? MET_COLOUR : NOT_MET_COLOUR;
  const barY = top + (height - BAR_HEIGHT) / 2;
  const labelY = top + (height - labels.length * LINE_HEIGHT) / 2 + 11;
  const end = Number.isFinite(entry.ratio) ? xOf(entry.ratio, max) : BAR_LEFT;
  const targetX = xOf(entry.target, max);
  const mark = met ? "✓" : "✗";
  return [
    `<g class="row" data-met="${met}">`,
    ...labels.map(({ line, isFloor }, index) =>
      text(LABEL_LEFT, round(labelY + index * LINE_HEIGHT), line, isFloor ? { size: 11, fill: MUTED } : { size: 13, weight: "600" })),
    `<rect class="bar" x="${BAR_LEFT}" y="${barY}" width="${round(end - BAR_LEFT)}" height="${BAR_HEIGHT}" fill="${colour}"/>`,
    // A white edge under the marker keeps it visible over a bar of either colour.
    `<line x1="${round(targetX)}" x2="${round(targetX)}" y1="${barY - 6}" y2="${barY + BAR_HEIGHT + 6}" stroke="#ffffff" stroke-width="5.5"/>`,
    `<line class="target" x1="${round(targetX)}" x2="${round(targetX)}" y1="${barY - 6}" y2="${barY + BAR_HEIGHT + 6}" stroke="${INK}" stroke-width="2.5"/>`,
    text(round(targetX), barY - 8, targetText(entry), { size: 11, anchor: "middle" }),
    text(round(Math.max(end, targetX) + 8), barY + 15, `${mark} ${formatRatio(entry.ratio)}`, { size: 13, weight: "600", fill: colour, className: "value" }),
    "</g>",
  ];
}

/** Gridlines at every SCALE_STEP·2 and at 1 (the floor), labelled below the last row. */
function axis(max, axisY) {
  const lines = [];
  const step = max > 2 ? SCALE_STEP * 4 : SCALE_STEP * 2;
  for (let value = 0; value <= max + 1e-9; value += step) lines.push(value);
  if (!lines.includes(1)) lines.push(1);
  return lines.flatMap((value) => {
    const x = round(xOf(value, max));
    const isFloor = value === 1;
    return [
      `<line x1="${x}" x2="${x}" y1="${LAYOUT.TOP - 4}" y2="${axisY}" stroke="${isFloor ? MUTED : "#d1d9e0"}" stroke-width="1"${isFloor ? ' stroke-dasharray="4 3"' : ""}/>`,
      text(x, axisY + 16, isFloor ? "1 = the floor" : formatRatio(value), { size: 11, fill: MUTED, anchor: "middle" }),
    ];
  });
}

function text(x, y, content, { size, weight, fill = INK, anchor, className } = {}) {
  const attributes = [`x="${x}"`, `y="${y}"`, `font-size="${size}"`, `fill="${fill}"`];
  if (weight) attributes.push(`font-weight="${weight}"`);
  if (anchor) attributes.push(`text-anchor="${anchor}"`);
  if (className) attributes.unshift(`class="${className}"`);
  return `<text ${attributes.join(" ")}>${escapeXml(content)}</text>`;
}

/** Words into lines of at most `width` characters (a longer word gets a line of its own). */
function wrap(content, width) {
  const lines = [];
  for (const word of content.split(" ")) {
    const last = lines.at(-1);
    if (last !== undefined && last.length + 1 + word.length <= width) lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(word);
  }
  return lines;
}

/** A kept entry from another run than the one drawn says so: its day, all a reader needs. */
function labelOf(entry, date) {
  return isFromAnotherRun(entry, date) ? `${entry.workload} (measured ${day(new Date(entry.date))})` : entry.workload;
}

function isFromAnotherRun(entry, date) {
  return entry.date !== undefined && date !== undefined && Date.parse(entry.date) !== date.getTime();
}

function day(date) {
  return date.toISOString().slice(0, 10);
}

function targetText({ target, direction }) {
  return `${direction === "lower" ? "≤" : "≥"} ${formatRatio(target)}`;
}

function formatRatio(value) {
  return Number.isFinite(value) ? value.toFixed(2) : "n/a";
}

function round(value) {
  return Math.round(value * 10) / 10;
}

/** A bad entry is the bench's mistake: refuse it where it is made, not as a bar drawn wrong. */
function checkEntry(entry) {
  const where = `bench/chart.mjs: the entry ${JSON.stringify(entry)}`;
  if (typeof entry.workload !== "string" || entry.workload === "") throw new TypeError(`${where} needs a workload`);
  if (!Number.isFinite(entry.target) || entry.target < 0) throw new TypeError(`${where} needs a target ≥ 0`);
  if (entry.direction !== "higher" && entry.direction !== "lower") throw new TypeError(`${where} needs a direction of "higher" or "lower"`);
  if (typeof entry.floor !== "string" || entry.floor === "") throw new TypeError(`${where} needs its floor's figure`);
  if (typeof entry.ratio !== "number") throw new TypeError(`${where} needs a ratio (a number; NaN is drawn as n/a)`);
}
