/** The providers of a rollout analysis: what a Prometheus or an HTTP answer reads as, and how a provider is asked. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readPrometheusAnswer, readProvider, readWebAnswer } from "../../src/apply/analysis.js";

describe("a Prometheus answer", () => {
  const vector = (...values: string[]) => ({
    status: "success",
    data: { resultType: "vector", result: values.map((v, i) => ({ metric: { i: String(i) }, value: [1, v] })) },
  });

  it("reads one series or a scalar as a double", () => {
    expect(readPrometheusAnswer(vector("0.004"))).toEqual({ value: 0.004 });
    expect(readPrometheusAnswer(vector("1"))).toEqual({ value: 1 });
    expect(readPrometheusAnswer({ status: "success", data: { resultType: "scalar", result: [1, "42"] } })).toEqual({ value: 42 });
    expect(readPrometheusAnswer(vector("NaN"))).toEqual({ value: Number.NaN });
  });

  it("has no value for an empty vector, several series, another type or an error", () => {
    expect(readPrometheusAnswer(vector())).toEqual({ none: "no data" });
    expect(readPrometheusAnswer(vector("1", "2", "3"))).toEqual({ none: "query returned 3 series; it must return one" });
    expect(readPrometheusAnswer({ status: "success", data: { resultType: "matrix", result: [] } })).toEqual({
      none: "the query gave a matrix; it must give one series or a scalar",
    });
    expect(readPrometheusAnswer({ status: "error", errorType: "bad_data", error: 'parse error: unexpected "}"' })).toEqual({
      none: 'Prometheus answered an error: parse error: unexpected "}"',
    });
    expect(readPrometheusAnswer(null)).toEqual({ none: "Prometheus answered an error: no error text" });
  });
});

describe("an HTTP answer", () => {
  it("reads the value at the JSON path, or the whole JSON without one", () => {
    expect(readWebAnswer('{"checks":[{"healthy":true}]}', "$.checks[0].healthy")).toEqual({ value: true });
    expect(readWebAnswer('{"ratio":0.5}', null)).toEqual({ value: { ratio: 0.5 } });
    expect(readWebAnswer('{"checks":[]}', "$.checks[0].healthy")).toEqual({ none: "no data ($.checks[0] is not in the answer)" });
    expect(readWebAnswer('{"ratio":null}', "$.ratio")).toEqual({ none: "no data ($.ratio is null)" });
  });

  it("reads Prometheus' infinities as numbers, in its answers, in plain text and in JSON strings; NaN stays NaN", () => {
    const vector = (v: string) => ({ status: "success", data: { resultType: "vector", result: [{ metric: {}, value: [1, v] }] } });
    for (const text of ["+Inf", "Inf", "inf", "+Infinity"]) expect(readPrometheusAnswer(vector(text))).toEqual({ value: Number.POSITIVE_INFINITY });
    expect(readPrometheusAnswer(vector("-Inf"))).toEqual({ value: Number.NEGATIVE_INFINITY });
    expect(readPrometheusAnswer({ status: "success", data: { resultType: "scalar", result: [1, "+Inf"] } })).toEqual({ value: Number.POSITIVE_INFINITY });
    expect(readPrometheusAnswer(vector("NaN"))).toEqual({ value: Number.NaN });
    expect(readWebAnswer("+Inf\n", null)).toEqual({ value: Number.POSITIVE_INFINITY });
    expect(readWebAnswer('{"p99":"-Inf","ratio":"0.5"}', "$.p99")).toEqual({ value: Number.NEGATIVE_INFINITY });
    expect(readWebAnswer('{"p99":"-Inf","ratio":"0.5"}', "$.ratio")).toEqual({ value: "0.5" });
  });

  it("reads plain text as a number when it is one, else as text", () => {
    expect(readWebAnswer("0.003\n", null)).toEqual({ value: 0.003 });
    expect(readWebAnswer("ok", null)).toEqual({ value: "ok" });
    expect(readWebAnswer("ok", "$.a")).toEqual({ none: "the answer is not JSON, so $.a cannot be read in it" });
  });
});

describe("asking a provider", () => {
  let server: Server;
  let base = "";
  const seen: string[] = [];
  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      seen.push(`${req.method} ${req.url} ${req.headers["x-token"] ?? ""}`);
      if (req.url?.startsWith("/down")) {
        res.statusCode = 503;
        res.end("down");
      } else if (req.url?.startsWith("/huge")) {
        // 2 MiB of a JSON string: past the bound of a metric's answer.
        res.end(JSON.stringify({ value: "x".repeat(2 * 1024 * 1024) }));
      } else if (req.url?.startsWith("/api/v1/query")) {
        res.statusCode = 400;
        res.end(JSON.stringify({ status: "error", error: "parse error" }));
      } else {
        let body = "";
        req.on("data", (c: Buffer) => (body += c.toString()));
        req.on("end", () => res.end(JSON.stringify({ echo: body })));
      }
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const web = (path: string, extra: Partial<{ method: "GET" | "POST"; body: string | null; json_path: string | null }> = {}) => ({
    kind: "web" as const,
    url: `${base}${path}`,
    method: "GET" as const,
    headers: { "x-token": "t1" },
    body: null,
    json_path: null,
    timeout_ms: 1000,
    ...extra,
  });

  it("tries an error status 3 times, half a second apart, then has no value", async () => {
    seen.length = 0;
    const started = Date.now();
    expect(await readProvider(web("/down"))).toEqual({ none: `unreachable after 3 attempts (HTTP 503 from ${base}/down)` });
    expect(seen).toEqual(["GET /down t1", "GET /down t1", "GET /down t1"]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });

  it("asks a bad Prometheus query once: the error is its answer", async () => {
    seen.length = 0;
    const reading = await readProvider({ kind: "prometheus", address: base, query: "sum(x", timeout_ms: 1000 });
    expect(reading).toEqual({ none: "Prometheus answered an error: parse error" });
    expect(seen).toEqual([`GET /api/v1/query?query=${encodeURIComponent("sum(x")} `]);
  });

  it("sends a POST with its body and headers", async () => {
    seen.length = 0;
    expect(await readProvider(web("/echo", { method: "POST", body: "q=1", json_path: "$.echo" }))).toEqual({ value: "q=1" });
    expect(seen).toEqual(["POST /echo t1"]);
  });

  it("stops reading an answer past 1 MiB: no value, asked once", async () => {
    seen.length = 0;
    expect(await readProvider(web("/huge", { json_path: "$.value" }))).toEqual({ none: `the answer of ${base}/huge is larger than 1048576 bytes` });
    expect(seen).toEqual(["GET /huge t1"]);
  });

  it("refuses plain http to another host, as a check does", async () => {
    expect(await readProvider({ ...web("/x"), url: "http://status.example.com/x" })).toEqual({
      none: "http://status.example.com/x: plain http is accepted only to a loopback host (127.0.0.1, ::1, localhost); use https for status.example.com",
    });
  });
});
