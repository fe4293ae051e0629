/**
 * The path table of docs/api.md. A path matches a pattern segment by segment; `:prefix` segments capture an id that
 * must have that prefix (a malformed id is 404 ERR_NGROK_222, checked after the method).
 */
import { CHILD_BACKEND_KINDS, ID_PREFIX, type FixtureBackendType } from "../model/wire.js";
import { getChildBackend, listChildBackends } from "./child-backends.js";
import type { Handler } from "./context.js";
import { getEdge, getRoute, listEdges } from "./edges.js";
import { deleteCircuitBreaker, deleteSaml, getCircuitBreaker, getSaml, putCircuitBreaker, putSaml } from "./modules.js";
import { createWeightedBackend, deleteWeightedBackend, getWeightedBackend, listWeightedBackends, updateWeightedBackend } from "./weighted-backends.js";

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

interface Pattern {
  segments: string[];
  methods: Partial<Record<Method, Handler>>;
  allow: string;
  template: string;
}

export interface RouteMatch {
  methods: Partial<Record<Method, Handler>>;
  /** The `Allow` header of this path. */
  allow: string;
  /** The path with its ids as placeholders (`/backends/weighted/{id}`): what metrics label a request with. */
  template: string;
  /** Captured ids and the prefix each must have. */
  params: string[];
  prefixes: string[];
}

const ROUTE = `edges/https/:${ID_PREFIX.edge}/routes/:${ID_PREFIX.route}`;

/** The placeholder of each captured id in a route template. */
const PLACEHOLDERS: Record<string, string> = { [ID_PREFIX.edge]: "{edge_id}", [ID_PREFIX.route]: "{route_id}" };

function pattern(path: string, methods: Partial<Record<Method, Handler>>): Pattern {
  const segments = path.split("/");
  const template = `/${segments.map((s) => (s.startsWith(":") ? (PLACEHOLDERS[s.slice(1)] ?? "{id}") : s)).join("/")}`;
  return { segments, methods, allow: Object.keys(methods).join(", "), template };
}

const PATTERNS: Pattern[] = [
  pattern("backends/weighted", { GET: listWeightedBackends, POST: createWeightedBackend }),
  pattern(`backends/weighted/:${ID_PREFIX.weightedBackend}`, {
    GET: getWeightedBackend,
    PATCH: updateWeightedBackend,
    DELETE: deleteWeightedBackend,
  }),
  ...(Object.keys(CHILD_BACKEND_KINDS) as FixtureBackendType[]).flatMap((type) => {
    const { path, prefix } = CHILD_BACKEND_KINDS[type];
    return [pattern(`backends/${path}`, { GET: listChildBackends(type) }), pattern(`backends/${path}/:${prefix}`, { GET: getChildBackend(type) })];
  }),
  pattern("edges/https", { GET: listEdges }),
  pattern(`edges/https/:${ID_PREFIX.edge}`, { GET: getEdge }),
  pattern(ROUTE, { GET: getRoute }),
  pattern(`${ROUTE}/saml`, { GET: getSaml, PUT: putSaml, DELETE: deleteSaml }),
  pattern(`${ROUTE}/circuit_breaker`, {
    GET: getCircuitBreaker,
    PUT: putCircuitBreaker,
    DELETE: deleteCircuitBreaker,
  }),
];

/** The pattern `path` (without query, starting with `/`) matches, or undefined for an unknown path. */
export function matchRoute(path: string): RouteMatch | undefined {
  const parts = path.split("/");
  // parts[0] is the empty string before the leading slash.
  if (parts[0] !== "") return undefined;
  next: for (const p of PATTERNS) {
    if (parts.length - 1 !== p.segments.length) continue;
    const params: string[] = [];
    const prefixes: string[] = [];
    for (let i = 0; i < p.segments.length; i++) {
      const want = p.segments[i] as string;
      const got = parts[i + 1] as string;
      if (want.startsWith(":")) {
        if (got === "") continue next;
        params.push(got);
        prefixes.push(want.slice(1));
      } else if (want !== got) {
        continue next;
      }
    }
    return { methods: p.methods, allow: p.allow, template: p.template, params, prefixes };
  }
  return undefined;
}
