/**
 * Turns wire objects as read from the API into the `live` side of a plan (the fingerprints of the objects a change
 * touches are taken when the change is built: `weightedBackendFingerprint`, `moduleFingerprint`).
 */
import { createHash } from "node:crypto";
import { compareText } from "../model/canonical.js";
import type { LiveRoute, LiveState, LiveWeightedBackend } from "../model/state.js";
import type { CircuitBreakerModule, SamlModule, WeightedBackend } from "../model/wire.js";

/** The modules of one route as read (null: unset, or not managed). */
export interface ReadRoute {
  edge: string;
  route: string;
  saml: SamlModule | null;
  circuit_breaker: CircuitBreakerModule | null;
}

/** The fields of a weighted backend that a plan reads (its `uri` depends on the server's base URL). */
export function liveWeightedBackend(wb: WeightedBackend): LiveWeightedBackend {
  const { id, created_at, description, metadata, backends } = wb;
  return { id, created_at, description, metadata, backends };
}

export function liveRoute(edge: string, route: string, saml: SamlModule | null, circuit_breaker: CircuitBreakerModule | null): LiveRoute {
  const live: LiveRoute = { edge, route, saml, circuit_breaker };
  const sha = saml ? certificateSha256(saml.request_signing_certificate_pem) : undefined;
  if (sha) live.samlCertificateSha256 = sha;
  return live;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]+)-----END CERTIFICATE-----/;

/**
 * The certificate's SHA-256 fingerprint (the digest of its DER bytes, as `X509Certificate.fingerprint256` writes
 * it), or undefined when the PEM does not hold a certificate. The DER is hashed straight from the PEM rather than
 * through a parsed X509Certificate: a plan reads a certificate per managed route, and parsing them all cost
 * more than the rest of the plan.
 */
export function certificateSha256(pem: string): string | undefined {
  const body = PEM_CERTIFICATE.exec(pem)?.[1];
  if (body === undefined) return undefined;
  const der = Buffer.from(body.replace(/\s+/g, ""), "base64");
  // A certificate is a DER SEQUENCE; anything else is not one.
  if (der.length < 2 || der[0] !== 0x30) return undefined;
  const hex = createHash("sha256").update(der).digest("hex").toUpperCase();
  return hex.match(/../g)?.join(":");
}

/** Builds the live state from wire objects, sorted by id so that the same reads give the same state. */
export function buildLiveState(weightedBackends: WeightedBackend[], routes: ReadRoute[]): LiveState {
  return sortLiveState(weightedBackends.map(liveWeightedBackend), routes.map(liveRouteOf));
}

/** A route's modules as read, to the live route. */
export function liveRouteOf(r: ReadRoute): LiveRoute {
  return liveRoute(r.edge, r.route, r.saml, r.circuit_breaker);
}

/** The live state of objects already made live: weighted backends by id, routes by edge and route. */
export function sortLiveState(weightedBackends: LiveWeightedBackend[], routes: LiveRoute[]): LiveState {
  return {
    weightedBackends: weightedBackends.sort((a, b) => compareText(a.id, b.id)),
    routes: routes.sort((a, b) => compareText(`${a.edge}/${a.route}`, `${b.edge}/${b.route}`)),
  };
}
