/**
 * The conventions every request follows (docs/api.md "Conventions for every request"), against the real server on a
 * free loopback port, over raw HTTP.
 */
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, fakeId, http, startTestServer, type ApiClient, type HttpResponse, type TestServer } from "../helpers/server.js";

const OP_ID = /^op_[0-9A-Za-z]{27}$/;
const EDGE = fakeId("edghts", 1);
const ROUTE = fakeId("edghtsrt", 1);

let s: TestServer;
let api: ApiClient;

beforeAll(async () => {
  s = await startTestServer({
    fixtures: { edges: [{ id: EDGE, routes: [{ id: ROUTE, match: "/", match_type: "path_prefix" }] }] },
  });
  api = apiClient(s.url, s.apiKey);
});
afterAll(() => s.close());

/** The error body of `r`, checked to repeat the operation id of its header. */
function errorOf(r: HttpResponse): { error_code?: string; status_code: number; msg: string; details: Record<string, string> } {
  expect(r.headers["ngrok-operation-id"]).toMatch(OP_ID);
  expect(r.headers["content-type"]).toBe("application/json");
  expect(r.json.status_code).toBe(r.status);
  expect(r.json.details.operation_id).toBe(r.headers["ngrok-operation-id"]);
  return r.json;
}

describe("auth", () => {
  it("answers 401 ERR_NGROK_200 without an Authorization header, with WWW-Authenticate: Bearer", async () => {
    const r = await http(s.url, "GET", "/backends/weighted", { headers: { "Ngrok-Version": "2" } });
    expect(r.status).toBe(401);
    expect(r.headers["www-authenticate"]).toBe("Bearer");
    expect(errorOf(r).error_code).toBe("ERR_NGROK_200");
  });

  it("answers 401 ERR_NGROK_201 to a credential that is not Bearer", async () => {
    const r = await http(s.url, "GET", "/backends/weighted", { headers: { "Ngrok-Version": "2", Authorization: `Basic ${s.apiKey}` } });
    expect(r.status).toBe(401);
    expect(r.headers["www-authenticate"]).toBe("Bearer");
    expect(errorOf(r).error_code).toBe("ERR_NGROK_201");
    expect(r.text).not.toContain(s.apiKey);
  });

  it("answers 401 ERR_NGROK_203 to an unknown key and never echoes it", async () => {
    const r = await http(s.url, "GET", "/backends/weighted", { headers: { "Ngrok-Version": "2", Authorization: "Bearer not-a-key-4711" } });
    expect(r.status).toBe(401);
    expect(r.headers["www-authenticate"]).toBe("Bearer");
    expect(errorOf(r).error_code).toBe("ERR_NGROK_203");
    expect(r.text).not.toContain("not-a-key-4711");
  });

  it("takes the Bearer scheme in any case", async () => {
    const r = await http(s.url, "GET", "/backends/weighted", { headers: { "Ngrok-Version": "2", Authorization: `bearer ${s.apiKey}` } });
    expect(r.status).toBe(200);
  });

  it("never writes the key to the request log", () => {
    expect(JSON.stringify(s.logLines)).not.toContain(s.apiKey);
    expect(JSON.stringify(s.logLines)).not.toContain("not-a-key-4711");
  });
});

describe("version header", () => {
  it("answers 400 ERR_NGROK_218 without it", async () => {
    const r = await http(s.url, "GET", "/backends/weighted", { headers: { Authorization: `Bearer ${s.apiKey}` } });
    expect(r.status).toBe(400);
    expect(errorOf(r).error_code).toBe("ERR_NGROK_218");
    expect(r.json.msg).toContain("Ngrok-Version");
  });

  it("answers 400 ERR_NGROK_217 to any value but 2", async () => {
    for (const v of ["1", "3", "2.0", " "]) {
      const r = await api.get("/backends/weighted", { "Ngrok-Version": v });
      expect(r.status).toBe(400);
      expect(errorOf(r).error_code).toBe("ERR_NGROK_217");
    }
  });

  it("matches the header name in any case", async () => {
    const r = await http(s.url, "GET", "/backends/weighted", { headers: { Authorization: `Bearer ${s.apiKey}`, "NGROK-VERSION": "2" } });
    expect(r.status).toBe(200);
  });

  it("takes another header name when configured", async () => {
    const other = await startTestServer({ versionHeader: "X-Api-Version" });
    try {
      const ok = await http(other.url, "GET", "/backends/weighted", {
        headers: { Authorization: `Bearer ${other.apiKey}`, "x-api-version": "2" },
      });
      expect(ok.status).toBe(200);
      const missing = await apiClient(other.url, other.apiKey).get("/backends/weighted");
      expect(missing.status).toBe(400);
      expect(missing.json.error_code).toBe("ERR_NGROK_218");
      expect(missing.json.msg).toContain("X-Api-Version");
    } finally {
      await other.close();
    }
  });
});

describe("bodies", () => {
  it("answers 400 ERR_NGROK_216 to a body without a content type", async () => {
    const r = await api.send("POST", "/backends/weighted", { rawBody: '{"backends":{}}' });
    expect(r.status).toBe(400);
    expect(errorOf(r).error_code).toBe("ERR_NGROK_216");
  });

  it("answers 415 ERR_NGROK_210 to another content type", async () => {
    const r = await api.send("POST", "/backends/weighted", { rawBody: '{"backends":{}}', headers: { "Content-Type": "text/plain" } });
    expect(r.status).toBe(415);
    expect(errorOf(r).error_code).toBe("ERR_NGROK_210");
  });

  it("takes application/json with parameters and in any case", async () => {
    const r = await api.send("POST", "/backends/weighted", {
      rawBody: '{"backends":{}}',
      headers: { "Content-Type": "Application/JSON; charset=utf-8" },
    });
    expect(r.status).toBe(201);
  });

  it("answers 400 ERR_NGROK_213 to a body that is not JSON, is empty, or is not an object", async () => {
    for (const raw of ['{"backends":', "", "[1,2]", '"text"']) {
      const r = await api.send("POST", "/backends/weighted", { rawBody: raw, headers: { "Content-Type": "application/json" } });
      expect(r.status, raw).toBe(400);
      expect(errorOf(r).error_code).toBe("ERR_NGROK_213");
    }
  });

  it("answers 400 ERR_NGROK_211 to a body on GET and DELETE", async () => {
    const get = await api.send("GET", "/backends/weighted", { body: {} });
    expect(get.status).toBe(400);
    expect(errorOf(get).error_code).toBe("ERR_NGROK_211");
    const created = await api.post("/backends/weighted", { backends: {} });
    const del = await api.send("DELETE", `/backends/weighted/${created.json.id}`, { body: { x: 1 } });
    expect(del.status).toBe(400);
    expect(errorOf(del).error_code).toBe("ERR_NGROK_211");
    expect((await api.get(`/backends/weighted/${created.json.id}`)).status).toBe(200);
  });

  it("answers 400 ERR_NGROK_214 to an unknown field, naming it", async () => {
    const r = await api.post("/backends/weighted", { backends: {}, colour: "blue" });
    expect(r.status).toBe(400);
    const e = errorOf(r);
    expect(e.error_code).toBe("ERR_NGROK_214");
    expect(e.msg).toContain("colour");
    expect(e.details.field).toBe("colour");
  });

  it("answers 400 ERR_NGROK_215 to a value of the wrong type, naming the field", async () => {
    const r = await api.post("/backends/weighted", { backends: {}, description: 42 });
    expect(r.status).toBe(400);
    const e = errorOf(r);
    expect(e.error_code).toBe("ERR_NGROK_215");
    expect(e.msg).toBe("description: expected a string, got the number 42");
    expect(e.details.field).toBe("description");
  });

  it("answers 413 to a body over 1 MiB, with or without a Content-Length, and keeps serving", async () => {
    const big = JSON.stringify({ backends: {}, description: "x".repeat(1024 * 1024) });
    const r = await api.send("POST", "/backends/weighted", { rawBody: big, headers: { "Content-Type": "application/json" } });
    expect(r.status).toBe(413);
    expect(errorOf(r).error_code).toBe("ERR_NGROK_413");
    const chunked = await api.send("POST", "/backends/weighted", {
      rawBody: big,
      chunked: true,
      headers: { "Content-Type": "application/json" },
    });
    expect(chunked.status).toBe(413);
    expect((await api.get("/backends/weighted?limit=1")).status).toBe(200);
  });

  it("takes a body of exactly 1 MiB (then judges its fields)", async () => {
    const prefix = '{"backends":{},"description":"';
    const raw = prefix + "x".repeat(1024 * 1024 - prefix.length - 2) + '"}';
    expect(Buffer.byteLength(raw)).toBe(1024 * 1024);
    const r = await api.send("POST", "/backends/weighted", { rawBody: raw, headers: { "Content-Type": "application/json" } });
    expect(r.status).toBe(400);
    expect(r.json.error_code).toBe("ERR_NGROK_215");
    expect(r.json.details.field).toBe("description");
  });

  it("answers 400 ERR_NGROK_213 to JSON nested deeper than 32 levels", async () => {
    const deep = '{"backends":{},"x":' + "[".repeat(40) + "]".repeat(40) + "}";
    const r = await api.send("POST", "/backends/weighted", { rawBody: deep, headers: { "Content-Type": "application/json" } });
    expect(r.status).toBe(400);
    expect(errorOf(r).error_code).toBe("ERR_NGROK_213");
    expect(r.json.msg).toContain("32 levels");
    // Brackets inside strings do not count.
    const inString = await api.post("/backends/weighted", { backends: {}, description: "[".repeat(100) });
    expect(inString.status).toBe(201);
  });
});

describe("paths, methods and ids", () => {
  it("answers an unknown path with the documented 404 body", async () => {
    const r = await api.get("/x");
    expect(r.status).toBe(404);
    expect(r.json).toEqual({ status_code: 404, msg: "Not Found", details: { path: "/x", operation_id: r.headers["ngrok-operation-id"] } });
    for (const path of ["/", "/backends", "/backends/weighted/", "/edges/https/" + EDGE + "/routes", "/backends/weighted//x"]) {
      const other = await api.get(path);
      expect(other.status, path).toBe(404);
      expect(other.json.msg).toBe("Not Found");
    }
  });

  it("answers a known path with a method it does not take with 405 and Allow", async () => {
    const cases: [string, string, string][] = [
      ["PUT", "/backends/weighted", "GET, POST"],
      ["POST", `/backends/weighted/${fakeId("bkdwd", 1)}`, "GET, PATCH, DELETE"],
      ["DELETE", "/edges/https", "GET"],
      ["PATCH", `/edges/https/${EDGE}`, "GET"],
      ["POST", `/edges/https/${EDGE}/routes/${ROUTE}/saml`, "GET, PUT, DELETE"],
      ["HEAD", "/backends/weighted", "GET, POST"],
    ];
    for (const [method, path, allow] of cases) {
      const r = await api.send(method, path);
      expect(r.status, `${method} ${path}`).toBe(405);
      expect(r.headers.allow).toBe(allow);
      expect(r.headers["ngrok-operation-id"]).toMatch(OP_ID);
      if (method !== "HEAD") {
        expect(r.json).toEqual({
          status_code: 405,
          msg: "Method Not Allowed",
          details: { path, method, operation_id: r.headers["ngrok-operation-id"] },
        });
      }
    }
  });

  it("answers a malformed id in a path with 404 ERR_NGROK_222", async () => {
    const paths = [
      "/backends/weighted/abc",
      `/backends/weighted/${fakeId("bkdhr", 1)}`,
      `/backends/weighted/bkdwd_${"0".repeat(26)}`,
      `/backends/weighted/bkdwd_${"0".repeat(26)}-`,
      "/edges/https/edghts_x",
      `/edges/https/${EDGE}/routes/nope/saml`,
      `/edges/https/${ROUTE}/routes/${EDGE}/circuit_breaker`,
    ];
    for (const path of paths) {
      const r = await api.get(path);
      expect(r.status, path).toBe(404);
      expect(errorOf(r).error_code).toBe("ERR_NGROK_222");
    }
  });

  it("answers a well-formed id that does not exist with 404 ERR_NGROK_404", async () => {
    const id = fakeId("bkdwd", 999);
    const r = await api.get(`/backends/weighted/${id}`);
    expect(r.status).toBe(404);
    const e = errorOf(r);
    expect(e.error_code).toBe("ERR_NGROK_404");
    expect(e.details.resource).toBe(id);
  });

  it("refuses query parameters an endpoint does not take (ERR_NGROK_231)", async () => {
    const created = await api.post("/backends/weighted", { backends: {} });
    const r = await api.get(`/backends/weighted/${created.json.id}?verbose=1`);
    expect(r.status).toBe(400);
    expect(errorOf(r).error_code).toBe("ERR_NGROK_231");
  });
});

describe("operation ids, ids, times and uris", () => {
  it("puts Ngrok-Operation-Id on every answer, distinct per request", async () => {
    const created = await api.post("/backends/weighted", { backends: {} });
    const answers = await Promise.all([
      api.get("/backends/weighted"),
      Promise.resolve(created),
      api.del(`/backends/weighted/${created.json.id}`),
      api.get("/nope"),
      http(s.url, "GET", "/backends/weighted"),
      api.send("PUT", "/backends/weighted"),
      api.post("/backends/weighted", { bad: 1 }),
    ]);
    expect(answers.map((a) => a.status)).toEqual([200, 201, 204, 404, 401, 405, 400]);
    const ids = answers.map((a) => a.headers["ngrok-operation-id"]);
    for (const id of ids) expect(id).toMatch(OP_ID);
    expect(new Set(ids).size).toBe(ids.length);
    expect(answers[2]?.text).toBe("");
  });

  it("makes ids that sort in creation order, and RFC 3339 UTC second times", async () => {
    const before = Math.floor(Date.now() / 1000) * 1000;
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const r = await api.post("/backends/weighted", { backends: {} });
      expect(r.json.id).toMatch(/^bkdwd_[0-9A-Za-z]{27}$/);
      expect(r.json.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
      const t = Date.parse(r.json.created_at);
      expect(t).toBeGreaterThanOrEqual(before);
      expect(t).toBeLessThanOrEqual(Date.now());
      ids.push(r.json.id);
    }
    expect([...ids].sort()).toEqual(ids);
  });

  it("builds uris from the listen address, never from the Host header", async () => {
    const r = await api.post("/backends/weighted", { backends: {} }, { Host: "evil.example.com" });
    expect(r.status).toBe(201);
    expect(r.json.uri).toBe(`${s.url}/backends/weighted/${r.json.id}`);
    const list = await api.get("/backends/weighted?limit=1", { Host: "evil.example.com" });
    expect(list.json.uri).toBe(`${s.url}/backends/weighted`);
    expect(list.json.next_page_uri.startsWith(`${s.url}/backends/weighted?`)).toBe(true);
  });

  it("builds uris from --public-url when given", async () => {
    const other = await startTestServer({ publicUrl: "https://api.example.com/" });
    try {
      const r = await apiClient(other.url, other.apiKey).post("/backends/weighted", { backends: {} });
      expect(r.json.uri).toBe(`https://api.example.com/backends/weighted/${r.json.id}`);
    } finally {
      await other.close();
    }
  });
});

describe("internal errors", () => {
  it("answers 500 with a generic body and the operation id, and logs the error", async () => {
    const created = await api.post("/backends/weighted", { backends: {} });
    const original = s.store.transaction.bind(s.store);
    s.store.transaction = () => Promise.reject(new Error("disk on fire at /var/secret/path"));
    try {
      const r = await api.get(`/backends/weighted/${created.json.id}`);
      expect(r.status).toBe(500);
      const e = errorOf(r);
      expect(e.error_code).toBe("ERR_NGROK_500");
      expect(r.text).not.toContain("disk on fire");
      expect(r.text).not.toContain("/var/secret");
      expect(r.text).not.toMatch(/\bat \S+ \(/);
      const line = s.logLines.find((l) => l.operation_id === e.details.operation_id);
      expect(line?.status).toBe(500);
      expect(String(line?.error)).toContain("disk on fire");
    } finally {
      s.store.transaction = original;
    }
  });
});

describe("timeouts", () => {
  /** Sends `text` on a raw connection and resolves with everything the server writes until it closes. */
  function raw(url: string, text: string): Promise<string> {
    const { hostname, port } = new URL(url);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => socket.write(text));
      let got = "";
      socket.setEncoding("utf8");
      socket.on("data", (d: string) => (got += d));
      socket.on("error", reject);
      socket.on("close", () => resolve(got));
    });
  }

  it("answers 408 with an operation id when headers or body come too slowly, and keeps serving", async () => {
    const slow = await startTestServer({ headersTimeoutMs: 300, requestTimeoutMs: 600 });
    try {
      const headers = await raw(slow.url, "GET /backends/weighted HTTP/1.1\r\nHost: x\r\n");
      expect(headers).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      expect(headers).toMatch(/\r\nNgrok-Operation-Id: op_[0-9A-Za-z]{27}\r\n/);
      expect(headers).toContain('"error_code":"ERR_NGROK_408"');
      const body = await raw(
        slow.url,
        `POST /backends/weighted HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${slow.apiKey}\r\nNgrok-Version: 2\r\n` +
          'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"backends":',
      );
      expect(body).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      expect(await slow.read((tx) => tx.countWeightedBackends(slow.account))).toBe(0);
      const garbage = await raw(slow.url, "NOT HTTP\r\n\r\n");
      expect(garbage).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect((await apiClient(slow.url, slow.apiKey).get("/backends/weighted")).status).toBe(200);
    } finally {
      await slow.close();
    }
  });
});

describe("request log", () => {
  it("writes one JSON line per request: method, path without query, status, ms, operation id", async () => {
    const r = await api.get("/backends/weighted?limit=2");
    const op = r.headers["ngrok-operation-id"];
    const line = s.logLines.find((l) => l.operation_id === op);
    expect(line).toBeDefined();
    expect(line?.method).toBe("GET");
    expect(line?.path).toBe("/backends/weighted");
    expect(line?.status).toBe(200);
    expect(typeof line?.ms).toBe("number");
    const failed = await api.post("/backends/weighted", { nope: 1 });
    const failedLine = s.logLines.find((l) => l.operation_id === failed.headers["ngrok-operation-id"]);
    expect(failedLine?.error_code).toBe("ERR_NGROK_214");
  });
});
