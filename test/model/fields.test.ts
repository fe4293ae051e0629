/**
 * Each module kind's field list is written once, as the keys of its wire schema: the kinds, the manifest schemas,
 * the server's answers and the export all follow it.
 */
import { describe, expect, it } from "vitest";
import { routeDocument } from "../../src/export/routes.js";
import { CIRCUIT_BREAKER } from "../../src/kinds/circuit-breaker.js";
import { SAML } from "../../src/kinds/saml.js";
import { CircuitBreakerManifestSchema, SamlManifestSchema } from "../../src/model/manifest-schema.js";
import {
  CIRCUIT_BREAKER_FIELDS,
  fieldsOf,
  pickFields,
  SAML_FIELDS,
  SAML_GENERATED_FIELDS,
  SamlModuleSchema,
  WEIGHTED_BACKEND_FIELDS,
  WEIGHTED_BACKEND_GENERATED_FIELDS,
  WeightedBackendSchema,
} from "../../src/model/wire.js";
import { renderCircuitBreaker, renderSaml } from "../../src/server/render.js";
import { cb, route, routeId, saml } from "../export/builders.js";

const SAML_IN_API_ORDER = [
  "enabled",
  "options_passthrough",
  "cookie_prefix",
  "inactivity_timeout",
  "maximum_duration",
  "idp_metadata",
  "force_authn",
  "allow_idp_initiated",
  "authorized_groups",
  "nameid_format",
];
const CB_IN_API_ORDER = ["enabled", "tripped_duration", "rolling_window", "num_buckets", "volume_threshold", "error_threshold_percentage"];

describe("weighted backend field lists", () => {
  it("are the keys of the wire schema: what a client writes, then what the server sets", () => {
    expect(WEIGHTED_BACKEND_FIELDS).toEqual(["description", "metadata", "backends"]);
    expect(WEIGHTED_BACKEND_GENERATED_FIELDS).toEqual(["id", "uri", "created_at"]);
    expect(fieldsOf(WeightedBackendSchema)).toEqual(["id", "uri", "created_at", "description", "metadata", "backends"]);
  });
});

describe("module field lists", () => {
  it("are the keys of the wire schemas, in the API's order, and the kinds use them", () => {
    expect(SAML_FIELDS).toEqual(SAML_IN_API_ORDER);
    expect(CIRCUIT_BREAKER_FIELDS).toEqual(CB_IN_API_ORDER);
    expect(SAML.fields).toBe(SAML_FIELDS);
    expect(CIRCUIT_BREAKER.fields).toBe(CIRCUIT_BREAKER_FIELDS);
    expect(fieldsOf(SamlModuleSchema)).toEqual([...SAML_FIELDS, ...SAML_GENERATED_FIELDS]);
  });

  it("are what the manifest schemas accept (the SAML metadata also by file)", () => {
    expect(Object.keys(SamlManifestSchema.shape).sort()).toEqual([...SAML_FIELDS, "idp_metadata_file"].sort());
    expect(Object.keys(CircuitBreakerManifestSchema.shape).sort()).toEqual([...CIRCUIT_BREAKER_FIELDS].sort());
  });

  it("are what the server answers, in order, and what export writes", () => {
    const stored = { ...saml(routeId(1)), certificate_pem: "PEM", private_key_pem: "KEY" };
    expect(Object.keys(renderSaml("https://sp.example", routeId(1), stored))).toEqual([...SAML_FIELDS, ...SAML_GENERATED_FIELDS]);
    expect(renderSaml("https://sp.example", routeId(1), stored).request_signing_certificate_pem).toBe("PEM");
    expect(renderCircuitBreaker({ ...cb(), extra: 1 } as ReturnType<typeof cb>)).toEqual(cb());
    expect(Object.keys(renderCircuitBreaker(cb()))).toEqual(CIRCUIT_BREAKER_FIELDS);
    const doc = routeDocument(route(1, 1, { saml: saml(routeId(1)), circuit_breaker: cb() }), { skipped: [], notes: [] });
    expect(Object.keys(doc.value.circuit_breaker as object)).toEqual(CIRCUIT_BREAKER_FIELDS);
    expect(Object.keys(doc.value.saml as object)).toEqual(SAML_FIELDS.map((f) => (f === "idp_metadata" ? "idp_metadata_file" : f)));
  });

  it("pickFields copies the named fields in their order and nothing else", () => {
    expect(pickFields({ b: 2, a: 1, c: 3 }, ["a", "b"])).toEqual({ a: 1, b: 2 });
    expect(Object.keys(pickFields({ b: 2, a: 1, c: 3 }, ["a", "b"]))).toEqual(["a", "b"]);
  });
});
