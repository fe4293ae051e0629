/**
 * HTTPS edges and routes (docs/api.md section 2): read-only over the API; they come from the fixtures file or from
 * the store's ensure* methods. An edge is answered with its routes and their modules inline.
 */
import type { Handler, ServerContext } from "./context.js";
import { notFound } from "./http-error.js";
import { buildPage, parsePageQuery, rejectQuery } from "./paging.js";
import { renderEdge, renderRoute } from "./render.js";
import type { EdgeRecord, RouteRecord, StoreTx } from "./store.js";

async function edgeBody(server: ServerContext, tx: StoreTx, account: string, edge: EdgeRecord) {
  return renderEdge(server.baseUrl, server.spBase, edge, await tx.routesOfEdge(account, edge.id));
}

/**
 * The route of the path (locked until the transaction ends with `forUpdate`), or the API's 404 naming the edge or
 * the route that is missing.
 */
export async function findRoute(tx: StoreTx, account: string, params: string[], forUpdate = false): Promise<RouteRecord> {
  const [edgeId, routeId] = params as [string, string];
  const route = await tx.getRoute(account, edgeId, routeId, forUpdate);
  if (route) return route;
  if (!(await tx.getEdge(account, edgeId))) throw notFound("HTTPS edge", edgeId);
  throw notFound("route", routeId, `route ${routeId} of HTTPS edge ${edgeId} was not found in this account; check the ids`);
}

export const listEdges: Handler = async (server, tx, req) => {
  const page = parsePageQuery(req.query);
  const result = await buildPage(`${server.baseUrl}/edges/https`, page, (q) => tx.listEdges(req.account, q));
  const edges = [];
  for (const e of result.items) edges.push(await edgeBody(server, tx, req.account, e));
  return {
    status: 200,
    body: {
      https_edges: edges,
      uri: result.uri,
      next_page_uri: result.next_page_uri,
    },
  };
};

export const getEdge: Handler = async (server, tx, req) => {
  rejectQuery(req.query);
  const id = req.params[0] as string;
  const edge = await tx.getEdge(req.account, id);
  if (!edge) throw notFound("HTTPS edge", id);
  return { status: 200, body: await edgeBody(server, tx, req.account, edge) };
};

export const getRoute: Handler = async (server, tx, req) => {
  rejectQuery(req.query);
  const route = await findRoute(tx, req.account, req.params);
  return { status: 200, body: renderRoute(server.baseUrl, server.spBase, route) };
};
