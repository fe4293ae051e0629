/**
 * Reads the live side of a plan with the fewest requests: the weighted backend list (page by page) in parallel with
 * the reads of the routes the manifests manage. A route's modules come from one `GET /edges/https/<edge>` per edge
 * when the server offers that read, else from the per-module GETs of only the managed modules.
 */
import { ApiError } from "../model/errors.js";
import type { DesiredState, LiveRoute, LiveState, LiveWeightedBackend } from "../model/state.js";
import type { HttpsEdge, WeightedBackend } from "../model/wire.js";
import type { ApiClient, ModuleKind } from "./client.js";
import { RouteNotFoundError, type MissingRoute } from "./errors.js";
import { liveRouteOf, liveWeightedBackend, sortLiveState, type ReadRoute } from "./live-state.js";
import { compareText } from "../model/canonical.js";
import { readsByListing } from "../model/reads.js";

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

/** Whether a client's server answered the edge read; learnt once per client, so later reads skip the probe. */
const edgeReadSupport = new WeakMap<ApiClient, boolean>();

/**
 * Whether the modules of a route are read with one read of its edge (true) or one GET per module (false), as this
 * client learnt from its server; undefined before any module was read.
 */
export function edgeReadsOffered(client: ApiClient): boolean | undefined {
  return edgeReadSupport.get(client);
}

/**
 * Reads the live state the plan of `desired` needs: every weighted backend of the account (the plan looks for owner
 * markers and orphans among them), and the managed modules of the routes the manifests name. A module the manifests
 * leave unmanaged is reported as null whatever the server holds (it is not read in per-module mode, and it must not
 * depend on which read the server offers); a route with no managed module is not read at all and is absent from
 * `routes`. Routes or edges that do not exist: one RouteNotFoundError listing all of them. With
 * `weightedBackends: false` (a targeted plan that names none) the weighted backends are not listed; `listing`, when
 * given, is their listing already under way (`startListing`).
 */
export async function fetchLive(
  client: ApiClient,
  desired: DesiredState,
  options: { weightedBackends?: boolean; listing?: Promise<LiveWeightedBackend[]> } = {},
): Promise<LiveState> {
  const reads: RouteRead[] = [];
  for (const r of desired.edgeRoutes) {
    const modules: ModuleKind[] = [];
    if (r.saml.state !== "unmanaged") modules.push("saml");
    if (r.circuit_breaker.state !== "unmanaged") modules.push("circuit_breaker");
    if (modules.length > 0) reads.push({ edge: r.edge, route: r.route, modules });
  }
  const listed = options.weightedBackends === false ? Promise.resolve([]) : (options.listing ?? listLive(client));
  const [weightedBackends, routes] = await Promise.all([listed, readRoutes(client, reads)]);
  return sortLiveState(weightedBackends, routes);
}

/** The account's weighted backends, as live objects. */
function listLive(client: ApiClient): Promise<LiveWeightedBackend[]> {
  return client.listWeightedBackends().then((all) => all.map(liveWeightedBackend));
}

/**
 * Starts listing the weighted backends before the manifests are known (the listing does not depend on them), for
 * `fetchLive` to use. The returned promise never rejects unhandled: a failure is raised where it is awaited.
 */
export function startListing(client: ApiClient): Promise<LiveWeightedBackend[]> {
  const listing = listLive(client);
  listing.catch(() => undefined);
  return listing;
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
 * requests (one that no longer exists is absent from the result either way), and the modules by route, with one
 * edge read per edge when the server offers it. Modules not asked for are reported as null.
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
 * Reads the modules of the given routes. With edge reads: the first edge is read alone (it tells whether the server
 * offers the read, unless this client already knows), then the other edges in parallel; without: the managed
 * modules one GET each, in parallel. The client's semaphore bounds what is in flight.
 */
export async function readRoutes(client: ApiClient, reads: RouteRead[]): Promise<LiveRoute[]> {
  if (reads.length === 0) return [];
  const byEdge = new Map<string, RouteRead[]>();
  for (const r of reads) byEdge.set(r.edge, [...(byEdge.get(r.edge) ?? []), r]);
  const edges = [...byEdge.keys()].sort();

  const results: LiveRoute[] = [];
  const missing: Array<{ m: MissingRoute; err: RouteNotFoundError | undefined }> = [];
  let pending = edges;

  if (edgeReadSupport.get(client) !== false) {
    const readEdge = async (edgeId: string): Promise<boolean> => {
      let edge: HttpsEdge | "unsupported";
      try {
        edge = await client.getEdge(edgeId);
      } catch (err) {
        if (isNotFound(err)) {
          for (const r of byEdge.get(edgeId) ?? []) missing.push({ m: { edge: r.edge, route: r.route, edgeExists: false }, err: undefined });
          return true;
        }
        throw err;
      }
      if (edge === "unsupported") return false;
      for (const r of byEdge.get(edgeId) ?? []) {
        const route = edge.routes.find((x) => x.id === r.route);
        if (!route) {
          missing.push({ m: { edge: r.edge, route: r.route, edgeExists: true }, err: undefined });
          continue;
        }
        results.push(
          liveRouteOf({
            edge: r.edge,
            route: r.route,
            saml: r.modules.includes("saml") ? route.saml : null,
            circuit_breaker: r.modules.includes("circuit_breaker") ? route.circuit_breaker : null,
          }),
        );
      }
      return true;
    };
    const [first, ...rest] = edges;
    if (edgeReadSupport.get(client) === undefined && first !== undefined) {
      const supported = await readEdge(first);
      edgeReadSupport.set(client, supported);
      pending = supported ? rest : edges;
    }
    if (edgeReadSupport.get(client) === true) {
      const unanswered: string[] = [];
      await Promise.all(
        pending.map(async (e) => {
          if (!(await readEdge(e))) unanswered.push(e);
        }),
      );
      // A server that stops answering edge reads halfway still gets its modules read, one GET each.
      pending = unanswered.sort();
    }
  }

  // Per-module reads for the edges left (the server does not offer edge reads).
  await Promise.all(
    pending.flatMap((edgeId) =>
      (byEdge.get(edgeId) ?? []).map(async (r) => {
        const got: ReadRoute = { edge: r.edge, route: r.route, saml: null, circuit_breaker: null };
        try {
          await Promise.all(
            r.modules.map(async (kind) => {
              if (kind === "saml") got.saml = await client.getModule(r.edge, r.route, "saml");
              else got.circuit_breaker = await client.getModule(r.edge, r.route, "circuit_breaker");
            }),
          );
        } catch (err) {
          if (err instanceof RouteNotFoundError) {
            for (const m of err.missing) missing.push({ m, err });
            return;
          }
          throw err;
        }
        results.push(liveRouteOf(got));
      }),
    ),
  );

  if (missing.length > 0) {
    // One entry per route even when both of its module reads said so; sorted so that the message is stable.
    const seen = new Map<string, { m: MissingRoute; err: RouteNotFoundError | undefined }>();
    for (const x of missing) seen.set(`${x.m.edge}/${x.m.route}`, x);
    const all = [...seen.values()].sort((a, b) => compareText(`${a.m.edge}/${a.m.route}`, `${b.m.edge}/${b.m.route}`));
    const first = all[0] as (typeof all)[number];
    const path = first.err?.path ?? `/edges/https/${encodeURIComponent(first.m.edge)}`;
    throw new RouteNotFoundError("GET", path, all.map((x) => x.m), first.err?.operationId);
  }
  return results.sort((a, b) => compareText(`${a.edge}/${a.route}`, `${b.edge}/${b.route}`));
}

/** getEdge's "edge does not exist": a 404 that carries an error code (an unknown path is "unsupported" instead). */
function isNotFound(err: unknown): boolean {
  return err instanceof ApiError && err.status === 404 && err.errorCode !== undefined;
}

