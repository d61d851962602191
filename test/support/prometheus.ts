// A parser of the Prometheus text exposition format (version 0.0.4) that enforces its rules, for
// tests of GET /metrics: HELP and TYPE once per family and before its samples, a family's samples
// together, valid metric and label names, label values with only \\, \" and \n escapes, no series
// twice, and histograms whose buckets are sorted by le, cumulative, end with +Inf equal to _count,
// and come with _sum and _count. It throws on the first broken rule, naming the line.

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Exposition {
  readonly types: ReadonlyMap<string, string>;
  readonly samples: readonly Sample[];
  /** The value of the one sample of `name` whose labels include `labels`; undefined if none. */
  value(name: string, labels?: Readonly<Record<string, string>>): number | undefined;
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);

export function parseExposition(text: string): Exposition {
  assert(text.endsWith("\n"), "the text ends with a line feed");
  const types = new Map<string, string>();
  const helps = new Set<string>();
  const samples: Sample[] = [];
  const series = new Set<string>();
  const finished = new Set<string>();
  let current: string | null = null;
  text
    .slice(0, -1)
    .split("\n")
    .forEach((line, index) => {
      const where = `line ${index + 1} (${JSON.stringify(line)})`;
      if (line.trim() === "") return;
      if (line.startsWith("#")) {
        const match = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(line);
        if (!match) return; // any other comment is allowed
        const [, keyword, name, rest = ""] = match;
        assert(METRIC_NAME.test(name!), `${where}: a metric name`);
        if (keyword === "HELP") {
          assert(!helps.has(name!), `${where}: HELP given twice`);
          assert(!/\\[^\\n]/.test(rest.replace(/\\\\/g, "")), `${where}: HELP escapes only \\\\ and \\n`);
          helps.add(name!);
        } else {
          assert(!types.has(name!), `${where}: TYPE given twice`);
          assert(TYPES.has(rest), `${where}: a known type`);
          assert(!samples.some((sample) => familyOf(sample.name, types) === name), `${where}: TYPE before the family's samples`);
          types.set(name!, rest);
        }
        enter(name!, where);
        return;
      }
      const sample = parseSample(line, where);
      const family = familyOf(sample.name, types);
      enter(family, where);
      const key = `${sample.name}${JSON.stringify(Object.entries(sample.labels).sort())}`;
      assert(!series.has(key), `${where}: the same series twice`);
      series.add(key);
      const type = types.get(family);
      if (type === "counter") assert(sample.value >= 0, `${where}: a counter is never negative`);
      if (type === "histogram") assert(/_(bucket|sum|count)$/.test(sample.name) && sample.name.startsWith(family), `${where}: a histogram's samples are _bucket, _sum and _count`);
      samples.push(sample);
    });
  for (const [family, type] of types) if (type === "histogram") checkHistogram(family, samples);

  function enter(family: string, where: string): void {
    if (current === family) return;
    assert(!finished.has(family), `${where}: ${family}'s lines are not together`);
    if (current !== null) finished.add(current);
    current = family;
  }

  return {
    types,
    samples,
    value(name, labels = {}) {
      const found = samples.filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value));
      assert(found.length <= 1, `${name} ${JSON.stringify(labels)} names ${found.length} samples`);
      return found[0]?.value;
    },
  };
}

function parseSample(line: string, where: string): Sample {
  const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)(?: (-?\d+))?$/.exec(line);
  assert(match !== null, `${where}: a sample is name{labels} value [timestamp]`);
  const [, name, labelText, valueText] = match!;
  const labels: Record<string, string> = {};
  if (labelText) {
    let rest = labelText.slice(1, -1);
    while (rest.length > 0) {
      const label = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,?)/.exec(rest);
      assert(label !== null && LABEL_NAME.test(label[1]!), `${where}: labels are name="value" with \\\\, \\" and \\n escapes only`);
      assert(!(label![1]! in labels), `${where}: a label given twice`);
      labels[label![1]!] = label![2]!.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
      rest = rest.slice(label![0].length);
      assert(label![3] === "," || rest.length === 0, `${where}: labels are separated by commas`);
    }
  }
  const value = valueText === "+Inf" ? Infinity : valueText === "-Inf" ? -Infinity : valueText === "NaN" ? NaN : Number(valueText);
  assert(valueText === "NaN" || !Number.isNaN(value), `${where}: a value is a number`);
  return { name: name!, labels, value };
}

/** The family a sample belongs to: its name, or for a histogram's or summary's parts the name declared. */
function familyOf(name: string, types: ReadonlyMap<string, string>): string {
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    const base = name.slice(0, -suffix.length);
    if (name.endsWith(suffix) && (types.get(base) === "histogram" || types.get(base) === "summary")) return base;
  }
  return name;
}

function checkHistogram(family: string, samples: readonly Sample[]): void {
  const groups = new Map<string, Sample[]>();
  for (const sample of samples) {
    if (!sample.name.startsWith(family)) continue;
    const { le, ...rest } = sample.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key)!.push(sample);
  }
  for (const [labels, group] of groups) {
    const buckets = group.filter((sample) => sample.name === `${family}_bucket`);
    const bounds = buckets.map((bucket) => (bucket.labels.le === "+Inf" ? Infinity : Number(bucket.labels.le)));
    assert(bounds.every((bound, i) => !Number.isNaN(bound) && (i === 0 || bound > bounds[i - 1]!)), `${family}${labels}: buckets sorted by le`);
    assert(bounds.at(-1) === Infinity, `${family}${labels}: a +Inf bucket`);
    assert(buckets.every((bucket, i) => i === 0 || bucket.value >= buckets[i - 1]!.value), `${family}${labels}: buckets are cumulative`);
    const count = group.find((sample) => sample.name === `${family}_count`);
    assert(count !== undefined && group.some((sample) => sample.name === `${family}_sum`), `${family}${labels}: _sum and _count`);
    assert(count!.value === buckets.at(-1)!.value, `${family}${labels}: the +Inf bucket equals _count`);
  }
}

function assert(condition: boolean, rule: string): asserts condition {
  if (!condition) throw new Error(`Not the Prometheus text format: ${rule}`);
}
