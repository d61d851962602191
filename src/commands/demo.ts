// --demo: the example entities the package ships (examples/entities), built into the bundle, so
// that the demo runs wherever the command does, without a schema folder.

import Note from "../../examples/entities/Note.json" with { type: "json" };
import Task from "../../examples/entities/Task.json" with { type: "json" };

export const DEMO_SCHEMA = { Note, Task };

/** The schema's name in the banner. */
export const DEMO_SCHEMA_NAME = "examples";
