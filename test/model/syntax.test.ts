/**
 * The shared syntaxes (src/model/syntax.ts): each parser on its own, then the promise that the CLI's client flags
 * and `edgeplan serve` accept and refuse the same rate-limit and duration strings, with the same values, through
 * the very functions the commands call (and once through the built CLI).
 */
import { describe, expect, it } from "vitest";
import { clientOptionsFrom } from "../../src/api/options.js";
import { serveOptions } from "../../src/commands/serve.js";
import { EdgeplanError } from "../../src/model/errors.js";
import { parseCheckTimeout, parseCheckUrl, parseDuration, parseInterval, parseRateLimit, parseTimeout, parseWholeNumber } from "../../src/model/syntax.js";
import { runCli } from "../helpers/server.js";

const RATE_MESSAGE = (bad: string): string => `--rate-limit: expected N/DURATION such as 120/60s, 20/1s or 500/100ms (N >= 1; units ms, s, m, h), or "off"; got "${bad}"`;

describe("parseDuration", () => {
  it("reads a number with a unit into whole milliseconds", () => {
    expect([parseDuration("500ms"), parseDuration("30s"), parseDuration("1.5s"), parseDuration("5m"), parseDuration("1h")]).toEqual([500, 30_000, 1500, 300_000, 3_600_000]);
  });
  it("refuses other units, no number, zero and fractions of a millisecond", () => {
    for (const bad of ["1min", "s", "10", "0s", "0.5ms", "1d", "-1s", "1 s", ""]) expect(parseDuration(bad), bad).toBeUndefined();
  });
});

describe("parseRateLimit", () => {
  it("reads N/DURATION with ms, s, m, h units, and off", () => {
    expect(parseRateLimit("120/60s")).toEqual({ count: 120, windowMs: 60_000 });
    expect(parseRateLimit("20/1s")).toEqual({ count: 20, windowMs: 1000 });
    expect(parseRateLimit("500/100ms")).toEqual({ count: 500, windowMs: 100 });
    expect(parseRateLimit("10/1m")).toEqual({ count: 10, windowMs: 60_000 });
    expect(parseRateLimit("1000/1h")).toEqual({ count: 1000, windowMs: 3_600_000 });
    expect(parseRateLimit("5/1.5s")).toEqual({ count: 5, windowMs: 1500 });
    expect(parseRateLimit("off")).toBeNull();
    expect(parseRateLimit("OFF")).toBeNull();
  });

  it("refuses anything else, naming the flag and the accepted forms", () => {
    for (const bad of ["120", "120/60", "0/1s", "-1/1s", "x/1s", "10/0s", "10/1d", "10/s", "10/1min", ""]) {
      expect(() => parseRateLimit(bad)).toThrow(EdgeplanError);
      expect(() => parseRateLimit(bad)).toThrow(RATE_MESSAGE(bad));
    }
  });
});

describe("parseTimeout and parseWholeNumber", () => {
  it("read milliseconds or a duration, and whole numbers in range", () => {
    expect([parseTimeout("--timeout", "30000"), parseTimeout("--timeout", 250), parseTimeout("--timeout", "30s")]).toEqual([30_000, 250, 30_000]);
    expect(parseWholeNumber("--port", "8080", 0, 65535)).toBe(8080);
  });
  it("refuse zero, negatives, words and values out of range, naming the flag", () => {
    expect(() => parseTimeout("--timeout", "0")).toThrow('--timeout: expected milliseconds from 1 to 600000 (or a duration such as 30s), got "0"');
    for (const bad of ["-5", "soon", "601s", "1min"]) expect(() => parseTimeout("--timeout", bad)).toThrow(`got "${bad}"`);
    expect(() => parseWholeNumber("--max-inflight", "0", 1)).toThrow('--max-inflight: expected a whole number of at least 1, got "0"');
    expect(() => parseWholeNumber("--port", "2.5", 0, 65535)).toThrow('--port: expected a whole number from 0 to 65535, got "2.5"');
  });
  it("take a zero written as a duration exactly where they take 0", () => {
    for (const zero of ["0", "0s", "0ms", "0.0s", "0m"]) expect(parseTimeout("--drain-delay", zero, 600_000, 0), zero).toBe(0);
    expect(() => parseTimeout("--timeout", "0s")).toThrow('--timeout: expected milliseconds from 1 to 600000 (or a duration such as 30s), got "0s"');
    expect(parseDuration("0s")).toBeUndefined(); // a rate limit's window or an interval is never zero
  });
});

/** What each command makes of a string: the parsed value, or the message of its refusal. */
type Outcome = { value: unknown } | { error: string };

async function outcome(run: () => unknown): Promise<Outcome> {
  try {
    return { value: await run() };
  } catch (err) {
    if (!(err instanceof EdgeplanError)) throw err;
    return { error: err.message };
  }
}

const CLIENT_ENV = { EDGEPLAN_API_KEY: "ep_test_syntax_key_0123456789" };
const API_URL = "http://127.0.0.1:1";

const RATE_LIMITS: Array<[string, { count: number; windowMs: number } | null | "refused"]> = [
  ["120/60s", { count: 120, windowMs: 60_000 }],
  ["20/1s", { count: 20, windowMs: 1000 }],
  ["500/100ms", { count: 500, windowMs: 100 }],
  ["100/1m", { count: 100, windowMs: 60_000 }],
  ["5/1.5s", { count: 5, windowMs: 1500 }],
  ["1000/1h", { count: 1000, windowMs: 3_600_000 }],
  ["off", null],
  ["Off", null],
  ["10/s", "refused"],
  ["10/1min", "refused"],
  ["100/1 m", "refused"],
  ["0/1s", "refused"],
  ["10/0s", "refused"],
  ["10/1d", "refused"],
  ["10/0.5ms", "refused"],
  ["lots", "refused"],
  ["", "refused"],
];

const DURATIONS: Array<[string, number | "refused"]> = [
  ["30000", 30_000],
  ["30s", 30_000],
  ["500ms", 500],
  ["1.5s", 1500],
  ["10m", 600_000],
  ["11m", "refused"],
  ["1min", "refused"],
  ["0", "refused"],
  ["0s", "refused"],
  ["-1", "refused"],
  ["soon", "refused"],
];

describe("serve and plan accept the same strings", () => {
  it.each(RATE_LIMITS)("--rate-limit %j", async (text, expected) => {
    const client = await outcome(async () => (await clientOptionsFrom({ apiUrl: API_URL, rateLimit: text }, CLIENT_ENV)).rateLimit);
    const server = await outcome(() => serveOptions({ rateLimit: text }, {}).rateLimit ?? null);
    expect(server).toEqual(client);
    expect(client).toEqual(expected === "refused" ? { error: RATE_MESSAGE(text.trim()) } : { value: expected });
  });

  it.each(DURATIONS)("timeouts %j (plan --timeout, serve --request-timeout and --headers-timeout)", async (text, expected) => {
    const client = await outcome(async () => (await clientOptionsFrom({ apiUrl: API_URL, timeout: text }, CLIENT_ENV)).timeoutMs);
    const request = await outcome(() => serveOptions({ requestTimeout: text }, {}).requestTimeoutMs);
    const headers = await outcome(() => serveOptions({ headersTimeout: text }, {}).headersTimeoutMs);
    const refusal = (flag: string): Outcome => ({
      error: `${flag}: expected milliseconds from 1 to 600000 (or a duration such as 30s), got "${text}"`,
    });
    expect(client).toEqual(expected === "refused" ? refusal("--timeout") : { value: expected });
    expect(request).toEqual(expected === "refused" ? refusal("--request-timeout") : { value: expected });
    expect(headers).toEqual(expected === "refused" ? refusal("--headers-timeout") : { value: expected });
  });

  it("the built CLI refuses 10/s the same way in serve and plan, with exit 1", async () => {
    const message = RATE_MESSAGE("10/s");
    const serve = await runCli(["serve", "--port", "0", "--api-key", "k", "--rate-limit", "10/s"]);
    const plan = await runCli(["plan", "--api-url", API_URL, "--rate-limit", "10/s", "examples/canary"], CLIENT_ENV);
    expect([serve.code, plan.code]).toEqual([1, 1]);
    expect(serve.stderr).toContain(message);
    expect(plan.stderr).toContain(message);
  });
});

describe("the rollout's syntaxes", () => {
  it("reads an interval as a whole number with s, m or h, from 1s to 168h", () => {
    expect([parseInterval("1s"), parseInterval("5m"), parseInterval("2h"), parseInterval("168h")]).toEqual([1000, 300_000, 7_200_000, 604_800_000]);
    for (const bad of ["0s", "500ms", "1.5s", "5min", "169h", "5"]) {
      expect(parseInterval(bad)).toBe(`expected a whole number with s, m or h from 1s to 168h (e.g. 30s, 5m, 1h), got "${bad}"`);
    }
  });

  it("reads a check timeout as a duration up to 60s", () => {
    expect([parseCheckTimeout("10s"), parseCheckTimeout("500ms"), parseCheckTimeout("1m")]).toEqual([10_000, 500, 60_000]);
    expect(parseCheckTimeout("2m")).toBe('expected a duration from 1ms to 60s (e.g. 10s, 500ms), got "2m"');
  });

  it("takes https, or http to loopback only, for a check", () => {
    expect(parseCheckUrl("https://status.example.com/ok")).toEqual({ url: "https://status.example.com/ok" });
    expect(parseCheckUrl("http://[::1]:8080/ok")).toEqual({ url: "http://[::1]:8080/ok" });
    expect(parseCheckUrl("http://10.0.0.1/ok")).toEqual({
      error: "plain http is accepted only to a loopback host (127.0.0.1, ::1, localhost); use https for 10.0.0.1",
    });
    expect(parseCheckUrl("ftp://x/ok")).toEqual({ error: 'only https (or http to a loopback host) is accepted, got "ftp"' });
  });
});
