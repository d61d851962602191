// The Task entity both benchmarks serve (run.mjs over HTTP, read-path.mjs in-process), so that
// their figures describe records of one shape.

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
