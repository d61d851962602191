// The declarations a store keeps of the schema it last served (docs/schema-changes.md), written as
// the JSON a schema file holds, so that loading them back gives the same entities and a future
// version of tabula reads them as it reads any schema.

import type { EntityDef, FieldDef } from "../fields.ts";
import { loadSchemaObject, type Schema } from "../load.ts";
import { ACCESS_OPERATIONS } from "../fields.ts";

/** The store's metadata key the served declarations are kept under. */
export const SCHEMA_META_KEY = "schema";

export type StoredDeclarations = Record<string, Record<string, unknown>>;

export function declarationsOf(schema: Schema): StoredDeclarations {
  return Object.fromEntries([...schema.entities.values()].map((entity) => [entity.name, declarationOf(entity)]));
}

/** The schema that stored declarations describe; null when the store kept none (or none readable). */
export function schemaOfStored(stored: unknown): Schema | null {
  if (typeof stored !== "object" || stored === null || Array.isArray(stored)) return null;
  try {
    return loadSchemaObject(stored as Record<string, unknown>);
  } catch {
    // Declarations this version cannot read (written by a newer one): compare against the records alone.
    return null;
  }
}

function declarationOf(entity: EntityDef): Record<string, unknown> {
  const declaration: Record<string, unknown> = {
    name: entity.name,
    type: "object",
    properties: Object.fromEntries([...entity.fields.values()].map((field) => [field.name, fieldDeclarationOf(field)])),
    required: [...entity.fields.values()].filter((field) => field.required).map((field) => field.name),
  };
  if (entity.unique.length > 0) declaration.unique = entity.unique;
  if (entity.publishableAccess.size !== ACCESS_OPERATIONS.length) declaration.access = { publishable: ACCESS_OPERATIONS.filter((operation) => entity.publishableAccess.has(operation)) };
  if (entity.rls !== undefined) declaration.rls = entity.rls;
  return declaration;
}

function fieldDeclarationOf(field: FieldDef): Record<string, unknown> {
  const declaration: Record<string, unknown> = { type: field.type };
  if (field.format !== undefined) declaration.format = field.format;
  if (field.enum !== undefined) declaration.enum = field.enum;
  if (field.default !== undefined) declaration.default = field.default;
  if (field.items !== undefined) declaration.items = fieldDeclarationOf(field.items);
  if (field.properties !== undefined) {
    declaration.properties = Object.fromEntries([...field.properties].map(([name, member]) => [name, fieldDeclarationOf(member)]));
    declaration.required = [...field.properties].filter(([, member]) => member.required).map(([name]) => name);
  }
  for (const bound of ["minimum", "maximum", "minLength", "maxLength"] as const) if (field[bound] !== undefined) declaration[bound] = field[bound];
  if (field.pattern !== undefined) declaration.pattern = field.pattern.source;
  if (field.rls !== undefined) declaration.rls = field.rls;
  return declaration;
}
