/**
 * The syntaxes of values that the CLI's flags and `edgeplan serve` both accept, each parsed in one place: whole
 * numbers, durations (`500ms`, `30s`, `1.5s`, `5m`, `1h`), timeouts (milliseconds or a duration), rate limits
 * (`N/DURATION`, or `off`), and the server's test faults (latency ranges, probabilities). The client and the server accept and refuse the same strings. Every parser throws an
 * EdgeplanError that names the flag, the accepted form and the value given. Pure.
 */
import { EdgeplanError } from "./errors.js";

/** Milliseconds per duration unit: the one set of units every duration accepts. */
export const DURATION_UNITS_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Longest timeout a flag accepts (10 minutes). */
export const TIMEOUT_MAX_MS = 600_000;

export interface RateLimit {
  count: number;
  windowMs: number;
}

/**
 * A duration in whole milliseconds (at least 1): a number, maybe with a fraction, and a unit (`ms`, `s`, `m`, `h`),
 * e.g. `500ms`, `30s`, `1.5s`, `5m`, `1h`. Undefined when the text is not one.
 */
export function parseDuration(text: string): number | undefined {
  const ms = durationMs(text);
  return ms !== undefined && ms >= 1 ? ms : undefined;
}

/** A duration's whole milliseconds, zero included (`0s`); undefined when the text is not one. */
function durationMs(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(text.trim());
  if (!m) return undefined;
  const ms = Number(m[1]) * (DURATION_UNITS_MS[m[2] as string] as number);
  return Number.isSafeInteger(ms) ? ms : undefined;
}

/** A whole number from `min` to `max` (digits only, no sign or fraction). */
export function parseWholeNumber(flag: string, value: string | number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const text = String(value).trim();
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
    throw new EdgeplanError(`${flag}: expected a whole number ${range}, got "${text}"`);
  }
  return n;
}

/**
 * A timeout: whole milliseconds (`30000`) or a duration (`30s`, `500ms`), from `minMs` (default 1) to `maxMs`. A zero
 * is the same written either way (`0`, `0s`): allowed exactly when `minMs` is 0.
 */
export function parseTimeout(flag: string, value: string | number, maxMs = TIMEOUT_MAX_MS, minMs = 1): number {
  const text = String(value).trim();
  const ms = /^\d+$/.test(text) ? Number(text) : durationMs(text);
  if (ms === undefined || !Number.isSafeInteger(ms) || ms < minMs || ms > maxMs) {
    throw new EdgeplanError(`${flag}: expected milliseconds from ${minMs} to ${maxMs} (or a duration such as 30s), got "${text}"`);
  }
  return ms;
}

/**
 * A rate limit: `N/DURATION` (at most N requests per rolling window of DURATION), e.g. `120/60s`, `20/1s`,
 * `500/100ms`; or `off` (any case) for no limit, which is null.
 */
export function parseRateLimit(value: string, flag = "--rate-limit"): RateLimit | null {
  const text = value.trim();
  if (text.toLowerCase() === "off") return null;
  const m = /^(\d+)\/(.+)$/.exec(text);
  const count = m ? Number(m[1]) : Number.NaN;
  const windowMs = m ? parseDuration(m[2] as string) : undefined;
  if (!m || !Number.isSafeInteger(count) || count < 1 || windowMs === undefined) {
    throw new EdgeplanError(`${flag}: expected N/DURATION such as 120/60s, 20/1s or 500/100ms (N >= 1; units ms, s, m, h), or "off"; got "${text}"`);
  }
  return { count, windowMs };
}

/** `120/60s`: a rate limit written as `parseRateLimit` reads it (whole seconds when the window is, else milliseconds). */
export function formatRateLimit(rl: RateLimit): string {
  return rl.windowMs % 1000 === 0 ? `${rl.count}/${rl.windowMs / 1000}s` : `${rl.count}/${rl.windowMs}ms`;
}

/** A latency: `MS` or `MIN-MAX` whole milliseconds with MIN <= MAX. */
export function parseLatency(flag: string, value: string): [number, number] {
  const m = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/.exec(value);
  const lo = m ? Number(m[1]) : Number.NaN;
  const hi = m ? Number(m[2] ?? m[1]) : Number.NaN;
  if (!m || !(hi >= lo)) throw new EdgeplanError(`${flag}: expected MS or MIN-MAX in milliseconds with MIN <= MAX (e.g. 50 or 20-200), got "${value}"`);
  return [lo, hi];
}

/** A probability from 0 to 1. */
export function parseProbability(flag: string, value: string): number {
  const p = /^\s*\d*(?:\.\d+)?\s*$/.test(value) && value.trim() !== "" ? Number(value) : Number.NaN;
  if (!(p >= 0 && p <= 1)) throw new EdgeplanError(`${flag}: expected a probability from 0 to 1 (e.g. 0.1), got "${value}"`);
  return p;
}

/**
 * The settings that a flag and the project file (`edgeplan.yaml`) both give, each with its range: one parser per
 * setting, so that `--concurrency 0` and `concurrency: 0` are refused with the same words. `name` is how the
 * message names the setting (the flag, or the file's key).
 */
export const SETTING_PARSERS = {
  concurrency: (value: string | number, name = "--concurrency"): number => parseWholeNumber(name, value, 1, 256),
  retries: (value: string | number, name = "--retries"): number => parseWholeNumber(name, value, 0, 20),
  timeout: (value: string | number, name = "--timeout"): number => parseTimeout(name, value),
  rateLimit: (value: string | number, name = "--rate-limit"): RateLimit | null => parseRateLimit(String(value), name),
  maxShift: (value: string | number, name = "--max-shift"): number => parseWholeNumber(name, value, 0, 100),
  maxDeletes: (value: string | number, name = "--max-deletes"): number => parseWholeNumber(name, value, 0, 1_000_000),
} as const;

/** The kinds an address starts with. */
export const ADDRESS_KINDS = ["weighted_backend", "edge_route"] as const;

const ADDRESS_PATTERN_TEXT = /^[A-Za-z0-9_*-]+(?:[./][A-Za-z0-9_*-]+)*$/;
const compiledPatterns = new Map<string, RegExp>();

/** The regular expression of an address pattern: `*` within one segment (segments end at `.` and `/`). */
function patternRegExp(pattern: string): RegExp {
  let re = compiledPatterns.get(pattern);
  if (re === undefined) {
    const body = pattern.replace(/[.]/g, "\\.").replace(/\*/g, "[^./]*");
    // A pattern names an address and everything under it: `edge_route.E/R` holds both modules of the route.
    re = new RegExp(`^${body}(?:[./].*)?$`);
    compiledPatterns.set(pattern, re);
  }
  return re;
}

/**
 * An address pattern of `--target` and `--exclude`: an address such as `weighted_backend.checkout` or
 * `edge_route.EDGE/ROUTE.saml`, where `*` matches any characters within one segment (`weighted_backend.checkout*`,
 * `edge_route.edghts_X/*.saml`); a pattern also names what is under it (`edge_route.EDGE/ROUTE` holds both modules).
 * Returns the pattern; throws an EdgeplanError naming the flag when it is not one.
 */
export function parseAddressPattern(flag: string, value: string): string {
  const text = value.trim();
  const kind = text.split(/[./]/)[0] ?? "";
  const re = new RegExp(`^${kind.replace(/\*/g, ".*")}$`);
  if (!ADDRESS_PATTERN_TEXT.test(text) || !ADDRESS_KINDS.some((k) => re.test(k))) {
    throw new EdgeplanError(
      `${flag}: expected an address such as weighted_backend.checkout or edge_route.EDGE_ID/ROUTE_ID.saml, starting with ${ADDRESS_KINDS.join(" or ")} (* matches within one segment); got "${text}"`,
    );
  }
  return text;
}

/** Whether an address pattern (from `parseAddressPattern`) names `address` or something it holds. */
export function addressMatches(pattern: string, address: string): boolean {
  return patternRegExp(pattern).test(address);
}

/**
 * A listen address `HOST:PORT`: an IPv4 address or a name, or an IPv6 address in brackets (`[::1]:9090`); the port
 * from 0 (a free one) to 65535.
 */
export function parseListenAddress(flag: string, value: string): { host: string; port: number } {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[3]) : Number.NaN;
  if (!m || port > 65535) {
    throw new EdgeplanError(`${flag}: expected HOST:PORT, e.g. 127.0.0.1:9090 or [::1]:9090 (port 0 picks a free one), got "${value}"`);
  }
  return { host: (m[1] ?? m[2]) as string, port };
}

/** True when `hostname` (as `URL.hostname` gives it) is loopback: 127.0.0.0/8, ::1, or localhost. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname
    .toLowerCase()
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "");
  if (host === "localhost") return true;
  if (/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) return host.split(".").every((p) => Number(p) <= 255);
  if (host === "::1" || host === "0:0:0:0:0:0:0:1") return true;
  // IPv4-mapped loopback as the URL parser writes it: ::ffff:7f00:1 for ::ffff:127.0.0.1.
  const mapped = /^::ffff:7f([0-9a-f]{2}):[0-9a-f]{1,4}$/.exec(host);
  return mapped !== null;
}

/** Least and greatest `interval` of a rollout: one second, one week. */
export const INTERVAL_MIN_MS = 1000;
export const INTERVAL_MAX_MS = 7 * 24 * 3_600_000;

/**
 * The interval of a rollout: a whole number with `s`, `m` or `h` (`30s`, `5m`, `1h`), from 1s to 168h. Returns the
 * milliseconds, or a message saying what is accepted.
 */
export function parseInterval(text: string): number | string {
  const t = text.trim();
  const ms = /^\d+(s|m|h)$/.test(t) ? parseDuration(t) : undefined;
  if (ms === undefined || ms < INTERVAL_MIN_MS || ms > INTERVAL_MAX_MS) {
    return `expected a whole number with s, m or h from 1s to 168h (e.g. 30s, 5m, 1h), got "${t}"`;
  }
  return ms;
}

/** The longest time a rollout check may take to answer (one minute). */
export const CHECK_TIMEOUT_MAX_MS = 60_000;

/** A rollout check's timeout: a duration (`10s`, `500ms`) from 1 ms to one minute; the milliseconds or a message. */
export function parseCheckTimeout(text: string): number | string {
  const t = text.trim();
  const ms = parseDuration(t);
  if (ms === undefined || ms > CHECK_TIMEOUT_MAX_MS) return `expected a duration from 1ms to 60s (e.g. 10s, 500ms), got "${t}"`;
  return ms;
}

/** Longest `initial_delay` and `interval` of a metric: one hour. */
const METRIC_WAIT_MAX_MS = 3_600_000;

/** A wait of a metric: 0 or a duration up to an hour (`0s`, `30s`, `1m`); the milliseconds or a message. */
export function parseMetricWait(text: string, least: number): number | string {
  const t = text.trim();
  const ms = /^0+(ms|s|m|h)?$/.test(t) ? 0 : parseDuration(t);
  if (ms === undefined || ms < least || ms > METRIC_WAIT_MAX_MS) {
    return `expected a duration from ${least === 0 ? "0s" : "1s"} to 1h (e.g. 30s, 2m), got "${t}"`;
  }
  return ms;
}

/**
 * The URL of a rollout check: `https://`, or `http://` to a loopback host (a check asked over plain HTTP across a
 * network could be answered by anyone on the way); no credentials. The URL as given, or a message.
 */
export function parseCheckUrl(text: string): { url: string } | { error: string } {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return { error: `"${text}" is not a URL; write e.g. https://status.example.com/healthy` };
  }
  if (url.username || url.password) return { error: "credentials in the URL are not accepted" };
  if (url.protocol === "https:") return { url: url.href };
  if (url.protocol === "http:" && isLoopbackHost(url.hostname)) return { url: url.href };
  if (url.protocol === "http:") return { error: `plain http is accepted only to a loopback host (127.0.0.1, ::1, localhost); use https for ${url.host}` };
  return { error: `only https (or http to a loopback host) is accepted, got "${url.protocol.replace(/:$/, "")}"` };
}
