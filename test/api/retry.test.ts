import { describe, expect, it } from "vitest";
import { backoffDelay, classifyNetworkError, decideStatus, errorCodeOf, parseRetryAfter, retryDelay } from "../../src/api/retry.js";

const backoff = { baseMs: 100, capMs: 1000 };

describe("backoffDelay (full jitter)", () => {
  it("draws uniformly in [0, min(cap, base * 2^n))", () => {
    expect(backoffDelay(0, backoff, () => 0)).toBe(0);
    expect(backoffDelay(0, backoff, () => 0.5)).toBe(50);
    expect(backoffDelay(1, backoff, () => 0.5)).toBe(100);
    expect(backoffDelay(2, backoff, () => 0.999)).toBeCloseTo(399.6, 6);
    // 100 * 2^4 = 1600, capped at 1000.
    expect(backoffDelay(4, backoff, () => 0.5)).toBe(500);
    expect(backoffDelay(30, backoff, () => 0.999)).toBeCloseTo(999, 6);
  });

  it("uses Math.random by default and stays inside the window", () => {
    for (let i = 0; i < 200; i++) {
      const d = backoffDelay(3, backoff);
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThan(800);
    }
  });
});

describe("retryDelay", () => {
  it("takes Retry-After as a floor under the jittered backoff", () => {
    expect(retryDelay(0, 2000, backoff, () => 0.5)).toBe(2000);
    expect(retryDelay(3, 100, backoff, () => 0.5)).toBe(400);
    expect(retryDelay(3, undefined, backoff, () => 0.25)).toBe(200);
  });
});

describe("parseRetryAfter", () => {
  const now = Date.parse("2025-09-04T10:11:37Z");

  it("reads delta-seconds", () => {
    expect(parseRetryAfter("3", now)).toBe(3000);
    expect(parseRetryAfter(" 0 ", now)).toBe(0);
    expect(parseRetryAfter("1.5", now)).toBe(1500);
    expect(parseRetryAfter(["7", "9"], now)).toBe(7000);
  });

  it("reads an HTTP date relative to now, never negative", () => {
    expect(parseRetryAfter("Thu, 04 Sep 2025 10:11:47 GMT", now)).toBe(10_000);
    expect(parseRetryAfter("Thu, 04 Sep 2025 10:11:00 GMT", now)).toBe(0);
  });

  it("ignores what it cannot read", () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter("", now)).toBeUndefined();
    expect(parseRetryAfter("-5", now)).toBeUndefined();
    expect(parseRetryAfter("soon", now)).toBeUndefined();
    expect(parseRetryAfter("2025", now)).toBe(2_025_000);
  });
});

describe("decideStatus", () => {
  it("retries 429 for every method, including POST", () => {
    for (const m of ["GET", "PUT", "PATCH", "DELETE", "POST"]) expect(decideStatus(m, 429)).toBe("retry");
  });

  it("retries 502, 503, 504 for idempotent methods only", () => {
    for (const m of ["GET", "PUT", "PATCH", "DELETE"]) {
      for (const s of [502, 503, 504]) expect(decideStatus(m, s)).toBe("retry");
      expect(decideStatus(m, 500)).toBe("fail");
    }
  });

  it("never resends a POST answered 5xx: its outcome is unknown", () => {
    for (const s of [500, 502, 503, 504]) expect(decideStatus("POST", s)).toBe("outcome-unknown");
  });

  it("never retries other 4xx, and a 2xx is done", () => {
    for (const m of ["GET", "PUT", "PATCH", "DELETE", "POST"]) {
      for (const s of [400, 401, 403, 404, 405, 409, 413, 415]) expect(decideStatus(m, s)).toBe("fail");
      expect(decideStatus(m, 200)).toBe("done");
      expect(decideStatus(m, 201)).toBe("done");
      expect(decideStatus(m, 204)).toBe("done");
    }
  });
});

describe("classifyNetworkError", () => {
  const withCode = (code: string, message = "x"): Error => Object.assign(new Error(message), { code });

  it("tells errors before any connection (safe to resend) from errors after sending", () => {
    expect(classifyNetworkError(withCode("ECONNREFUSED"))).toEqual({ kind: "not-sent", code: "ECONNREFUSED", text: "connection refused" });
    expect(classifyNetworkError(withCode("UND_ERR_CONNECT_TIMEOUT")).kind).toBe("not-sent");
    expect(classifyNetworkError(withCode("ECONNRESET"))).toEqual({ kind: "unknown", code: "ECONNRESET", text: "connection reset" });
    expect(classifyNetworkError(withCode("UND_ERR_SOCKET")).kind).toBe("unknown");
    expect(classifyNetworkError(withCode("UND_ERR_HEADERS_TIMEOUT")).kind).toBe("unknown");
  });

  it("reads a timeout signal's abort as a timeout", () => {
    const timeout = new DOMException("The operation was aborted due to timeout", "TimeoutError");
    expect(classifyNetworkError(timeout)).toEqual({ kind: "unknown", code: "TIMEOUT", text: "no answer within the timeout" });
  });

  it("finds the code inside an AggregateError of connect attempts", () => {
    const agg = new AggregateError([withCode("ECONNREFUSED"), withCode("ECONNREFUSED")], "connect failed");
    expect(errorCodeOf(agg)).toBe("ECONNREFUSED");
    expect(classifyNetworkError(agg).kind).toBe("not-sent");
  });

  it("does not retry what retrying cannot fix", () => {
    expect(classifyNetworkError(withCode("ENOTFOUND")).kind).toBe("fatal");
    expect(classifyNetworkError(withCode("DEPTH_ZERO_SELF_SIGNED_CERT", "self-signed certificate"))).toEqual({
      kind: "fatal",
      code: "DEPTH_ZERO_SELF_SIGNED_CERT",
      text: "self-signed certificate",
    });
  });
});
