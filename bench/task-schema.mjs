// The Task entity the benchmarks serve (run.mjs and postgres.mjs over HTTP, read-path.mjs
// in-process), and the deterministic records they fill it with, so that their figures describe
// records of one shape.

export const STATUSES = ["todo", "doing", "done"];

export const TASK_SCHEMA = {
  Task: {
    name: "Task",
    type: "object",
    properties: {
      title: { type: "string" },
      status: { type: "string", enum: STATUSES, default: "todo" },
      priority: { type: "integer" },
      estimate: { type: "number" },
      done: { type: "boolean" },
      due_date: { type: "string", format: "date" },
      tags: { type: "array", items: { type: "string" } },
    },
    required: ["title"],
  },
};

const TAGS = ["red", "green", "blue", "ops", "web", "api", "docs", "urgent"];

// Title words: 300 made-up words, three per title, so that each word is in ~1% of the records.
// W6 searches for such a word: a realistic search-box query, neither a full scan nor a first hit.
export const WORDS = Array.from({ length: 300 }, (_, i) => "bcdfgklmnprstvz"[i % 15] + "aeiou"[Math.floor(i / 15) % 5] + "lmnrst"[Math.floor(i / 75) % 6] + "aeiou"[i % 4] + "x");

/** mulberry32: the same records for the same --records, run after run. */
export function createRandom(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function makeTask(index, random) {
  const pick = (list) => list[Math.floor(random() * list.length)];
  const day = new Date(Date.UTC(2026, 0, 1) + Math.floor(random() * 365) * 86_400_000);
  return {
    title: `${pick(WORDS)} ${pick(WORDS)} ${pick(WORDS)} task ${index}`,
    status: pick(STATUSES),
    priority: 1 + Math.floor(random() * 100),
    estimate: Math.round(random() * 1000) / 10,
    done: random() < 0.3,
    due_date: day.toISOString().slice(0, 10),
    tags: Array.from({ length: Math.floor(random() * 4) }, () => pick(TAGS)),
  };
}
