/**
 * Errors of the API client beyond the shared `ApiError`: a create whose outcome is unknown, and routes or edges that
 * do not exist. Also the redaction every client-made message goes through, so that the API key never leaves it.
 */
import { ApiError, type Diagnostic } from "../model/errors.js";
import type { DesiredEdgeRoute } from "../model/state.js";
import { closest } from "../model/suggest.js";

/**
 * A POST that may or may not have been carried out: the connection dropped or timed out after the request was sent,
 * or the server answered 5xx. It is never resent blindly (a second create would duplicate the object); the caller
 * lists for the owner marker first and adopts what it finds. `status` is 0 when no answer arrived.
 */
export class OutcomeUnknownError extends ApiError {
  override name = "OutcomeUnknownError";
  constructor(
    method: string,
    path: string,
    status: number,
    errorCode: string | undefined,
    /** What happened, e.g. "the connection closed before the answer (UND_ERR_SOCKET)" or "503 ERR_NGROK_...: msg". */
    readonly reason: string,
    operationId: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(method, path, status, errorCode, reason, operationId, options);
    this.message =
      `${method} ${path}: the outcome is unknown: ${reason}` +
      (operationId ? ` (operation ${operationId})` : "") +
      "; the request was not resent, because it may have been carried out: list the objects (by owner marker) before creating again";
  }
}

/**
 * A request that got no answer at all: none after its retries (connection refused or reset), none at once when
 * retrying cannot help (a name that does not resolve), or not sent because the API was taken as gone
 * (./reachability.ts). `what` names the failure (`connection refused (ECONNREFUSED)`); a run that fails many changes
 * this way prints it once for all of them (src/commands/apply.ts).
 */
export class NoAnswerError extends ApiError {
  override name = "NoAnswerError";
  constructor(
    method: string,
    path: string,
    readonly what: string,
    msg: string,
    /** True when the request was not sent at all, because earlier requests found the API gone. */
    readonly notSent: boolean,
    options?: { cause?: unknown },
  ) {
    super(method, path, 0, undefined, msg, undefined, options);
  }
}

/** One route of the manifests that the API does not know. `edgeExists` is false when the whole edge is unknown. */
export interface MissingRoute {
  edge: string;
  route: string;
  edgeExists: boolean;
  /** The ids a typo may have meant: the edge's route ids when it exists, else the edge ids the read saw. */
  near?: readonly string[];
}

/**
 * A route or edge that does not exist (404 `ERR_NGROK_404`, or a route absent from its edge's `routes`). `missing`
 * lists every such route a read found, so one run names them all; the caller adds the manifest positions.
 */
export class RouteNotFoundError extends ApiError {
  override name = "RouteNotFoundError";
  constructor(
    method: string,
    path: string,
    readonly missing: MissingRoute[],
    operationId: string | undefined,
  ) {
    const text = missing.map(describeMissing).join("; ");
    super(method, path, 404, "ERR_NGROK_404", text, operationId);
    this.message = `${text}; routes and edges are not created by edgeplan: check the ids in the manifests`;
  }
}

/** `route R does not exist on edge E`, or `edge E does not exist (named with route R)`. */
export function describeMissing(m: MissingRoute): string {
  return m.edgeExists ? `route ${m.route} does not exist on edge ${m.edge}` : `edge ${m.edge} does not exist (named with route ${m.route})`;
}

/**
 * One error per missing route, at the `route:` value of the manifest that declares it, with the closest route id of
 * the edge (or edge id, for an edge that does not exist) when one is close; null when a manifest declares none.
 */
export function missingRouteDiagnostics(missing: readonly MissingRoute[], routes: readonly DesiredEdgeRoute[]): Diagnostic[] | null {
  const diagnostics: Diagnostic[] = [];
  for (const m of missing) {
    const declared = routes.find((r) => r.edge === m.edge && r.route === m.route);
    if (!declared) return null;
    const fix = m.edgeExists ? "correct the route id, or create the route on the edge first" : "correct the edge id, or create the edge first";
    const near = closest(m.edgeExists ? m.route : m.edge, m.near ?? []);
    const hint = near === undefined ? "" : `; did you mean ${near}?`;
    diagnostics.push({
      severity: "error",
      pos: declared.routeSource ?? declared.source,
      message: `${describeMissing(m)}${hint} edgeplan does not create routes or edges: ${fix}`,
    });
  }
  return diagnostics;
}

/**
 * Replaces every occurrence of `secret` in `text` with `[redacted]`. Messages of
 * libraries and servers are passed through it before they become part of an error, as a guard: the key must never
 * be printed, even when a server or a library echoes a header.
 */
export function redact(text: string, secret: string): string {
  // A key of a character or two would turn every message into noise; such a key is no secret anyway.
  if (secret.length < 4) return text;
  return text.split(secret).join("[redacted]");
}
