/**
 * HTTPS edges and the SAML and circuit breaker modules of their routes (docs/api.md sections 2-4) over raw HTTP,
 * including the request-signing certificate, parsed with node's X509Certificate and @peculiar/x509.
 */
import "reflect-metadata";
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import * as x509 from "@peculiar/x509";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NAMEID_FORMATS } from "../../src/model/wire.js";
import { apiClient, fakeId, startTestServer, type ApiClient, type HttpResponse, type TestServer } from "../helpers/server.js";

const IDP = readFileSync(new URL("./fixtures/idp-metadata.xml", import.meta.url), "utf8");
const E1 = fakeId("edghts", 1);
const E2 = fakeId("edghts", 2);
const R1 = fakeId("edghtsrt", 1);
const R2 = fakeId("edghtsrt", 2);
const R3 = fakeId("edghtsrt", 3);
const R4 = fakeId("edghtsrt", 4);
const SP = "https://sp.test.example";

let s: TestServer;
let api: ApiClient;
let other: ApiClient;
const OTHER_KEY = "ep_test_edges_other_account";

beforeAll(async () => {
  s = await startTestServer({
    apiKeys: [OTHER_KEY],
    spBase: SP,
    fixtures: {
      edges: [
        {
          id: E1,
          hostports: ["app.example.com:443"],
          routes: [
            { id: R1, match: "/", match_type: "path_prefix" },
            { id: R2, match: "/api", match_type: "path_prefix" },
          ],
        },
        {
          id: E2,
          routes: [
            { id: R3, match: "/login", match_type: "exact_path" },
            { id: R4, match: "/", match_type: "path_prefix" },
          ],
        },
      ],
    },
  });
  api = apiClient(s.url, s.apiKey);
  other = apiClient(s.url, OTHER_KEY);
});
afterAll(() => s.close());

function expectError(r: HttpResponse, status: number, code: string, field?: string): void {
  expect(r.status, r.text).toBe(status);
  expect(r.json.error_code).toBe(code);
  expect(r.json.details.operation_id).toBe(r.headers["ngrok-operation-id"]);
  if (field !== undefined) {
    expect(r.json.details.field).toBe(field);
    expect(r.json.msg).toContain(field);
  }
}

const samlPath = (edge: string, route: string): string => `/edges/https/${edge}/routes/${route}/saml`;
const cbPath = (edge: string, route: string): string => `/edges/https/${edge}/routes/${route}/circuit_breaker`;
const CB = { enabled: true, tripped_duration: 120, rolling_window: 300, num_buckets: 5, volume_threshold: 20, error_threshold_percentage: 0.2 };

describe("edges", () => {
  it("lists edges newest first with their routes inline, modules null when unset", async () => {
    const r = await api.get("/edges/https");
    expect(r.status).toBe(200);
    expect(r.json.uri).toBe(`${s.url}/edges/https`);
    expect(r.json.next_page_uri).toBeNull();
    const edges = r.json.https_edges as { id: string }[];
    expect(edges.map((e) => e.id)).toEqual([E2, E1]);
  });

  it("answers one edge with its routes, uris and modules", async () => {
    const r = await api.get(`/edges/https/${E1}`);
    expect(r.status).toBe(200);
    expect(r.json).toEqual({
      id: E1,
      uri: `${s.url}/edges/https/${E1}`,
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/),
      description: "",
      metadata: "",
      hostports: ["app.example.com:443"],
      routes: [
        {
          id: R1,
          edge_id: E1,
          uri: `${s.url}/edges/https/${E1}/routes/${R1}`,
          created_at: expect.stringMatching(/Z$/),
          match: "/",
          match_type: "path_prefix",
          saml: null,
          circuit_breaker: null,
        },
        {
          id: R2,
          edge_id: E1,
          uri: `${s.url}/edges/https/${E1}/routes/${R2}`,
          created_at: expect.stringMatching(/Z$/),
          match: "/api",
          match_type: "path_prefix",
          saml: null,
          circuit_breaker: null,
        },
      ],
    });
    const route = await api.get(`/edges/https/${E1}/routes/${R2}`);
    expect(route.json).toEqual(r.json.routes[1]);
  });

  it("answers 404 ERR_NGROK_404 naming a missing edge or route; another account sees none", async () => {
    const missing = fakeId("edghts", 9);
    const r = await api.get(`/edges/https/${missing}`);
    expectError(r, 404, "ERR_NGROK_404");
    expect(r.json.details.resource).toBe(missing);
    const wrongEdge = await api.get(samlPath(E1, R3));
    expectError(wrongEdge, 404, "ERR_NGROK_404");
    expect(wrongEdge.json.details.resource).toBe(R3);
    const noEdge = await api.put(cbPath(missing, R1), CB);
    expect(noEdge.json.details.resource).toBe(missing);
    expectError(await other.get(`/edges/https/${E1}`), 404, "ERR_NGROK_404");
    expectError(await other.put(cbPath(E1, R1), CB), 404, "ERR_NGROK_404");
    expect((await other.get("/edges/https")).json.https_edges).toEqual([]);
  });
});

describe("SAML module", () => {
  it("PUT with only idp_metadata stores the documented defaults and the generated fields", async () => {
    const r = await api.put(samlPath(E1, R1), { idp_metadata: IDP });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual({
      enabled: true,
      options_passthrough: false,
      cookie_prefix: "",
      inactivity_timeout: 0,
      maximum_duration: 0,
      idp_metadata: IDP,
      force_authn: false,
      allow_idp_initiated: true,
      authorized_groups: [],
      nameid_format: "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent",
      entity_id: `${SP}/saml/${R1}`,
      assertion_consumer_service_url: `${SP}/saml/${R1}/acs`,
      single_logout_url: `${SP}/saml/${R1}/slo`,
      request_signing_certificate_pem: expect.stringContaining("-----BEGIN CERTIFICATE-----"),
      metadata_url: `${SP}/saml/${R1}`,
      idp_metadata_url: "",
    });
    const got = await api.get(samlPath(E1, R1));
    expect(got.status).toBe(200);
    expect(got.json).toEqual(r.json);
    const edge = await api.get(`/edges/https/${E1}`);
    expect(edge.json.routes[0].saml).toEqual(r.json);
  });

  it("makes a real self-signed RSA-2048 SHA-256 certificate for the entity id, valid 35 years, for digital signatures", async () => {
    const r = await api.get(samlPath(E1, R1));
    const pem = r.json.request_signing_certificate_pem as string;
    const cert = new X509Certificate(pem);
    const entity = `${SP}/saml/${R1}`;
    expect(cert.subject).toBe(`CN=${entity}`);
    expect(cert.issuer).toBe(`CN=${entity}`);
    expect(cert.publicKey.asymmetricKeyType).toBe("rsa");
    expect(cert.publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
    expect(cert.verify(cert.publicKey)).toBe(true);
    const from = Date.parse(cert.validFrom);
    const to = Date.parse(cert.validTo);
    expect(Math.abs(from - Date.now())).toBeLessThan(10 * 60_000);
    const years = (to - from) / (365.25 * 24 * 3600 * 1000);
    expect(years).toBeGreaterThan(34.99);
    expect(years).toBeLessThan(35.01);
    x509.cryptoProvider.set(globalThis.crypto);
    const parsed = new x509.X509Certificate(pem);
    expect(parsed.signatureAlgorithm).toMatchObject({ name: "RSASSA-PKCS1-v1_5", hash: { name: "SHA-256" } });
    const usage = parsed.getExtension(x509.KeyUsagesExtension);
    expect(usage).not.toBeNull();
    expect((usage?.usages ?? 0) & x509.KeyUsageFlags.digitalSignature).toBe(x509.KeyUsageFlags.digitalSignature);
  });

  it("PUT replaces every field (left out -> default) and keeps the certificate; DELETE + PUT makes a new one", async () => {
    const first = await api.put(samlPath(E1, R2), {
      idp_metadata: IDP,
      enabled: false,
      options_passthrough: true,
      cookie_prefix: "edge.",
      inactivity_timeout: 600,
      maximum_duration: 4294967295,
      force_authn: true,
      allow_idp_initiated: false,
      authorized_groups: ["engineering", "ops"],
      nameid_format: "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress",
    });
    expect(first.status, first.text).toBe(200);
    expect(first.json).toMatchObject({
      enabled: false,
      options_passthrough: true,
      cookie_prefix: "edge.",
      inactivity_timeout: 600,
      maximum_duration: 4294967295,
      force_authn: true,
      allow_idp_initiated: false,
      authorized_groups: ["engineering", "ops"],
      nameid_format: "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress",
    });
    const second = await api.put(samlPath(E1, R2), { idp_metadata: IDP, cookie_prefix: "x." });
    expect(second.status).toBe(200);
    expect(second.json).toMatchObject({
      enabled: true,
      options_passthrough: false,
      cookie_prefix: "x.",
      inactivity_timeout: 0,
      maximum_duration: 0,
      force_authn: false,
      allow_idp_initiated: true,
      authorized_groups: [],
      nameid_format: NAMEID_FORMATS[0],
    });
    expect(second.json.request_signing_certificate_pem).toBe(first.json.request_signing_certificate_pem);

    const del = await api.del(samlPath(E1, R2));
    expect(del.status).toBe(204);
    expect(del.text).toBe("");
    expectError(await api.get(samlPath(E1, R2)), 404, "ERR_NGROK_7400");
    expectError(await api.del(samlPath(E1, R2)), 404, "ERR_NGROK_7400");
    expect((await api.get(`/edges/https/${E1}`)).json.routes[1].saml).toBeNull();
    const third = await api.put(samlPath(E1, R2), { idp_metadata: IDP });
    expect(third.status).toBe(200);
    expect(third.json.request_signing_certificate_pem).not.toBe(first.json.request_signing_certificate_pem);
    expect(new X509Certificate(third.json.request_signing_certificate_pem as string).subject).toBe(`CN=${SP}/saml/${R2}`);
  });

  it("concurrent first PUTs end with one certificate", async () => {
    const [a, b] = await Promise.all([
      api.put(samlPath(E2, R4), { idp_metadata: IDP, cookie_prefix: "a." }),
      api.put(samlPath(E2, R4), { idp_metadata: IDP, cookie_prefix: "b." }),
    ]);
    expect(a?.status).toBe(200);
    expect(b?.status).toBe(200);
    expect(a?.json.request_signing_certificate_pem).toBe(b?.json.request_signing_certificate_pem);
    const got = await api.get(samlPath(E2, R4));
    expect(got.json.request_signing_certificate_pem).toBe(a?.json.request_signing_certificate_pem);
  });

  it("takes the OpenAPI body shape {edge_id, id, module} with ids matching the path", async () => {
    const r = await api.put(samlPath(E2, R3), { edge_id: E2, id: R3, module: { idp_metadata: IDP, force_authn: true } });
    expect(r.status, r.text).toBe(200);
    expect(r.json.force_authn).toBe(true);
    expect(r.json.entity_id).toBe(`${SP}/saml/${R3}`);
    expectError(await api.put(samlPath(E2, R3), { edge_id: E1, id: R3, module: { idp_metadata: IDP } }), 400, "ERR_NGROK_215", "edge_id");
    expectError(await api.put(samlPath(E2, R3), { id: R1, module: { idp_metadata: IDP } }), 400, "ERR_NGROK_215", "id");
    expectError(await api.put(samlPath(E2, R3), { module: { idp_metadata: IDP, colour: 1 } }), 400, "ERR_NGROK_214", "module.colour");
    expectError(await api.put(samlPath(E2, R3), { module: { idp_metadata: IDP }, enabled: true }), 400, "ERR_NGROK_214", "enabled");
    expectError(await api.put(samlPath(E2, R3), { module: "x" }), 400, "ERR_NGROK_215", "module");
    expectError(await api.put(samlPath(E2, R3), { module: { idp_metadata: "" } }), 400, "ERR_NGROK_7091", "module.idp_metadata");
    // The top-level shape may carry matching ids too.
    expect((await api.put(samlPath(E2, R3), { edge_id: E2, id: R3, idp_metadata: IDP })).status).toBe(200);
  });

  it("refuses missing or empty idp_metadata (ERR_NGROK_7091)", async () => {
    expectError(await api.put(samlPath(E1, R1), {}), 400, "ERR_NGROK_7091", "idp_metadata");
    expectError(await api.put(samlPath(E1, R1), { idp_metadata: "" }), 400, "ERR_NGROK_7091", "idp_metadata");
  });

  it("refuses XML that is not well-formed or not an IdP EntityDescriptor (ERR_NGROK_7083)", async () => {
    const bad = [
      "not xml at all",
      "<EntityDescriptor><IDPSSODescriptor></EntityDescriptor>",
      '<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata"><SPSSODescriptor/></EntityDescriptor>',
      "<EntitiesDescriptor><EntityDescriptor><IDPSSODescriptor/></EntityDescriptor></EntitiesDescriptor>",
      "<EntityDescriptor><Extensions><IDPSSODescriptor/></Extensions></EntityDescriptor>",
      "<EntityDescriptor><IDPSSODescriptor/></EntityDescriptor><EntityDescriptor><IDPSSODescriptor/></EntityDescriptor>",
    ];
    for (const xml of bad) expectError(await api.put(samlPath(E1, R1), { idp_metadata: xml }), 400, "ERR_NGROK_7083", "idp_metadata");
    // The same reading of the XML as the loader's (src/kinds/saml-metadata.ts), so a plan that passed is not refused here.
    const aggregate = await api.put(samlPath(E1, R1), { idp_metadata: bad[3] });
    expect(aggregate.json.msg).toBe(
      "idp_metadata: IdP metadata's root element is EntitiesDescriptor, not an EntityDescriptor; give the EntityDescriptor of one IdP " +
        "(take it out of the EntitiesDescriptor aggregate) (line 1, column 1)",
    );
    for (const xml of [
      "<EntityDescriptor><IDPSSODescriptor/></EntityDescriptor>",
      '<x:EntityDescriptor xmlns:x="urn:oasis:names:tc:SAML:2.0:metadata"><x:IDPSSODescriptor/></x:EntityDescriptor>',
    ]) {
      const r = await api.put(samlPath(E1, R1), { idp_metadata: xml });
      expect(r.status, xml).toBe(200);
      expect(r.json.idp_metadata).toBe(xml);
    }
  });

  it("refuses idp_metadata over 128 KiB (ERR_NGROK_7080)", async () => {
    const pad = (n: number): string => IDP.replace("<md:IDPSSODescriptor", `<!--${"p".repeat(n)}--><md:IDPSSODescriptor`);
    const limit = 128 * 1024;
    const exact = pad(limit - Buffer.byteLength(pad(0)));
    expect(Buffer.byteLength(exact)).toBe(limit);
    expect((await api.put(samlPath(E1, R1), { idp_metadata: exact })).status).toBe(200);
    expectError(await api.put(samlPath(E1, R1), { idp_metadata: exact + " " }), 400, "ERR_NGROK_7080", "idp_metadata");
  });

  it("takes the four supported nameid formats and refuses others (ERR_NGROK_1693)", async () => {
    for (const format of NAMEID_FORMATS) {
      const r = await api.put(samlPath(E1, R1), { idp_metadata: IDP, nameid_format: format });
      expect(r.status).toBe(200);
      expect(r.json.nameid_format).toBe(format);
    }
    const r = await api.put(samlPath(E1, R1), { idp_metadata: IDP, nameid_format: "urn:oasis:names:tc:SAML:1.1:nameid-format:X509SubjectName" });
    expectError(r, 400, "ERR_NGROK_1693", "nameid_format");
  });

  it("refuses uint32 violations and wrong types (ERR_NGROK_215)", async () => {
    for (const value of [-1, 1.5, 4294967296, "10", null]) {
      for (const field of ["inactivity_timeout", "maximum_duration"]) {
        expectError(await api.put(samlPath(E1, R1), { idp_metadata: IDP, [field]: value }), 400, "ERR_NGROK_215", field);
      }
    }
    expectError(await api.put(samlPath(E1, R1), { idp_metadata: IDP, enabled: "yes" }), 400, "ERR_NGROK_215", "enabled");
    expectError(await api.put(samlPath(E1, R1), { idp_metadata: IDP, authorized_groups: "eng" }), 400, "ERR_NGROK_215", "authorized_groups");
    expectError(await api.put(samlPath(E1, R1), { idp_metadata: IDP, authorized_groups: ["eng", 2] }), 400, "ERR_NGROK_215", "authorized_groups[1]");
    expectError(await api.put(samlPath(E1, R1), { idp_metadata: 7 }), 400, "ERR_NGROK_215", "idp_metadata");
  });

  it("refuses generated fields (ERR_NGROK_214) and a non-empty idp_metadata_url; an empty one is fine", async () => {
    for (const field of ["entity_id", "assertion_consumer_service_url", "single_logout_url", "request_signing_certificate_pem", "metadata_url"]) {
      expectError(await api.put(samlPath(E1, R1), { idp_metadata: IDP, [field]: "x" }), 400, "ERR_NGROK_214", field);
    }
    expectError(await api.put(samlPath(E1, R1), { idp_metadata: IDP, idp_metadata_url: "https://idp.example.com/md" }), 400, "ERR_NGROK_214", "idp_metadata_url");
    expect((await api.put(samlPath(E1, R1), { idp_metadata: IDP, idp_metadata_url: "" })).status).toBe(200);
  });

  it("a rejected PUT changes nothing", async () => {
    const before = await api.put(samlPath(E1, R1), { idp_metadata: IDP, cookie_prefix: "kept." });
    expect(before.status).toBe(200);
    expectError(await api.put(samlPath(E1, R1), { idp_metadata: IDP, cookie_prefix: "lost.", nameid_format: "x" }), 400, "ERR_NGROK_1693");
    expect((await api.get(samlPath(E1, R1))).json).toEqual(before.json);
  });
});

describe("circuit breaker module", () => {
  it("PUT answers and stores the module; GET and the edge show it", async () => {
    const r = await api.put(cbPath(E1, R1), CB);
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual(CB);
    expect(Object.keys(r.json)).toEqual(Object.keys(CB));
    expect((await api.get(cbPath(E1, R1))).json).toEqual(CB);
    expect((await api.get(`/edges/https/${E1}`)).json.routes[0].circuit_breaker).toEqual(CB);
  });

  it("fills enabled (true) and volume_threshold (0) when left out, also on replace", async () => {
    await api.put(cbPath(E1, R2), { ...CB, enabled: false, volume_threshold: 99 });
    const { enabled: _e, volume_threshold: _v, ...rest } = CB;
    const r = await api.put(cbPath(E1, R2), rest);
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ ...rest, enabled: true, volume_threshold: 0 });
    expect((await api.get(cbPath(E1, R2))).json).toEqual(r.json);
  });

  it("refuses tripped_duration, rolling_window, num_buckets and error_threshold_percentage out of their rules", async () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ tripped_duration: 0 }, "ERR_NGROK_7016", "tripped_duration"],
      [{ tripped_duration: undefined }, "ERR_NGROK_7016", "tripped_duration"],
      [{ rolling_window: 0 }, "ERR_NGROK_7017", "rolling_window"],
      [{ rolling_window: undefined }, "ERR_NGROK_7017", "rolling_window"],
      [{ num_buckets: 0 }, "ERR_NGROK_7018", "num_buckets"],
      [{ num_buckets: 129 }, "ERR_NGROK_7018", "num_buckets"],
      [{ num_buckets: undefined }, "ERR_NGROK_7018", "num_buckets"],
      [{ error_threshold_percentage: 1.5 }, "ERR_NGROK_7011", "error_threshold_percentage"],
      [{ error_threshold_percentage: -0.1 }, "ERR_NGROK_7011", "error_threshold_percentage"],
      [{ error_threshold_percentage: 50 }, "ERR_NGROK_7011", "error_threshold_percentage"],
      [{ error_threshold_percentage: undefined }, "ERR_NGROK_7011", "error_threshold_percentage"],
      [{ tripped_duration: -1 }, "ERR_NGROK_215", "tripped_duration"],
      [{ tripped_duration: 1.5 }, "ERR_NGROK_215", "tripped_duration"],
      [{ tripped_duration: "60" }, "ERR_NGROK_215", "tripped_duration"],
      [{ rolling_window: 4294967296 }, "ERR_NGROK_215", "rolling_window"],
      [{ num_buckets: -5 }, "ERR_NGROK_215", "num_buckets"],
      [{ volume_threshold: -1 }, "ERR_NGROK_215", "volume_threshold"],
      [{ volume_threshold: 4294967296 }, "ERR_NGROK_215", "volume_threshold"],
      [{ error_threshold_percentage: "0.5" }, "ERR_NGROK_215", "error_threshold_percentage"],
      [{ enabled: 1 }, "ERR_NGROK_215", "enabled"],
      [{ colour: "red" }, "ERR_NGROK_214", "colour"],
    ];
    const before = (await api.get(cbPath(E1, R1))).json;
    for (const [change, code, field] of cases) {
      const r = await api.put(cbPath(E1, R1), { ...CB, ...change });
      expectError(r, 400, code, field);
    }
    const r = await api.put(cbPath(E1, R1), { ...CB, error_threshold_percentage: 50 });
    expect(r.json.msg).toContain("0.5");
    expect((await api.get(cbPath(E1, R1))).json).toEqual(before);
  });

  it("takes the edges of the ranges", async () => {
    const edges = { ...CB, tripped_duration: 4294967295, rolling_window: 1, num_buckets: 128, volume_threshold: 4294967295, error_threshold_percentage: 1 };
    expect((await api.put(cbPath(E1, R1), edges)).json).toEqual(edges);
    const low = { ...CB, num_buckets: 1, volume_threshold: 0, error_threshold_percentage: 0 };
    expect((await api.put(cbPath(E1, R1), low)).json).toEqual(low);
  });

  it("takes the OpenAPI body shape", async () => {
    const r = await api.put(cbPath(E2, R3), { edge_id: E2, id: R3, module: CB });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual(CB);
    expectError(await api.put(cbPath(E2, R3), { edge_id: E2, id: R4, module: CB }), 400, "ERR_NGROK_215", "id");
    expectError(await api.put(cbPath(E2, R3), { module: { ...CB, num_buckets: 0 } }), 400, "ERR_NGROK_7018", "module.num_buckets");
  });

  it("DELETE answers 204; GET and DELETE then answer 404 ERR_NGROK_7400; route 404 stays ERR_NGROK_404", async () => {
    await api.put(cbPath(E2, R4), CB);
    const del = await api.del(cbPath(E2, R4));
    expect(del.status).toBe(204);
    expect(del.text).toBe("");
    expectError(await api.get(cbPath(E2, R4)), 404, "ERR_NGROK_7400");
    expectError(await api.del(cbPath(E2, R4)), 404, "ERR_NGROK_7400");
    expect((await api.get(`/edges/https/${E2}`)).json.routes[1].circuit_breaker).toBeNull();
    expectError(await api.get(cbPath(E2, fakeId("edghtsrt", 99))), 404, "ERR_NGROK_404");
  });

  it("deleting one module leaves the other", async () => {
    await api.put(cbPath(E2, R3), CB);
    await api.put(samlPath(E2, R3), { idp_metadata: IDP });
    expect((await api.del(cbPath(E2, R3))).status).toBe(204);
    const route = (await api.get(`/edges/https/${E2}/routes/${R3}`)).json;
    expect(route.circuit_breaker).toBeNull();
    expect(route.saml.idp_metadata).toBe(IDP);
  });
});
