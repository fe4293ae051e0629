/**
 * Outputs: the generated SAML fields of every route whose SAML module the manifests manage (entity id, ACS URL,
 * SLO URL, metadata URL, request-signing certificate fingerprint), which a person copies into the IdP. The server
 * keeps them across replaces, so a module that exists live has them now; a module the plan creates has them only
 * after apply. A module the plan deletes has none. Pure.
 */
import type { SamlOutput } from "../model/plan.js";
import { moduleAddress } from "../model/plan.js";
import type { DesiredEdgeRoute, LiveRoute } from "../model/state.js";
import { compareText } from "../model/canonical.js";

/** Outputs for the given desired routes (each with its live route), sorted by address. */
export function buildOutputs(routes: Array<{ desired: DesiredEdgeRoute; live: LiveRoute }>): SamlOutput[] {
  const outputs: SamlOutput[] = [];
  for (const { desired, live } of routes) {
    if (desired.saml.state === "present") outputs.push(buildOutput(desired.edge, desired.route, live));
  }
  return outputs.sort((a, b) => compareText(a.address, b.address));
}

/**
 * The addresses of the outputs in `after` that a person has to copy again: new ones (absent from `before`, or
 * known only after apply there) and those whose values differ. In the order of `after`.
 */
export function diffOutputs(before: readonly SamlOutput[], after: readonly SamlOutput[]): string[] {
  const was = new Map(before.map((o) => [o.address, o]));
  return after
    .filter((o) => {
      const old = was.get(o.address);
      return old === undefined || old.known_after_apply || OUTPUT_VALUES.some((field) => old[field] !== o[field]);
    })
    .map((o) => o.address);
}

const OUTPUT_VALUES = ["entity_id", "assertion_consumer_service_url", "single_logout_url", "metadata_url", "certificate_sha256"] as const;

/** The output of a route whose SAML module is managed, from the route as read: null values until the module exists. */
export function buildOutput(edge: string, route: string, live: LiveRoute): SamlOutput {
  const saml = live.saml;
  return {
    address: moduleAddress(edge, route, "saml"),
    edge,
    route,
    known_after_apply: saml === null,
    entity_id: saml?.entity_id ?? null,
    assertion_consumer_service_url: saml?.assertion_consumer_service_url ?? null,
    single_logout_url: saml?.single_logout_url ?? null,
    metadata_url: saml?.metadata_url ?? null,
    certificate_sha256: saml ? (live.samlCertificateSha256 ?? null) : null,
  };
}
