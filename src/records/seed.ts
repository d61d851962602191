// Seeds (--seed, docs/operating.md, and `seed` in the embedding API): { "<Entity>": [records...] },
// validated like creates when loaded (an invalid seed stops start-up naming entity, index and
// field) and stored, as one batch, only when the store holds no record at all.

import { readFileSync } from "node:fs";
import { ApiError } from "../errors.ts";
import { isTooDeep, MAX_JSON_DEPTH, type SizeLimits } from "../json-depth.ts";
import { isPlainObject, type Schema } from "../schema/load.ts";
import { validateCreate } from "../schema/validate.ts";
import { ConflictError } from "../store/store.ts";
import type { Records } from "./records.ts";
import type { KeyRef } from "../keys/caller.ts";
import { settingName } from "../option-names.ts";

/** A seed file's path, or its content. */
export type SeedSource = string | Readonly<Record<string, readonly unknown[]>>;

export class SeedError extends Error {
  override name = "SeedError";
}

export interface Seed {
  /** Stores the seed when the store is empty; answers how many records it stored. */
  apply(records: Records, by: KeyRef): Promise<number>;
}

export function loadSeed(schema: Schema, source: SeedSource, limits: SizeLimits): Seed {
  const where = typeof source === "string" ? source : "seed";
  const content = typeof source === "string" ? readSeedFile(source) : source;
  if (!isPlainObject(content)) throw new SeedError(`${where}: a seed must be a JSON object { "<Entity>": [records...] }.`);
  const values: Array<{ entity: string; values: Record<string, unknown> }> = [];
  for (const [name, items] of Object.entries(content)) {
    const entity = schema.entities.get(name);
    if (!entity) throw new SeedError(`${where}: entity "${name}" is not declared. Entities: ${[...schema.entities.keys()].join(", ")}.`);
    if (!Array.isArray(items)) throw new SeedError(`${where}: "${name}" must be an array of records.`);
    items.forEach((item, index) => {
      if (isTooDeep(item)) {
        throw new SeedError(`${where}: ${name}[${index}] nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels, as no request may; flatten it.`);
      }
      try {
        values.push({ entity: name, values: validateCreate(entity, item, limits) });
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        throw new SeedError(`${where}: ${name}[${index}]: ${error.message}`);
      }
    });
  }
  return {
    async apply(records, by) {
      const store = records.store;
      const entities = [...schema.entities.keys()];
      for (const entity of entities) if ((await store.count(entity, null, "include")) > 0) return 0;
      if (values.length === 0) return 0;
      const caller = { keyId: by.id, kind: by.kind };
      const now = Date.now();
      const puts = values.map(({ entity, values }) => ({ entity, row: records.newRow(values, caller, now), replaces: 0 }));
      // Processes sharing a store may start together: the one whose seed finds every entity still empty stores it.
      const matches = entities.map((entity) => ({ entity, filter: null, ids: [], locks: [`${entity}\nseed`] }));
      try {
        await store.commit({ puts, matches });
      } catch (error) {
        if (error instanceof ConflictError) return 0;
        throw error;
      }
      return puts.length;
    },
  };
}

function readSeedFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    throw new SeedError(`Seed file ${file} cannot be read; check the path given to ${settingName("seed")}.`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new SeedError(`Seed file ${file} is not valid JSON: ${(error as Error).message}.`);
  }
}
