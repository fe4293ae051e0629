/**
 * Text the stores cannot hold as sent: a NUL character (PostgreSQL's text refuses it) and a lone UTF-16 surrogate
 * (UTF-8 cannot encode it, so a store would keep something else). Both are refused with 400 ERR_NGROK_215 naming the
 * field or query parameter, on both stores alike, and nothing is written; every other text is read back exactly as
 * it was answered, and byte limits count the UTF-8 the store holds.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, fakeId, startTestServer, type ApiClient, type HttpResponse, type TestServer } from "../helpers/server.js";

const IDP = readFileSync(new URL("./fixtures/idp-metadata.xml", import.meta.url), "utf8");
const E1 = fakeId("edghts", 1);
const R1 = fakeId("edghtsrt", 1);
const SAML = `/edges/https/${E1}/routes/${R1}/saml`;

let s: TestServer;
let api: ApiClient;

beforeAll(async () => {
  s = await startTestServer({ fixtures: { edges: [{ id: E1, routes: [{ id: R1, match: "/", match_type: "path_prefix" }] }] } });
  api = apiClient(s.url, s.apiKey);
});
afterAll(() => s.close());

const NUL_FIX = "which the API does not take in text; remove it";
const SURROGATE_FIX = "which is not Unicode text and cannot be stored as sent; send whole characters";

function expectRefused(r: HttpResponse, details: Record<string, string>, msg: string): void {
  expect(r.status, r.text).toBe(400);
  expect(r.json).toEqual({
    error_code: "ERR_NGROK_215",
    status_code: 400,
    msg,
    details: { ...details, operation_id: r.headers["ngrok-operation-id"] },
  });
}

async function listedBackends(): Promise<unknown[]> {
  const r = await api.get("/backends/weighted");
  expect(r.status, r.text).toBe(200);
  return r.json.backends as unknown[];
}

describe("a NUL character", () => {
  it("in description or metadata of a create is 400 ERR_NGROK_215 naming the field; nothing is created", async () => {
    const before = await listedBackends();
    expectRefused(
      await api.post("/backends/weighted", { description: "a\u0000b", backends: {} }),
      { field: "description" },
      `description: holds a NUL character (U+0000) at offset 1, ${NUL_FIX}`,
    );
    expectRefused(
      await api.post("/backends/weighted", { metadata: '{"k":"\u0000"}', backends: {} }),
      { field: "metadata" },
      `metadata: holds a NUL character (U+0000) at offset 6, ${NUL_FIX}`,
    );
    expect(await listedBackends()).toEqual(before);
  });

  it("in a PATCH is refused and the object is unchanged", async () => {
    const made = await api.post("/backends/weighted", { description: "kept", backends: {} });
    expect(made.status, made.text).toBe(201);
    const path = `/backends/weighted/${made.json.id as string}`;
    expectRefused(await api.patch(path, { description: "\u0000" }), { field: "description" }, `description: holds a NUL character (U+0000) at offset 0, ${NUL_FIX}`);
    expect((await api.get(path)).json).toEqual(made.json);
  });

  it("in a SAML module's text fields is refused in both body shapes, naming the field", async () => {
    expectRefused(
      await api.put(SAML, { idp_metadata: IDP, cookie_prefix: "x\u0000" }),
      { field: "cookie_prefix" },
      `cookie_prefix: holds a NUL character (U+0000) at offset 1, ${NUL_FIX}`,
    );
    expectRefused(
      await api.put(SAML, { module: { idp_metadata: IDP, authorized_groups: ["ok", "\u0000admins"] } }),
      { field: "module.authorized_groups[1]" },
      `module.authorized_groups[1]: holds a NUL character (U+0000) at offset 0, ${NUL_FIX}`,
    );
    expectRefused(
      await api.put(SAML, { idp_metadata: IDP.replace("<md:", "\u0000<md:") }),
      { field: "idp_metadata" },
      `idp_metadata: holds a NUL character (U+0000) at offset ${IDP.indexOf("<md:")}, ${NUL_FIX}`,
    );
    const get = await api.get(SAML);
    expect([get.status, get.json.error_code]).toEqual([404, "ERR_NGROK_7400"]);
  });

  it("in before_id or beforeId of a list is 400 ERR_NGROK_215 naming the parameter", async () => {
    expectRefused(
      await api.get("/backends/weighted?before_id=%00"),
      { parameter: "before_id" },
      `query parameter before_id: holds a NUL character (U+0000) at offset 0, ${NUL_FIX}`,
    );
    expectRefused(
      await api.get("/edges/https?beforeId=edghts_%00&limit=5"),
      { parameter: "beforeId" },
      `query parameter beforeId: holds a NUL character (U+0000) at offset 7, ${NUL_FIX}`,
    );
  });
});

describe("a lone UTF-16 surrogate", () => {
  it("in description is 400 ERR_NGROK_215, where it was answered as sent and stored as something else", async () => {
    const before = await listedBackends();
    expectRefused(
      await api.post("/backends/weighted", { description: "a\ud800b", backends: {} }),
      { field: "description" },
      `description: holds a lone UTF-16 surrogate (U+D800) at offset 1, ${SURROGATE_FIX}`,
    );
    expectRefused(
      await api.post("/backends/weighted", { metadata: "pair \ud83d\ude00 then \ude00", backends: {} }),
      { field: "metadata" },
      `metadata: holds a lone UTF-16 surrogate (U+DE00) at offset 13, ${SURROGATE_FIX}`,
    );
    expect(await listedBackends()).toEqual(before);
  });

  it("85 of them (255 bytes as the limit counted, 765 as stored) are refused, not stored past the limit", async () => {
    expectRefused(
      await api.post("/backends/weighted", { description: "\udc00".repeat(85), backends: {} }),
      { field: "description" },
      `description: holds a lone UTF-16 surrogate (U+DC00) at offset 0, ${SURROGATE_FIX}`,
    );
  });

  it("in a circuit breaker's path-id field or a SAML nameid_format is refused naming the field", async () => {
    expectRefused(
      await api.put(SAML, { idp_metadata: IDP, nameid_format: "\udbff" }),
      { field: "nameid_format" },
      `nameid_format: holds a lone UTF-16 surrogate (U+DBFF) at offset 0, ${SURROGATE_FIX}`,
    );
    expectRefused(
      await api.put(`/edges/https/${E1}/routes/${R1}/circuit_breaker`, { edge_id: `${E1}\ud800` }),
      { field: "edge_id" },
      `edge_id: holds a lone UTF-16 surrogate (U+D800) at offset ${E1.length}, ${SURROGATE_FIX}`,
    );
  });
});

describe("text the stores hold", () => {
  it("is read back exactly as answered, and what GET returned can be PATCHed back", async () => {
    const description = "é€😀\ufffd\uffff\u{10ffff}\u0001\u007f\u2028 \u{1f468}\u200d\u{1f469}";
    const metadata = JSON.stringify({ k: "\u0001\u001f\ufeff", "\u00e9": "😀" });
    const made = await api.post("/backends/weighted", { description, metadata, backends: {} });
    expect(made.status, made.text).toBe(201);
    expect([made.json.description, made.json.metadata]).toEqual([description, metadata]);
    const path = `/backends/weighted/${made.json.id as string}`;
    const got = await api.get(path);
    expect(got.json).toEqual(made.json);
    const back = await api.patch(path, { description: got.json.description, metadata: got.json.metadata });
    expect(back.status, back.text).toBe(200);
    expect(back.json).toEqual(made.json);
  });

  it("counts bytes as stored: 63 four-byte characters and 3 ASCII fit 255 bytes, 64 do not", async () => {
    const fits = `${"😀".repeat(63)}abc`;
    const made = await api.post("/backends/weighted", { description: fits, backends: {} });
    expect(made.status, made.text).toBe(201);
    expect((await api.get(`/backends/weighted/${made.json.id as string}`)).json.description).toBe(fits);
    expectRefused(
      await api.post("/backends/weighted", { description: "😀".repeat(64), backends: {} }),
      { field: "description" },
      "description: is 256 bytes long, more than the limit of 255 bytes",
    );
  });

  it("a SAML module with non-ASCII text in every text field is read back as answered", async () => {
    const put = await api.put(SAML, { idp_metadata: IDP, cookie_prefix: "é😀\ufffd", authorized_groups: ["grüppe", "\u{10ffff}"] });
    expect(put.status, put.text).toBe(200);
    expect([put.json.cookie_prefix, put.json.authorized_groups]).toEqual(["é😀\ufffd", ["grüppe", "\u{10ffff}"]]);
    expect((await api.get(SAML)).json).toEqual(put.json);
    expect((await api.del(SAML)).status).toBe(204);
  });
});
