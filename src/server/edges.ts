/**
 * HTTPS edges and routes (docs/api.md section 2): read-only over the API; they come from the fixtures file or from
 * the store's ensure* methods. An edge is answered with its routes and their modules inline.
 */
import type { Handler, ServerContext } from "./context.js";
import { notFound } from "./http-error.js";
import { buildPage, parsePageQuery, rejectQuery } from "./paging.js";
import { renderEdge, renderRoute } from "./render.js";
import type { EdgeRecord, RouteRecord } from "./store.js";

function edgeBody(server: ServerContext, account: string, edge: EdgeRecord) {
  return renderEdge(server.baseUrl, server.spBase, edge, server.store.routesOfEdge(account, edge.id));
}

/** The route of the path, or the API's 404 naming the edge or the route that is missing. */
export function findRoute(server: ServerContext, account: string, edgeId: string, routeId: string): RouteRecord {
  const route = server.store.getRoute(account, edgeId, routeId);
  if (route) return route;
  if (!server.store.getEdge(account, edgeId)) throw notFound("HTTPS edge", edgeId);
  throw notFound("route", routeId, `route ${routeId} of HTTPS edge ${edgeId} was not found in this account; check the ids`);
}

export const listEdges: Handler = (server, req) => {
  const page = parsePageQuery(req.query);
  const result = buildPage(`${server.baseUrl}/edges/https`, page, (q) => server.store.listEdges(req.account, q));
  return {
    status: 200,
    body: {
      https_edges: result.items.map((e) => edgeBody(server, req.account, e)),
      uri: result.uri,
      next_page_uri: result.next_page_uri,
    },
  };
};

export const getEdge: Handler = (server, req) => {
  rejectQuery(req.query);
  const id = req.params[0] as string;
  const edge = server.store.getEdge(req.account, id);
  if (!edge) throw notFound("HTTPS edge", id);
  return { status: 200, body: edgeBody(server, req.account, edge) };
};

export const getRoute: Handler = (server, req) => {
  rejectQuery(req.query);
  const route = findRoute(server, req.account, req.params[0] as string, req.params[1] as string);
  return { status: 200, body: renderRoute(server.baseUrl, server.spBase, route) };
};
