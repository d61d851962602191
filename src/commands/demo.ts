// --demo: the example entities the package ships (examples/entities), built into the bundle, so
// that the demo runs wherever the command does, without a schema folder.

import Note from "../../examples/entities/Note.json" with { type: "json" };
import Task from "../../examples/entities/Task.json" with { type: "json" };

export const DEMO_SCHEMA = { Note, Task };

/** The schema's name in the banner. */
export const DEMO_SCHEMA_NAME = "examples";

/**
 * A handful of records per example entity, loaded into the demo's empty memory store, so that the
 * page and the first requests show something to look at.
 */
export const DEMO_SEED = {
  Task: [
    { title: "Read the README", status: "done", priority: 1, estimate: 0.5, done: true, due_date: "2026-01-05", tags: ["docs"], email: "ada@example.com" },
    { title: "Try a filter in the data browser", status: "doing", priority: 2, estimate: 1, done: false, due_date: "2026-01-12", tags: ["ui", "query"] },
    { title: "Create a record with curl", status: "todo", priority: 2, estimate: 0.25, tags: ["api"], start_at: "2026-01-06T09:00:00.000Z" },
    { title: "Subscribe to changes", status: "todo", priority: 3, estimate: 2, tags: ["feed"], meta: { source: "demo" } },
    { title: "Declare an entity of your own", status: "todo", priority: 1, estimate: 1.5, done: false, due_date: "2026-01-20", email: "grace@example.com" },
  ],
  Note: [
    { body: "Records are kept in memory in the demo: a restart starts again from these.", pinned: true },
    { body: "Filters are JSON: q={\"status\":\"todo\"}" },
    { body: "npx tabula-server init writes an entities folder to start your own." },
  ],
};
