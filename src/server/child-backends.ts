/**
 * The child backends of weighted backends (docs/api.md section 2): get and list for each fixture type, as the
 * vendor's API read them, so that a client can check a child id before it writes. They come from the fixtures file
 * or from `--local` provisioning; the API neither creates, changes nor deletes them.
 */
import { childBackendsPath } from "../model/paths.js";
import { CHILD_BACKEND_KINDS, type FixtureBackendType } from "../model/wire.js";
import type { Handler } from "./context.js";
import { notFound } from "./http-error.js";
import { buildPage, parsePageQuery, rejectQuery } from "./paging.js";
import { renderChildBackend } from "./render.js";

/** `GET /backends/<kind>`: the account's backends of `type`, paged as every list. */
export function listChildBackends(type: FixtureBackendType): Handler {
  return async (server, tx, req) => {
    const page = parsePageQuery(req.query);
    const result = await buildPage(`${server.baseUrl}${childBackendsPath(type)}`, page, (q) => tx.listFixtureBackends(req.account, type, q));
    return {
      status: 200,
      body: { backends: result.items.map((b) => renderChildBackend(server.baseUrl, b)), uri: result.uri, next_page_uri: result.next_page_uri },
    };
  };
}

/** `GET /backends/<kind>/<id>`: 404 ERR_NGROK_404 when the account has no backend of `type` with that id. */
export function getChildBackend(type: FixtureBackendType): Handler {
  return async (server, tx, req) => {
    rejectQuery(req.query);
    const id = req.params[0] as string;
    const backend = await tx.getFixtureBackend(req.account, id);
    // The router admits only ids of this type's prefix, so a backend found here is of this type.
    if (!backend) throw notFound(CHILD_BACKEND_KINDS[type].noun, id);
    return { status: 200, body: renderChildBackend(server.baseUrl, backend) };
  };
}
