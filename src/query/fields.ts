// Parses `fields` (docs/query-language.md): names to return besides `id`, each a real field.

import { invalidParameter } from "../errors.ts";
import type { EntityDef } from "../schema/fields.ts";
import { resolveField, type FieldAccess } from "./filter.ts";

export function parseFieldSelection(entity: EntityDef, text: string, access: FieldAccess): string[] {
  const names = text.split(",").map((name) => name.trim());
  if (names.some((name) => name === "")) {
    throw invalidParameter("fields", `Parameter fields has an empty name; write comma-separated field names such as fields=title,status.`);
  }
  for (const name of names) resolveField(entity, name, access);
  return [...new Set(names.filter((name) => name !== "id"))];
}
