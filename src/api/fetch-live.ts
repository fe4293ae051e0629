/**
 * Reads the live side of a plan with the fewest requests: the weighted backend list (page by page) in parallel with
 * the reads of the routes the manifests manage, whose modules come from the first page of the edge list when it
 * holds their edge (read when they are on more than one edge), else from one `GET /edges/https/<edge>` per edge.
 */
import { ApiError } from "../model/errors.js";
import type { DesiredState, LiveRoute, LiveState, LiveWeightedBackend } from "../model/state.js";
import type { HttpsEdge, HttpsRoute, WeightedBackend } from "../model/wire.js";
import { edgePath } from "../model/paths.js";
import type { ApiClient, ModuleKind } from "./client.js";
import { RouteNotFoundError, type MissingRoute } from "./errors.js";
import { liveRouteOf, liveWeightedBackend, sortLiveState, type ReadRoute } from "./live-state.js";
import { compareText } from "../model/canonical.js";
import { readsByListing, readsEdgePage } from "../model/reads.js";
import type { FixtureBackendType } from "../model/wire.js";
import type { ChildRead, ChildReadResult } from "../model/reads.js";

/** The modules of one route to read. */
export interface RouteRead {
  edge: string;
  route: string;
  modules: ModuleKind[];
}

/** Objects to read again: weighted backends by id, and modules of routes. */
export interface TouchedObjects {
  weightedBackendIds: string[];
  modules: Array<{ edge: string; route: string; module: ModuleKind }>;
}

/**
 * Reads the live state the plan of `desired` needs: every weighted backend of the account (the plan looks for owner
 * markers and orphans among them), and the managed modules of the routes the manifests name. A module the manifests
 * leave unmanaged is reported as null whatever the server holds (the plan must not depend on it); a route with no
 * managed module is not read at all and is absent from `routes`. Routes or edges that do not exist: one RouteNotFoundError listing all of them
 * (or, with `missing`, added to it and absent from `routes`). With
 * `weightedBackends: false` (a targeted plan that names none) the weighted backends are not listed; `listings`, when
 * given, are the reads already under way (`startListings`).
 */
export async function fetchLive(
  client: ApiClient,
  desired: DesiredState,
  options: { weightedBackends?: boolean; listings?: Listings; missing?: MissingRoute[] } = {},
): Promise<LiveState> {
  const reads: RouteRead[] = [];
  for (const r of desired.edgeRoutes) {
    const modules: ModuleKind[] = [];
    if (r.saml.state !== "unmanaged") modules.push("saml");
    if (r.circuit_breaker.state !== "unmanaged") modules.push("circuit_breaker");
    if (modules.length > 0) reads.push({ edge: r.edge, route: r.route, modules });
  }
  const listed = options.weightedBackends === false ? Promise.resolve([]) : (options.listings?.weightedBackends ?? listLive(client));
  const [weightedBackends, routes] = await Promise.all([
    listed,
    readRoutes(client, reads, { edges: options.listings?.edges, ...(options.missing ? { missing: options.missing } : {}) }),
  ]);
  return sortLiveState(weightedBackends, routes);
}

/** The account's weighted backends, as live objects. */
function listLive(client: ApiClient): Promise<LiveWeightedBackend[]> {
  return client.listWeightedBackends().then((all) => all.map(liveWeightedBackend));
}

/**
 * Starts listing the weighted backends before they are needed, for `fetchLive` to use. The returned promise never
 * rejects unhandled: a failure is raised where it is awaited.
 */
export function startListing(client: ApiClient): Promise<LiveWeightedBackend[]> {
  const listing = listLive(client);
  listing.catch(() => undefined);
  return listing;
}

/**
 * The account's first reads, which do not depend on the manifests: its weighted backends, and the first page of its
 * edges (each with its routes and modules), which holds every edge of most accounts (100 or fewer) in one request.
 */
export interface Listings {
  /** Absent when not under way: `fetchLive` then lists them itself. */
  weightedBackends?: Promise<LiveWeightedBackend[]>;
  /** The plan's first page of the edge list, read at once or when first needed. */
  edges: EdgePageSource;
}

/**
 * The first page of the edge list for the reads of one plan, read at most once: at once (`startListings`), or by the
 * first read of routes on several edges (`readsEdgePage`), after which every later read of routes takes it too. It
 * gives null when that read failed: every edge is then read by id.
 */
export type EdgePageSource = (edges: number) => Promise<EdgePage | null> | undefined;

/** An `EdgePageSource`; `now`: its read starts at once. */
export function edgePageSource(client: ApiClient, now = false): EdgePageSource {
  let page = now ? readEdgePage(client) : undefined;
  return (edges) => {
    if (!page && readsEdgePage(edges)) page = readEdgePage(client);
    return page;
  };
}

/** Edges of the first page of the edge list by id, and whether that page is the whole list. */
export interface EdgePage {
  edges: ReadonlyMap<string, HttpsEdge>;
  complete: boolean;
}

/**
 * Starts the listings before the manifests are known, for `fetchLive` and `readRoutes` to use; `edges`: also the
 * first page of the edges. The promises never reject unhandled: a failure of the weighted backends' listing is
 * raised where it is awaited, and the edge page is only a shortcut (a failure leaves each edge to its own read).
 */
export function startListings(client: ApiClient, options: { edges: boolean }): Listings {
  return { weightedBackends: startListing(client), edges: edgePageSource(client, options.edges) };
}

/** The first page of the edge list, or null when that read failed (each edge is then read by id). Never rejects. */
function readEdgePage(client: ApiClient): Promise<EdgePage | null> {
  return client.firstEdges().then(
    ({ edges, complete }) => ({ edges: new Map(edges.map((e) => [e.id, e])), complete }),
    () => null,
  );
}

/**
 * Reads the child backends `reads` names (`childIdsToRead`): one GET each, all at once, as the client's semaphore
 * lets them go, each answer checked with its type's wire schema. Only when an id is not found is its type listed,
 * once, for the ids a suggestion may name; an account whose ids all exist sends nothing more.
 */
export async function fetchChildBackends(client: ApiClient, reads: readonly ChildRead[]): Promise<ChildReadResult> {
  const found = new Set<string>();
  const missingTypes = new Set<FixtureBackendType>();
  await Promise.all(
    reads.map(async ({ type, id }) => {
      if ((await client.getChildBackend(type, id)) === null) missingTypes.add(type);
      else found.add(id);
    }),
  );
  const known = new Map<FixtureBackendType, readonly string[]>();
  await Promise.all(
    [...missingTypes].map(async (type) => {
      known.set(
        type,
        (await client.listChildBackends(type)).map((b) => b.id),
      );
    }),
  );
  return { found, known };
}

/** How `fetchTouched` may read. */
export interface FetchTouchedOptions {
  /**
   * How many weighted backends the account holds now, as far as the caller knows (after an apply: those read
   * before it, plus its creates, minus its deletes). When listing them all takes fewer requests than reading the
   * touched ones one by one, they are listed instead (a list page holds 100).
   */
  accountWeightedBackends?: number;
}

/**
 * Reads again only the given objects (a saved plan's staleness check, the convergence check after apply): the
 * weighted backends by id, or by listing them all when `options.accountWeightedBackends` says that takes fewer
 * requests (one that no longer exists is absent from the result either way), and the modules by route
 * (`readRoutes`). Modules not asked for are reported as null.
 */
export async function fetchTouched(client: ApiClient, touched: TouchedObjects, options: FetchTouchedOptions = {}): Promise<LiveState> {
  const byRoute = new Map<string, RouteRead>();
  for (const m of touched.modules) {
    const key = `${m.edge}/${m.route}`;
    const read = byRoute.get(key) ?? { edge: m.edge, route: m.route, modules: [] };
    if (!read.modules.includes(m.module)) read.modules.push(m.module);
    byRoute.set(key, read);
  }
  const ids = [...new Set(touched.weightedBackendIds)];
  const readWeightedBackends = async (): Promise<WeightedBackend[]> => {
    if (ids.length === 0) return [];
    if (readsByListing(ids.length, options.accountWeightedBackends)) {
      const wanted = new Set(ids);
      return (await client.listWeightedBackends()).filter((wb) => wanted.has(wb.id));
    }
    const read = await Promise.all(ids.map((id) => client.getWeightedBackend(id)));
    return read.filter((wb): wb is WeightedBackend => wb !== null);
  };
  const [weightedBackends, routes] = await Promise.all([readWeightedBackends(), readRoutes(client, [...byRoute.values()])]);
  return sortLiveState(weightedBackends.map(liveWeightedBackend), routes);
}

/**
 * Reads the modules of the given routes: from the first page of the edge list (`how.edges`, the plan's, when it
 * is read or the routes are on more than one edge: one request instead of one per edge) for the edges it
 * holds (an edge it lacks does not exist when it is the whole list), else one `GET /edges/https/<edge>` per edge,
 * all in parallel (the client's semaphore bounds what is in flight). Routes or edges that do not exist: one
 * RouteNotFoundError naming them all, or, with `how.missingOk` (modules an inventory records, which may be gone),
 * left out of the result; with `how.missing`, left out and added to it (a plan reports them with its other checks).
 */
export async function readRoutes(
  client: ApiClient,
  reads: RouteRead[],
  how: { edges?: EdgePageSource; missingOk?: boolean; missing?: MissingRoute[] } = {},
): Promise<LiveRoute[]> {
  if (reads.length === 0) return [];
  const byEdge = new Map<string, RouteRead[]>();
  for (const r of reads) byEdge.set(r.edge, [...(byEdge.get(r.edge) ?? []), r]);
  const page = await (how.edges ?? edgePageSource(client))(byEdge.size);
  const results: LiveRoute[] = [];
  const missing: MissingRoute[] = [];
  let listed: Promise<EdgePage | null> | undefined;
  const edgeList = (): Promise<EdgePage | null> => {
    listed ??= readEdgePage(client);
    return listed;
  };
  await Promise.all(
    [...byEdge].map(async ([edgeId, wanted]) => {
      const edge = page?.edges.get(edgeId) ?? (page?.complete ? null : await getEdgeOrNull(client, edgeId));
      if (edge === null) {
        // Only an edge that does not exist needs the list, for the ids a suggestion may name.
        const list = page ?? (how.missing ? await edgeList() : null);
        const near = [...(list?.edges.keys() ?? [])];
        for (const r of wanted) missing.push({ edge: r.edge, route: r.route, edgeExists: false, near });
        return;
      }
      for (const r of wanted) {
        const route = edge.routes.find((x) => x.id === r.route);
        if (route) results.push(liveRouteOf(managedModules(r, route)));
        else missing.push({ edge: r.edge, route: r.route, edgeExists: true, near: edge.routes.map((x) => x.id) });
      }
    }),
  );
  // Sorted so that the message is stable whichever read answered first.
  missing.sort((a, b) => compareText(`${a.edge}/${a.route}`, `${b.edge}/${b.route}`));
  if (how.missing) how.missing.push(...missing);
  else if (missing.length > 0 && !how.missingOk) {
    throw new RouteNotFoundError("GET", edgePath((missing[0] as MissingRoute).edge), missing, undefined);
  }
  return results.sort((a, b) => compareText(`${a.edge}/${a.route}`, `${b.edge}/${b.route}`));
}

/** The route's modules as read, with those not asked for reported as null (the plan does not manage them). */
function managedModules(r: RouteRead, route: HttpsRoute): ReadRoute {
  return {
    edge: r.edge,
    route: r.route,
    saml: r.modules.includes("saml") ? route.saml : null,
    circuit_breaker: r.modules.includes("circuit_breaker") ? route.circuit_breaker : null,
  };
}

/** The edge, or null when it does not exist (404). */
async function getEdgeOrNull(client: ApiClient, edgeId: string): Promise<HttpsEdge | null> {
  try {
    return await client.getEdge(edgeId);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return null;
    throw err;
  }
}
