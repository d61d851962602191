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

/**
 * The routes of one number of segments, most specific first, and the same list narrowed by the
 * length of the path's last segment: a route ending in a literal ("/count") is only tried on a path
 * whose last segment is as long. A read by id tries one route, not every "/count", "/bulk" and
 * "/export" before it.
 */
interface RoutesOfLength<H> {
  readonly all: Route<H>[];
  /** Indexed by the length of the last segment; where a length has no entry, `endingInParam`. */
  byLastLength: Array<Route<H>[] | undefined>;
  endingInParam: Route<H>[];
}

export class Router<H> {
  /** Routes by their number of segments, so that a path is only tried against routes of its length. */
  private readonly routesByLength: Array<RoutesOfLength<H> | undefined> = [];

  add(method: string, pattern: string, handler: H): this {
    const segments = pattern.split("/").filter((segment) => segment !== "");
    // "/" is one empty segment, as match() reads it.
    if (segments.length === 0) segments.push("");
    if (segments.length > MAX_SEGMENTS) throw new Error(`router: ${pattern} has more than ${MAX_SEGMENTS} segments`);
    const routes = (this.routesByLength[segments.length] ??= { all: [], byLastLength: [], endingInParam: [] });
    let route = routes.all.find((r) => r.segments.join("/") === segments.join("/"));
    if (!route) {
      const paramNames = segments.map((segment) => (segment.startsWith(":") ? segment.slice(1) : null));
      route = { pattern: `/${segments.join("/")}`, segments, paramNames, handlers: new Map() };
      routes.all.push(route);
      // More literal segments first: the first route that matches is the most specific.
      routes.all.sort((a, b) => literalScore(b) - literalScore(a));
      indexByLastLength(routes);
    }
    if (route.handlers.has(method)) throw new Error(`router: ${method} ${pattern} is registered twice`);
    route.handlers.set(method, handler);
    return this;
  }

  match(method: string, path: string): Match<H> {
    // A leading slash starts the path and a trailing one names the same resource.
    const from = path.charCodeAt(0) === SLASH ? 1 : 0;
    const to = path.length > from && path.charCodeAt(path.length - 1) === SLASH ? path.length - 1 : path.length;
    const count = findSegments(path, from, to);
    const routes = this.routesByLength[count];
    if (!routes) return null;
    const lastLength = bounds[2 * count - 1]! - bounds[2 * count - 2]!;
    for (const route of routes.byLastLength[lastLength] ?? routes.endingInParam) {
      const params = matchSegments(route, path);
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

/** Each list keeps the order of `all`, so the first route that matches is the one `all` would give. */
function indexByLastLength<H>(routes: RoutesOfLength<H>): void {
  const endsInParam = (route: Route<H>) => route.paramNames.at(-1) !== null;
  routes.endingInParam = routes.all.filter(endsInParam);
  routes.byLastLength = [];
  for (const route of routes.all) {
    if (endsInParam(route)) continue;
    const length = route.segments.at(-1)!.length;
    routes.byLastLength[length] ??= routes.all.filter((other) => endsInParam(other) || other.segments.at(-1)!.length === length);
  }
}

function literalScore(route: Route<unknown>): number {
  // Weigh earlier segments more: /a/:b/c and /a/b/:c compare by the first differing kind.
  return route.segments.reduce((score, segment, i) => score + (segment.startsWith(":") ? 0 : 1 / 2 ** i), 0);
}

const SLASH = 0x2f;

/** Routes have at most this many segments; a longer path matches none, whatever it holds. */
const MAX_SEGMENTS = 15;
/**
 * Where the segments of the path being matched start and end: segment i is path.slice(bounds[2i],
 * bounds[2i + 1]). Matching reads the path in place through them, instead of splitting it into an
 * array of new strings to compare and then drop: only a parameter's value is ever sliced out. One
 * array serves every match, which runs to its end before another starts.
 */
const bounds = new Int32Array(2 * (MAX_SEGMENTS + 1));

/** The number of "/"-separated segments in path.slice(from, to) (one more than the longest route's when longer), their bounds in `bounds`. */
function findSegments(path: string, from: number, to: number): number {
  for (let count = 0, start = from; ; count++) {
    if (count > MAX_SEGMENTS) return count;
    let end = path.indexOf("/", start);
    if (end === -1 || end > to) end = to;
    bounds[2 * count] = start;
    bounds[2 * count + 1] = end;
    if (end === to) return count + 1;
    start = end + 1;
  }
}

/**
 * The params of a route of the path's length, or null. Segments are compared last first: routes
 * of the same length differ in their last segments (/count, /bulk, /:id), all start with /api.
 */
function matchSegments(route: Route<unknown>, path: string): Params | null {
  const { segments, paramNames } = route;
  for (let i = segments.length - 1; i >= 0; i--) {
    const start = bounds[2 * i]!;
    const length = bounds[2 * i + 1]! - start;
    if (paramNames[i] !== null ? length === 0 : length !== segments[i]!.length || !path.startsWith(segments[i]!, start)) return null;
  }
  const params: Params = {};
  for (let i = 0; i < segments.length; i++) {
    const name = paramNames[i];
    if (name !== null) {
      const part = path.slice(bounds[2 * i], bounds[2 * i + 1]);
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
