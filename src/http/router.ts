// Method + path → handler and parameters. Literal segments beat parameters (so /bulk is never an
// id), a path with no route for its method answers 405 with Allow, and matching allocates nothing
// but the params object.

export type Params = Record<string, string>;

interface Route<H> {
  /** The route's template, "/api/entities/:entity/:id" (metrics and logs name routes by it). */
  readonly pattern: string;
  readonly segments: readonly string[];
  /** Per segment, its parameter's name (":id" gives "id"), or null for a literal segment. */
  readonly paramNames: ReadonlyArray<string | null>;
  readonly handlers: Map<string, H>;
}

export type Match<H> = { handler: H; params: Params; route: string } | { allowed: string[]; route: string } | null;

export class Router<H> {
  /** Routes by their number of segments, so that a path is only tried against routes of its length. */
  private readonly routesByLength = new Map<number, Route<H>[]>();

  add(method: string, pattern: string, handler: H): this {
    const segments = pattern.split("/").filter((segment) => segment !== "");
    let routes = this.routesByLength.get(segments.length);
    if (!routes) this.routesByLength.set(segments.length, (routes = []));
    let route = routes.find((r) => r.segments.join("/") === segments.join("/"));
    if (!route) {
      const paramNames = segments.map((segment) => (segment.startsWith(":") ? segment.slice(1) : null));
      route = { pattern: `/${segments.join("/")}`, segments, paramNames, handlers: new Map() };
      routes.push(route);
      // More literal segments first: the first route that matches is the most specific.
      routes.sort((a, b) => literalScore(b) - literalScore(a));
    }
    if (route.handlers.has(method)) throw new Error(`router: ${method} ${pattern} is registered twice`);
    route.handlers.set(method, handler);
    return this;
  }

  match(method: string, path: string): Match<H> {
    // A leading slash starts the path and a trailing one names the same resource.
    const from = path.charCodeAt(0) === SLASH ? 1 : 0;
    const to = path.length > from && path.charCodeAt(path.length - 1) === SLASH ? path.length - 1 : path.length;
    const parts = splitPath(path, from, to);
    for (const route of this.routesByLength.get(parts.length) ?? NO_ROUTES) {
      const params = matchSegments(route, parts);
      if (!params) continue;
      const handler = route.handlers.get(method) ?? (method === "HEAD" ? route.handlers.get("GET") : undefined);
      if (handler) return { handler, params, route: route.pattern };
      const allowed = [...route.handlers.keys()];
      if (allowed.includes("GET")) allowed.push("HEAD");
      return { allowed, route: route.pattern };
    }
    return null;
  }
}

function literalScore(route: Route<unknown>): number {
  // Weigh earlier segments more: /a/:b/c and /a/b/:c compare by the first differing kind.
  return route.segments.reduce((score, segment, i) => score + (segment.startsWith(":") ? 0 : 1 / 2 ** i), 0);
}

const SLASH = 0x2f;
const NO_ROUTES: never[] = [];

/**
 * path.slice(from, to).split("/"), without the slice. String.prototype.split with a string
 * separator is a call into the V8 runtime, about as costly as the rest of match together.
 */
function splitPath(path: string, from: number, to: number): string[] {
  const parts: string[] = [];
  for (let start = from; ; ) {
    const end = path.indexOf("/", start);
    if (end === -1 || end >= to) {
      parts.push(path.slice(start, to));
      return parts;
    }
    parts.push(path.slice(start, end));
    start = end + 1;
  }
}

/**
 * The params of a route of the path's length, or null. Segments are compared last first: routes
 * of the same length differ in their last segments (/count, /bulk, /:id), all start with /api.
 */
function matchSegments(route: Route<unknown>, parts: string[]): Params | null {
  const { segments, paramNames } = route;
  for (let i = segments.length - 1; i >= 0; i--) {
    if (paramNames[i] !== null ? parts[i] === "" : segments[i] !== parts[i]) return null;
  }
  const params: Params = {};
  for (let i = 0; i < segments.length; i++) {
    const name = paramNames[i];
    if (name !== null) {
      const part = parts[i]!;
      let value = part;
      if (part.includes("%")) {
        try {
          value = decodeURIComponent(part);
        } catch {
          return null; // not a valid escape: no route names it
        }
      }
      params[name] = value;
    }
  }
  return params;
}
