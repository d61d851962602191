// Method + path → handler and parameters. Literal segments beat parameters (so /bulk is never an
// id), a path with no route for its method answers 405 with Allow, and matching allocates nothing
// but the params object.

export type Params = Record<string, string>;

interface Route<H> {
  readonly segments: readonly string[];
  readonly handlers: Map<string, H>;
}

export type Match<H> = { handler: H; params: Params } | { allowed: string[] } | null;

export class Router<H> {
  private readonly routes: Route<H>[] = [];

  add(method: string, pattern: string, handler: H): this {
    const segments = pattern.split("/").filter((segment) => segment !== "");
    let route = this.routes.find((r) => r.segments.join("/") === segments.join("/"));
    if (!route) {
      route = { segments, handlers: new Map() };
      this.routes.push(route);
      // More literal segments first: the first route that matches is the most specific.
      this.routes.sort((a, b) => literalScore(b) - literalScore(a));
    }
    if (route.handlers.has(method)) throw new Error(`router: ${method} ${pattern} is registered twice`);
    route.handlers.set(method, handler);
    return this;
  }

  match(method: string, path: string): Match<H> {
    const parts = path.split("/");
    if (parts[0] === "") parts.shift();
    if (parts.at(-1) === "") parts.pop(); // a trailing slash names the same resource
    for (const route of this.routes) {
      const params = matchSegments(route.segments, parts);
      if (!params) continue;
      const handler = route.handlers.get(method) ?? (method === "HEAD" ? route.handlers.get("GET") : undefined);
      if (handler) return { handler, params };
      const allowed = [...route.handlers.keys()];
      if (allowed.includes("GET")) allowed.push("HEAD");
      return { allowed };
    }
    return null;
  }
}

function literalScore(route: Route<unknown>): number {
  // Weigh earlier segments more: /a/:b/c and /a/b/:c compare by the first differing kind.
  return route.segments.reduce((score, segment, i) => score + (segment.startsWith(":") ? 0 : 1 / 2 ** i), 0);
}

const COLON = 0x3a;

function matchSegments(segments: readonly string[], parts: string[]): Params | null {
  if (segments.length !== parts.length) return null;
  const params: Params = {};
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    if (segment.charCodeAt(0) === COLON) {
      const part = parts[i]!;
      if (part === "") return null;
      let value = part;
      if (part.includes("%")) {
        try {
          value = decodeURIComponent(part);
        } catch {
          return null; // not a valid escape: no route names it
        }
      }
      params[segment.slice(1)] = value;
    } else if (segment !== parts[i]) {
      return null;
    }
  }
  return params;
}
