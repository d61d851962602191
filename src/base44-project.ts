// A Base44 project folder, as the Base44 CLI lays it out (docs/base44-sdk.md, "A Base44 project, as
// it is"): base44/config.jsonc, its entities folder and base44/.app.jsonc's app id. Found here for
// the command line, which serves it when no schema is named; loading the entities is schema/'s.

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseJsonc, placeOf } from "./schema/jsonc.ts";
import { isPlainObject } from "./schema/load.ts";

/**
 * Only base44/ is looked in: the Base44 CLI also takes a config.jsonc at the top of a project, but
 * there a config.json(c) is too common a name to mean a Base44 project.
 */
const PROJECT_FOLDER = "base44";
/** Both endings, as the Base44 CLI reads them; .jsonc first, as it writes them. */
const CONFIG_FILES = ["config.jsonc", "config.json"];
const APP_FILES = [".app.jsonc", ".app.json"];
/** The Base44 CLI's default, relative to the project folder. */
const DEFAULT_ENTITIES_DIR = "entities";

export interface Base44Project {
  /** The project folder, as shown: "base44/". */
  readonly folder: string;
  /** The entities folder: the config's entitiesDir, relative to the project folder. */
  readonly entitiesDir: string;
  /** base44/.app.jsonc's id; undefined when the project is linked to no app yet. */
  readonly appId: string | undefined;
  /** The file the app id came from, for the banner. */
  readonly appFile: string | undefined;
  /** The config's "visibility": "public" lets visitors in with no key, as Base44 serves a public app. */
  readonly isPublic: boolean;
  /** The config's site.outputDirectory (where the app's build goes), relative to the folder served from; undefined when unsaid. */
  readonly siteDir: string | undefined;
}

/** A project's config file that cannot be read or says something unusable: exit 1, naming the file. */
export class ProjectError extends Error {
  override name = "ProjectError";
}

/** The Base44 project in the folder `cwd`, or null when it holds no base44/config.jsonc (or .json). */
export function findBase44Project(cwd = "."): Base44Project | null {
  const configFile = firstExisting(cwd, CONFIG_FILES);
  if (configFile === undefined) return null;
  const config = readObject(cwd, configFile);
  const entitiesDir = config.entitiesDir ?? DEFAULT_ENTITIES_DIR;
  if (typeof entitiesDir !== "string" || entitiesDir === "") {
    throw new ProjectError(`${configFile}: "entitiesDir" must name a folder in ${PROJECT_FOLDER}/, such as "entities".`);
  }
  const appFile = firstExisting(cwd, APP_FILES);
  const appId = appFile === undefined ? undefined : readObject(cwd, appFile).id;
  if (appFile !== undefined && (typeof appId !== "string" || appId === "")) {
    throw new ProjectError(`${appFile}: "id" must be the app's id, as in { "id": "<app id>" }.`);
  }
  const visibility = config.visibility ?? "private";
  if (typeof visibility !== "string") throw new ProjectError(`${configFile}: "visibility" must be "public" or "private".`);
  const site = config.site ?? {};
  const siteDir = isPlainObject(site) ? site.outputDirectory : undefined;
  if (!isPlainObject(site) || (siteDir !== undefined && (typeof siteDir !== "string" || siteDir === ""))) {
    throw new ProjectError(`${configFile}: "site" must be an object whose "outputDirectory" names the app's build folder, such as "./dist".`);
  }
  return {
    folder: `${PROJECT_FOLDER}/`,
    entitiesDir: join(PROJECT_FOLDER, entitiesDir),
    appId: appId as string | undefined,
    appFile,
    isPublic: visibility === "public",
    siteDir: siteDir as string | undefined,
  };
}

/** The schema a command reads when none is named: a Base44 project's entities here, else ./entities. */
export function defaultSchemaPath(): string {
  return findBase44Project()?.entitiesDir ?? "./entities";
}

/** The first of `names` in the project folder, as a path relative to `cwd`. */
function firstExisting(cwd: string, names: readonly string[]): string | undefined {
  return names.map((name) => join(PROJECT_FOLDER, name)).find((file) => existsSync(join(cwd, file)));
}

function readObject(cwd: string, file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(join(cwd, file), "utf8");
  } catch (error) {
    throw new ProjectError(`${file}: cannot be read (${(error as Error).message}).`);
  }
  let value: unknown;
  try {
    value = parseJsonc(text);
  } catch (error) {
    throw new ProjectError(`${file}${placeOf(text, error as Error)}: not valid JSONC (${(error as Error).message}).`);
  }
  if (!isPlainObject(value)) throw new ProjectError(`${file}: must hold a JSON object.`);
  return value;
}
